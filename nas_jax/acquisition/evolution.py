"""NASBOT's evolutionary acquisition optimiser (NASBOT Sec. 4; App. B.2) and its schedules.

`ea_maximize` works on any `Space`: it only mutates points and de-duplicates them by
`canonical_key`; the acquisition is a batched host function of a list of points.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Collection, Hashable, Sequence

import numpy as np

from nas_jax.acquisition.acq_optimiser import scored
from nas_jax.spaces import graph_edit
from nas_jax.spaces.space import Space

__all__ = ["SELECTIONS", "selection_probs", "n_ea_schedule", "n_mut_schedule", "ea_maximize"]

# Parent-selection temperature as a multiple of std(g): the paper's pi ~ exp(g / sigma), and
# the authors' code's exp((g - mean) / (2 sigma)) (github.com/kirthevasank/nasbot; the mean cancels on normalising).
SELECTIONS = MappingProxyType({"paper": 1.0, "nasbot_code": 2.0})


def selection_probs(g, *, selection: str = "paper") -> np.ndarray:
  """Parent-selection probabilities pi(z_i) ~ exp(g_i / (c * sigma)) (NASBOT App. B.2).

  sigma is the standard deviation of the finite g; c is 1 ("paper") or 2 ("nasbot_code").
  Invariant to adding a constant to g and to scaling it by c > 0; uniform over the finite g when
  sigma = 0. Non-finite g (a failed score) get probability 0, unless no g is finite (uniform).

  Args:
    g: [n] scores, n >= 1.
    selection: a key of `SELECTIONS`.

  Returns:
    [n] float64 probabilities summing to 1.
  """
  if selection not in SELECTIONS:
    raise ValueError(f"selection: {selection!r} is unknown; choose one of: {', '.join(SELECTIONS)}")
  g = np.asarray(g, np.float64)
  if g.ndim != 1 or len(g) == 0:
    raise ValueError(f"g: shape {g.shape}; expected [n] with n >= 1")
  finite = np.isfinite(g)
  if not finite.any():
    return np.full(len(g), 1 / len(g))
  sigma = g[finite].std()
  if not sigma > 0:
    return finite / finite.sum()
  # Subtracting the max keeps exp() finite and is what makes a shift of g drop out exactly.
  z = np.where(finite, (g - g[finite].max()) / (SELECTIONS[selection] * sigma), -np.inf)
  p = np.exp(z)
  return p / p.sum()


def n_ea_schedule(t: int, *, scale: float = 25.0, lo: int = 50, hi: int = 500) -> int:
  """n_EA(t) = clip(scale * sqrt(t), lo, hi): the O(sqrt t) budget of the EA at BO step t
  (App. B.2); the default constants are the authors' code's (github.com/kirthevasank/nasbot)."""
  if t < 0:
    raise ValueError(f"t: {t!r}; expected a BO step >= 0")
  return int(np.clip(scale * np.sqrt(t), lo, hi))


def n_mut_schedule(n_ea: int, *, scale: float = 3.0, lo: int = 5, hi: int = 100) -> int:
  """N_mut = int(clip(scale * sqrt(n_EA), lo, hi)): mutations per EA round, O(sqrt n_EA)
  (App. B.2); default constants from the authors' code."""
  if n_ea < 1:
    raise ValueError(f"n_ea: {n_ea!r}; expected an integer >= 1")
  return int(np.clip(scale * np.sqrt(n_ea), lo, hi))


