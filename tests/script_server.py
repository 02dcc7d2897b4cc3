"""Runs launch scripts for the tests without paying jax's import each time: imports what every
script imports first (`_env`, then jax, absl, ml_collections, nas_jax), then, for each request
line on stdin (JSON: argv, cwd, env, stdout, stderr), forks a child that runs argv[0] as
`python argv[0] argv[1:]` would, and answers two lines: the child's pid, then its exit code.

A fork is safe here because nothing has started a thread yet: jax starts its thread pools when a
backend is first used, which only the children do (checked at start). What jax reads from the
environment at import is the server's (the test process's); the rest of a request's environment
is the child's. Started by the `launch` fixture (tests/conftest.py); it stops when its
stdin closes."""

import json
import os
import runpy
import select
import signal
import sys
import traceback

LAUNCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch")
sys.path.insert(0, LAUNCH)
import _env  # noqa: E402, F401  (as the scripts do, before jax)

import absl.app  # noqa: E402, F401
import absl.flags  # noqa: E402, F401
import jax  # noqa: E402, F401
import ml_collections  # noqa: E402, F401

import nas_jax  # noqa: E402, F401


def _threads() -> int:
  return len(os.listdir("/proc/self/task"))


def _run(request: dict) -> int:
  """In the child: the script as __main__ with the request's argv, working directory, environment
  and output files; returns its exit code as the interpreter would."""
  os.chdir(request["cwd"])
  os.environ.clear()
  os.environ.update(request["env"])
  for fd, path, mode in (
    (0, os.devnull, os.O_RDONLY),
    (1, request["stdout"], os.O_WRONLY),
    (2, request["stderr"], os.O_WRONLY),
  ):
    os.dup2(os.open(path, mode | (os.O_CREAT | os.O_TRUNC if fd else 0)), fd)
  sys.modules.pop("_env")  # the script's first import runs it again, in this environment
  sys.argv = list(request["argv"])
  sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))  # as for `python script.py`
  try:
    runpy.run_path(sys.argv[0], run_name="__main__")
    return 0
  except SystemExit as e:
    if e.code is None or isinstance(e.code, int):
      return e.code or 0
    print(e.code, file=sys.stderr)
    return 1
  except BaseException:  # noqa: BLE001  (what the interpreter does with an uncaught exception)
    traceback.print_exc()
    return 1


def main():
  if _threads() != 1:
    sys.exit(f"script_server.py: {_threads()} threads after the imports; a fork would not be safe")
  for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
      code = 1
      try:
        code = _run(request)
      finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    with os.fdopen(os.pidfd_open(pid)) as exited:  # readable when the child has ended
      ended = select.select([exited], [], [], request["timeout"])[0]
    if not ended:
      os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"returncode": os.waitstatus_to_exitcode(status), "timed_out": not ended}), flush=True)


if __name__ == "__main__":
  main()
