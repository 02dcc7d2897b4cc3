"""Plots of architecture distance matrices: a labelled heatmap and a 2-D t-SNE embedding (App. A.4);
`draw` (one architecture as a layered DAG) lives in `nas_jax.viz.drawing` and is re-exported here.

Figures are drawn on matplotlib's Agg canvas, so nothing touches pyplot's global state.
"""

from __future__ import annotations

from typing import IO, Mapping, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from nas_jax.search.curves import best_so_far, mean_stderr
from nas_jax.viz.drawing import draw

__all__ = [
  "distance_heatmap",
  "embedding_2d",
  "draw",
  "plot_progress",
  "plot_curves",
  "plot_curve_grid",
  "pareto_figure",
]

_MAX_TICKS = 60  # beyond this many rows, label every k-th one so the labels stay legible


def _matrix(d, name: str, square: bool) -> np.ndarray:
  d = np.asarray(d, dtype=np.float64)
  if d.ndim != 2 or d.size == 0 or (square and d.shape[0] != d.shape[1]):
    raise ValueError(f"{name}: shape {d.shape}; expected a non-empty {'square ' if square else ''}[n, m] matrix")
  if not np.all(np.isfinite(d)) or np.any(d < 0):
    raise ValueError(f"{name}: has negative or non-finite entries; expected distances")
  return d


def _labels(labels: Sequence[str] | None, n: int, name: str) -> list[str]:
  if labels is None:
    return [str(i) for i in range(n)]
  if len(labels) != n:
    raise ValueError(f"{name}: {len(labels)} labels for {n} rows; give one per row")
  return [str(x) for x in labels]


