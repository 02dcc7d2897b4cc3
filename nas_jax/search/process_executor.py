"""The process-pool `Executor`: `num_workers` worker processes, with a time limit per evaluation
and crash detection. A call past its time limit gets its worker killed and ends as `timed_out`; a
worker that dies mid-call is replaced and the call reruns (`executors.rerun`), up to `retries`
times, then ends as failed (`executors.lost_every_time`). Workers die with the search that
started them.

Workers are forked from multiprocessing's forkserver, a clean process that imported nas_jax (and
so jax) once before any JAX backend ran, never from the search itself (JAX is not fork-safe once it
runs): a worker starts in a fraction of a second, where a spawned one spends seconds importing
jax, at the pool's start and at each worker replaced after a timeout or a crash. Where there is no
forkserver (Windows), workers are spawned.
"""

from __future__ import annotations

import collections
import itertools
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import signal
import threading
import time
import traceback
from typing import Any, Callable

from nas_jax.search.executors import (
  RETRIES,
  Outcome,
  call,
  check_workers,
  ended,
  lost_every_time,
  rerun,
  seconds_to_block,
  worker_setup,
  x64_enabled,
)

__all__ = ["ProcessExecutor"]

_READY = b"R"
_PRELOAD = ("nas_jax",)  # what the forkserver imports once for every worker
_KEPT_FUNCTIONS = 4  # functions a worker keeps for the calls that send them again


def _context() -> mp.context.BaseContext:
  """The forkserver context, preloading `_PRELOAD` (the first pool of a process starts the server);
  spawn where the platform has no forkserver."""
  if "forkserver" not in mp.get_all_start_methods():
    return mp.get_context("spawn")
  ctx = mp.get_context("forkserver")
  ctx.set_forkserver_preload(list(_PRELOAD))
  return ctx


def _die_with_parent() -> None:
  """Ends this worker as soon as the search that started it is gone, even mid-evaluation (a killed
  search must not leave training workers behind that write files nobody journals): the parent's
  sentinel, a pipe the search holds open (for a forked worker too, whose parent in the process
  table is the forkserver), reads end-of-file once the search dies."""
  sentinel = mp.parent_process().sentinel

  def watch() -> None:
    mpc.wait([sentinel])
    os._exit(1)

  threading.Thread(target=watch, daemon=True, name="nas_jax-orphan-watch").start()


def _process_main(conn: mpc.Connection, x64: bool, environ: dict) -> None:
  """A worker process: say `_READY`, then receive a pickled (pickled fn, args) and reply with a
  pickled (ok, payload, seconds), until an empty message or a closed pipe; it exits when its parent
  dies. It runs in the search's environment as it was when the worker was made (a forked worker
  would otherwise have the forkserver's, from when the server started). It keeps the last
  `_KEPT_FUNCTIONS` functions it unpickled, by their bytes, so a function sent again (one that
  pickles the same) is the same object: what a stateful one holds (a train task's trainer memory)
  lasts as long as the worker."""
  kept: collections.OrderedDict[bytes, Callable] = collections.OrderedDict()
  signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
  _die_with_parent()
  os.environ.clear()
  os.environ.update(environ)
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
      target=_process_main, args=(child, x64, dict(os.environ)), daemon=True, name=f"nas_jax-worker-{index}"
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
  """`num_workers` processes forked from a forkserver that preloaded nas_jax (spawned where there
  is none); never forked from the search, as JAX is not fork-safe.

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
    self._ctx = _context()
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
            " worker imports the script that started the search: start the search under"
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
      block = seconds_to_block(now, end, [s.started for s in busy if s.ready], self.timeout_s)
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
