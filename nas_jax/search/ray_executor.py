"""Runs calls as Ray tasks: the `Executor` for a Ray cluster (an optional dependency, imported
only when a RayExecutor is made)."""

from __future__ import annotations

import collections
import itertools
import os
import time
from typing import Any, Callable

from nas_jax.search.executors import Outcome, call, check_workers, ended, worker_setup, x64_enabled

__all__ = ["RayExecutor"]


def _ray_call(fn: Callable, args: tuple, x64: bool) -> tuple[bool, Any, float, str]:
  """Runs in a Ray worker: (ok, result or traceback text, seconds, worker id)."""
  import ray  # pylint: disable=g-import-not-at-top

  worker_setup(x64)
  node = ray.get_runtime_context().get_node_id()[:8]
  return (*call(fn, args), f"ray:{node}/pid{os.getpid()}")


class RayExecutor:
  """Runs calls as Ray tasks, at most `num_workers` at a time.

  Connects to the cluster at `address` ("auto", "ray://host:10001", ...) or, when `address` is
  "", uses the running Ray instance or starts a local one (which `shutdown` stops). Tasks are
  never retried. A call past `timeout_s` is force-cancelled, which kills its Ray worker process;
  a worker that dies mid-call ends its call with Ray's error text.
  """

  def __init__(self, num_workers: int, address: str = "", timeout_s: float | None = None):
    check_workers("RayExecutor", num_workers, timeout_s)
    if not isinstance(address, str):
      raise TypeError(f"RayExecutor: address={address!r}; expected a string ('' for local)")
    import ray  # pylint: disable=g-import-not-at-top  (optional dependency: pip install ray)

    self._ray = ray
    self._owns = not ray.is_initialized()
    if self._owns:
      try:
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False)
      except ConnectionError as e:
        raise ConnectionError(
          f"ray_address={address!r}: {e}. A head started by `ray start` may require its token"
          " (RAY_AUTH_MODE=token on this machine), and Ray connects to the address the head"
          " advertises: start it with --node-ip-address=<an address this machine reaches>"
        ) from None
    self.num_workers = num_workers
    self.timeout_s = timeout_s
    self._x64 = x64_enabled()
    self._remote = ray.remote(num_cpus=1, max_retries=0)(_ray_call)
    self._queue: collections.deque[tuple[int, Callable, tuple]] = collections.deque()
    self._running: dict[Any, tuple[int, float]] = {}  # ObjectRef -> (ticket, start time)
    self._tickets = itertools.count()

  def submit(self, fn: Callable, *args: Any) -> int:
    ticket = next(self._tickets)
    self._queue.append((ticket, fn, args))
    self._dispatch()
    return ticket

  def _dispatch(self) -> None:
    while self._queue and len(self._running) < self.num_workers:
      ticket, fn, args = self._queue.popleft()
      self._running[self._remote.remote(fn, args, self._x64)] = (ticket, time.monotonic())

  def _collect(self, block: float) -> list[tuple[int, Outcome]]:
    ray, refs, out = self._ray, list(self._running), []
    ready, _ = ray.wait(refs, num_returns=1, timeout=block)
    if ready:
      ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    now = time.monotonic()
    for ref in ready:
      ticket, start = self._running.pop(ref)
      try:
        out.append((ticket, ended(*ray.get(ref))))
      except ray.exceptions.RayError as e:  # the worker died or the task could not run
        out.append((ticket, Outcome(error=f"{type(e).__name__}: {e}", seconds=now - start, worker="ray")))
    if self.timeout_s is not None:
      for ref, (ticket, start) in list(self._running.items()):
        if now - start > self.timeout_s:
          ray.cancel(ref, force=True)
          del self._running[ref]
          error = f"timed out after {self.timeout_s:g} s; its Ray worker was killed"
          out.append((ticket, Outcome(error=error, seconds=now - start, worker="ray", timed_out=True)))
    self._dispatch()
    return out

  def wait(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
    end = None if timeout is None else time.monotonic() + timeout
    while True:
      now = time.monotonic()
      if not self._running:
        return []
      limits = [t for t in [end] if t is not None]
      if self.timeout_s is not None:
        limits += [start + self.timeout_s for _, start in self._running.values()]
      block = max(0.0, min(limits) - now) if limits else None
      out = self._collect(block)
      if out or (end is not None and time.monotonic() >= end):
        return out

  def shutdown(self) -> None:
    for ref in self._running:
      self._ray.cancel(ref, force=True)
    self._running, self._queue = {}, collections.deque()
    if self._owns and self._ray.is_initialized():
      self._ray.shutdown()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.shutdown()
