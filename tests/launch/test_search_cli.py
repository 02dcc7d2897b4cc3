"""launch/search.py end to end: a smoke run, a named config error, and (slow) kill -9 in the middle
of a parallel search, then a restart that replays the journal and evaluates nothing twice."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from nas_jax.search import journal, loop
from nas_jax.spaces.space import layer_graph_space
from nas_jax.wiring import config as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def search_cmd(workdir, *extra):
  return [
    sys.executable,
    "launch/search.py",
    "--config=configs/random_synthetic.py:smoke",
    f"--config.workdir={workdir}",
    "--noprogress",
    *extra,
  ]


@pytest.mark.slow
def test_smoke_run_writes_journal_summary_and_plot(tmp_path):
  p = subprocess.run(
    search_cmd(tmp_path / "run", "--config.budget=4"), cwd=ROOT, capture_output=True, text=True, timeout=300
  )
  assert p.returncode == 0, p.stderr[-3000:]
  summary = json.loads((tmp_path / "run" / loop.SUMMARY).read_text())
  done = journal.replay(tmp_path / "run" / loop.JOURNAL)
  assert summary["n_evaluated"] == len(done) == 4
  assert f"best value {summary['best_value']}" in p.stdout
  assert (tmp_path / "run" / config_lib.PROGRESS).exists()


@pytest.mark.slow
def test_a_constrained_multi_objective_search_from_the_command_line(tmp_path):
  flags = ("--config.budget=5", "--config.objectives=params", "--config.constraints.max_params=3e6")
  p = subprocess.run(search_cmd(tmp_path / "mo", *flags), cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert p.returncode == 0, p.stderr[-3000:]
  summary = json.loads((tmp_path / "mo" / loop.SUMMARY).read_text())
  assert f"{len(summary['pareto_front'])} on the Pareto front" in p.stdout
  assert all(o.objectives["params"] <= 3e6 for o in journal.replay(tmp_path / "mo" / loop.JOURNAL))
  p = subprocess.run(
    search_cmd(tmp_path / "none", "--config.constraints.max_params=10"), cwd=ROOT, capture_output=True, text=True
  )
  assert p.returncode != 0 and "constraints: none of" in p.stderr and "loosen config.constraints" in p.stderr
  assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_config_errors_name_the_field(tmp_path):
  p = subprocess.run(
    search_cmd(tmp_path / "run", "--config.executor=slurm"), cwd=ROOT, capture_output=True, text=True, timeout=300
  )
  assert p.returncode != 0
  assert "config.executor: 'slurm' is not allowed; choose one of: inline, local, ray" in p.stderr


def _lines(path):
  return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_loses_nothing_and_repeats_nothing(tmp_path):
  workdir = tmp_path / "run"
  path = workdir / loop.JOURNAL
  cmd = search_cmd(
    workdir, "--config.budget=14", "--config.task.delay_s=0.5", "--config.executor=local", "--config.num_workers=2"
  )
  p = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  end = time.monotonic() + 240
  while _lines(path) < 4:
    assert p.poll() is None and time.monotonic() < end, "the search ended or stalled before the kill"
    time.sleep(0.05)
  os.kill(p.pid, signal.SIGKILL)
  p.wait()
  before = journal.replay(path)
  assert 4 <= len(before) < 14
  # Orphaned workers notice the closed pipe and exit by themselves.
  end = time.monotonic() + 60
  while True:
    try:
      os.killpg(p.pid, 0)
    except ProcessLookupError:
      break
    assert time.monotonic() < end, "worker processes outlived the killed search"
    time.sleep(0.2)

  again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert again.returncode == 0, again.stderr[-3000:]
  after = journal.replay(path)
  assert len(after) == 14 and after[: len(before)] == before
  assert len({o.trial_id for o in after}) == 14
  space = layer_graph_space("cnn")
  keys = [space.canonical_key(space.from_json(o.arch_json)) for o in after]
  assert len(set(keys)) == 14  # no architecture evaluated twice, before or after the kill
  assert json.loads((workdir / loop.SUMMARY).read_text())["n_evaluated"] == 14


@pytest.mark.slow
def test_kill_9_mid_bracket_then_resume_rebuilds_the_brackets(tmp_path):
  workdir = tmp_path / "mf"
  path = workdir / loop.JOURNAL
  flags = ("--config.budget=20", "--config.task.delay_s=0.3", "--config.executor=local", "--config.num_workers=2")
  cmd = search_cmd(workdir, *flags, "--config.task.fidelities=1,3,9", "--config.scheduler=hyperband")
  p = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  end = time.monotonic() + 240
  while _lines(path) < 7:  # inside the first bracket's first rung
    assert p.poll() is None and time.monotonic() < end, "the search ended or stalled before the kill"
    time.sleep(0.05)
  os.kill(p.pid, signal.SIGKILL)
  p.wait()
  before = journal.replay(path)
  again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "evaluations per fidelity" in again.stdout
  after = journal.replay(path)
  assert len(after) == 20 and after[: len(before)] == before
  seen = [(json.dumps(o.arch_json, sort_keys=True), o.fidelity) for o in after]
  assert len(set(seen)) == 20  # nothing repeated at one fidelity
  first_bracket = [o for o in after if o.info["strategy"].get("bracket") == 0]
  assert sorted(o.fidelity for o in first_bracket) == [1.0] * 9 + [3.0] * 3 + [9.0]  # Hyperband's first bracket
