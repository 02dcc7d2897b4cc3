"""The comparison harness: run several configs over seeds at one budget, each run resumable in
its own workdir, then tabulate mean ± standard error of the best value and plot the curves. For
a multi-objective task (`config.objectives`) it also tabulates and plots the hypervolume of each
run's observations against one stated reference point.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Sequence

import numpy as np

from nas_jax.acquisition import pareto
from nas_jax.search import curves
from nas_jax.search.state import Observation, observation_scores, to_score
from nas_jax.search.task import full_fidelity
from nas_jax.viz import plots
from nas_jax.wiring import config as config_lib
from nas_jax.wiring.config_files import apply_overrides, load_config

__all__ = [
  "seconds_curves",
  "best_at_seconds",
  "run_name",
  "run_curves",
  "compare",
  "write_table",
  "hypervolume_curve",
  "reference_point",
  "run_costs",
  "proxy_cost",
  "model_seconds",
  "at_simulated_time",
  "method_table",
]

RESULTS, TABLE, CURVES, CURVES_SECONDS = "results.json", "table.md", "curves.png", "curves_seconds.png"
CURVES_SIMULATED = "curves_simulated.png"
HV_CURVES = "hypervolume.png"

log = logging.getLogger(__name__)


def run_name(spec: str) -> str:
  """A config spec's name and folder: `configs/ea_synthetic.py:smoke` -> `ea_synthetic-smoke`."""
  path, _, arg = spec.partition(":")
  stem = os.path.splitext(os.path.basename(path))[0]
  return f"{stem}-{arg}" if arg else stem


