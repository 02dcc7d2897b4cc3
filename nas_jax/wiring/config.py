"""Search configs: `search_from_config` checks a config (`checks.check_search_config`), resolves
its strings once, through the tables of `parts` (`SPACES`, `STRATEGIES`) and `registries` (`TASKS`,
`EXECUTORS`), into a space, task, strategy and executor, then runs the search in
`config.workdir`. The checks and registries are re-exported here, the config API in one place.
"""

from __future__ import annotations

import functools
import io
import json
import os
from types import MappingProxyType
from typing import Any

import jax
import ml_collections

from nas_jax.search import journal, loop
from nas_jax.search.executors import Executor
from nas_jax.search.state import Observation
from nas_jax.search.strategies import schedulers
from nas_jax.search.strategy import Strategy
from nas_jax.search.task import Task
from nas_jax.spaces.fidelity_space import fidelity_space
from nas_jax.spaces.constrained import METRICS, check_limits, constrained, violation
from nas_jax.tasks.cost_task import with_costs
from nas_jax.wiring.checks import check_search_config, limits_of, objectives_of
from nas_jax.wiring.parts import SCHEDULERS, SPACES, make_strategy
from nas_jax.wiring.registries import COSTS, EXECUTORS, TASKS, train_config_of

__all__ = [
  "PROGRESS",
  "RESUME_MAY_CHANGE",
  "TASKS",
  "EXECUTORS",
  "check_search_config",
  "train_config_of",
  "build_search",
  "make_executor",
  "search_from_config",
]

#: The plot of the best value against evaluations, written in the workdir.
PROGRESS = "progress.png"
# Fields a resumed search may change: how long it runs and where it evaluates, not what it searches.
# A search on simulated workers (executor "simulated") keeps its executor and num_workers too:
# they make its simulated clock, so changing them would splice two experiments into one journal.
RESUME_MAY_CHANGE = (
  "budget",
  "num_workers",
  "executor",
  "ray_address",
  "ray_connect_timeout_s",
  "worker_retries",
  "eval_timeout_s",
  "prefetch",
  "workdir",
)
# Fields added to the configs after searches were run with them: a workdir's config.json without
# one searched as with this value.
_ADDED_DEFAULTS = MappingProxyType({f"scheduler_config.{k}": schedulers.OPTIONS[k] for k in ("model", "promote")})


def build_search(config: ml_collections.ConfigDict) -> tuple[Any, Task, Strategy]:
  """The (space, task, strategy) of a checked config: each string resolved once. With cost
  objectives or constraints, the space is constrained (`spaces.constrained`) and the task
  reports and guards the costs (`tasks.cost_task.with_costs`). With `config.scheduler`, the
  strategy samples the new networks of that multi-fidelity scheduler (`strategies.schedulers`),
  on the fidelity space (`spaces.fidelity_space`) when `config.scheduler_config.model` is "joint"."""
  space_kwargs = {k: v for k, v in config.space.items() if k != "name"}
  space = SPACES[config.space.name](**space_kwargs)
  task_section = config.task
  if config.task.name == "morph_train" and not config.task.weights_dir:
    task_section = ml_collections.ConfigDict(config.task.to_dict())
    task_section.weights_dir = os.path.join(config.workdir, "weights")
  if config.task.name == "train" and config.task.get("fidelities", "") and not config.task.get("checkpoint_dir", ""):
    task_section = ml_collections.ConfigDict(config.task.to_dict())  # a promoted network continues from here
    task_section.checkpoint_dir = os.path.join(config.workdir, "checkpoints")
  task = TASKS[config.task.name](task_section, config.space.kind)
  objectives, limits = objectives_of(config), limits_of(config)
  if objectives or limits:
    metrics = tuple(m for m in METRICS if m in objectives or m in limits)
    json_costs = COSTS[config.task.name][1](task_section, config.space.kind, metrics)
    unconstrained = space
    space = constrained(unconstrained, lambda point: json_costs(unconstrained.to_json(point)), limits)
    task = with_costs(task, json_costs, objectives, functools.partial(violation, limits=check_limits(limits)))
  if not config.get("scheduler", ""):
    return space, task, make_strategy(config.strategy, config, space, task)
  # Multi-fidelity: the strategy samples the scheduler's new networks; with model "joint" it
  # models (network, fidelity) points, so it is built on the fidelity space.
  options = config.get("scheduler_config", None)
  options = options.to_dict() if hasattr(options, "to_dict") else dict(options or {})
  joint = {**schedulers.OPTIONS, **options}["model"] == "joint"
  sampler_space = fidelity_space(space, task.fidelities) if joint else space
  sampler = make_strategy(config.strategy, config, sampler_space, task)
  return space, task, SCHEDULERS[config.scheduler](sampler, space, task.goal, task.fidelities, **options)