def ea_maximize(
  key,
  score_fn: Callable[[list], Any],
  population: Sequence,
  space: Space,
  *,
  n_ea: int,
  n_mut: int,
  n: int = 1,
  exclude: Collection[Hashable] = frozenset(),
  selection: str = "paper",
  max_mutations: int | None = None,
  population_scores=None,
) -> tuple[list, np.ndarray]:
  """Maximises a cheap score g over `space` by evolution (NASBOT App. B.2).

  The population (de-duplicated by canonical key) is scored once, or its scores are given. Then,
  until `n_ea` new points have been scored: draw N_mut parents with replacement from every point
  scored so far with `selection_probs`, mutate each with `space.mutate`, drop children that are
  unchanged (ok False) or whose canonical key was already scored, is excluded, or repeats in the
  round, and score the rest in one call. `n_ea` counts new points only; the population's scores are extra.
  Dropped children cost no score but a mutation, and the loop also stops after `max_mutations`
  mutations in all (a space with few unseen points left near the parents).

  Args:
    key: a jax.random key.
    score_fn: `list[point] -> [k]` scores (higher is better), called once per round; NaN or
      -inf marks a point that must never be chosen.
    population: points to start from, e.g. the BO-evaluated points and the initial pool.
    space: gives `mutate` and `canonical_key`.
    n_ea: number of new points to score (`n_ea_schedule(t)`).
    n_mut: children per round (`n_mut_schedule(n_ea)`).
    n: how many points to return.
    exclude: canonical keys never to return (evaluated or pending points); excluded points in
      the population still serve as parents.
    selection: "paper" (exp(g / sigma)) or "nasbot_code" (exp((g - mean) / (2 sigma))).
    max_mutations: the most mutations in all; 10 * n_ea by default.
    population_scores: [len(population)] scores of the population, when the caller has them
      cheaper than `score_fn` (e.g. from a cache); `score_fn` then only scores children.

  Returns:
    (points, scores): the best min(n, available) scored points not in `exclude`, highest g
    first (ties: first scored first), with their scores, [n'] float64.
  """
  max_mutations = 10 * n_ea if max_mutations is None else max_mutations
  for name, v, least in (("n_ea", n_ea, 0), ("n_mut", n_mut, 1), ("n", n, 1), ("max_mutations", max_mutations, 0)):
    if not (isinstance(v, (int, np.integer)) and v >= least):
      raise ValueError(f"{name}: {v!r}; expected an integer >= {least}")
  if selection not in SELECTIONS:
    raise ValueError(f"selection: {selection!r} is unknown; choose one of: {', '.join(SELECTIONS)}")
  if len(population) == 0:
    raise ValueError("population: empty; pass at least one point (e.g. space.initial())")
  if population_scores is not None and np.shape(population_scores) != (len(population),):
    raise ValueError(
      f"population_scores: shape {np.shape(population_scores)}; expected"
      f" [{len(population)}], one score per population point"
    )
  exclude = set(exclude)
  points, keys, firsts, seen = [], [], [], set()
  for i, p in enumerate(population):
    k = space.canonical_key(p)
    if k not in seen:
      seen.add(k)
      points.append(p)
      keys.append(k)
      firsts.append(i)
  if population_scores is None:
    g = scored(score_fn, points)
  else:
    g = np.asarray(population_scores, np.float64)[firsts]
  rng = graph_edit.host_rng(key)
  used, tried = 0, 0
  while used < n_ea and tried < max_mutations:
    probs = selection_probs(g, selection=selection)
    parents = rng.choice(len(points), size=min(n_mut, n_ea - used, max_mutations - tried), p=probs)
    tried += len(parents)
    children, child_keys = [], []
    for i in parents:
      child, changed = space.mutate(points[i], graph_edit.child_key(rng))
      if not changed:
        continue
      k = space.canonical_key(child)
      if k not in seen and k not in exclude:
        seen.add(k)
        children.append(child)
        child_keys.append(k)
    if children:
      g = np.concatenate([g, scored(score_fn, children)])
      points += children
      keys += child_keys
      used += len(children)
  ok = np.array([k not in exclude for k in keys]) & ~np.isnan(g) & (g > -np.inf)
  order = [i for i in np.argsort(-g, kind="stable") if ok[i]][:n]
  return [points[i] for i in order], g[order]
