"""Imported first by every launch script, to set up jax's environment before jax is imported, and
to put the repository root on sys.path, so that a config loaded by path imports its base
(`from configs import random_nb201`) from any working directory.

OpenBLAS's own threads fight XLA's thread pool on CPU and slow a float64 Cholesky many times over
(benchmarks/bench_gp.py measures it), so one thread. Every compiled program is kept in a
persistent cache, so a resumed search, a repeated network, or the next seed of a comparison skips
recompiling it: a search compiles dozens of small programs (a GP fit and prediction at each
padded size, the OTMANN cost tensors of each chunk shape), a third of a 60-query NASBOT run on
NAS-Bench-201 when they are compiled anew. Set JAX_COMPILATION_CACHE_DIR to move the cache, or
to "" to turn it off, and JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS to keep only programs
slower to compile than that. Worker processes inherit these settings.

A worker process of a search runs this module first too, as it re-imports the launch script
before anything of nas_jax runs in it: from here on it dies with its parent (on Linux), so a search
killed while its workers still import leaves none of them behind for the seconds those imports
take (nas_jax.search.process_executor watches the search once a worker is up). A worker forked
by multiprocessing's forkserver has the server as its parent, and the server exits with the
search.

SIGINT and SIGTERM stop a script from here on with one line and exit code 130, while it still
imports jax too; `_cli.run` takes them over when the script starts.
"""

import ctypes
import os
import signal
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "nas_jax", "xla"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")


# A worker (multiprocessing's marker on a spawned one's command line, the forkserver's command on a
# forked one's; its sys.argv is the parent's) asks Linux to kill it with its parent. A watching
# thread would not do: importing jax holds the interpreter lock for seconds at a time. Linux sends
# the signal when the thread that started the worker ends: the search loop's, which lasts as long
# as the search, or the forkserver's only one.
_WORKER = "--multiprocessing-fork" in sys.orig_argv or any("multiprocessing.forkserver" in a for a in sys.orig_argv)
if _WORKER and sys.platform.startswith("linux"):
  PR_SET_PDEATHSIG = 1
  ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
  if os.getppid() == 1:  # the search died before this line: init adopted the worker
    os._exit(1)


def _stopped_while_starting(signum, frame):
  """SIGINT or SIGTERM while the script still imports (jax takes seconds): one line, exit 130.
  Nothing has run yet, so nothing is left to clean up: os._exit, not an exception that an import
  under way would turn into a traceback. `_cli.run` installs the handler of the running script."""
  name = signal.Signals(signum).name
  os.write(2, f"{os.path.basename(sys.argv[0])}: stopped by {name} while starting; nothing was run\n".encode())
  os._exit(130)


# Installed before anything slow is imported. A worker leaves Ctrl-C (sent to the terminal's whole
# process group) to its parent, as it does once it runs; its parent stops it.
if _WORKER:
  signal.signal(signal.SIGINT, signal.SIG_IGN)
else:
  signal.signal(signal.SIGINT, _stopped_while_starting)
  signal.signal(signal.SIGTERM, _stopped_while_starting)
