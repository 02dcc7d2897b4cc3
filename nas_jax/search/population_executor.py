"""An executor that evaluates the loop's proposals together, as one population.

The loop fills `num_workers` slots (the strategy hallucinating the pending points, as for parallel
workers) before it waits; `PopulationExecutor` only queues them at `submit` and runs them at
`wait`, in the caller's process. A function with a batched form, a `many` attribute
(`many([args, ...]) -> [result, ...]`, e.g. a train task's `evaluate`, which trains MLPs of one
padding together under `jax.vmap`), runs the queued calls as one batch; any other function runs
them one by one. Each result comes back under its own ticket, so the loop journals each on its
own. If a batch raises, its calls run again one by one, so that one bad point fails alone.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from nas_jax.search.executors import Outcome, call, check_workers, run_inline

__all__ = ["PopulationExecutor"]


class PopulationExecutor:
  """Runs the calls queued since the last `wait` together: num_workers is the population size.

  Like the inline executor it has no time limit and runs in the caller's process."""

  def __init__(self, num_workers: int = 1):
    check_workers("PopulationExecutor", num_workers, None)
    self.num_workers = num_workers
    self._tickets = itertools.count()
    self._queued: list[tuple[int, Callable, tuple]] = []

  def submit(self, fn: Callable, *args: Any) -> int:
    ticket = next(self._tickets)
    self._queued.append((ticket, fn, args))
    return ticket

  def wait(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
    del timeout  # the queued calls run now, to the end
    queued, self._queued = self._queued, []
    groups: dict[int, list[tuple[int, Callable, tuple]]] = {}
    for item in queued:  # one batch per function object (the loop submits one task's evaluate)
      groups.setdefault(id(item[1]), []).append(item)
    done = []
    for items in groups.values():
      many = getattr(items[0][1], "many", None)
      batch = None
      if many is not None and len(items) > 1:
        ok, payload, seconds = call(many, ([args for _, _, args in items],))
        if ok and len(payload) == len(items):
          share = seconds / len(items)
          name = f"population of {len(items)}"
          batch = [(t, Outcome(result=r, seconds=share, worker=name)) for (t, _, _), r in zip(items, payload)]
      done += batch if batch is not None else [(t, run_inline(fn, args)) for t, fn, args in items]
    return done

  def shutdown(self) -> None:
    self._queued = []

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.shutdown()
