"""The `launch` fixture answers as a fresh interpreter does: exit codes, output, argv, environment,
an uncaught exception, exit handlers, a timeout; and the launch scripts' first import runs again in
each child."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = """import os, sys
print("argv", sys.argv[1:], "cwd", os.getcwd(), "var", os.environ.get("NAS_JAX_TEST_VAR"))
print("to stderr", file=sys.stderr)
what = sys.argv[1]
if what == "code":
  sys.exit(3)
if what == "text":
  sys.exit("bye")
if what == "raise":
  raise ValueError("boom")
if what == "env":
  sys.path.insert(0, os.path.join(os.getcwd(), "launch"))
  import _env
  print("blas", os.environ["OPENBLAS_NUM_THREADS"], "main", __name__, "path0", sys.path[1] == os.path.dirname(__file__))
if what == "atexit":
  import atexit
  atexit.register(print, "at exit")
if what == "sleep":
  import time
  time.sleep(60)
"""


@pytest.mark.parametrize("what", ["code", "text", "raise", "env", "atexit", "none"])
def test_a_child_answers_as_a_fresh_interpreter(launch, tmp_path, what):
  script = tmp_path / "s.py"
  script.write_text(SCRIPT)
  env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
  env["NAS_JAX_TEST_VAR"] = "x"
  got = launch(script, what, "--flag=1", env=env)
  want = subprocess.run(
    [sys.executable, str(script), what, "--flag=1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
  )
  assert (got.returncode, got.stdout) == (want.returncode, want.stdout)
  if what == "raise":  # the child's traceback has the server's and runpy's frames too
    got_lines, want_lines = got.stderr.splitlines(), want.stderr.splitlines()
    assert got_lines[0] == want_lines[0] and got_lines[1:2] == ["Traceback (most recent call last):"]
    assert got_lines[-1] == want_lines[-1] == "ValueError: boom"
  else:
    assert got.stderr == want.stderr
  assert f"cwd {ROOT} var x" in got.stdout
  if what == "atexit":
    assert got.stdout.endswith("at exit\n")
  if what == "env":
    assert "blas 1 main __main__ path0 True" in got.stdout  # _env ran again, in the child's environment


def test_a_child_past_its_timeout_is_killed_and_the_next_call_runs(launch, tmp_path):
  script = tmp_path / "s.py"
  script.write_text(SCRIPT)
  with pytest.raises(subprocess.TimeoutExpired):
    launch(script, "sleep", timeout=1)
  assert launch(script, "code").returncode == 3
