"""BANANAS candidate sets (BANANAS Sec. 4; sizes from the authors' code): mutants of the best queried points, and the
random-candidate ablation. Generic over any `Space`; de-duplicated by `space.canonical_key`.
"""

from __future__ import annotations

from typing import Any, Hashable, Sequence

import jax
import numpy as np

from nas_jax.spaces.space import Space

__all__ = ["select_parents", "mutation_candidates", "random_candidates", "top_k"]


def select_parents(points: Sequence[Any], scores: Sequence[float], n: int = 5) -> list:
  """The n points with the highest scores, best first; ties keep query order (as in the authors' code)."""
  if n < 1:
    raise ValueError(f"select_parents: n={n}; expected n >= 1")
  order = np.argsort(-np.asarray(scores, float), kind="stable")
  return [points[i] for i in order[:n]]


def mutation_candidates(
  space: Space,
  key: jax.Array,
  parents: Sequence[Any],
  seen: set[Hashable] | frozenset,
  *,
  n_target: int = 100,
  attempts_per_parent: int = 100,
) -> list:
  """The code's candidate set (github.com/naszilla/naszilla): mutate parents in turn until >= n_target candidates.

  For each parent, while fewer than `n_target` candidates exist, make `attempts_per_parent`
  mutations (rate 1, `require_change=False`) and keep each whose key is not yet seen; an
  unchanged mutant (ok False) is a spent attempt.

  Args:
    space: the Space; parents: points, best first (at most 5 in BANANAS).
    seen: canonical keys of queried (and pending) points; not modified.

  Returns:
    A list of distinct new points (>= n_target unless the parents are exhausted).
  """
  if n_target < 1 or attempts_per_parent < 1:
    raise ValueError(
      f"mutation_candidates: n_target={n_target}, attempts_per_parent={attempts_per_parent}; both must be >= 1"
    )
  seen = set(seen)
  out = []
  # Sub-keys as a host array of raw key data: cheap to index in the loop below.
  keys = np.asarray(jax.random.key_data(jax.random.split(key, max(len(parents), 1) * attempts_per_parent)))
  for p_i, parent in enumerate(parents):
    if len(out) >= n_target:
      break
    for a in range(attempts_per_parent):
      child, changed = space.mutate(parent, keys[p_i * attempts_per_parent + a])
      if not changed:
        continue
      k = space.canonical_key(child)
      if k not in seen:
        seen.add(k)
        out.append(child)
  return out


def random_candidates(
  space: Space,
  key: jax.Array,
  seen: set[Hashable] | frozenset,
  *,
  n: int = 1000,
  max_draws: int | None = None,
) -> list:
  """Up to n distinct random points not in seen, from at most max_draws (default 5n) draws.

  The random-candidates ablation (BANANAS Sec. 5.1): paper n = 1000; code n = 200 from 500 draws.
  """
  max_draws = 5 * n if max_draws is None else max_draws
  if n < 1 or max_draws < n:
    raise ValueError(f"random_candidates: n={n}, max_draws={max_draws}; need 1 <= n <= max_draws")
  seen = set(seen)
  out = []
  for p in space.sample(key, max_draws):
    k = space.canonical_key(p)
    if k not in seen:
      seen.add(k)
      out.append(p)
      if len(out) == n:
        break
  return out


def top_k(values: Any, k: int) -> np.ndarray:
  """Indices of the k largest acquisition values, best first (stable: ties keep order)."""
  values = np.asarray(values, float)
  if k < 1:
    raise ValueError(f"top_k: k={k}; expected k >= 1")
  return np.argsort(-values, kind="stable")[:k]
