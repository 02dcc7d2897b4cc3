"""A search killed with kill -9, SIGTERM or SIGINT leaves no worker process behind: workers watch
the search and exit with it, and so does the forkserver they came from
(nas_jax.search.process_executor). SIGTERM stops a search as Ctrl-C does:
one line on stderr, exit code 130, summary.json written from the journal."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from nas_jax.search import journal, loop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _stat(pid: int) -> list:
  with open(f"/proc/{pid}/stat") as f:
    return f.read().rsplit(")", 1)[1].split()


def _descendants(pid: int) -> dict:
  """{process: its parent} of the live processes under `pid`: its children, theirs, and so on."""
  parents = {}
  for entry in os.listdir("/proc"):
    if entry.isdigit():
      try:
        fields = _stat(int(entry))
      except OSError:
        continue
      if fields[0] != "Z":
        parents[int(entry)] = int(fields[1])
  out, frontier = {}, {pid}
  while frontier:
    frontier = {p for p, parent in parents.items() if parent in frontier} - out.keys()
    out.update((p, parents[p]) for p in frontier)
  return out


def _is_worker(pid: int, parent: int, search: int) -> bool:
  """A spawned worker (multiprocessing's marker on its command line) or one forked by the search's
  forkserver (the server's command line, one level further down than the server itself)."""
  try:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
      argv = f.read().split(b"\0")
  except OSError:
    return False
  forked = parent != search and any(b"multiprocessing.forkserver" in a for a in argv)
  return b"--multiprocessing-fork" in argv or forked


def _alive(pids: set) -> set:
  alive = set()
  for p in pids:
    try:
      if _stat(p)[0] != "Z":
        alive.add(p)
    except OSError:
      pass
  return alive


def _search(tmp_path) -> subprocess.Popen:
  """A local-executor search whose two workers each sleep 600 s in their evaluation."""
  return subprocess.Popen(
    [
      sys.executable,
      "launch/search.py",
      "--config=configs/ea_synthetic.py:smoke",
      f"--config.workdir={tmp_path}",
      "--config.executor=local",
      "--config.num_workers=2",
      "--config.task.delay_s=600",
      "--noprogress",
    ],
    cwd=ROOT,
    stdout=subprocess.DEVNULL,
    stderr=open(tmp_path / "stderr", "w"),
    env={**os.environ, "JAX_COMPILATION_CACHE_DIR": ""},
  )


def _workers(main: subprocess.Popen) -> set:
  """Once the search's two workers exist: every process under it (the workers, and the
  forkserver and resource tracker they came with)."""
  deadline, workers = time.time() + 120, set()
  while time.time() < deadline and len(workers) < 2:
    time.sleep(0.1)
    workers = {p for p, parent in _descendants(main.pid).items() if _is_worker(p, parent, main.pid)}
  assert len(workers) >= 2, "the search did not start its workers"
  return set(_descendants(main.pid))


def _gone_within(workers: set, seconds: float) -> None:
  deadline = time.time() + seconds
  while _alive(workers) and time.time() < deadline:
    time.sleep(0.1)
  assert not _alive(workers), f"processes {_alive(workers)} outlived the search by over {seconds} s"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc (Linux)")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=["kill-9", "sigterm", "sigint"])
def test_workers_do_not_outlive_a_killed_search(tmp_path, sig):
  main = _search(tmp_path)
  try:
    workers = _workers(main)
    time.sleep(2.0)  # they are evaluating: each call sleeps for 600 s
    os.kill(main.pid, sig)
    main.wait(timeout=60)
    _gone_within(workers, 10)
    if sig != signal.SIGKILL:
      lines = [line for line in (tmp_path / "stderr").read_text().splitlines() if line.strip()]
      assert main.returncode == 130 and lines == [
        f"search.py: stopped by {sig.name}; finished evaluations are kept: rerun the command to resume"
      ], lines
      summary = json.loads((tmp_path / loop.SUMMARY).read_text())
      assert summary["n_evaluated"] == len(journal.replay(tmp_path / loop.JOURNAL))
  finally:
    if main.poll() is None:
      main.kill()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc (Linux)")
def test_workers_killed_while_starting_exit_with_the_search(tmp_path):
  # Killed the moment its workers exist, while they still import the launch script and jax: they
  # watch their parent from the first import on, not only once they are ready.
  main = _search(tmp_path)
  try:
    workers = _workers(main)
    os.kill(main.pid, signal.SIGKILL)
    main.wait(timeout=60)
    _gone_within(workers, 2.5)
  finally:
    if main.poll() is None:
      main.kill()
