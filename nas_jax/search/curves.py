"""Best-so-far curves of searches and their plots (matplotlib's Agg canvas; no pyplot state)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from nas_jax.search.state import to_score

__all__ = ["best_so_far", "mean_stderr", "plot_progress", "plot_curves"]


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


def _finish(fig: Figure, ax, goal: str, path: str, what: str, xlabel: str = "evaluations") -> None:
  ax.set_xlabel(xlabel)
  ax.set_ylabel(f"{what} ({'higher' if goal == 'max' else 'lower'} is better)")
  ax.grid(alpha=0.3)
  fig.subplots_adjust(left=0.14, right=0.97, bottom=0.12, top=0.92)  # tight_layout costs ~0.4 s a plot
  FigureCanvasAgg(fig).print_png(path)


def plot_progress(values: Sequence[float | None], goal: str, path: str, *, title: str = "") -> None:
  """Writes a PNG of one search's values (dots; failures omitted) and best-so-far line."""
  fig = Figure(figsize=(6, 4))
  ax = fig.add_subplot()
  v = np.array([np.nan if x is None else x for x in values], np.float64)
  t = np.arange(1, v.size + 1)
  ax.plot(t, v, ".", color="0.6", label="evaluations")
  ax.step(t, best_so_far(list(values), goal), where="post", label="best so far")
  ax.set_title(title)
  ax.legend()
  _finish(fig, ax, goal, path, "value")


def plot_curves(
  runs: Mapping[str, np.ndarray],
  goal: str,
  path: str,
  *,
  title: str = "",
  x: np.ndarray | None = None,
  xlabel: str = "evaluations",
) -> None:
  """Writes a PNG of the mean best-so-far curve of each method, with a ± 1 standard-error band.

  Args:
    runs: name -> [S, T] best-so-far values of S seeds (NaN where a seed has no value yet).
    goal: "max" or "min".
    path: the PNG file.
    x, xlabel: [T] positions of the T columns and their axis label (default: evaluations 1..T).
  """
  fig = Figure(figsize=(6, 4))
  ax = fig.add_subplot()
  for name, curves in runs.items():
    curves = np.asarray(curves, np.float64)
    t = np.arange(1, curves.shape[1] + 1) if x is None else np.asarray(x)
    mean, err = mean_stderr(curves)
    ax.plot(t, mean, label=f"{name} (n={curves.shape[0]})")
    ax.fill_between(t, mean - err, mean + err, alpha=0.25)
  ax.set_title(title)
  ax.legend()
  _finish(fig, ax, goal, path, "best value so far", xlabel)


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
