"""Best-so-far curves of searches and their mean +- standard error over seeds (plots: `nas_jax.viz.plots`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from nas_jax.search.state import to_score

__all__ = ["best_so_far", "mean_stderr"]


def best_so_far(values: Sequence[float | None], goal: str) -> np.ndarray:
  """The best raw value after each evaluation.

  Args:
    values: [T] raw metrics in evaluation order; None (or NaN) for failed evaluations.
    goal: "max" or "min".

  Returns:
    [T] float64 in the task's own sign; NaN until the first success.
  """
  scores = to_score(list(values), goal)
  best = np.fmax.accumulate(scores) if scores.size else scores  # fmax skips NaN
  return best if goal == "max" else -best


def mean_stderr(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Mean and standard error over seeds, ignoring NaN.

  Args:
    curves: [S, T] values of S seeds.

  Returns:
    ([T], [T]) float64: NaN mean where no seed has a value; standard error 0 with one value.
  """
  n = np.sum(~np.isnan(curves), axis=0)
  with np.errstate(invalid="ignore", divide="ignore"):
    mean = np.nansum(curves, 0) / np.where(n > 0, n, np.nan)
    var = np.nansum((curves - mean) ** 2, 0) / np.where(n > 1, n - 1, np.nan)
  return mean, np.where(n > 1, np.sqrt(var / np.maximum(n, 1)), 0.0)
