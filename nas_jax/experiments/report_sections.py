"""Sections of the search report that depend on the kind of search: the Pareto front of a
multi-objective search, the learning curves of a multi-fidelity one; and the figure helpers the
report shares. Each takes a `report.Run`.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from nas_jax.acquisition import pareto
from nas_jax.search.state import Observation, observation_scores, to_score
from nas_jax.viz import plots

__all__ = ["png", "img", "full_fidelity", "at_full", "objectives_of", "pareto_section", "learning_curves_section"]


def png(fig: Figure) -> str:
  buf = io.BytesIO()
  FigureCanvasAgg(fig).print_png(buf)
  return base64.b64encode(buf.getvalue()).decode("ascii")


def img(b64: str, alt: str) -> str:
  return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def full_fidelity(run: Any) -> float | None:
  """The run's full fidelity: the last of its config's `task.fidelities`, else the highest
  fidelity its journal records; None for a single-fidelity search."""
  text = ((run.config or {}).get("task") or {}).get("fidelities") or ""
  if isinstance(text, str) and text.strip():
    return float(text.split(",")[-1])
  seen = [o.fidelity for o in run.observations if o.fidelity is not None]
  return max(seen) if seen else None


def at_full(run: Any, o: Observation) -> bool:
  return o.fidelity is None or o.fidelity == full_fidelity(run)


def objectives_of(run: Any) -> tuple[tuple[str, str], ...]:
  """The run's other objectives as (name, goal): from summary.json, else (a running search) the
  names its observations report, each minimised (config.objectives holds cost metrics)."""
  if run.summary and run.summary.get("objectives"):
    return tuple((n, g) for n, g in run.summary["objectives"][1:])
  names = sorted({k for o in run.observations for k in o.objectives})
  return tuple((n, "min") for n in names)


def pareto_section(run: Any) -> str:
  objectives = objectives_of(run)
  ok = [o for o in run.observations if o.ok]
  if not objectives or not ok:
    return ""
  scores = observation_scores(ok, run.goal, objectives)
  front = pareto.non_dominated(scores)
  names, goals = ["value", *(n for n, _ in objectives)], [run.goal, *(g for _, g in objectives)]
  raw = np.stack([to_score(scores[:, j], g) for j, g in enumerate(goals)], axis=1)  # to_score is its own inverse
  fig = plots.pareto_figure(raw, names, goals, front, trial_ids=[o.trial_id for o in ok])
  return (
    f'<h2 id="pareto">Pareto front</h2><p>{int(front.sum())} of {len(ok)} successful evaluations are'
    f" non-dominated (labelled by trial).</p>{img(png(fig), 'Pareto front')}"
  )


def learning_curves_section(run: Any) -> str:
  """A multi-fidelity search's learning curves, one per network (its longest evaluation), those
  stopped before full fidelity in grey; "" for a single-fidelity search."""
  full = full_fidelity(run)
  if full is None:
    return ""
  longest: dict[str, Observation] = {}
  for o in run.observations:
    k = json.dumps(o.arch_json, sort_keys=True)
    if o.curve and (k not in longest or o.fidelity > longest[k].fidelity):
      longest[k] = o
  nets = list(longest.values())
  stopped = Counter(o.fidelity for o in nets if o.fidelity < full)
  fig = plots.learning_curves_figure([o.curve for o in nets], [o.fidelity < full for o in nets], run.goal)
  where = ", ".join(f"{n} after {f:g}" for f, n in sorted(stopped.items())) or "none"
  return (
    f'<h2 id="curves">Learning curves</h2><p>{len(nets)} networks; {len(nets) - sum(stopped.values())} reached the'
    f" full fidelity {full:g}, the scheduler stopped the others early ({where}).</p>"
    f"{img(png(fig), 'learning curves')}"
  )
