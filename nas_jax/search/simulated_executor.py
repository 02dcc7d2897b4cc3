"""Simulated parallel workers: the protocol of NASBOT's experiments (Sec. 5, Fig. 2), best value
against wall-clock time with M asynchronous workers, for a task whose evaluations report what
they cost (`TaskResult.info["cost_s"]`: NAS-Bench-201's recorded training seconds, a synthetic
function's fidelity).

Each evaluation runs inline at `submit` (a table lookup is instant) and then occupies one of M
simulated workers for its cost; `wait` hands back the evaluations that end first on the simulated
clock, so the loop journals them in simulated-finish order and proposes for the freed worker with
the others still pending. Synchronous mode starts a batch of M together and hands all of them
back when the slowest ends. With `charge_model`, the wall seconds of each proposal (the loop times
`strategy.propose`) run on the clock too, one proposal after another, and delay the start of the
evaluation they chose: Fig. 2 "includes the time taken to determine the next point".
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import Any, Callable, NamedTuple, Sequence

from nas_jax.search.executors import Outcome, check_workers, run_inline
from nas_jax.search.state import Observation
from nas_jax.search.task import TaskResult

__all__ = ["SimulatedExecutor", "cost_of"]


class _Job(NamedTuple):
  """One evaluation on the simulated clock: `ready` is when its proposal was made; `start`,
  `finish` and `worker` are set when it takes a worker (async: at submit; sync: at `wait`)."""

  ticket: int
  outcome: Outcome
  cost: float
  ready: float
  start: float = 0.0
  finish: float = 0.0
  worker: int = 0


def cost_of(outcome: Outcome, task_name: str) -> float:
  """The simulated seconds an evaluation occupies its worker: `info["cost_s"]` of its TaskResult;
  0 for a failed one (it reported nothing; a result that is no TaskResult is journalled as failed).
  ValueError, in one line naming the task, when a result has no cost (the task reports none) or a
  bad one."""
  if outcome.error or outcome.timed_out or not isinstance(outcome.result, TaskResult):
    return 0.0
  info = outcome.result.info
  cost = info.get("cost_s") if isinstance(info, dict) else None
  if cost is None:
    raise ValueError(
      f"executor 'simulated': task {task_name!r} reports no cost (TaskResult.info['cost_s']) for its"
      " simulated workers; tasks that do: nb201 (tables with train_time_s_*), synthetic with task.fidelities"
    )
  if isinstance(cost, bool) or not isinstance(cost, numbers.Real) or not (math.isfinite(cost) and cost >= 0):
    raise ValueError(f"executor 'simulated': task {task_name!r} reported cost_s={cost!r}; expected seconds >= 0")
  return float(cost)


class SimulatedExecutor:
  """M simulated workers on a clock of simulated seconds since the search began.

  Async (default): a submission takes the worker that frees first (the lowest index among equals)
  as soon as its proposal is made; `wait` returns every evaluation that ends at the earliest
  finish time, by ticket (submission order). Sync: the evaluations submitted since the last
  `wait`, at most M, start together once the last of their proposals is made, and `wait` returns
  all of them, ordered by finish time then ticket, the clock moving to the slowest one's end.

  Proposals run one after another on one proposer: a proposal begins at the later of the present
  (the last result handed back) and the end of the previous proposal, and lasts its charged
  seconds (0 without `charge_model`). The loop fills every free worker before it takes a result,
  so a result that ends while the proposer is still busy is seen by the proposals after that fill.

  Each Outcome carries `sim_started_at` and `sim_finished_at` (its own end, in sync mode too) and
  worker "sim-<i>"; `seconds` stays the call's real wall time. The loop calls `start_clock` once
  before submitting (a resumed search's clock continues from its journal) and `charge` before each
  submission.
  """

  def __init__(self, num_workers: int, *, sync: bool = False, charge_model: bool = False):
    check_workers("SimulatedExecutor", num_workers, None)
    for name, value in (("sync", sync), ("charge_model", charge_model)):
      if not isinstance(value, bool):
        raise ValueError(f"SimulatedExecutor: {name}={value!r}; expected True or False")
    self.num_workers, self.sync, self.charge_model = num_workers, sync, charge_model
    self._tickets = itertools.count()
    self._task = "task"
    self.start_clock([], "task")

  def start_clock(self, done: Sequence[Observation], task_name: str) -> None:
    """Sets the clock to the end of the last evaluation in `done` (the journal replayed; 0 for a
    new search), every worker free then; recorded times are reused, never re-measured. Evaluations
    in flight when a search was killed were never journalled: their workers are free here.
    ValueError for a row without simulated times (a search run on real workers)."""
    missing = [o.trial_id for o in done if o.sim_started_at is None or o.sim_finished_at is None]
    if missing:
      raise ValueError(
        f"executor 'simulated': the journal's trial {missing[0]} has no simulated times (a search run on"
        " real workers); resume it with its own executor, or start a simulated search in another workdir"
      )
    self._task = task_name
    self._now = max((o.sim_finished_at for o in done), default=0.0)  # the last result handed back
    self._proposer = self._now  # when the proposer is free
    self._free = [self._now] * self.num_workers  # when each worker is free
    self._pending: list[_Job] = []
    self._charge = 0.0

  def charge(self, seconds: float) -> None:
    """The wall seconds of the proposal submitted next (ignored without `charge_model`)."""
    if self.charge_model:
      self._charge = float(seconds)

  def submit(self, fn: Callable, *args: Any) -> int:
    """Runs fn(*args) now and places it on the clock (ValueError when its result has no cost)."""
    if self.sync and len(self._pending) >= self.num_workers:
      raise ValueError(
        f"SimulatedExecutor(sync=True): a batch holds num_workers={self.num_workers} evaluations; wait"
        " for it before submitting more (prefetch must be 0)"
      )
    ticket, outcome = next(self._tickets), run_inline(fn, args)
    cost = cost_of(outcome, self._task)
    ready = max(self._now, self._proposer) + self._charge
    self._proposer, self._charge = ready, 0.0
    job = _Job(ticket, outcome, cost, ready)
    if not self.sync:
      worker = min(range(self.num_workers), key=lambda w: self._free[w])
      start = max(ready, self._free[worker])
      job = job._replace(start=start, finish=start + cost, worker=worker)
      self._free[worker] = job.finish
    self._pending.append(job)
    return ticket

  def wait(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
    """The evaluations handed back next on the simulated clock ([] when none is pending)."""
    del timeout  # simulated time passes at once
    if not self._pending:
      return []
    if self.sync:
      start = max(j.ready for j in self._pending)
      out = sorted(
        (j._replace(start=start, finish=start + j.cost, worker=w) for w, j in enumerate(self._pending)),
        key=lambda j: (j.finish, j.ticket),
      )
      self._pending = []
      self._now = max(self._now, out[-1].finish)
      self._free = [self._now] * self.num_workers
    else:
      first = min(j.finish for j in self._pending)
      out = [j for j in self._pending if j.finish == first]  # submission order: tickets increase
      self._pending = [j for j in self._pending if j.finish != first]
      self._now = max(self._now, first)
    return [
      (
        j.ticket,
        j.outcome._replace(worker=f"sim-{j.worker}", sim_started_at=j.start, sim_finished_at=j.finish),
      )
      for j in out
    ]

  def shutdown(self) -> None:
    self._pending = []

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.shutdown()