def run_curves(
  observations: Sequence[Observation], goal: str, budget: int, full_fidelity: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
  """Best-so-far value, and the test value of the best-so-far architecture, after each evaluation.

  A run that stopped early (an exhausted space) keeps its last values up to the budget. With
  `full_fidelity` (a multi-fidelity task's last fidelity), only evaluations at it count: a value
  after fewer epochs is not comparable.

  Returns:
    ([budget], [budget]) float64, NaN until the first success (test: also where the best
    architecture has no test value).
  """
  obs = list(observations)[:budget]
  values = [o.value if full_fidelity is None or o.fidelity in (None, full_fidelity) else None for o in obs]
  best = curves.best_so_far(values, goal)
  scores = to_score(values, goal)
  test, arg = np.full(len(obs), np.nan), -1
  for t, s in enumerate(scores):
    if not np.isnan(s) and (arg < 0 or s > scores[arg]):
      arg = t
    if arg >= 0 and obs[arg].test_value is not None:
      test[t] = obs[arg].test_value
  pad = lambda x: np.concatenate([x, np.full(budget - x.size, x[-1] if x.size else np.nan)])
  return pad(best), pad(test)


def run_seconds(observations: Sequence[Observation], budget: int) -> np.ndarray:
  """Wall-clock seconds from the start of a run to the end of each evaluation: [budget] float64.

  The start is the first evaluation's end minus its duration; NaN where the journal has no
  `finished_at` (written before it existed); a run that stopped early keeps its last time."""
  obs = list(observations)[:budget]
  if not obs or any(o.finished_at is None for o in obs):
    return np.full(budget, np.nan)
  start = obs[0].finished_at - obs[0].seconds
  t = np.array([o.finished_at - start for o in obs])
  return np.concatenate([t, np.full(budget - t.size, t[-1])])


def run_costs(observations: Sequence[Observation], budget: int) -> np.ndarray:
  """Simulated seconds from a run's start to the end of each evaluation: the running sum of the
  costs its task reported (`info["task"]["cost_s"]`, e.g. NAS-Bench-201's training seconds), one
  evaluation after another; [budget] float64, NaN when no evaluation reported a cost (a failed
  one costs 0). A run on simulated workers (`search.simulated_executor`: every row has
  `sim_finished_at`) gives those ends instead, its workers' clock. A run that stopped early keeps
  its last time."""
  obs = list(observations)[:budget]
  if obs and all(o.sim_finished_at is not None for o in obs):
    t = np.array([o.sim_finished_at for o in obs], np.float64)
    return np.concatenate([t, np.full(budget - t.size, t[-1])])
  costs = [(o.info.get("task") or {}).get("cost_s") for o in obs]
  if not obs or all(c is None for c in costs):
    return np.full(budget, np.nan)
  t = np.cumsum([float(c or 0.0) for c in costs])
  return np.concatenate([t, np.full(budget - t.size, t[-1])])


def proxy_cost(observations: Sequence[Observation]) -> tuple[int, float]:
  """(cells, seconds): what a run's zero-cost proxy cost, summed from the notes its strategy made
  on each proposal (`search.strategies.proxy_search`: proxy_scored, proxy_s); (0, 0.0) without one."""
  notes = [o.info.get("strategy") or {} for o in observations]
  return int(sum(n.get("proxy_scored", 0) for n in notes)), float(sum(n.get("proxy_s", 0.0) for n in notes))


def model_seconds(observations: Sequence[Observation]) -> tuple[float, float]:
  """(fit, acquisition): the seconds a run's strategy spent fitting its model and optimising the
  acquisition, summed from the timings a model-based strategy notes on each proposal
  (`info["strategy"]["seconds"]`); (0.0, 0.0) for a strategy without a model."""
  timed = [(o.info.get("strategy") or {}).get("seconds") or {} for o in observations]
  return float(sum(t.get("fit", 0.0) for t in timed)), float(sum(t.get("acquisition", 0.0) for t in timed))


def reference_point(runs: Sequence[Sequence[Observation]], task) -> dict:
  """The default hypervolume reference: each objective's worst value over every run's OK
  observations (the nadir of all of them), as {"value": .., <objective>: ..} in raw units."""
  ok = [o for observations in runs for o in observations if o.ok]
  if not ok:
    raise ValueError("compare: no run has an OK observation to place the hypervolume reference")
  scores = observation_scores(ok, task.goal, task.objectives)
  names, goals = zip(("value", task.goal), *task.objectives)
  return {n: float(to_score(s, g)) for n, s, g in zip(names, scores.min(axis=0), goals)}


def hypervolume_curve(observations: Sequence[Observation], task, ref: dict, budget: int) -> np.ndarray:
  """The hypervolume dominated by a run's OK observations after each evaluation, [budget]
  float64, in the product of the objectives' raw units, against `ref` ({objective: raw value},
  `reference_point`). A run that stopped early keeps its last value."""
  names, goals = zip(("value", task.goal), *task.objectives)
  missing = sorted(set(names) - set(ref))
  if missing:
    raise ValueError(f"compare: hv_ref={ref!r} lacks {missing}; it needs a value for each of {list(names)}")
  ref_scores = np.array([float(to_score(ref[n], g)) for n, g in zip(names, goals)])
  obs = list(observations)[:budget]
  scores = observation_scores(obs, task.goal, task.objectives)
  out = np.array([pareto.hypervolume(scores[: t + 1], ref_scores) for t in range(len(obs))])
  return np.concatenate([out, np.full(budget - out.size, out[-1] if out.size else 0.0)])


def best_at_seconds(best: np.ndarray, seconds: np.ndarray, limit: float) -> float:
  """The best-so-far value of one run at `limit` wall seconds (NaN if nothing had finished)."""
  done = np.flatnonzero(np.asarray(seconds) <= limit)
  return float(np.asarray(best)[done[-1]]) if done.size else float("nan")


def at_simulated_time(results: dict, key: str = "runs") -> dict:
  """{config: [value per seed]} of `results[key]` (best-so-far "runs" or their "test_runs") at
  `results["sim_time"]` simulated seconds (`best_at_seconds` on `results["sim_seconds"]`)."""
  t = results["sim_time"]
  return {
    n: [
      best_at_seconds(np.asarray(b, np.float64), np.asarray(s, np.float64), t)
      for b, s in zip(runs, results["sim_seconds"][n])
    ]
    for n, runs in results[key].items()
  }


def _final(runs: list) -> tuple[float, float, int]:
  """Mean, standard error and count of the seeds' last values (None = no value)."""
  last = np.asarray(runs, np.float64)[:, -1:]
  mean, err = curves.mean_stderr(last)
  return float(mean[0]), float(err[0]), int(np.sum(~np.isnan(last)))


def method_table(values: dict, methods: Sequence[str], digits: int = 3) -> list[str]:
  """A benchmark's markdown table: a row per method, a column per dataset.

  Args:
    values: {dataset: {method: [S] per-seed values}}; every method in every dataset.
    methods: the rows, in order.
    digits: decimals of the means and standard errors.

  Returns:
    The table's lines: each cell is the mean ± standard error over seeds, and, when "random" is a
    method, the mean's ratio to random search's.
  """
  lines = ["| method | seeds | " + " | ".join(values) + " |", "|---|---|" + "---|" * len(values)]
  for method in methods:
    cells, n = [], 0
    for by_method in values.values():
      v, base = np.asarray(by_method[method], np.float64), by_method.get("random")
      (mean,), (err,) = curves.mean_stderr(v[:, None])
      n = len(v)
      versus = "" if base is None or method == "random" else f" ({mean / np.mean(base):.{digits}f}x random)"
      cells.append(f"{mean:.{digits}f} ± {err:.{digits}f}{versus}")
    lines.append(f"| {method} | {n} | " + " | ".join(cells) + " |")
  return lines


def _nullable(x: np.ndarray) -> list:
  """JSON has no NaN: missing values become null."""
  return [None if np.isnan(v) else float(v) for v in x]


def write_table(results: dict, path: str, budget: int) -> None:
  """Markdown table: per config, mean ± standard error over seeds of the best value at `budget`
  (and of its test value when the task has one, of the hypervolume for several objectives, and of
  both at `results["sim_time"]` simulated seconds when the task reports costs)."""
  has_test = any(np.isfinite(np.asarray(v, np.float64)).any() for v in results["test_runs"].values())
  columns = [(f"best value at {budget} evaluations ({results['goal']})", results["runs"])]
  columns += [("test value", results["test_runs"])] if has_test else []
  columns += [("hypervolume", results["hypervolume"])] if "hypervolume" in results else []
  if "sim_time" in results:  # one value per seed, as a curve of length 1
    at_sim = lambda key: {n: [[v] for v in values] for n, values in at_simulated_time(results, key).items()}
    columns += [(f"best value at {results['sim_time']:.6g} simulated s", at_sim("runs"))]
    columns += [("its test value", at_sim("test_runs"))] if has_test else []
  lines = ["| config | seeds | " + " | ".join(head for head, _ in columns) + " |", "|---" * (2 + len(columns)) + "|"]
  budgets = results.get("budgets", {})
  for name, runs in results["runs"].items():
    cells = [f"{mean:.6g} ± {err:.2g}" for mean, err, _ in (_final(by_name[name]) for _, by_name in columns)]
    if len(set(budgets.values())) > 1:
      cells[0] += f" (at {budgets[name]})"
    lines.append(f"| {name} | {_final(runs)[2]}/{len(runs)} | " + " | ".join(cells) + " |")
  note = "(mean ± one standard error over seeds; n/N = seeds with a value)"
  if "hypervolume" in results:
    note += f"\n(hypervolume against the reference point {results['hv_ref']}, in the objectives' own units)"
  with open(path, "w") as f:
    f.write("\n".join(lines) + "\n\n" + note + "\n")


def compare(
  specs: Sequence[str],
  seeds: Sequence[int],
  budget: int,
  out: str,
  *,
  progress: bool = False,
  overrides: dict | None = None,
  hv_ref: dict | None = None,
  sim_time: float | None = None,
) -> dict:
  """Runs every config of `specs` for every seed with `budget` evaluations, then writes
  `out/results.json`, `out/table.md` and `out/curves.png`.

  Run (name, seed) lives in `out/<name>/seed<seed>`, so rerunning resumes unfinished runs and
  replays finished ones. All configs must share one task (same name and goal).

  Args:
    specs: config specs, `path.py[:arg]`.
    seeds: search seeds (`config.seed`).
    budget: evaluations per run (overrides `config.budget`); None keeps each config's own budget
      (e.g. more evaluations for a multi-fidelity scheduler, to compare at equal simulated time).
    out: output folder.
    progress: progress bars for each run.
    overrides: dotted field -> value set in every config (`config_files.parse_overrides`), e.g. fewer epochs.
    hv_ref: for a multi-objective task, the hypervolume's reference point, {"value": .., <objective>:
      ..} in raw units; None takes the worst value of each objective over all runs (`reference_point`).
    sim_time: for a task that reports simulated costs (`run_costs`), the simulated seconds at
      which the table compares every config; None takes the shortest run's total.

  Returns:
    The results: {"goal", "budget", "overrides", "runs": {name: [[best-so-far per evaluation] per seed]},
    "proxy": {name: [[cells, seconds] the proxy cost, per seed]} (`proxy_cost`),
    "model_seconds": {name: [[fit, acquisition] seconds, per seed]} (`model_seconds`),
    "test_runs": {name: [[test value of the best-so-far architecture] per seed]},
    "seconds": {name: [[wall seconds from the run's start to each evaluation's end] per seed]}}.
    `curves_seconds.png` plots best-so-far against those seconds (`best_at_seconds`). With several
    objectives also "hv_ref" and "hypervolume": {name: [[hypervolume after each evaluation] per
    seed]} (`hypervolume_curve`), plotted in `hypervolume.png`. "budgets": {name: evaluations}.
    A task that reports costs adds "sim_seconds" ({name: [[simulated seconds] per seed]},
    `run_costs`) and "sim_time"; the table then compares every config at that simulated time
    (`at_simulated_time`) and `curves_simulated.png` plots best-so-far against it. A
    multi-fidelity run's best-so-far counts full-fidelity evaluations only.
  """
  if not specs:
    raise ValueError("compare: configs is empty; pass at least one configs/*.py")
  names = [run_name(s) for s in specs]
  if len(set(names)) != len(names):
    raise ValueError(f"compare: configs {list(specs)} repeat a name; each needs its own folder")
  if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
    raise ValueError(f"compare: seeds={list(seeds)!r}; expected non-negative integers")
  if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
    raise ValueError(f"compare: budget={budget!r}; expected an integer >= 1, or None for each config's own")
  configs, budgets = {}, {}
  for spec, name in zip(specs, names):
    c = load_config(spec)
    apply_overrides(c, overrides or {}, spec)
    c.budget = budgets[name] = c.budget if budget is None else budget
    c.workdir = os.path.join(out, name, "seed0")
    config_lib.check_search_config(c)
    configs[name] = c
  tasks = {name: config_lib.build_search(c)[1] for name, c in configs.items()}
  if len({(t.name, t.goal, t.objectives) for t in tasks.values()}) != 1:
    raise ValueError(
      f"compare: configs optimise different tasks {sorted({(t.name, t.goal, t.objectives) for t in tasks.values()})};"
      " a comparison needs one task"
    )
  task = next(iter(tasks.values()))
  goal = task.goal
  curve_keys = ("runs", "test_runs", "seconds", "sim_seconds")
  results = {"goal": goal, "budget": budget, "overrides": dict(overrides or {}), "budgets": budgets}
  results.update({k: {name: [] for name in configs} for k in (*curve_keys, "proxy", "model_seconds")})
  journals = {}
  for name, c in configs.items():
    for seed in seeds:
      c.seed, c.workdir = seed, os.path.join(out, name, f"seed{seed}")
      observations = journals[name, seed] = config_lib.search_from_config(c, progress=progress)
      best, test = run_curves(observations, goal, budgets[name], full_fidelity(tasks[name]))
      seconds, costs = run_seconds(observations, budgets[name]), run_costs(observations, budgets[name])
      for k, curve in zip(curve_keys, (best, test, seconds, costs)):
        results[k][name].append(_nullable(curve))
      results["proxy"][name].append(list(proxy_cost(observations)))
      results["model_seconds"][name].append(list(model_seconds(observations)))
      log.info("%s seed %d: best %s", name, seed, results["runs"][name][-1][-1])
  if task.objectives:
    ref = dict(hv_ref) if hv_ref else reference_point(list(journals.values()), task)
    results["hv_ref"] = ref
    results["hypervolume"] = {
      name: [hypervolume_curve(journals[name, seed], task, ref, budgets[name]).tolist() for seed in seeds]
      for name in configs
    }
  ends = [r[-1] for runs in results["sim_seconds"].values() for r in runs]
  if all(t is not None for t in ends):
    results["sim_time"] = float(min(ends)) if sim_time is None else float(sim_time)
  else:
    del results["sim_seconds"]
  os.makedirs(out, exist_ok=True)
  with open(os.path.join(out, RESULTS), "w") as f:
    json.dump(results, f, allow_nan=False)
  write_table(results, os.path.join(out, TABLE), budget if budget is not None else max(budgets.values()))
  title = task.name
  plots.plot_curves(
    {n: np.asarray(r, np.float64) for n, r in results["runs"].items()}, goal, os.path.join(out, CURVES), title=title
  )
  _plot_against_seconds(results, os.path.join(out, CURVES_SECONDS), title)
  if "sim_time" in results:
    _plot_against_seconds(results, os.path.join(out, CURVES_SIMULATED), title, "sim_seconds")
  if task.objectives:
    hv = {n: np.asarray(r, np.float64) for n, r in results["hypervolume"].items()}
    plots.plot_curves(hv, "max", os.path.join(out, HV_CURVES), title=f"{title}: hypervolume", what="hypervolume")
  return results


def seconds_curves(
  results: dict, points: int = 50, key: str = "seconds", grid: np.ndarray | None = None
) -> tuple[np.ndarray, dict]:
  """Best-so-far at a common grid of wall seconds (compilation included; `key` "sim_seconds":
  simulated seconds) up to the longest run, or at the seconds `grid` when given.

  A run that ended earlier keeps its final value; a grid point before every seed of a config has
  a value is NaN for all its seeds, so the mean over seeds never falls when a late seed starts.

  Returns:
    (grid [points], {config: [seeds, points]}); an empty grid when no run has seconds.
  """
  secs = {n: np.asarray(s, np.float64) for n, s in results[key].items()}
  ends = [np.nanmax(s) for s in secs.values() if np.isfinite(s).any()]
  if not ends:
    return np.zeros(0), {}
  grid = np.linspace(0.0, max(ends), points) if grid is None else np.asarray(grid, np.float64)
  at = {}
  for n, t in secs.items():
    runs = np.asarray(results["runs"][n], np.float64)
    curve = np.array([[best_at_seconds(b, ts, g) for g in grid] for b, ts in zip(runs, t)])
    curve[:, np.isnan(curve).any(axis=0)] = np.nan
    at[n] = curve
  return grid, at


def _plot_against_seconds(results: dict, path: str, title: str, key: str = "seconds") -> None:
  grid, at = seconds_curves(results, key=key)
  if grid.size:
    xlabel = "wall seconds from the run's start (compilation included)"
    if key == "sim_seconds":
      xlabel = "simulated seconds (the task's reported training costs, one evaluation after another)"
    plots.plot_curves(at, results["goal"], path, title=title, x=grid, xlabel=xlabel)
