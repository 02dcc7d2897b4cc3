"""A study's results from its trials' journals: each trial's best validation regret and test
regret against simulated wall-clock time, their means over seeds on one grid of simulated hours
(one panel per dataset and worker count, as NASBOT's Fig. 2 plots each dataset), and the table at
fixed simulated hours. Pure functions of observations; `study_runner` reads and writes the files.

Regrets are those of the benchmark (`tasks.tabular`): validation regret = the table's best
validation accuracy - the best found so far; test regret = the table's best test accuracy - the
test accuracy of the network with the best validation accuracy so far (`regret_curve`'s rule).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from nas_jax.experiments import compare
from nas_jax.experiments.study import Study, Trial, parse_name, trial_name
from nas_jax.search import curves
from nas_jax.search.state import Observation

__all__ = ["REGRETS", "trial_curve", "label", "aggregate", "table_lines"]

#: The two regrets of a study, in the order of its curves.
REGRETS = ("valid", "test")
HOUR = 3600.0


def trial_curve(
  observations: Sequence[Observation], budget: int, best: tuple[float, float], full_fidelity: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """One trial's curves, evaluation by evaluation in simulated-finish order.

  Simulated times are the rows' `sim_finished_at` (simulated workers), or for a journal without
  them (one worker, the inline executor) the running sum of the task's costs: `compare.run_costs`.

  Args:
    observations: the trial's journal.
    budget: its evaluations; a trial that stopped early keeps its last values up to it.
    best: (best validation, best test) accuracy of the dataset's table.
    full_fidelity: a multi-fidelity trial's last fidelity: only its evaluations count.

  Returns:
    ([budget] simulated seconds, [budget] validation regret, [budget] test regret), float64;
    NaN regrets before the first (full-fidelity) success.
  """
  times = compare.run_costs(observations, len(observations))
  order = np.argsort(times, kind="stable")
  value, test = compare.run_curves([observations[i] for i in order], "max", budget, full_fidelity)
  t = times[order] if times.size else np.full(1, np.nan)
  t = np.concatenate([t, np.full(budget - t.size, t[-1])])[:budget]
  return t, best[0] - value, best[1] - test


def label(study: Study, t: Trial) -> str:
  """A curve's name in its panel: the method, then its mode and model time where the study has
  both of either ("bananas sync charged")."""
  parts = [t.method]
  parts += ["sync" if t.sync else "async"] if len(study.syncs) > 1 else []
  parts += ["charged" if t.charged else "free"] if len(study.charges) > 1 else []
  return " ".join(parts)


def _panel(t: Trial) -> tuple[str, str]:
  return t.dataset, f"{t.workers} worker{'s' if t.workers > 1 else ''}"


def aggregate(study: Study, trials: dict, points: int = 40) -> dict:
  """Means over seeds of every curve, on one grid of simulated hours, and the table's values.

  Args:
    study: the study.
    trials: {Trial: (times, valid regret, test regret)} (`trial_curve`) of the finished trials.
    points: grid points, from 0 to the latest trial's end.

  Returns:
    {"hours": [points] grid, "report_hours": the table's hours (the study's, else the shortest
    trial's end), "panels": [{"dataset", "workers", "regret", "series": {label: {"mean", "stderr",
    "n"}}}], "rows": [{"trial": the row's `trial_name` at seed 0, "label", "n", "evaluations",
    "end_hours" (the mean simulated end of its trials), "<regret>@<h>": [mean, s.e.] (null
    before any seed has a result; a trial that ended before h counts with its final regret)}],
    "trials": {name: end hours}}.
  """
  if not trials:
    raise ValueError("study: no finished trial to aggregate; run the study first")
  ends = {trial_name(t): float(np.nanmax(c[0])) / HOUR for t, c in trials.items()}
  grid = np.linspace(0.0, max(ends.values()), points)
  hours = study.report_hours or (min(ends.values()),)
  groups: dict = {}
  for t, c in trials.items():
    groups.setdefault((_panel(t), label(study, t)), []).append((t, c))
  panels, rows = {}, []
  for (panel, name), members in groups.items():
    times = [c[0] / HOUR for _, c in members]
    row = {"trial": trial_name(members[0][0]._replace(seed=0)), "label": name, "n": len(members)}
    row["evaluations"] = float(np.mean([c[0].size for _, c in members]))
    row["end_hours"] = float(np.mean([np.nanmax(t) for t in times]))
    for k, regret in enumerate(REGRETS, start=1):
      runs = {"runs": {name: [c[k] for _, c in members]}, "sim_seconds": {name: times}}
      _, at = compare.seconds_curves(runs, key="sim_seconds", grid=grid)
      mean, err = curves.mean_stderr(at[name])
      series = panels.setdefault((*panel, regret), {})
      series[name] = {"mean": _rounded(mean), "stderr": _rounded(err), "n": len(members)}
      for h in hours:
        at_h = np.array([[compare.best_at_seconds(c[k], c[0] / HOUR, h)] for _, c in members])
        (m,), (e,) = curves.mean_stderr(at_h)
        row[f"{regret}@{h:g}"] = [None, None] if np.isnan(m) else [float(m), float(e)]
    rows.append(row)
  methods = [m for m, _ in study.methods]
  order = lambda t: (study.datasets.index(t.dataset), t.workers, t.sync, t.charged, methods.index(t.method))
  return {
    "hours": _rounded(grid),
    "report_hours": [float(h) for h in hours],
    "panels": [
      {"dataset": d, "workers": w, "regret": r, "series": s} for (d, w, r), s in sorted(panels.items(), key=_key)
    ],
    "rows": sorted(rows, key=lambda r: order(parse_name(r["trial"]))),
    "trials": ends,
  }


def _key(item) -> tuple:
  (dataset, workers, regret), _ = item
  return REGRETS.index(regret), dataset, int(workers.split()[0])


def _rounded(x: np.ndarray) -> list:
  """JSON-ready: 4 significant digits (a curve's mean drawn, not recomputed), null for NaN."""
  return [None if np.isnan(v) else float(f"{v:.4g}") for v in np.asarray(x, np.float64)]


def table_lines(study: Study, results: dict) -> list[str]:
  """The markdown table of `aggregate`'s rows: per dataset, workers, mode, model time and
  method, the seeds, the evaluations of a trial and when its trials end (mean simulated hours),
  and the mean ± standard error of both regrets (in accuracy points, %) at each reported
  simulated hour ("n/a" before any seed has a result)."""
  hours = results["report_hours"]
  head = ["dataset", "workers", "mode", "model time", "method", "seeds", "evaluations", "ends at (h)"]
  head += [f"{r} regret at {h:g} h" for h in hours for r in REGRETS]
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
  for row in results["rows"]:
    t = parse_name(row["trial"])
    cells = [t.dataset, str(t.workers), "sync" if t.sync else "async", "charged" if t.charged else "free"]
    cells += [t.method, str(row["n"]), f"{row['evaluations']:g}", f"{row['end_hours']:.3g}"]
    cells += [_mean_err(*row[f"{r}@{h:g}"]) for h in hours for r in REGRETS]
    lines.append("| " + " | ".join(cells) + " |")
  return lines


def _mean_err(mean: float | None, err: float | None) -> str:
  return "n/a" if mean is None else f"{mean:.3f} ± {err:.3f}"
