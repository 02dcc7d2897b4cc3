"""The asynchronous ask/tell loop (STYLE sketch 4): replay the journal, keep every worker busy,
record each finished evaluation durably before the next proposal, and write a summary (the caller
plots it: `nas_jax.viz.plots.plot_progress`).
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import json
import logging
import math
import numbers
import os
import time
from typing import Any, Sequence

import numpy as np
import tqdm

from nas_jax.acquisition import pareto
from nas_jax.arch.json_io import show
from nas_jax.search import journal
from nas_jax.search.executors import Executor, Outcome
from nas_jax.search.state import Observation, Status, observation_scores, to_score
from nas_jax.search.strategy import Strategy, split_proposal
from nas_jax.search.task import Task, TaskResult, check_task, full_fidelity

__all__ = [
  "JOURNAL",
  "SUMMARY",
  "CONFIG",
  "WorkdirInUse",
  "run",
  "trial_seed",
  "summarize",
  "pareto_front",
  "in_flight",
  "full_fidelity_ok",
]

JOURNAL, SUMMARY, CONFIG = "journal.jsonl", "summary.json", "config.json"
_META = "search.json"
_POLL_S = 1.0  # how often the loop wakes while workers run (progress bar, Ctrl-C)

log = logging.getLogger(__name__)


def trial_seed(seed: int, trial_id: int) -> int:
  """The evaluation seed of one trial: independent streams per (seed, trial_id), in [0, 2**31)."""
  return int(np.random.SeedSequence([seed, trial_id]).generate_state(1)[0] >> 1)


def _jsonable(x: Any) -> Any:
  """numpy scalars and arrays to Python; anything else unknown to its repr (journal lines are JSON)."""
  if isinstance(x, dict):
    return {str(k): _jsonable(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [_jsonable(v) for v in x]
  if isinstance(x, np.ndarray):
    return _jsonable(x.tolist())
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


def _observe(
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
  )
  if outcome.timed_out or outcome.error:
    status = Status.TIMEOUT if outcome.timed_out else Status.FAILED
    return Observation(value=None, status=status, error=outcome.error, info=_jsonable(info), **common)
  result = outcome.result
  problem = _result_problem(result, objectives)
  if problem:  # a bug in the task: journalled like a crash, so the search goes on and says why
    return Observation(value=None, status=Status.FAILED, error=problem, info=_jsonable(info), **common)
  info = _jsonable({**info, "task": dict(result.info)})
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


class WorkdirInUse(RuntimeError):
  """Another live search holds the workdir's lock."""


@contextlib.contextmanager
def _exclusive(workdir: str):
  """Holds an advisory lock on the workdir: two searches never write one journal. The lock is on
  the folder itself, so no lock file can be deleted by mistake, and the kernel drops it when the
  process dies, so a killed search leaves no stale lock."""
  fd = os.open(workdir, os.O_RDONLY)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      raise WorkdirInUse(f"workdir {workdir!r}: another search is running in it") from None
    yield
  finally:
    os.close(fd)


def _check_meta(workdir: str, task: Task) -> None:
  """A workdir belongs to one task: resuming it with another would mix incomparable values."""
  path, meta = os.path.join(workdir, _META), {"task": task.name, "goal": task.goal}
  if not os.path.exists(path):
    _write_json(path, meta)
    return
  with open(path) as f:
    old = json.load(f)
  if old != meta:
    raise ValueError(f"workdir {workdir!r} holds a search of {old}, not {meta}; use another workdir")


def in_flight(pending: Sequence[tuple[int, str, float]], now: float) -> str:
  """The progress bar's word on the oldest evaluation in flight: "#id origin Ns", from
  (trial_id, origin, submitted at) triples; "" when nothing runs. It moves from the first second,
  while the first networks of a search spend minutes compiling."""
  if not pending:
    return ""
  trial_id, origin, t0 = min(pending, key=lambda p: p[2])
  return " ".join(x for x in (f"#{trial_id}", origin, f"{now - t0:.0f}s") if x)


def _origin(notes: Any) -> str:
  """The "origin" a strategy noted for a point ("" if it noted none)."""
  return str(notes.get("origin", "")) if isinstance(notes, dict) else ""


def _check_proposal(proposal: Any, task: Task, seeds: dict) -> tuple[Any, float | None, int | None]:
  """(point, fidelity, continues) of a strategy's proposal (`split_proposal`): a plain point of a
  multi-fidelity task is evaluated at full fidelity. ValueError (a strategy's bug, so it stops
  the search) for a fidelity the task does not accept or a continuation of an unknown trial."""
  point, fidelity, continues = split_proposal(proposal)
  if fidelity is None:
    return point, full_fidelity(task), None
  if fidelity not in task.fidelities:
    allowed = ", ".join(f"{f:g}" for f in task.fidelities) or "none (a single-fidelity task)"
    raise ValueError(f"strategy proposed fidelity {fidelity:g} for task {task.name!r}; its fidelities: {allowed}")
  if continues is not None and seeds.get(continues) is None:
    raise ValueError(f"strategy proposed to continue trial {continues!r}, which this search has not run")
  return point, fidelity, continues


def _best(score: float, goal: str) -> float | None:
  return None if score == -np.inf else float(to_score(score, goal))


def _write_json(path: str, obj: Any) -> None:
  tmp = f"{path}.tmp"
  with open(tmp, "w") as f:
    json.dump(obj, f, indent=1, sort_keys=True)
  os.replace(tmp, path)  # readers see the old file or the new one, never half of one


