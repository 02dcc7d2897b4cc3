"""The acquisition-optimiser interface: every way nas_jax maximises an acquisition over a space.

An `AcqOptimiser` is a NamedTuple of a name and a pure-by-keys function

    maximize(keys, score_fn, context, n) -> [(point, value, notes)], best first

where `keys = (key, aux_key)`, `score_fn(list[point]) -> [k]` float scores (higher is better;
NaN or -inf rules a point out) and `context` (`Context`) holds the space, the observations and the
canonical keys never to return. The optimisers are built by the constructors of `optimizers`
(and `conditional_search.per_depth`); `feasible_first` wraps one to keep to a constrained space.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from nas_jax.acquisition import mutation

__all__ = ["Context", "AcqOptimiser", "feasible_first", "check_counts", "scored", "best_of", "observed"]

# An infeasible candidate's value under `feasible_first`: finite, so annealing and softmax stay defined.
_INFEASIBLE = -1e30


class Context(NamedTuple):
  """What an optimiser may read.

  Attributes:
    space: the Space.
    points: every observed point, in observation order; scores: [n] float64 (NaN: failed);
      trial_ids: their trial ids.
    exclude: canonical keys never to return (observed, pending, already chosen).
    value_fn: for optimisers with `needs_values`: values [P] -> [] acquisition, traceable and
      differentiable (a `jax.tree_util.Partial`); else None.
    task_infos: what each observed evaluation's task reported (e.g. "weights", where a trained
      network is stored); empty when unknown.
    screen_fn: for optimisers with `screens`: a cheaper score function of the same acquisition,
      on lower bounds of the candidates' distances (`Featurizer.screen`), to rank candidates by
      before `score_fn` scores the best; else None (the featurizer has no cheap form).
  """

  space: Any
  points: tuple
  scores: np.ndarray
  trial_ids: tuple
  exclude: frozenset
  value_fn: Any = None
  task_infos: tuple = ()
  screen_fn: Any = None

  @property
  def ok(self) -> np.ndarray:
    return ~np.isnan(self.scores)


class AcqOptimiser(NamedTuple):
  """An acquisition optimiser as a value.

  Attributes:
    name: what it is (recorded in the journal's notes); maximize: see the module docstring.
    needs_values: it reads `context.value_fn`, so the surrogate must be a GP on a featurizer that
      encodes raw values.
    from_space: its candidates all come from the Space API (sample, mutate, initial), so on a
      fidelity space they are points at the full fidelity; False when it builds points itself.
    check: `(space) -> None`, a ValueError when the space lacks what it needs; None: nothing.
    screens: it reads `context.screen_fn` when given.
  """

  name: str
  maximize: Callable[[tuple, Callable, Context, int], list]
  needs_values: bool = False
  from_space: bool = True
  check: Callable[[Any], None] | None = None
  screens: bool = False


def feasible_first(optimiser: AcqOptimiser, feasible: Callable[[Any], bool]) -> AcqOptimiser:
  """`optimiser` on a constrained space: every infeasible candidate scores below any feasible
  one, and none is returned (optimisers that build points themselves may meet them)."""

  def kept(fn: Callable) -> Callable:
    return lambda cands: np.where([feasible(c) for c in cands], fn(cands), _INFEASIBLE)

  def maximize(keys, score_fn, ctx, n):
    if ctx.screen_fn is not None:
      ctx = ctx._replace(screen_fn=kept(ctx.screen_fn))
    return [c for c in optimiser.maximize(keys, kept(score_fn), ctx, n) if feasible(c[0])]

  return optimiser._replace(maximize=maximize)


def scored(score_fn: Callable, points: list) -> np.ndarray:
  """score_fn(points) as [len(points)] float64; ValueError if it returns another shape."""
  g = np.asarray(score_fn(points), np.float64)
  if g.shape != (len(points),):
    raise ValueError(f"score_fn: returned shape {g.shape} for {len(points)} points; expected [{len(points)}]")
  return g


def best_of(points: Sequence, values: np.ndarray, n: int, notes: dict) -> list:
  """The n best points with a finite value, best first (ties keep order)."""
  order = [i for i in mutation.top_k(values, len(values)) if np.isfinite(values[i])][:n]
  return [(points[i], float(values[i]), dict(notes)) for i in order]


def observed(ctx: Context) -> tuple[list, np.ndarray]:
  idx = np.flatnonzero(ctx.ok)
  return [ctx.points[i] for i in idx], ctx.scores[idx]


def check_counts(prefix: str, counts: dict) -> None:
  """Checks counts {name: (value, least)} before anything runs: ValueError
  `{prefix}{name}={value!r}; expected an integer >= {least}` for the first one that is not."""
  for name, (value, least) in counts.items():
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
      raise ValueError(f"{prefix}{name}={value!r}; expected an integer >= {least}")
