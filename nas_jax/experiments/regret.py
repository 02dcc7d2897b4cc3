"""Regret of NAS-Bench-201 (Dong & Yang 2020) searches: the curve of one run, both regrets at the
budget over runs, and the queries each run needed to reach the table's best validation accuracy.
The regret is the table's best reported accuracy minus the reported accuracy of the incumbent (the
cell with the best validation accuracy so far), our harness's definition; `regret_bv` measures from
the best-validation cell's reported accuracy instead.
"""

from typing import Any

import numpy as np

from nas_jax.tasks.tabular import Nb201Table

__all__ = ["regret_curve", "best_valid_test", "queries_to_optimum", "mean_se", "regret_summary", "paired_difference"]


def regret_curve(values: Any, test_values: Any, best_test: float) -> np.ndarray:
  """Regret after each query (our harness's definition): best_test - test accuracy of the incumbent.

  Args:
    values: [q] validation accuracies in query order; test_values: [q] reported accuracies.
    best_test: the table's best reported accuracy.

  Returns:
    [q] float; the incumbent is the highest value so far, ties going to the earlier query.
  """
  values, test_values = np.asarray(values, float), np.asarray(test_values, float)
  if values.shape != test_values.shape or values.ndim != 1:
    raise ValueError(f"regret_curve: values {values.shape} and test_values {test_values.shape}; expected [q]")
  best = np.zeros(len(values), int)
  for q in range(1, len(values)):
    best[q] = q if values[q] > values[best[q - 1]] else best[q - 1]
  return best_test - test_values[best]


def best_valid_test(table: Nb201Table) -> float:
  """The reported accuracy of the cell with the best validation accuracy (the first of ties):
  the reference of `regret_bv` (1.1111 below best_test on ImageNet16-120)."""
  return float(table.test[int(np.argmax(table.valid))])


def queries_to_optimum(value_runs: Any, table: Nb201Table) -> dict:
  """How many queries each run needed to observe the best validation accuracy of the table.

  Args:
    value_runs: [runs][q] each run's best validation accuracy so far after each query
      (`compare`'s "runs").
    table: the dataset's table.

  Returns:
    {"median": the median over runs (inf when fewer than half reached it), "reached": how many
    runs reached it, "n": runs}.
  """
  needed = []
  for r in value_runs:
    hit = np.flatnonzero(np.asarray(r, float) >= table.best_valid - 1e-9)
    needed.append(float(hit[0] + 1) if hit.size else np.inf)
  if not needed:
    raise ValueError("value_runs: no run; expected one best-so-far curve per run")
  return {"median": float(np.median(needed)), "reached": int(np.isfinite(needed).sum()), "n": len(needed)}


def mean_se(x: Any) -> tuple[float, float]:
  """(mean, standard error of the mean) of [n] values; the s.e. of one value is 0."""
  x = np.asarray(x, float)
  return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0


def regret_summary(test_runs: Any, table: Nb201Table) -> dict:
  """Mean and standard error over runs of both regrets at the budget.

  Args:
    test_runs: [runs][q] the test accuracy of each run's incumbent after each query
      (`compare`'s "test_runs"); the last entry of each run is read.
    table: the dataset's table.

  Returns:
    {"n": runs, "regret": (mean, s.e.) of best_test - test, "regret_bv": (mean, s.e.) of
    best_valid_test - test}.
  """
  final = np.array([np.asarray(r, float)[-1] for r in test_runs])
  if final.ndim != 1 or len(final) == 0 or not np.all(np.isfinite(final)):
    raise ValueError(f"test_runs: {len(final)} runs with a final test accuracy each expected, got {final}")
  return {
    "n": len(final),
    "regret": mean_se(table.best_test - final),
    "regret_bv": mean_se(best_valid_test(table) - final),
  }


def paired_difference(old: Any, new: Any) -> dict:
  """The paired difference new - old of per-seed values where lower is better (regrets), and the
  acceptance rule: new is no worse than old by more than one standard error of the difference.

  Args:
    old, new: [n] values, one per seed, in the same seed order.

  Returns:
    {"n", "mean", "se": the standard error of the mean difference (0 for one seed), "passes":
    mean <= se, "wins", "losses", "ties": seeds where new is lower, higher, equal}.
  """
  old, new = np.asarray(old, float), np.asarray(new, float)
  if old.shape != new.shape or old.ndim != 1 or not old.size:
    raise ValueError(f"paired_difference: old {old.shape} and new {new.shape}; expected [n] values, n >= 1 seeds")
  diff = new - old
  mean, se = mean_se(diff)
  counts = {"wins": int((diff < 0).sum()), "losses": int((diff > 0).sum()), "ties": int((diff == 0).sum())}
  return {"n": int(diff.size), "mean": mean, "se": se, "passes": bool(mean <= se), **counts}
