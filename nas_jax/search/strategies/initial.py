"""`bo`'s initial design: the points proposed before its model takes over, built by `pool` (the
space's initial points, NASBOT's and Auto-Keras' start) or `random_design` (BANANAS' n_init random
points)."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from nas_jax.acquisition.acq_optimiser import check_counts
from nas_jax.search.strategies import common

__all__ = ["InitialDesign", "pool", "random_design"]


class InitialDesign(NamedTuple):
  """Attributes:
  name: "pool" or "random".
  first: `(space, exclude, n) -> [point]`, the design's own points of a proposal (at most n),
    their keys added to `exclude`.
  ready: `(successes, seen) -> bool`: whether the model takes over, seen counting the observed
    and pending points.
  n_random: `(wanted, seen) -> int`: random points to propose while the model is not ready.
  """

  name: str
  first: Callable[[Any, set, int], list]
  ready: Callable[[int, int], bool]
  n_random: Callable[[int, int], int]


def pool(*, min_ok: int = 1) -> InitialDesign:
  """The space's initial points (`Space.initial`), then random ones until `min_ok` succeeded."""
  check_counts("pool: ", {"min_ok": (min_ok, 1)})
  return InitialDesign(
    "pool",
    first=lambda space, exclude, n: common.fresh(space, space.initial(), exclude)[:n],
    ready=lambda successes, seen: successes >= min_ok,
    n_random=lambda wanted, seen: wanted,
  )


def random_design(*, n: int = 10, min_ok: int = 1) -> InitialDesign:
  """n random points (at least one per proposal), the model from the n-th on once `min_ok` succeeded."""
  check_counts("random_design: ", {"n": (n, 0), "min_ok": (min_ok, 1)})
  return InitialDesign(
    "random",
    first=lambda space, exclude, wanted: [],
    ready=lambda successes, seen: successes >= min_ok and seen >= n,
    n_random=lambda wanted, seen: min(wanted, max(n - seen, 1)),
  )
