"""Executors run evaluations: `submit(fn, *args) -> ticket`, then `wait(timeout)` for finished
(ticket, Outcome) pairs. This module holds the protocol, the Outcome, the rules for a lost worker
and the inline executor; the process pool is `process_executor.ProcessExecutor`, the Ray one
`ray_executor.RayExecutor`. An evaluation's errors come back as text in the Outcome, never raised;
a lost worker (the infrastructure's failure, not the evaluation's) reruns the call; a call that
loses its worker on every rerun is a failed evaluation, and a Ray cluster that can run nothing
raises `WorkersLost`.
"""

from __future__ import annotations

import concurrent.futures.process
import itertools
import logging
import os
import sys
import time
import traceback
from typing import Any, Callable, Iterable, NamedTuple, Protocol

__all__ = [
  "Outcome",
  "ended",
  "Executor",
  "InlineExecutor",
  "WorkersLost",
  "lost_worker",
  "run_inline",
]

RETRIES = 3  # reruns of a call whose worker was lost, by default

log = logging.getLogger(__name__)


class Outcome(NamedTuple):
  """How one submitted call ended.

  Attributes:
    result: the call's return value; None when it failed.
    error: "" on success, else the traceback or what stopped it.
    seconds: wall time of the call (until it was stopped, for a timeout).
    worker: which worker ran it.
    timed_out: True when the executor stopped it at its time limit.
    sim_started_at: its start on a simulated clock (seconds since the search began;
      `simulated_executor`); None on real workers.
    sim_finished_at: its end on that clock; None on real workers.
  """

  result: Any = None
  error: str = ""
  seconds: float = 0.0
  worker: str = ""
  timed_out: bool = False
  sim_started_at: float | None = None
  sim_finished_at: float | None = None


def ended(ok: bool, payload: Any, seconds: float, worker: str) -> Outcome:
  """The Outcome of a call that `call` reported as (ok, result or traceback text, seconds)."""
  if ok:
    return Outcome(result=payload, seconds=seconds, worker=worker)
  return Outcome(error=payload, seconds=seconds, worker=worker)


class WorkersLost(ConnectionError):
  """No call can run: this process's Ray node died, or the cluster's head stopped answering. The
  evaluations in flight did not fail: nothing is recorded for them, and rerunning the search
  resumes it from its journal."""


def lost_worker(error: BaseException) -> bool:
  """Whether `error` says the infrastructure lost a call (its node, raylet, worker process or
  result died), as opposed to the call's own failure, which Ray raises as a `RayTaskError`.

  Ray's errors are recognised only when Ray is imported (an executor that gets them has imported
  it); a standard-library process pool's `BrokenProcessPool` always is.
  """
  if isinstance(error, concurrent.futures.process.BrokenProcessPool):
    return True
  ray = sys.modules.get("ray")
  if ray is None or isinstance(error, ray.exceptions.RayTaskError):
    return False
  x = ray.exceptions
  return isinstance(
    error,
    (
      x.NodeDiedError,
      x.LocalRayletDiedError,
      x.WorkerCrashedError,
      x.RayActorError,  # ActorDiedError, ActorUnavailableError
      x.RaySystemError,
      x.ObjectLostError,  # OwnerDiedError, ObjectFetchTimedOutError, ...
      x.RpcError,
    ),
  )


def rerun(what: str, attempt: int, retries: int) -> bool:
  """Whether a call that lost its worker on run `attempt` (1 for the first) runs again; says so
  in one warning line when it does."""
  if attempt > retries:
    return False
  log.warning("%s; rerunning the evaluation (rerun %d of %d)", what, attempt, retries)
  return True


def lost_every_time(what: str, retries: int) -> str:
  """The error of a call that lost its worker on each of its 1 + `retries` runs: on workers that
  stay up for other calls, the evaluation itself takes its worker down."""
  return (
    f"{what}, on each of its {retries + 1} runs: the evaluation itself takes its worker down (memory,"
    " a crash in native code)"
  )


