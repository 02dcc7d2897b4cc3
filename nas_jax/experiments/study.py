"""A study: a grid of trials (method, dataset, workers, sync or async, model time charged or not,
seed), each one search with its own workdir named from its coordinates. This module is the pure
part: the study config read once into a `Study`, the grid (`expand`), the trials' names and each
trial's search config (`trial_config`). Running the trials is `study_runner`'s; their curves and
table are `study_results`'.

The protocol is NASBOT's (Kandasamy et al. 2018, Sec. 5 and Fig. 2): best validation score against
wall-clock time with several asynchronous workers, the time taken to choose each next point
included when `charged`; here the wall clock is simulated from the benchmark's training seconds
(the `simulated` executor).
"""

from __future__ import annotations

import copy
import os
import re
from typing import NamedTuple

import ml_collections

from nas_jax.tasks.tabular import DATASETS
from nas_jax.wiring.config_files import load_config

__all__ = [
  "Trial",
  "Study",
  "TRIALS",
  "read_study",
  "expand",
  "trial_name",
  "parse_name",
  "trial_budget",
  "trial_config",
  "method_configs",
]

#: The folder, under the study's workdir, that holds one workdir per trial.
TRIALS = "trials"
_METHOD = re.compile(r"[a-z0-9_]+")
_NAME = re.compile(r"([a-z0-9_]+)-([a-z0-9]+)-w(\d+)-(async|sync)-(charged|free)-seed(\d+)")


class Trial(NamedTuple):
  """One search of a study: its coordinates in the grid."""

  method: str
  dataset: str
  workers: int
  sync: bool
  charged: bool  # the strategy's proposal seconds delay its evaluations on the simulated clock
  seed: int


class Study(NamedTuple):
  """A study config read once (`read_study`): the grid's axes and how trials run.

  Attributes:
    methods: ((name, config spec `path.py[:arg]`), ...) by name (a ConfigDict's order), the
      order of the table.
    datasets, workers: the grid's axes (NB201 dataset names; simulated worker counts).
    syncs, charges: (False,) "async", (True,) "sync" or both; (False,) "free", (True,) model time
      charged, or both.
    seeds: {method: number of seeds}; seeds 0 .. n-1.
    budget: evaluations of a one-worker trial; 0 keeps each method config's own.
    budget_growth: a trial of M workers gets budget * M ** budget_growth evaluations (rounded).
    report_hours: the simulated hours of the table; () takes the shortest trial's end.
    executor: the trials' executor ("simulated"; "inline" runs one worker without a clock).
    task_path: the NB201 table folder of every trial.
    workdir: the study's folder (absolute).
  """

  methods: tuple
  datasets: tuple
  workers: tuple
  syncs: tuple
  charges: tuple
  seeds: dict
  budget: int
  budget_growth: float
  report_hours: tuple
  executor: str
  task_path: str
  workdir: str


def _items(text: str, field: str, allowed: tuple | None = None) -> tuple:
  items = tuple(s.strip() for s in str(text).split(",") if s.strip())
  bad = [s for s in items if allowed is not None and s not in allowed]
  if not items or bad:
    of = f" of {', '.join(allowed)}" if allowed else ""
    raise ValueError(f"config.{field}: {text!r}; expected comma-separated values{of}")
  if len(set(items)) != len(items):
    raise ValueError(f"config.{field}: {text!r} repeats a value")
  return items


def _numbers(text: str, field: str, kind: type, low: float) -> tuple:
  try:
    values = tuple(kind(s) for s in _items(text, field))
  except ValueError:
    values = ()
  if not values or any(v < low for v in values):
    raise ValueError(f"config.{field}: {text!r}; expected comma-separated {kind.__name__}s >= {low:g}")
  return values


def _seeds(c: ml_collections.ConfigDict, methods: tuple) -> dict:
  """{method: seeds}: config.seeds for all, less for those `config.seeds_of` names ("nasbot=5")."""
  if isinstance(c.seeds, bool) or not isinstance(c.seeds, int) or c.seeds < 1:
    raise ValueError(f"config.seeds: {c.seeds!r}; expected an integer >= 1 (seeds 0 .. seeds-1)")
  seeds = dict.fromkeys(methods, c.seeds)
  for item in _items(c.seeds_of, "seeds_of") if c.seeds_of else ():
    name, _, n = item.partition("=")
    if name not in seeds or not n.isdigit() or int(n) < 1:
      raise ValueError(f"config.seeds_of: {item!r}; expected method=n with a method of {', '.join(methods)}, n >= 1")
    seeds[name] = int(n)
  return seeds