def make_executor(config: ml_collections.ConfigDict) -> Executor:
  """The executor of a checked config; the caller shuts it down."""
  return EXECUTORS[config.executor](config)


def _flat(d: dict, prefix: str = "") -> dict:
  out = {}
  for k, v in d.items():
    out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
  return out


def _check_resume(workdir: str, settings: dict) -> None:
  """A workdir resumes the search its config.json describes: only fields that do not change the
  search (`RESUME_MAY_CHANGE`) may differ; ValueError naming the others."""
  path = os.path.join(workdir, loop.CONFIG)
  if not os.path.exists(path):
    return
  old = {**_ADDED_DEFAULTS, **_flat(journal.load_json(path))}
  new = _flat(settings)
  # A field added since the workdir's search began (absent there) differs only when it is set;
  # scheduler options matter only to a search with a scheduler.
  inert = {"scheduler_config"} if not old.get("scheduler") and not new.get("scheduler") else set()
  # Simulated workers are part of the experiment (its clock), not where it runs: they stay.
  free = set(RESUME_MAY_CHANGE) - (
    {"executor", "num_workers"} if "simulated" in (old.get("executor"), new.get("executor")) else set()
  )
  differ = sorted(
    k
    for k in set(old) | set(new)
    if old.get(k) != new.get(k) and k.split(".")[0] not in {*free, *inert} and (k in old or new.get(k))
  )
  if differ:
    shown = ", ".join(f"{k}={old.get(k)!r} there, {new.get(k)!r} here" for k in differ[:4])
    more = f" and {len(differ) - 4} more" if len(differ) > 4 else ""
    raise ValueError(
      f"config.workdir: {workdir!r} holds a search with another config ({shown}{more}); resume it with"
      f" its own config ({', '.join(f for f in RESUME_MAY_CHANGE if f in free)} may change) or use another workdir"
    )


def _progress_png(task: Task, done: list[Observation]) -> dict[str, bytes]:
  """{PROGRESS: the PNG of the values and best so far}, which the loop writes in the locked workdir."""
  # matplotlib is imported here, at the first evaluation, not when a launch script or a spawned
  # worker starts (a third of a second each).
  from nas_jax.viz import plots  # pylint: disable=g-import-not-at-top

  png = io.BytesIO()
  plots.plot_progress([o.value for o in done], task.goal, png, title=task.name)
  return {PROGRESS: png.getvalue()}


def search_from_config(config: ml_collections.ConfigDict, *, progress: bool = True) -> list[Observation]:
  """Checks `config`, builds its search and runs (or resumes) it in `config.workdir`.

  An existing workdir resumes only with its own config (`RESUME_MAY_CHANGE` aside). Also writes
  `config.workdir/config.json`, the config of the latest run, and `progress.png`, the values and
  best so far after each evaluation.

  Returns:
    Every observation of the search (`loop.run`).
  """
  check_search_config(config)
  settings = json.loads(config.to_json_best_effort())
  _check_resume(config.workdir, settings)
  space, task, strategy = build_search(config)
  executor = make_executor(config)
  try:
    done = loop.run(
      strategy,
      task,
      executor,
      config.workdir,
      space=space,
      budget=config.budget,
      key=jax.random.key(config.seed),
      seed=config.seed,
      progress=progress,
      prefetch=config.get("prefetch", 0),
      config=settings,
      files=functools.partial(_progress_png, task),
    )
  finally:
    executor.shutdown()
  return done
