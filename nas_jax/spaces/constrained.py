"""Constraints on a search space: `constrained(space, costs, limits)` is the same space whose
`sample`, `mutate`, `neighbours` and `initial` only ever give points within `limits` (e.g. at
most 10^5 parameters), whose `feasible(point)` says whether a point is, and whose `costs(point)`
reports the point's costs.

Strategies and acquisition optimisers make their candidates through these four functions, so
they search the feasible set without knowing about constraints: random search and the samplers
redraw, evolution and mutation-based optimisers mutate again, local search skips infeasible
neighbours, and the initial pool keeps its feasible members. The model-based strategy (`bo`)
also scores an infeasible candidate of its optimiser (tree search's morphs, a gradient's point)
below every feasible one and never proposes it. A sampler that finds no feasible point says so
in one line. The cost function is the caller's (`nas_jax.models.network_costs`
for layer graphs, the table for NAS-Bench-201); costs are kept by canonical key, so a candidate
seen again is not costed again.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import jax

from nas_jax.spaces.space import Space

__all__ = ["METRICS", "check_limits", "violation", "constrained"]

# What a limit may bound (`max_<metric>` in a config): costs known before a network trains.
METRICS = ("params", "flops", "memory_mb", "latency_ms")
_SAMPLE_ROUNDS = 8  # rounds of draws before `sample` returns fewer than n feasible points
_MUTATE_TRIES = 32  # mutations of a point tried before `mutate` reports no feasible change
_CACHE_SIZE = 1 << 17  # costs kept by canonical key; cleared when full


def check_limits(limits: Mapping[str, Any]) -> dict[str, float]:
  """The limits as {metric: bound}, each metric in `METRICS` and each bound a finite number > 0.

  Raises:
    ValueError naming the metric, its bound and what is allowed.
  """
  if not isinstance(limits, Mapping):
    raise ValueError(f"limits: {limits!r}; expected a mapping metric -> maximum")
  out = {}
  for metric, bound in limits.items():
    if metric not in METRICS:
      raise ValueError(f"limits: {metric!r} is not a cost metric; allowed: {', '.join(METRICS)}")
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound) or bound <= 0:
      raise ValueError(f"limits: max_{metric}={bound!r}; expected a finite number > 0")
    out[metric] = float(bound)
  return out


def violation(costs: Mapping[str, float], limits: Mapping[str, float]) -> str:
  """ "" when every bounded metric of `costs` is within its limit, else the first broken one as
  "params 1.2e+05 > max_params 1e+05". A metric the costs lack is an error, not a pass."""
  for metric, bound in limits.items():
    if metric not in costs:
      raise ValueError(f"costs: {sorted(costs)} lack {metric!r}, which a limit bounds")
    if costs[metric] > bound:
      return f"{metric} {costs[metric]:.4g} > max_{metric} {bound:.4g}"
  return ""


def constrained(space: Space, costs: Callable[[Any], Mapping[str, float]], limits: Mapping[str, Any]) -> Space:
  """`space` restricted to the points within `limits`, with `costs` as its `Space.costs`.

  Args:
    space: any Space.
    costs: `costs(point) -> {metric: value}`, holding every metric that `limits` bounds; a pure
      function of the point's canonical key (it is called once per key).
    limits: {metric: maximum} (`check_limits`); {} keeps every point and only adds `costs`.

  Returns:
    A Space of the same name and kind. With no point out of bounds it draws, mutates and lists
    exactly what `space` does. `sample(key, n)` gives fewer than n points only when rounds of
    draws found fewer feasible ones, and raises ValueError when they found none.
  """
  limits = check_limits(limits)
  cache: dict = {}

  def point_costs(point: Any) -> dict:
    k = space.canonical_key(point)
    if k not in cache:
      if len(cache) >= _CACHE_SIZE:
        cache.clear()
      cache[k] = dict(costs(point))
    return cache[k]

  def feasible(point: Any) -> bool:
    return not violation(point_costs(point), limits)

  if not limits:
    return space._replace(costs=point_costs)

  def sample(key, n):
    draws = space.sample(key, n)
    out, drawn = [p for p in draws if feasible(p)], len(draws)
    for r in range(1, _SAMPLE_ROUNDS):
      if len(out) >= n:
        break
      more = space.sample(jax.random.fold_in(key, r), 2 * (n - len(out)))
      drawn += len(more)
      out += [p for p in more if feasible(p)]
    if not out and n > 0:
      example = violation(point_costs(draws[0]), limits) if draws else "no draws"
      raise ValueError(
        f"constraints: none of {drawn} random points of space {space.name!r} is feasible (e.g. {example});"
        " loosen config.constraints"
      )
    return out[:n]

  def mutate(point, key):
    for t in range(_MUTATE_TRIES):
      child, changed = space.mutate(point, key if t == 0 else jax.random.fold_in(key, t))
      if changed and feasible(child):
        return child, True
    return point, False

  return space._replace(
    sample=sample,
    mutate=mutate,
    neighbours=lambda point: [p for p in space.neighbours(point) if feasible(p)],
    initial=lambda n=None: [p for p in space.initial() if feasible(p)][:n],
    costs=point_costs,
    feasible=feasible,
  )