def read_study(c: ml_collections.ConfigDict) -> Study:
  """The `Study` of a study config (configs/study_nb201.py); ValueError naming the bad field."""
  methods = tuple((str(k), str(v)) for k, v in c.methods.items())
  bad = [k for k, _ in methods if not _METHOD.fullmatch(k)]
  if not methods or bad:
    raise ValueError(f"config.methods: names {bad or '(none)'}; expected at least one, each of a-z, 0-9 and _")
  if not c.workdir:
    raise ValueError("config.workdir: unset; pass --config.workdir=DIR, the study's folder")
  growth = c.budget_growth
  if isinstance(growth, bool) or not isinstance(growth, (int, float)) or not 0 <= growth <= 1:
    raise ValueError(f"config.budget_growth: {growth!r}; expected a number in [0, 1]")
  if isinstance(c.budget, bool) or not isinstance(c.budget, int) or c.budget < 0:
    raise ValueError(f"config.budget: {c.budget!r}; expected an integer >= 1, or 0 for each method's own")
  return Study(
    methods=methods,
    datasets=_items(c.datasets, "datasets", DATASETS),
    workers=_numbers(c.workers, "workers", int, 1),
    syncs=tuple(m == "sync" for m in _items(c.modes, "modes", ("async", "sync"))),
    charges=tuple(m == "charged" for m in _items(c.model_time, "model_time", ("free", "charged"))),
    seeds=_seeds(c, tuple(k for k, _ in methods)),
    budget=c.budget,
    budget_growth=float(growth),
    report_hours=_numbers(c.report_hours, "report_hours", float, 0.0) if c.report_hours else (),
    executor=str(c.executor),
    task_path=os.path.abspath(c.task.path),
    workdir=os.path.abspath(c.workdir),
  )


def expand(study: Study) -> list[Trial]:
  """Every trial of the grid, seed by seed (so a study stopped early has whole comparisons of its
  first seeds), then dataset, workers, mode, model time and method. One worker has no sync mode:
  its trials are the async ones."""
  out = []
  for seed in range(max(study.seeds.values())):
    for dataset in study.datasets:
      for workers in study.workers:
        for sync in study.syncs if workers > 1 else (False,):
          for charged in study.charges:
            for method, _ in study.methods:
              if seed < study.seeds[method]:
                out.append(Trial(method, dataset, workers, sync, charged, seed))
  return out


def trial_name(t: Trial) -> str:
  """The trial's folder name, e.g. `bananas-cifar10-w4-async-free-seed3` (`parse_name` reads it back)."""
  mode, model = "sync" if t.sync else "async", "charged" if t.charged else "free"
  return f"{t.method}-{t.dataset}-w{t.workers}-{mode}-{model}-seed{t.seed}"


def parse_name(name: str) -> Trial:
  """The trial a folder name (`trial_name`) stands for; ValueError for another name."""
  m = _NAME.fullmatch(name)
  if m is None:
    raise ValueError(f"trial name {name!r}; expected method-dataset-wM-async|sync-charged|free-seedS")
  return Trial(m[1], m[2], int(m[3]), m[4] == "sync", m[5] == "charged", int(m[6]))


def trial_budget(own: int, study: Study, workers: int) -> int:
  """Evaluations of a trial: the study's budget (or the method config's `own`) times
  workers ** budget_growth, so that more workers still reach the same simulated hours."""
  return max(1, round((study.budget or own) * workers**study.budget_growth))


def trial_config(study: Study, trial: Trial, method_config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """The search config of `trial`: its method's config (`load_config` of its spec, loaded once
  per method by the caller and copied here) on the trial's dataset, seed and simulated workers,
  in `workdir/trials/<trial_name>`."""
  c = copy.deepcopy(method_config)
  c.task.path, c.task.dataset, c.seed = study.task_path, trial.dataset, trial.seed
  c.budget = trial_budget(method_config.budget, study, trial.workers)
  c.executor, c.num_workers = study.executor, trial.workers
  if study.executor == "simulated":
    c.sim_sync, c.sim_charge_model = trial.sync, trial.charged
  c.workdir = os.path.join(study.workdir, TRIALS, trial_name(trial))
  return c


def method_configs(study: Study) -> dict:
  """{method: its config}, each spec loaded once."""
  return {name: load_config(spec) for name, spec in study.methods}
