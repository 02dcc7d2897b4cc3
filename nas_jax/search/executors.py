"""Executors run evaluations: `submit(fn, *args) -> ticket`, then `wait(timeout)` for finished
(ticket, Outcome) pairs. Inline (in the caller), and a spawn-context process pool with
per-evaluation timeouts and crash detection; the Ray one is `ray_executor.RayExecutor`. An
evaluation's errors come back as text in the Outcome, never raised; a lost worker (the
infrastructure's failure, not the evaluation's) reruns the call; a call that loses its worker on
every rerun is a failed evaluation, and a Ray cluster that can run nothing raises `WorkersLost`.
"""

from __future__ import annotations

import collections
import concurrent.futures.process
import itertools
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import signal
import sys
import threading
import time
import logging
import traceback
from typing import Any, Callable, NamedTuple, Protocol

__all__ = [
  "Outcome",
  "ended",
  "Executor",
  "InlineExecutor",
  "ProcessExecutor",
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
# `ray_executor`; check_workers, call and run_inline with `population_executor`.
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


def run_inline(fn: Callable, args: tuple) -> Outcome:
  """The Outcome of fn(*args) run in the caller's process (`call`)."""
  return ended(*call(fn, args), "inline")


def x64_enabled() -> bool:
  """Whether the caller runs JAX in float64; workers copy it so results match inline runs."""
  jax = sys.modules.get("jax")
  return bool(jax is not None and jax.config.jax_enable_x64)


def worker_setup(x64: bool) -> None:
  """Copies the caller's x64 setting into a worker (through the environment when JAX is not
  imported yet, so a worker whose calls never use JAX does not pay for importing it)."""
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


_READY = b"R"
_ORPHAN_POLL_S = 0.5
_KEPT_FUNCTIONS = 4  # functions a worker keeps for the calls that send them again


def _die_with(parent: int) -> None:
  """Ends this worker within `_ORPHAN_POLL_S` once its parent is gone, even mid-evaluation (a
  killed search must not leave training workers behind that write files nobody journals)."""

  def watch() -> None:
    while os.getppid() == parent:
      time.sleep(_ORPHAN_POLL_S)
    os._exit(1)

  threading.Thread(target=watch, daemon=True, name="nas_jax-orphan-watch").start()


def _process_main(conn: mpc.Connection, x64: bool, parent: int) -> None:
  """A worker process: say `_READY`, then receive a pickled (pickled fn, args) and reply with a
  pickled (ok, payload, seconds), until an empty message or a closed pipe; it exits when its parent
  dies. It keeps the last `_KEPT_FUNCTIONS` functions it unpickled, by their bytes, so a function
  sent again (one that pickles the same) is the same object: what a stateful one holds (a train
  task's trainer memory) lasts as long as the worker."""
  kept: collections.OrderedDict[bytes, Callable] = collections.OrderedDict()
  signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
  _die_with(parent)
  worker_setup(x64)
  try:
    conn.send_bytes(_READY)
  except (BrokenPipeError, OSError):
    return
  while True:
    try:
      msg = conn.recv_bytes()
    except (EOFError, OSError):
      return
    if not msg:
      return
    try:
      fn_bytes, args = pickle.loads(msg)
      fn = kept.pop(fn_bytes, None)
      if fn is None:
        fn = pickle.loads(fn_bytes)
      kept[fn_bytes] = fn  # the most recently sent last
      if len(kept) > _KEPT_FUNCTIONS:
        kept.popitem(last=False)
      ok, payload, seconds = call(fn, args)
    except Exception:  # unpickling failed: e.g. the task's module does not import here
      ok, payload, seconds = False, traceback.format_exc(), 0.0
    try:
      reply = pickle.dumps((ok, payload, seconds))
    except Exception:
      reply = pickle.dumps((False, f"the result could not be pickled:\n{traceback.format_exc()}", seconds))
    try:
      conn.send_bytes(reply)
    except (BrokenPipeError, OSError):
      return


class _Slot:
  """One worker process and the call it runs (host-side bookkeeping)."""

  def __init__(self, ctx, index: int, x64: bool):
    self.conn, child = ctx.Pipe(duplex=True)
    self.process = ctx.Process(
      target=_process_main, args=(child, x64, os.getpid()), daemon=True, name=f"nas_jax-worker-{index}"
    )
    self.process.start()
    child.close()
    self.name = f"process-{index}/pid{self.process.pid}"
    self.job: tuple[int, bytes, int] | None = None  # (ticket, payload, attempt) of the call it runs
    self.started = 0.0
    self.ready = False  # booted: its time limit runs from now on, not while it imports

  @property
  def ticket(self) -> int | None:
    """The ticket of the call it runs; None when idle."""
    return None if self.job is None else self.job[0]

  def stop(self) -> None:
    if self.process.is_alive():
      self.process.kill()
    self.process.join()
    self.conn.close()


class ProcessExecutor:
  """`num_workers` spawned processes (never forked: JAX is not fork-safe).

  A call past `timeout_s` (counted from dispatch, or from when a fresh worker finished booting)
  gets its process killed and replaced, and ends as `timed_out`. A worker that dies mid-call (a
  segfault, `os._exit`, the OOM killer, `kill -9`) never hangs the search: the call reruns on a
  fresh worker, up to `retries` times, and then ends as failed (`lost_every_time`). A worker that dies
  while starting (before its first call) ends its call with the reason as error. Workers copy the
  caller's `jax_enable_x64` setting.
  """

  def __init__(self, num_workers: int, timeout_s: float | None = None, retries: int = RETRIES):
    check_workers("ProcessExecutor", num_workers, timeout_s, retries)
    self.num_workers = num_workers
    self.timeout_s = timeout_s
    self.retries = retries
    self._ctx = mp.get_context("spawn")
    self._x64 = x64_enabled()
    self._slots = [_Slot(self._ctx, i, self._x64) for i in range(num_workers)]
    self._queue: collections.deque[tuple[int, bytes, int]] = collections.deque()  # (ticket, payload, attempt)
    self._tickets = itertools.count()

  def submit(self, fn: Callable, *args: Any) -> int:
    """Queues fn(*args). Raises (here, in the caller) if fn or args do not pickle."""
    payload = pickle.dumps((pickle.dumps(fn), args))
    ticket = next(self._tickets)
    self._queue.append((ticket, payload, 1))
    self._dispatch()
    return ticket

  def _dispatch(self) -> None:
    for i in range(len(self._slots)):
      if not self._queue:
        return
      if self._slots[i].ticket is None:
        if not self._slots[i].process.is_alive():  # it died after its last reply, or was retired
          self._slots[i].stop()
          self._slots[i] = _Slot(self._ctx, i, self._x64)
        slot = self._slots[i]
        slot.job = self._queue.popleft()
        slot.started = time.monotonic()
        slot.conn.send_bytes(slot.job[1])

  def _retire(self, slot: _Slot) -> None:
    """Kills a slot's process; `_dispatch` starts a new one when the slot is next needed."""
    slot.job = None
    slot.stop()

  def _collect(self) -> list[tuple[int, Outcome]]:
    out, now = [], time.monotonic()
    for slot in self._slots:
      if slot.ticket is None:
        continue
      reply = None
      try:
        while reply is None and slot.conn.poll():
          msg = slot.conn.recv_bytes()
          if msg == _READY:
            slot.ready, slot.started = True, max(slot.started, now)
          else:
            reply = pickle.loads(msg)
      except (EOFError, OSError):
        pass  # the pipe closed: the process died; handled below
      ticket, elapsed = slot.ticket, now - slot.started
      if reply is not None:
        slot.job = None
        out.append((ticket, ended(*reply, slot.name)))
      elif not slot.process.is_alive():
        slot.process.join()
        code = slot.process.exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        job, ready = slot.job, slot.ready
        self._retire(slot)
        what = f"worker {slot.name} {how} during an evaluation"
        if ready and rerun(what, job[2], self.retries):  # lost mid-call: it runs again on a fresh one
          self._queue.appendleft((job[0], job[1], job[2] + 1))
          continue
        if ready:
          error = lost_every_time(what, self.retries)
        else:  # it died importing: most often a script that starts a search unguarded
          error = (
            f"worker {slot.name} {how} while starting, before any evaluation (its stderr says why). A"
            " spawned worker imports the script that started the search: start the search under"
            ' `if __name__ == "__main__":`, and keep the task importable'
          )
        out.append((ticket, Outcome(error=error, seconds=elapsed, worker=slot.name)))
      elif slot.ready and self.timeout_s is not None and elapsed > self.timeout_s:
        error = f"timed out after {self.timeout_s:g} s; worker {slot.name} was killed"
        out.append((ticket, Outcome(error=error, seconds=elapsed, worker=slot.name, timed_out=True)))
        self._retire(slot)
    self._dispatch()
    return out

  def wait(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
    end = None if timeout is None else time.monotonic() + timeout
    while True:
      out = self._collect()
      busy = [s for s in self._slots if s.ticket is not None]
      now = time.monotonic()
      if out or not busy or (end is not None and now >= end):
        return out
      limits = [end] + [s.started + self.timeout_s for s in busy if s.ready and self.timeout_s is not None]
      limits = [t for t in limits if t is not None]
      block = max(0.0, min(limits) - now) if limits else None
      mpc.wait([s.conn for s in busy] + [s.process.sentinel for s in busy], timeout=block)

  def shutdown(self) -> None:
    for slot in self._slots:
      if slot.ticket is None and slot.ready and slot.process.is_alive():  # else it is killed
        try:
          slot.conn.send_bytes(b"")
        except OSError:
          pass
        slot.process.join(timeout=2.0)
      slot.stop()
    self._slots, self._queue = [], collections.deque()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.shutdown()
