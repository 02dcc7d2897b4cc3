"""Runs launch scripts for the tests without paying jax's import each time: imports what every
script imports first (`_env`, then jax, absl, ml_collections, nas_jax), then, for each request
line on stdin (JSON: argv, cwd, env, stdout, stderr, timeout), forks a child that runs argv[0] as
`python argv[0] argv[1:]` would, kills it at the timeout, and answers one JSON line: its exit code
and whether it timed out.

A fork is safe here because nothing has started a thread yet: jax starts its thread pools when a
backend is first used, which only the children do (checked at start). What jax reads from the
environment at import is the server's (the test process's); the rest of a request's environment
is the child's. Started by the `launch` fixture (tests/conftest.py); it stops when its stdin
closes."""

import json
import os
import runpy
import select
import signal
import sys

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


def _become(request: dict) -> None:
  """In the child: takes the request's working directory, environment, output files and argv, as
  `python argv[0] ...` would have them when the script's first line runs."""
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
  sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))


def main():
  if _threads() != 1:
    sys.exit(f"script_server.py: {_threads()} threads after the imports; a fork would not be safe")
  for stop in (signal.SIGINT, signal.SIGTERM):  # _env's handlers are the scripts'; each child installs them again
    signal.signal(stop, signal.SIG_DFL)
  for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:  # leaves the loop by an exception or sys.exit, which the interpreter ends as usual
      _become(request)
      runpy.run_path(sys.argv[0], run_name="__main__")
      sys.exit()
    with os.fdopen(os.pidfd_open(pid)) as exited:  # readable when the child has ended
      ended = select.select([exited], [], [], request["timeout"])[0]
    if not ended:
      os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"returncode": os.waitstatus_to_exitcode(status), "timed_out": not ended}), flush=True)


if __name__ == "__main__":
  main()