def _ticks(axis_set, labels: list[str]) -> None:
  step = -(-len(labels) // _MAX_TICKS)
  pos = np.arange(0, len(labels), step)
  axis_set(pos, [labels[i] for i in pos], fontsize=max(4, 10 - len(pos) // 10))


def distance_heatmap(
  d,
  path: str | IO[bytes],
  *,
  row_labels: Sequence[str] | None = None,
  col_labels: Sequence[str] | None = None,
  title: str = "",
) -> Figure:
  """Writes a PNG heatmap of a distance matrix, one labelled row and column per architecture.

  Args:
    d: [n, m] non-negative distances (e.g. `OtmannDistances.d`).
    path: the PNG to write: a file name or a binary file object.
    row_labels, col_labels: n and m names; default to the indices.
    title: figure title.

  Returns:
    The Figure (already written to `path`).
  """
  d = _matrix(d, "d", square=False)
  rows, cols = _labels(row_labels, d.shape[0], "row_labels"), _labels(col_labels, d.shape[1], "col_labels")
  fig = Figure(figsize=(7, 6))
  ax = fig.add_subplot()
  image = ax.imshow(d, cmap="viridis", interpolation="nearest", aspect="auto")
  fig.colorbar(image, ax=ax, label="distance")
  _ticks(ax.set_yticks, rows)
  _ticks(ax.set_xticks, cols)
  ax.tick_params(axis="x", labelrotation=90)
  ax.set_title(title)
  fig.subplots_adjust(left=0.15, right=0.95, bottom=0.15, top=0.93)
  FigureCanvasAgg(fig).print_png(path)
  return fig


def embedding_2d(
  d,
  path: str | None = None,
  *,
  labels: Sequence[str] | None = None,
  title: str = "",
  seed: int = 0,
  perplexity: float | None = None,
) -> np.ndarray:
  """2-D t-SNE embedding of a symmetric distance matrix, as the paper's Fig. 4 (App. A.4).

  Args:
    d: [n, n] symmetric non-negative distances, n >= 3.
    path: if given, a scatter plot of the embedding (points annotated with `labels`) goes there.
    labels: n names; default to the indices.
    title: figure title.
    seed: seed of t-SNE's random initialisation.
    perplexity: t-SNE perplexity; default min(30, (n - 1) / 3), which keeps it below n.

  Returns:
    [n, 2] float64 coordinates.
  """
  d = _matrix(d, "d", square=True)
  n = d.shape[0]
  if n < 3:
    raise ValueError(f"d: {n} architectures; a t-SNE embedding needs at least 3")
  if not np.allclose(d, d.T, rtol=1e-6, atol=1e-9 * max(d.max(), 1.0)):
    raise ValueError("d: not symmetric; embed a matrix of distances within one set")
  names = _labels(labels, n, "labels")
  perplexity = min(30.0, (n - 1) / 3) if perplexity is None else perplexity
  if not 0 < perplexity < n:
    raise ValueError(f"perplexity: {perplexity!r}; expected 0 < perplexity < n = {n}")
  # Imported here: scikit-learn is slow to import, which every search would pay for a plot
  # that only the distance notebooks and CLIs draw.
  from sklearn.manifold import TSNE
  from threadpoolctl import threadpool_limits

  tsne = TSNE(n_components=2, metric="precomputed", init="random", perplexity=perplexity, random_state=seed)
  # One OpenMP thread: beside XLA's busy threads, t-SNE's spin-waiting team is some 30x slower
  # on a few cores, and a plot of a search's networks is small work for one thread.
  with threadpool_limits(limits=1, user_api="openmp"):
    xy = tsne.fit_transform((d + d.T) / 2).astype(np.float64)
  if path is not None:
    fig = Figure(figsize=(6, 6))
    ax = fig.add_subplot()
    ax.scatter(xy[:, 0], xy[:, 1], s=14)
    if n <= _MAX_TICKS:
      for (x, y), name in zip(xy, names):
        ax.annotate(name, (x, y), fontsize=7, xytext=(2, 2), textcoords="offset points")
    ax.set_title(title)
    ax.set_xticks([])
    ax.set_yticks([])
    FigureCanvasAgg(fig).print_png(path)
  return xy


def _finish(fig: Figure, ax, goal: str, path: str | IO[bytes], what: str, xlabel: str = "evaluations") -> None:
  ax.set_xlabel(xlabel)
  if xlabel == "evaluations":
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no evaluation 2.5
  ax.set_ylabel(f"{what} ({'higher' if goal == 'max' else 'lower'} is better)")
  ax.grid(alpha=0.3)
  fig.subplots_adjust(left=0.14, right=0.97, bottom=0.12, top=0.92)  # fixed margins: tight_layout is slow
  FigureCanvasAgg(fig).print_png(path)


def plot_progress(values: Sequence[float | None], goal: str, path: str | IO[bytes], *, title: str = "") -> None:
  """Writes a PNG of one search's values (dots; failures omitted) and best-so-far line to `path`,
  a file name or a binary file object."""
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
  what: str = "best value so far",
) -> None:
  """Writes a PNG of the mean best-so-far curve of each method, with a ± 1 standard-error band.

  Args:
    runs: name -> [S, T] best-so-far values of S seeds (NaN where a seed has no value yet).
    goal: "max" or "min".
    path: the PNG file.
    x, xlabel: [T] positions of the T columns and their axis label (default: evaluations 1..T).
    what: the quantity on the y axis, e.g. "hypervolume".
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
  _finish(fig, ax, goal, path, what, xlabel)


def plot_curve_grid(
  panels: Mapping[tuple[str, str], Mapping[str, tuple]],
  path: str,
  *,
  x: np.ndarray,
  xlabel: str,
  what: str,
  title: str = "",
) -> None:
  """Writes a PNG of mean curves with a ± 1 standard-error band, one panel per (row, column).

  Args:
    panels: (row label, column label) -> {name: ([T] mean, [T] standard error)}; the rows and
      columns are drawn in the order they first appear.
    path: the PNG file.
    x, xlabel: [T] positions shared by every curve, and their axis label.
    what: the y axis, lower is better (a regret, >= 0: drawn on a log scale above 0.1, linear below).
    title: above the grid.
  """
  rows, cols = list(dict.fromkeys(r for r, _ in panels)), list(dict.fromkeys(c for _, c in panels))
  fig = Figure(figsize=(4.2 * len(cols) + 2.4, 3.2 * len(rows) + 0.6))
  axes = np.asarray(fig.subplots(len(rows), len(cols), squeeze=False))
  colours = {name: f"C{i % 10}" for i, name in enumerate(dict.fromkeys(n for p in panels.values() for n in p))}
  for (row, col), curves in panels.items():
    ax = axes[rows.index(row), cols.index(col)]
    for name, (mean, err) in curves.items():
      mean, err = np.asarray(mean, np.float64), np.asarray(err, np.float64)
      ax.plot(x, mean, color=colours[name], lw=1.2, label=name)
      ax.fill_between(x, mean - err, mean + err, color=colours[name], alpha=0.2)
    # Each panel ends where its curves stop changing (a short dataset beside a long one).
    means = np.array([np.nan_to_num(np.asarray(m, np.float64), nan=-1.0) for m, _ in curves.values()])
    moves = np.flatnonzero(np.any(np.diff(means, axis=1) != 0, axis=0)) if means.size else np.zeros(0, int)
    ax.set_xlim(x[0], x[min(moves[-1] + 2, len(x) - 1)] if moves.size else x[-1])
    ax.set_title(f"{row}, {col}", fontsize=9)
    ax.set_yscale("symlog", linthresh=0.1)  # regrets span decades and reach 0: log above 0.1, linear below
    ax.grid(alpha=0.3)
  for ax in axes[-1]:
    ax.set_xlabel(xlabel)
  for ax in axes[:, 0]:
    ax.set_ylabel(f"{what} (lower is better)")
  shown = {label: h for ax in axes.flat for h, label in zip(*ax.get_legend_handles_labels())}
  fig.legend(list(shown.values()), list(shown), loc="upper right", fontsize=7)
  fig.suptitle(title, fontsize=10, x=0.02, ha="left")  # clear of the legend at the right
  fig.tight_layout(rect=(0, 0, 1 - 2.0 / fig.get_figwidth(), 1))  # the legend keeps the right-hand 2 inches
  FigureCanvasAgg(fig).print_png(path)


def pareto_figure(
  values: np.ndarray, names: Sequence[str], goals: Sequence[str], front: np.ndarray, *, trial_ids: Sequence[int] = ()
) -> Figure:
  """Every evaluation's value against each other objective, the Pareto front marked and joined.

  Args:
    values: [n, 1 + m] raw values of the OK evaluations: the value, then m >= 1 other objectives.
    names, goals: [1 + m] each column's name and goal ("max" or "min").
    front: [n] bool, the non-dominated evaluations (`pareto.non_dominated` of their scores).
    trial_ids: [n] labels of the front's points (none when empty).

  Returns:
    A Figure with one panel per other objective (value on the y axis).
  """
  values, front = np.asarray(values, np.float64), np.asarray(front, bool)
  m = values.shape[1] - 1
  fig = Figure(figsize=(5.5 * m, 4))
  for j, ax in enumerate(np.atleast_1d(fig.subplots(1, m)), start=1):
    ax.plot(values[~front, j], values[~front, 0], ".", color="0.6", label="evaluations")
    order = np.argsort(values[front, j])
    ax.plot(values[front, j][order], values[front, 0][order], "o-", color="C3", label="Pareto front")
    for x, y, t in zip(values[front, j], values[front, 0], np.asarray(trial_ids)[front] if len(trial_ids) else []):
      ax.annotate(str(t), (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7)
    ax.set_xlabel(f"{names[j]} ({'higher' if goals[j] == 'max' else 'lower'} is better)")
    ax.set_ylabel(f"{names[0]} ({'higher' if goals[0] == 'max' else 'lower'} is better)")
    ax.grid(alpha=0.3)
    ax.legend()
  fig.subplots_adjust(left=0.1 / m, right=0.98, bottom=0.14, top=0.95, wspace=0.25)
  return fig


def learning_curves_figure(curves: Sequence, stopped: Sequence[bool], goal: str) -> Figure:
  """Learning curves of a multi-fidelity search: value against fidelity per network.

  Args:
    curves: [n] curves, each [[fidelity, value], ...] (`Observation.curve`; None values skipped).
    stopped: [n] whether each network was stopped before full fidelity (drawn grey).
    goal: "max" or "min", for the axis label.
  """
  fig = Figure(figsize=(6, 4))
  ax = fig.add_subplot()
  for curve, early in sorted(zip(curves, stopped), key=lambda c: not c[1]):  # full ones on top
    pts = np.array([(f, v) for f, v in curve if v is not None], np.float64).reshape(-1, 2)
    ax.plot(pts[:, 0], pts[:, 1], ".-" if len(pts) > 1 else ".", color="0.7" if early else "C0", lw=0.8)
  ax.plot([], [], color="0.7", label="stopped early")
  ax.plot([], [], color="C0", label="trained to full fidelity")
  ax.set_xscale("log")
  ax.set_xlabel("fidelity (e.g. epochs)")
  ax.set_ylabel(f"value ({'higher' if goal == 'max' else 'lower'} is better)")
  ax.grid(alpha=0.3)
  ax.legend()
  fig.tight_layout()
  return fig
