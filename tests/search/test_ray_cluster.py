"""Searches on a real Ray cluster on the loopback address, started by the tests with `ray start`:
a head given by address, a worker node lost mid-search (its evaluation rerun, nothing failed or
repeated), the driver's raylet lost (the search stops in one line, nothing failed, and resumes),
and an address where no head answers (one line, at once)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from nas_jax.search import journal, loop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAY = shutil.which("ray", path=os.path.dirname(sys.executable))
ENV = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "JAX_COMPILATION_CACHE_DIR": ""}

needs_ray = pytest.mark.skipif(RAY is None, reason="ray is not installed (pip install -e '.[test]' installs it)")


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


class Cluster:
  """Ray nodes on 127.0.0.1, each started by `ray start` in a session of its own, so that `stop`
  ends exactly the processes of these nodes (by process group), never another Ray on the machine.
  They keep their files in a folder of their own: a killed head leaves no stale address behind in
  /tmp/ray for a later `ray.init()` to connect to."""

  def __init__(self):
    self.port = _free_port()
    self.groups: list[int] = []  # one process group per node; the head's first
    self.temp = ""  # the head's --temp-dir, short: Ray's socket paths live under it

  def start_node(self, num_cpus: int) -> int:
    """Starts the head (first call) or a node joining it; returns the node's process group."""
    if not self.groups:
      self.temp = tempfile.mkdtemp(prefix="nas_jax_ray_")
    where = ["--head", f"--port={self.port}", "--include-dashboard=false", f"--temp-dir={self.temp}"]
    where = where if len(self.groups) == 0 else []
    where = where or [f"--address=127.0.0.1:{self.port}"]
    p = subprocess.Popen(
      [RAY, "start", *where, "--node-ip-address=127.0.0.1", f"--num-cpus={num_cpus}", "--disable-usage-stats"],
      env=ENV,
      stdout=subprocess.PIPE,
      stderr=subprocess.STDOUT,
      text=True,
      start_new_session=True,  # its processes stay in the group `ray start` leads
    )
    self.groups.append(p.pid)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out[-3000:]
    return p.pid

  def raylet(self, group: int) -> int:
    """The pid of the raylet of the node started as process group `group`."""
    psutil = pytest.importorskip("psutil")
    for proc in psutil.process_iter(["pid", "cmdline"]):
      try:
        if os.getpgid(proc.info["pid"]) == group and "raylet" in os.path.basename((proc.info["cmdline"] or [""])[0]):
          return proc.info["pid"]
      except ProcessLookupError:
        continue
    raise AssertionError(f"no raylet in process group {group}")

  def stop(self) -> None:
    for group in self.groups:
      try:
        os.killpg(group, signal.SIGKILL)
      except ProcessLookupError:
        pass
    self.groups = []
    if self.temp:
      shutil.rmtree(self.temp, ignore_errors=True)


@pytest.fixture
def cluster(ray_alone):
  c = Cluster()
  try:
    yield c
  finally:
    c.stop()


def _search(workdir, port, *extra, budget=8):
  return [
    sys.executable,
    "launch/search.py",
    "--config=configs/ea_synthetic.py:smoke",
    f"--config.workdir={workdir}",
    "--config.executor=ray",
    f"--config.ray_address=127.0.0.1:{port}",
    "--config.num_workers=2",
    f"--config.budget={budget}",
    "--noprogress",
    *extra,
  ]


def _start_search(workdir, port, *extra, budget=8):
  return subprocess.Popen(
    _search(workdir, port, *extra, budget=budget),
    cwd=ROOT,
    env=ENV,
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )


def _wait_rows(workdir, n, search, limit_s=240):
  """Waits until the journal holds n rows (while the search runs)."""
  path, end = os.path.join(workdir, loop.JOURNAL), time.monotonic() + limit_s
  while not (os.path.exists(path) and len(journal.replay(path)) >= n):
    assert search.poll() is None, search.communicate()[1][-3000:]
    assert time.monotonic() < end, f"fewer than {n} rows after {limit_s} s"
    time.sleep(0.5)


def _errors(stderr: str) -> list[str]:
  return [line for line in stderr.splitlines() if line.startswith("search.py: error:")]


