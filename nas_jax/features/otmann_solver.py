"""OTMANN solvers as values: `exact()`, `sinkhorn(epsilon=...)`, `bound()` and `greedy()`.

A solver is what `otmann_distances(solver=...)` and the OTMANN featurizer take: the function that
turns the pairs of two sets of host features into d_bar (NASBOT eq. (5), App. A.1), with its
settings bound in. A config names one ("exact", "sinkhorn", ...); `nas_jax.wiring.names` turns
the name into the value.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

from nas_jax.features import otmann_bounds as bounds
from nas_jax.features import otmann_solvers as solvers

__all__ = ["Solver", "exact", "sinkhorn", "bound", "greedy", "check_solver"]


class Solver(NamedTuple):
  """An OTMANN solver: `pairs(fa, fb, ia, ib, nus, kind, params, chunk_size)` -> d_bar [n_nu, P] of
  the pairs (a[ia[p]], b[ib[p]]); `name` says which one, for messages and reports."""

  name: str
  pairs: Callable[..., Any]

  def __repr__(self) -> str:
    config = getattr(self.pairs, "keywords", {}).get("config")
    return f"{self.name}({config})" if config is not None else f"{self.name}()"


def exact() -> Solver:
  """POT's network simplex on each pair's LP: the reference, and the CPU default."""
  return Solver("exact", solvers.exact_pairs)


def sinkhorn(
  *,
  epsilon: float = 4e-3,
  momentum: float = 1.5,
  threshold: float = 1e-4,
  max_iterations: int = 20000,
  cap: float = 3.0,
) -> Solver:
  """ott-jax's log-domain Sinkhorn, batched over pairs (an upper bound on the exact value; the
  settings are those of `otmann_solvers.SinkhornConfig`). ValueError naming a bad setting."""
  s = solvers.SinkhornConfig(epsilon, momentum, threshold, max_iterations, cap)
  if not (s.epsilon > 0 and 0 < s.momentum < 2 and s.threshold > 0 and s.cap > 2 and s.max_iterations >= 1):
    raise ValueError(f"sinkhorn: {s}; need epsilon > 0, 0 < momentum < 2, threshold > 0, cap > 2, max_iterations >= 1")
  return Solver("sinkhorn", functools.partial(solvers.sinkhorn_pairs, config=s))


def bound() -> Solver:
  """A lower bound on the exact distance by relaxation, no LP (`otmann_bounds.bound_pairs`)."""
  return Solver("bound", bounds.bound_pairs)


def greedy() -> Solver:
  """A greedy plan's cost, an upper bound on the exact distance, no LP (`otmann_bounds.greedy_pairs`)."""
  return Solver("greedy", bounds.greedy_pairs)


def check_solver(solver: Any) -> Solver:
  """`solver` if it is a Solver; a TypeError naming what was given and what is allowed otherwise."""
  if not isinstance(solver, Solver):
    raise TypeError(
      f"solver: {solver!r} given; expected an OTMANN solver value: exact(), sinkhorn(...), bound() or greedy()"
      " (nas_jax.features.otmann_solver)"
    )
  return solver
