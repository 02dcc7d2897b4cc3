"""What `bo` reads of its history besides the model: the optimiser's context and EI's incumbent,
both aware of fidelity spaces (`spaces.fidelity_space`), whose networks appear at several
fidelities but are optimised and compared at the full one."""

from __future__ import annotations

from typing import Any

import numpy as np

from nas_jax.acquisition.acq_optimiser import Context
from nas_jax.search.strategies import common
from nas_jax.spaces.fidelity_space import FidelityPoint

__all__ = ["optimiser_context", "incumbent"]


def optimiser_context(space: Any, history: common.History, exclude: set) -> Context:
  """What the optimiser reads. On a fidelity space: each network once, at the full fidelity,
  with its highest-fidelity observation (its score, trial id and task info), so that parents are
  scored where candidates are and a network's low-fidelity results do not crowd the population."""
  if not space.fidelities:
    return Context(
      space, history.points, history.scores, history.trial_ids, frozenset(exclude), task_infos=history.task_infos
    )
  top: dict = {}  # canonical key -> index of its highest-fidelity observation (a success first)
  rank = lambda i: (np.isnan(history.scores[i]), -history.points[i].fidelity)
  for i, p in enumerate(history.points):
    k = space.canonical_key(p)
    if k not in top or rank(top[k]) > rank(i):
      top[k] = i
  idx = sorted(top.values())
  full = space.fidelities[-1]
  return Context(
    space,
    tuple(FidelityPoint(history.points[i].point, full) for i in idx),
    history.scores[idx],
    tuple(history.trial_ids[i] for i in idx),
    frozenset(exclude),
    task_infos=tuple(history.task_infos[i] for i in idx),
  )


def incumbent(space: Any, history: common.History, ok: np.ndarray, targets: np.ndarray) -> float:
  """EI's and PI's best target: over the successes [len(ok)] at the full fidelity on a fidelity
  space (a low fidelity's value is not comparable), over all of them before one exists."""
  if space.fidelities:
    full = np.asarray([history.points[i].fidelity == space.fidelities[-1] for i in ok], bool)
    if full.any():
      return float(targets[full].max())
  return float(targets.max())
