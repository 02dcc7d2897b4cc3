"""A space of (network, fidelity) pairs, for a model that learns across fidelities.

A multi-fidelity scheduler whose sampler models every observation at its fidelity
(`search.strategies.schedulers`, model="joint") builds the sampler on `fidelity_space(space,
fidelities)`: its points are `FidelityPoint`s, so a surrogate sees (architecture, fidelity)
(`features.fidelity.with_fidelity`). New points (sample, initial, mutate, neighbours) are at the
full fidelity, the last one, where the acquisition is evaluated. A network is one point whatever
its fidelity (`canonical_key` is the base space's), so a network observed at any fidelity is
never proposed again.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from nas_jax.arch.json_io import show
from nas_jax.spaces.space import Space

__all__ = ["FidelityPoint", "fidelity_space", "FIDELITY_KIND"]

FIDELITY_KIND = "fidelity"  # the "kind" of a FidelityPoint's JSON


class FidelityPoint(NamedTuple):
  """A point of the base space (`point`) at one of the space's fidelities (`fidelity`, a float)."""

  point: Any
  fidelity: float


def _check_fidelities(fidelities: Sequence) -> tuple[float, ...]:
  try:
    out = tuple(float(f) for f in fidelities)
  except (TypeError, ValueError):
    out = ()
  if not out or not all(np.isfinite(out)) or out[0] <= 0 or any(a >= b for a, b in zip(out, out[1:])):
    raise ValueError(f"fidelity_space: fidelities={fidelities!r}; expected increasing numbers > 0, e.g. (1, 3, 9)")
  return out


def fidelity_space(space: Space, fidelities: Sequence[float]) -> Space:
  """`space`'s points at the `fidelities` (increasing; the last is the full fidelity).

  Returns:
    A Space of `FidelityPoint`s with the base space's name and kind, `fidelities` set and
    `base=space`; its JSON is {"kind": "fidelity", "fidelity": f, "point": base JSON}.
  """
  if space.fidelities:
    raise ValueError("fidelity_space: space is already a fidelity space; pass its base (space.base)")
  fidelities = _check_fidelities(fidelities)
  full = fidelities[-1]

  def check(fp: Any, where: str) -> None:
    if not isinstance(fp, FidelityPoint):
      raise ValueError(f"{where}: got a {type(fp).__name__}; this space holds FidelityPoints (point, fidelity)")

  def at_full(points) -> list:
    return [FidelityPoint(p, full) for p in points]

  def mutate(fp: FidelityPoint, key) -> tuple[FidelityPoint, bool]:
    check(fp, "mutate")
    out, ok = space.mutate(fp.point, key)
    return (FidelityPoint(out, full), True) if ok else (fp, False)

  def neighbours(fp: FidelityPoint) -> list:
    check(fp, "neighbours")
    return at_full(space.neighbours(fp.point))

  def canonical_key(fp: FidelityPoint):
    check(fp, "canonical_key")
    return space.canonical_key(fp.point)

  def to_json(fp: FidelityPoint) -> dict:
    check(fp, "to_json")
    return {"kind": FIDELITY_KIND, "fidelity": float(fp.fidelity), "point": space.to_json(fp.point)}

  def from_json(obj: Any) -> FidelityPoint:
    if not (isinstance(obj, dict) and obj.get("kind") == FIDELITY_KIND and set(obj) == {"kind", "fidelity", "point"}):
      raise ValueError(f"from_json: {str(obj)[:80]!r}; expected {{'kind': 'fidelity', 'fidelity': f, 'point': ...}}")
    f = obj["fidelity"]
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not any(f == x for x in fidelities):
      raise ValueError(f"from_json: fidelity={show(f)}; allowed: {', '.join(f'{x:g}' for x in fidelities)}")
    return FidelityPoint(space.from_json(obj["point"]), float(f))

  return space._replace(
    sample=lambda key, n: at_full(space.sample(key, n)),
    mutate=mutate,
    neighbours=neighbours,
    canonical_key=canonical_key,
    to_json=to_json,
    from_json=from_json,
    initial=lambda n=None: at_full(space.initial(n)),
    costs=None if space.costs is None else (lambda fp: space.costs(fp.point)),
    feasible=None if space.feasible is None else (lambda fp: space.feasible(fp.point)),
    fidelities=fidelities,
    base=space,
    enumerate=None,  # they would give base points; optimisers start from FidelityPoints
    tree=None,
  )