def _check_run_args(budget: Any, seed: Any, workdir: Any) -> None:
  if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
    raise ValueError(f"run: budget={budget!r}; expected an integer >= 1 (evaluations)")
  if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
    raise ValueError(f"run: seed={seed!r}; expected an integer >= 0")
  if not isinstance(workdir, (str, os.PathLike)) or not os.fspath(workdir):
    raise ValueError(f"run: workdir={workdir!r}; expected a non-empty path")


def run(
  strategy: Strategy,
  task: Task,
  executor: Executor,
  workdir: str,
  *,
  space: Any,
  budget: int,
  key: Any,
  seed: int = 0,
  progress: bool = True,
  prefetch: int = 0,
  config: dict | None = None,
) -> list[Observation]:
  """Runs (or resumes) a search until `budget` evaluations are recorded in `workdir`.

  Resume is replay: the journal's observations go through `strategy.update` and are never
  evaluated again; evaluations that were running when a previous process died were never
  recorded, so their slots are proposed afresh. Each evaluation gets the seed
  `trial_seed(seed, trial_id)`, recorded in `info["seed"]`.

  Args:
    strategy: the Strategy.
    task: the Task; `task.evaluate(arch_json, seed)` runs on the executor.
    executor: keeps `executor.num_workers` evaluations in flight; the caller shuts it down.
    workdir: holds journal.jsonl, summary.json and config.json; created if missing.
    space: the Space of the strategy's points (`space.to_json` writes them to the journal).
    budget: total evaluations, failed ones included, counting those replayed.
    key: the strategy's JAX key (`strategy.init(key)`).
    seed: base of the evaluation seeds.
    progress: show a tqdm bar with evaluations, failures and the best value.
    prefetch: proposals submitted beyond the workers, waiting in the executor's queue; with one
      worker and prefetch 1, the next proposal is made while a network trains (autokeras.md 7.3).
    config: the run's settings as JSON, written to `workdir/config.json` once the workdir is
      checked (no other live search, the same task), so a refused run changes nothing.

  Returns:
    Every observation in the journal, in the order recorded.
  """
  check_task(task)
  _check_run_args(budget, seed, workdir)
  workdir = os.fspath(workdir)
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, JOURNAL)
  with _exclusive(workdir):
    _check_meta(workdir, task)
    if config is not None:
      _write_json(os.path.join(workdir, CONFIG), config)
    done = journal.replay(path)
    if len(done) >= budget:
      log.warning(
        "workdir %r: the search is finished (%d evaluations, budget %d); nothing is left to run. To"
        " extend it, give a larger budget (e.g. --config.budget=%d)",
        workdir,
        len(done),
        budget,
        len(done) + budget,
      )
      _write_json(os.path.join(workdir, SUMMARY), summarize(done, task))
      return done
    state = strategy.init(key)
    if done:
      state = strategy.update(state, done)
    next_id = 1 + max((o.trial_id for o in done), default=-1)
    # ticket -> (trial_id, proposal, arch_json, info, fidelity)
    pending: dict[int, tuple[int, Any, dict, dict, float | None]] = {}
    submitted: dict[int, float] = {}  # trial_id -> monotonic time of its submission
    seeds = {o.trial_id: o.info.get("seed") for o in done}  # what a continuation reuses
    scores = to_score([o.value for o in full_fidelity_ok(done, task)], task.goal)
    best = np.nanmax(scores) if np.any(~np.isnan(scores)) else -np.inf
    bar = tqdm.tqdm(total=budget, initial=min(len(done), budget), desc=task.name, disable=not progress)
    try:
      while len(done) + len(pending) < budget or pending:
        while len(pending) < executor.num_workers + prefetch and len(done) + len(pending) < budget:
          state, points = strategy.propose(state, 1, [p[1] for p in pending.values()])
          if not points:
            break
          point, fidelity, continues = _check_proposal(points[0], task, seeds)
          arch_json = space.to_json(point)
          info = {"seed": trial_seed(seed, next_id), "strategy": strategy.notes(state, points[0])}
          if continues is not None:  # the same network trained further: its first trial's seed
            info.update(seed=seeds[continues], continues=continues)
          args = (arch_json, info["seed"]) if fidelity is None else (arch_json, info["seed"], fidelity)
          pending[executor.submit(task.evaluate, *args)] = (next_id, points[0], arch_json, info, fidelity)
          seeds[next_id] = info["seed"]
          submitted[next_id] = time.monotonic()
          next_id += 1
        if not pending:
          log.warning("search stopped after %d evaluations: the strategy has no unseen point left", len(done))
          break
        # Redrawn every poll, so the clock and the evaluations in flight show from the first second.
        flying = [(t, _origin(i["strategy"]), submitted[t]) for t, _, _, i, _ in pending.values()]
        bar.set_postfix(
          running=len(pending),
          oldest=in_flight(flying, time.monotonic()),
          failed=sum(not o.ok for o in done),
          best=_best(best, task.goal),
        )
        for ticket, outcome in executor.wait(timeout=_POLL_S):
          trial_id, _, arch_json, info, fidelity = pending.pop(ticket)
          submitted.pop(trial_id)
          obs = _observe(trial_id, arch_json, outcome, info, [name for name, _ in task.objectives], fidelity)
          journal.append(path, obs)  # durable before the strategy (and the next proposal) sees it
          done.append(obs)
          state = strategy.update(state, [obs])
          if full_fidelity_ok([obs], task):
            best = max(best, float(to_score(obs.value, task.goal)))
          bar.update(1)
    finally:
      bar.close()
    _write_json(os.path.join(workdir, SUMMARY), summarize(done, task))
  return done
