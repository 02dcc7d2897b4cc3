"""The conditional search space of chain MLPs (Swersky et al. 2013, Sec. 2.1) as a `Space`: sampling,
mutation and neighbours over `nas_jax.arch.conditional_point` points, all returning canonical
points (inactive values at their lower bound).
"""

from __future__ import annotations

import functools

import numpy as np

from nas_jax.arch.conditional_point import (
  KIND,
  LAYER_FIELDS,
  ConditionalPoint,
  ConditionalSpec,
  activity,
  canonical_key,
  conditional_spec,
  is_int,
  make_point,
  point_from_json,
  point_to_json,
  point_values,
  to_architecture,
)
from nas_jax.spaces import graph_edit
from nas_jax.spaces.space import Space

__all__ = ["conditional_space"]

_STEP = 0.1  # `neighbours`: continuous moves of +-10% of the range
_MUTATE_SD = 0.2  # `mutate`: continuous moves are N(0, (0.2 range)^2), clipped to the bounds
_MUTATE_TRIES = 64  # `mutate`: draws before it reports no change; one keeps the key w.p. ~1e-6


def _uniform(rng: np.random.Generator, spec: ConditionalSpec) -> np.ndarray:
  """[P] float64, every parameter drawn uniformly from its bounds (integers uniform)."""
  cont = rng.uniform(spec.lower, spec.upper)
  ints = rng.integers(spec.lower.astype(np.int64), spec.upper.astype(np.int64) + 1)
  return np.where(spec.integer, ints, cont)


def _with_depth(values: np.ndarray, depth: int, fresh: np.ndarray, spec: ConditionalSpec) -> np.ndarray:
  """`values` at a new depth; layers it activates take their values from `fresh` [P]."""
  new = np.array(values, np.float64)
  new[0] = depth
  grown = (spec.layer > values[0]) & (spec.layer <= depth)
  return np.where(grown, fresh, new)


def _move(values: np.ndarray, i: int, rng: np.random.Generator, spec: ConditionalSpec) -> np.ndarray:
  """`values` with parameter i redrawn: another integer uniformly, or a clipped Gaussian step."""
  lo, hi = spec.lower[i], spec.upper[i]
  if i == 0:
    others = [d for d in range(1, spec.max_depth + 1) if d != values[0]]
    return _with_depth(values, others[rng.integers(len(others))], _uniform(rng, spec), spec)
  new = np.array(values, np.float64)
  if spec.integer[i]:
    others = [v for v in range(int(lo), int(hi) + 1) if v != values[i]]
    new[i] = others[rng.integers(len(others))]
  else:
    new[i] = np.clip(values[i] + rng.normal(0.0, _MUTATE_SD * (hi - lo)), lo, hi)
  return new


def _neighbour_values(values: np.ndarray, spec: ConditionalSpec) -> list[np.ndarray]:
  """Depth +-1 (a new layer copies the last one), integers +-1, continuous +-10% of the range."""
  depth = int(values[0])
  out = []
  if depth > 1:
    out.append(_with_depth(values, depth - 1, values, spec))
  if depth < spec.max_depth:
    block = np.flatnonzero(spec.layer == depth)
    copy = np.array(values, np.float64)
    copy[block + len(LAYER_FIELDS)] = values[block]
    out.append(_with_depth(values, depth + 1, copy, spec))
  for i in np.flatnonzero(activity(values, spec))[1:]:
    step = 1.0 if spec.integer[i] else _STEP * (spec.upper[i] - spec.lower[i])
    for sign in (-1.0, 1.0):
      new = np.array(values, np.float64)
      new[i] = values[i] + sign * step
      if spec.integer[i] and not spec.lower[i] <= new[i] <= spec.upper[i]:
        continue
      new[i] = np.clip(new[i], spec.lower[i], spec.upper[i])
      out.append(new)
  return out


def conditional_space(*, max_depth: int = 3, task: str = "classification", kind: str = KIND) -> Space:
  """The conditional space of chain MLPs with 1..max_depth layers, as a `Space`.

  `sample` draws the depth and every parameter uniformly; `mutate` redraws one active parameter
  (the depth included: new layers get random values) and returns (point, ok), ok=False with the
  input point only if `_MUTATE_TRIES` draws all keep the key; `neighbours` moves the depth by one
  (a new layer copies the last), each active integer by one and each active continuous value by
  10% of its range; all three return canonical points.

  Args:
    max_depth: the largest number of layers.
    task: "classification" or "regression": the data the networks are for. Validated only; the
      `Space` interface has no place for it (`to_architecture` takes the decision layer).
    kind: "conditional" (the only kind; a config field like every space's).

  Returns:
    A Space named "conditional" of kind "conditional".
  """
  if kind != KIND:
    raise ValueError(f"kind: {kind!r}; the conditional space holds {KIND!r} points only")
  spec = conditional_spec(max_depth)
  if task not in ("classification", "regression"):
    raise ValueError(f"task: {task!r}; allowed: classification, regression")
  key_of = functools.partial(canonical_key, spec=spec)

  def sample(key, n: int) -> list[ConditionalPoint]:
    if not is_int(n) or n < 0:
      raise ValueError(f"sample: n={n!r}; expected an integer >= 0")
    rng = graph_edit.host_rng(key)
    return [make_point(_uniform(rng, spec), spec) for _ in range(n)]

  def mutate(point: ConditionalPoint, key) -> tuple[ConditionalPoint, bool]:
    values, rng = point_values(point, spec, "mutate")[0].astype(np.float64), graph_edit.host_rng(key)
    choices = np.flatnonzero(activity(values, spec))[0 if max_depth > 1 else 1 :]
    before = key_of(point)
    for _ in range(_MUTATE_TRIES):  # a continuous step may round to the same key: draw again
      new = make_point(_move(values, int(choices[rng.integers(len(choices))]), rng, spec), spec)
      if key_of(new) != before:
        return new, True
    return point, False

  def neighbours(point: ConditionalPoint) -> list[ConditionalPoint]:
    seen, out = {key_of(point)}, []
    for values in _neighbour_values(point_values(point, spec, "neighbours")[0].astype(np.float64), spec):
      new = make_point(values, spec)
      if key_of(new) not in seen:
        seen.add(key_of(new))
        out.append(new)
    return out

  mids = np.where(spec.integer, np.floor((spec.lower + spec.upper) / 2), (spec.lower + spec.upper) / 2)
  pool = [make_point(_with_depth(mids, d, mids, spec), spec) for d in range(1, max_depth + 1)]

  def initial(n: int | None = None) -> list[ConditionalPoint]:
    """Depth 1..max_depth with every parameter at the middle of its range (integers rounded down)."""
    if n is not None and not (is_int(n) and 0 <= n <= len(pool)):
      raise ValueError(f"initial: n={n!r}; expected None or an integer in 0..{len(pool)}")
    return pool[:n]

  return Space(
    name="conditional",
    kind=KIND,
    sample=sample,
    mutate=mutate,
    neighbours=neighbours,
    canonical_key=key_of,
    to_json=functools.partial(point_to_json, spec=spec),
    from_json=functools.partial(point_from_json, spec=spec),
    initial=initial,
    layer_graph=functools.partial(to_architecture, spec=spec),
    conditional_spec=spec,
  )