class Executor(Protocol):
  """The one stateful object of a search: runs calls on `num_workers` workers."""

  num_workers: int

  def submit(self, fn: Callable, *args: Any) -> int:
    """Starts (or queues) fn(*args); returns its ticket."""

  def wait(self, timeout: float | None) -> list[tuple[int, Outcome]]:
    """Blocks up to `timeout` seconds (None: until one call ends); returns the calls that ended.
    Raises `WorkersLost` when the workers are gone (a Ray cluster that can run nothing)."""

  def shutdown(self) -> None:
    """Stops every worker; calls still running are abandoned."""


# check_workers, call, ended, lost_every_time, rerun, x64_enabled and worker_setup are shared with
# `process_executor` and `ray_executor` (seconds_to_block too); check_workers and run_inline with
# `population_executor` (call too) and `simulated_executor`.
def check_workers(name: str, num_workers: Any, timeout_s: Any, retries: Any = 0) -> None:
  if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
    raise ValueError(f"{name}: num_workers={num_workers!r}; expected an integer >= 1")
  if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
    raise ValueError(f"{name}: retries={retries!r}; expected an integer >= 0 (reruns of a call whose worker died)")
  if timeout_s is not None and (
    isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0
  ):
    raise ValueError(f"{name}: timeout_s={timeout_s!r}; expected None (no limit) or a number > 0")


def call(fn: Callable, args: tuple) -> tuple[bool, Any, float]:
  """(ok, result or traceback text, seconds). Exceptions are data here; BaseExceptions
  (KeyboardInterrupt, SystemExit) still stop the caller."""
  t0 = time.perf_counter()
  try:
    return True, fn(*args), time.perf_counter() - t0
  except Exception:  # the evaluation's failure is recorded, not raised (STYLE 5)
    return False, traceback.format_exc(), time.perf_counter() - t0


def seconds_to_block(now: float, end: float | None, starts: Iterable[float], timeout_s: float | None) -> float | None:
  """How long a `wait` called with deadline `end` may block at `now`: until that deadline or the
  first time limit (`timeout_s` after each of `starts`) of the calls it runs, whichever is first;
  None (until a call ends) when there is neither."""
  limits = [] if end is None else [end]
  if timeout_s is not None:
    limits += [t + timeout_s for t in starts]
  return max(0.0, min(limits) - now) if limits else None


def run_inline(fn: Callable, args: tuple) -> Outcome:
  """The Outcome of fn(*args) run in the caller's process (`call`)."""
  return ended(*call(fn, args), "inline")


def x64_enabled() -> bool:
  """Whether the caller runs JAX in float64; workers copy it so results match inline runs."""
  jax = sys.modules.get("jax")
  return bool(jax is not None and jax.config.jax_enable_x64)


def worker_setup(x64: bool) -> None:
  """Copies the caller's x64 setting into a worker (through the environment when JAX is not
  imported yet, so a Ray or spawned worker whose calls never use JAX does not pay for importing
  it; a forkserver's workers have it imported already)."""
  # Many JAX processes share one accelerator: allocate on demand instead of 75% each.
  os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
  jax = sys.modules.get("jax")
  if jax is None:
    os.environ["JAX_ENABLE_X64"] = "1" if x64 else "0"
  else:
    jax.config.update("jax_enable_x64", x64)


class InlineExecutor:
  """Runs each call inside `submit`, in the caller's process: for cheap tasks (synthetic,
  tabular). It has no time limit. With num_workers > 1 the loop fills every slot before it
  waits, which simulates synchronous batches of that size with pending points."""

  def __init__(self, num_workers: int = 1):
    check_workers("InlineExecutor", num_workers, None)
    self.num_workers = num_workers
    self._tickets = itertools.count()
    self._done: list[tuple[int, Outcome]] = []

  def submit(self, fn: Callable, *args: Any) -> int:
    ticket = next(self._tickets)
    self._done.append((ticket, run_inline(fn, args)))
    return ticket

  def wait(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
    del timeout  # every call has already ended
    done, self._done = self._done, []
    return done

  def shutdown(self) -> None:
    self._done = []

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.shutdown()
