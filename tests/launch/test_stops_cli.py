"""Issue 67's edges, end to end through launch/search.py and launch/report.py: SIGINT or SIGTERM
at any moment, from the first imports on, gives one line and exit code 130; a search stopped after
its workdir was replaced (`rm -rf W; mkdir W`) writes nothing into the new W and does not offer a
resume; a journal row nested 100,000 deep is one line naming file and line, not a RecursionError."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from nas_jax.search import journal, loop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = "--config=configs/random_synthetic.py:smoke"
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads signal masks from /proc (Linux)")


def _env():
  env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": ""}
  env.pop("NAS_JAX_VERBOSE", None)
  return env


def _search(workdir, *extra) -> subprocess.Popen:
  cmd = [sys.executable, "launch/search.py", SMOKE, f"--config.workdir={workdir}", "--noprogress", *extra]
  return subprocess.Popen(
    cmd, cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
  )


def _catches_sigterm(pid: int) -> bool:
  """Whether the process has a handler for SIGTERM (its SigCgt mask in /proc): Python installs
  SIGINT's at its start, `launch/_env.py` (the scripts' first import) SIGTERM's with its own."""
  with open(f"/proc/{pid}/status") as f:
    caught = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
  return bool(caught >> (signal.SIGTERM - 1) & 1)


def _stderr_lines(p: subprocess.Popen) -> list[str]:
  _, err = p.communicate(timeout=120)
  return [line for line in err.splitlines() if line.strip()]


def _wait_for(condition, what: str, p: subprocess.Popen, seconds: float = 120.0) -> None:
  deadline = time.monotonic() + seconds
  while not condition():
    if p.poll() is not None or time.monotonic() > deadline:
      p.kill()
      pytest.fail(f"{what} did not happen (rc {p.poll()}): {p.communicate()[1][-3000:]}")
    time.sleep(0.005)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_signal_while_the_script_imports_is_one_line_and_130(tmp_path, sig):
  # Issue 67: Ctrl-C here gave a 41-line KeyboardInterrupt traceback, SIGTERM exit 143 and no line.
  p = _search(tmp_path / "W")
  _wait_for(lambda: _catches_sigterm(p.pid), "launch/_env.py's handler", p, seconds=30)
  os.kill(p.pid, sig)  # jax and nas_jax take seconds to import after this
  lines = _stderr_lines(p)
  assert p.returncode == 130 and lines == [f"search.py: stopped by {sig.name} while starting; nothing was run"], lines
  assert not (tmp_path / "W").exists()


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["1s", "5s", "evaluating"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_a_signal_at_any_moment_is_one_line_and_130(tmp_path, sig, moment):
  # After 1 s or 5 s: importing, parsing the config or building the search, by the machine's
  # load; "evaluating": a second after config.json was written, the first evaluation sleeping.
  workdir = tmp_path / "W"
  p = _search(workdir, "--config.executor=inline", "--config.task.delay_s=60")
  _wait_for(lambda: _catches_sigterm(p.pid), "launch/_env.py's handler", p, seconds=30)
  if moment == "evaluating":
    _wait_for(lambda: (workdir / loop.CONFIG).exists(), "the search's start", p)
    time.sleep(1.0)
  else:
    time.sleep(float(moment[:-1]))
  os.kill(p.pid, sig)
  lines = _stderr_lines(p)
  assert p.returncode == 130 and len(lines) == 1, lines
  kept = "finished evaluations are kept: rerun the command to resume"
  assert lines[0] in (
    f"search.py: stopped by {sig.name} while starting; nothing was run",
    f"search.py: stopped by {sig.name}; {kept}",
  )
  if moment == "evaluating":  # the loop's stop: the summary of its journal, here empty
    assert lines[0].endswith(kept) and json.loads((workdir / loop.SUMMARY).read_text())["n_evaluated"] == 0


@pytest.mark.slow  # tests/search/test_loop.py checks the same stop in one process, in a second
def test_a_search_stopped_after_its_workdir_was_replaced_writes_nothing_there(tmp_path):
  # Issue 67's reproduction: it said "rerun the command to resume" and wrote its summary into the new W.
  workdir = tmp_path / "W"
  p = _search(workdir, "--config.executor=inline", "--config.task.delay_s=3", "--config.budget=20")
  _wait_for(lambda: len(journal.replay(workdir / loop.JOURNAL)) >= 1, "a first journal row", p)
  shutil.rmtree(workdir)
  os.mkdir(workdir)
  os.kill(p.pid, signal.SIGTERM)  # within the next evaluation's 3 s, so before its row would be refused
  lines = _stderr_lines(p)
  assert p.returncode == 130 and len(lines) == 1, lines
  assert re.fullmatch(
    rf"search\.py: stopped by SIGTERM; workdir '{re.escape(str(workdir))}' was deleted or replaced while this search"
    r" ran; it stopped and wrote nothing more there, .*\(\d+ evaluations were recorded before, in the folder it had"
    r" locked\)",
    lines[0],
  ), lines
  assert "rerun" not in lines[0]
  assert os.listdir(workdir) == []


DEEP_ROW = b'{"schema": 1, "info": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"


@pytest.mark.parametrize("script", ["search.py", "report.py"])
def test_a_journal_row_nested_100000_deep_is_one_line_naming_file_and_line(launch, tmp_path, script):
  # Issue 67: a 36-line RecursionError traceback in both scripts.
  workdir = tmp_path / "W"
  workdir.mkdir()
  (workdir / loop.JOURNAL).write_bytes(DEEP_ROW)
  if script == "report.py":
    (workdir / "search.json").write_text(json.dumps({"task": "synthetic", "goal": "max"}))
    args = [f"--workdir={workdir}"]
  else:
    args = [SMOKE, f"--config.workdir={workdir}", "--noprogress"]
  p = launch(f"launch/{script}", *args)
  lines = [line for line in p.stderr.splitlines() if line.strip()]
  assert p.returncode == 2 and len(lines) == 1, p.stderr[-3000:]
  assert lines[0].startswith(
    f"{script}: error: {workdir / loop.JOURNAL}:1: arrays and objects nested deeper than {journal.MAX_DEPTH} levels"
  ), lines
