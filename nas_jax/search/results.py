"""Finished evaluations as Observations, and what a search's observations sum up to.

`observe` turns an executor's `Outcome` into the journalled `Observation` (checking the task's
result); `summarize` gives summary.json: the best value at full fidelity, counts, and the Pareto
front of a multi-objective task.
"""

from __future__ import annotations

import collections
import math
import numbers
import time
from typing import Any, Sequence

import numpy as np

from nas_jax.acquisition import pareto
from nas_jax.arch.json_io import show
from nas_jax.search.executors import Outcome
from nas_jax.search.state import Observation, Status, observation_scores, to_score
from nas_jax.search.task import Task, TaskResult, full_fidelity

__all__ = ["observe", "jsonable", "full_fidelity_ok", "pareto_front", "summarize"]


def jsonable(x: Any) -> Any:
  """numpy scalars and arrays to Python; anything else unknown to its repr (journal lines are JSON)."""
  if isinstance(x, dict):
    return {str(k): jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [jsonable(v) for v in x]
  if isinstance(x, np.ndarray):
    return jsonable(x.tolist())
  if isinstance(x, np.generic):
    x = x.item()
  if isinstance(x, float) and not math.isfinite(x):
    return repr(x)
  if x is None or isinstance(x, (bool, int, float, str)):
    return x
  return repr(x)


def _finite(x: Any) -> float | None:
  return None if x is None or not math.isfinite(float(x)) else float(x)


def _is_number(x: Any) -> bool:
  """A real scalar: a Python or numpy number, or a 0-d numpy or jax array of one (not a bool)."""
  if isinstance(x, (bool, np.bool_)):
    return False
  if isinstance(x, numbers.Real):
    return True
  return getattr(x, "shape", None) == () and np.dtype(getattr(x, "dtype", object)).kind in "fiu"


def _result_problem(result: Any, objectives: Sequence[str] = ()) -> str:
  """Why `result` is not a usable TaskResult of a task with these other `objectives`, or "" when it is."""
  if not isinstance(result, TaskResult):
    return f"task.evaluate returned a {type(result).__name__}; expected a TaskResult"
  if not _is_number(result.value):
    return f"task.evaluate returned TaskResult(value={show(result.value)}); expected a number"
  if result.test_value is not None and not _is_number(result.test_value):
    return f"task.evaluate returned TaskResult(test_value={show(result.test_value)}); expected a number or None"
  if not isinstance(result.info, dict):
    return f"task.evaluate returned TaskResult(info={type(result.info).__name__}); expected a dict"
  got = result.objectives if isinstance(result.objectives, dict) else None
  if got is None or sorted(got) != sorted(objectives) or not all(_is_number(v) for v in got.values()):
    want = ", ".join(objectives) or "none"
    return f"task.evaluate returned TaskResult(objectives={show(result.objectives)}); expected numbers for: {want}"
  curve = result.curve
  if not isinstance(curve, (list, tuple)) or not all(
    isinstance(p, (list, tuple)) and len(p) == 2 and all(map(_is_number, p)) for p in curve
  ):
    return f"task.evaluate returned TaskResult(curve={show(curve)}); expected ((fidelity, value), ...) numbers"
  return ""


def observe(
  trial_id: int,
  arch_json: dict,
  outcome: Outcome,
  info: dict,
  objectives: Sequence[str] = (),
  fidelity: float | None = None,
) -> Observation:
  """The Observation of a finished call: TIMEOUT, FAILED, NAN (a non-finite value or objective)
  or OK. `objectives` names the task's other objectives, which an OK result must report;
  `fidelity` is the one the call evaluated at (None for a single-fidelity task)."""
  common = dict(
    trial_id=trial_id,
    arch_json=arch_json,
    seconds=float(outcome.seconds),
    worker=outcome.worker,
    finished_at=time.time(),
    fidelity=fidelity,
    sim_started_at=outcome.sim_started_at,
    sim_finished_at=outcome.sim_finished_at,
  )
  if outcome.timed_out or outcome.error:
    status = Status.TIMEOUT if outcome.timed_out else Status.FAILED
    return Observation(value=None, status=status, error=outcome.error, info=jsonable(info), **common)
  result = outcome.result
  problem = _result_problem(result, objectives)
  if problem:  # a bug in the task: journalled like a crash, so the search goes on and says why
    return Observation(value=None, status=Status.FAILED, error=problem, info=jsonable(info), **common)
  info = jsonable({**info, "task": dict(result.info)})
  common["curve"] = [[float(f), float(v)] for f, v in result.curve]
  value = float(result.value)
  others = {str(k): float(v) for k, v in result.objectives.items()}
  bad = {k: v for k, v in others.items() if not math.isfinite(v)}
  if not math.isfinite(value) or bad:
    what = f"{value}" if not math.isfinite(value) else f"objectives {bad}"
    return Observation(value=None, status=Status.NAN, error=f"the evaluation returned {what}", info=info, **common)
  return Observation(
    value=value,
    status=Status.OK,
    error="",
    test_value=_finite(result.test_value),
    info=info,
    objectives=others,
    **common,
  )


def full_fidelity_ok(observations: Sequence[Observation], task: Task) -> list[Observation]:
  """The OK observations at the task's full fidelity (all OK ones for a single-fidelity task):
  those whose values the best value, the Pareto front and the regret are taken from, since a
  value at a lower fidelity (fewer epochs) is not comparable."""
  full = full_fidelity(task)
  return [o for o in observations if o.ok and (full is None or o.fidelity in (None, full))]


def pareto_front(observations: Sequence[Observation], task: Task) -> list[Observation]:
  """The OK observations at full fidelity (`full_fidelity_ok`) that no other one dominates on
  (value, *task.objectives), each objective in its goal's direction, in trial order; [] for a
  single-objective task."""
  ok = full_fidelity_ok(observations, task)
  if not task.objectives or not ok:
    return []
  front = pareto.non_dominated(observation_scores(ok, task.goal, task.objectives))
  return [o for o, on in zip(ok, front) if on]


def summarize(observations: Sequence[Observation], task: Task) -> dict:
  """What summary.json holds: counts, and the best OK observation's value, architecture, trial
  id (and test value when it has one); the first of equal values wins. A multi-objective task's
  summary also holds its objectives and the Pareto front (`pareto_front`), each member's trial
  id, value, objectives, test value and architecture. For a multi-fidelity task the best is
  taken at full fidelity (`full_fidelity_ok`), and the counts per fidelity are added."""
  ok = full_fidelity_ok(observations, task)
  summary = {
    "task": task.name,
    "goal": task.goal,
    "n_evaluated": len(observations),
    "n_failed": sum(not o.ok for o in observations),
    "best_value": None,
    "best_arch": None,
    "best_trial_id": None,
  }
  if ok:
    best = ok[int(np.argmax(to_score([o.value for o in ok], task.goal)))]
    summary.update(best_value=best.value, best_arch=best.arch_json, best_trial_id=best.trial_id)
    if best.test_value is not None:
      summary["best_test_value"] = best.test_value
  if task.fidelities:
    counts = collections.Counter(o.fidelity for o in observations)
    summary["n_per_fidelity"] = {f"{f:g}": counts.get(f, 0) for f in task.fidelities}
  if task.objectives:
    summary["objectives"] = [["value", task.goal], *map(list, task.objectives)]
    summary["pareto_front"] = [
      {
        "trial_id": o.trial_id,
        "value": o.value,
        "objectives": o.objectives,
        "test_value": o.test_value,
        "arch": o.arch_json,
      }
      for o in pareto_front(observations, task)
    ]
  return summary