@needs_ray
def test_a_search_runs_on_a_ray_head_given_by_address(tmp_path, cluster):
  cluster.start_node(num_cpus=2)
  p = subprocess.run(
    _search(tmp_path, cluster.port, budget=6), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300
  )
  assert p.returncode == 0, p.stderr[-3000:]
  done = journal.replay(tmp_path / loop.JOURNAL)
  assert len(done) == 6 and all(o.ok and o.worker.startswith("ray:") for o in done)


@pytest.mark.slow  # over a minute; .ci/run runs it after the default suite
@needs_ray
def test_a_lost_worker_node_reruns_its_evaluation_and_the_search_completes(tmp_path, cluster):
  """kill -9 of the second node's raylet mid-search: its evaluation reruns on the head, and the
  search records its whole budget with no failed row and no trial id twice."""
  cluster.start_node(num_cpus=1)
  node = cluster.start_node(num_cpus=1)
  search = _start_search(tmp_path, cluster.port, "--config.task.delay_s=8")
  _wait_rows(tmp_path, 2, search)  # both nodes have run an evaluation: each now runs another
  # The next two are proposed, scheduled and started in the first seconds of their 8 s: a kill
  # before one has started on the node would leave nothing there to lose (a busy machine is slow).
  time.sleep(3.0)
  os.kill(cluster.raylet(node), signal.SIGKILL)
  _, stderr = search.communicate(timeout=300)
  assert search.returncode == 0, stderr[-3000:]
  assert "NodeDiedError" in stderr and "rerunning the evaluation" in stderr
  done = journal.replay(tmp_path / loop.JOURNAL)
  assert sorted(o.trial_id for o in done) == list(range(8))
  assert all(o.ok for o in done), [o.error[:200] for o in done if not o.ok]


@pytest.mark.slow  # Ray takes tens of seconds to tell the driver its raylet died
@needs_ray
def test_a_lost_driver_raylet_stops_the_search_in_one_line_and_it_resumes(tmp_path, cluster):
  """kill -9 of the raylet the search's driver is attached to (the one node's): no evaluation can
  run, so the search stops with one error line, its summary written and no row failed; on a new
  cluster the same command finishes the budget without repeating a trial."""
  head = cluster.start_node(num_cpus=2)
  search = _start_search(tmp_path, cluster.port, "--config.task.delay_s=2")
  _wait_rows(tmp_path, 2, search)
  os.kill(cluster.raylet(head), signal.SIGKILL)
  _, stderr = search.communicate(timeout=300)
  assert search.returncode == 2, stderr[-3000:]
  assert len(_errors(stderr)) == 1 and "this process's Ray node is gone and the search stops" in _errors(stderr)[0]
  assert "Traceback" not in stderr
  done = journal.replay(tmp_path / loop.JOURNAL)
  assert 2 <= len(done) < 8 and all(o.ok for o in done)
  with open(tmp_path / loop.SUMMARY) as f:
    summary = json.load(f)
  assert (summary["n_evaluated"], summary["n_failed"]) == (len(done), 0)
  before = {o.trial_id for o in done}
  cluster.stop()
  cluster.start_node(num_cpus=2)
  resume = _search(tmp_path, cluster.port, "--config.task.delay_s=2")
  p = subprocess.run(resume, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
  assert p.returncode == 0, p.stderr[-3000:]
  done = journal.replay(tmp_path / loop.JOURNAL)
  ids = [o.trial_id for o in done]
  # An evaluation lost with the raylet leaves its id unused when a later one had finished (the
  # resumed search numbers on from the largest id recorded), so the ids need not be 0..7.
  assert len(ids) == 8 == len(set(ids)) and before <= set(ids) and all(o.ok for o in done), ids


@needs_ray
def test_an_address_where_no_head_answers_fails_at_once_in_one_line(tmp_path, ray_alone):
  port = _free_port()  # nothing listens there
  t0 = time.monotonic()
  p = subprocess.run(_search(tmp_path, port), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
  assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-3000:]
  (line,) = _errors(p.stderr)
  assert f"ray_address='127.0.0.1:{port}': no Ray head answers there" in line
  assert time.monotonic() - t0 < 60  # Ray alone retries such an address for minutes
