"""The conditional space's acquisition optimiser (our choice; the arc-kernel paper has none): per
depth, random points and the EA's mutants, then gradient ascent on the continuous parameters of
the best ones through `Context.value_fn`, a traceable acquisition of raw values (`ValueAcquisition`).
"""

from __future__ import annotations

from typing import Any

import flax.struct
import jax
import numpy as np

from nas_jax.acquisition import continuous, evolution
from nas_jax.acquisition.acq_optimiser import AcqOptimiser, check_counts, scored
from nas_jax.acquisition.functions import with_pending
from nas_jax.arch import conditional_point as cond_point
from nas_jax.spaces import graph_edit
from nas_jax.surrogates import point_model

__all__ = ["per_depth", "ValueAcquisition", "value_acquisition"]

_CHILDREN = 100  # EA children per depth next to the gradient stage


def _to_point(values: np.ndarray, spec: cond_point.ConditionalSpec) -> cond_point.ConditionalPoint:
  """The canonical point of values [P]: integers rounded, clipped to the bounds, inactive values
  at their lower bounds (as the space keeps them)."""
  values = np.clip(np.where(spec.integer, np.round(values), values), spec.lower, spec.upper)
  active = cond_point.activity(values, spec)
  return cond_point.ConditionalPoint(np.where(active, values, spec.lower).astype(np.float32), active)


def _random_points(rng: np.random.Generator, spec: cond_point.ConditionalSpec, depth: int, n: int) -> list:
  """n points of one depth, every parameter uniform in its bounds (integers uniform)."""
  ints = rng.integers(spec.lower.astype(np.int64), spec.upper.astype(np.int64) + 1, (n, len(spec.names)))
  values = np.where(spec.integer, ints, rng.uniform(spec.lower, spec.upper, (n, len(spec.names))))
  values[:, 0] = depth  # index 0 is the depth (spaces/conditional.py)
  return [_to_point(v, spec) for v in values]


def per_depth(
  *,
  n_random: int = 200,
  gradient: bool = True,
  n_grad_starts: int = 16,
  grad_steps: int = 50,
  n_mutations: int | None = None,
) -> AcqOptimiser:
  """For every depth: n_random random points and the observed ones are scored, the EA mutates the
  best (n_mutations new points), and with gradient the best n_grad_starts run grad_steps Adam steps
  on their active continuous parameters. n_mutations None gives 100, plus without gradient the
  evaluations the gradient stage would spend, so both variants spend equal acquisition evaluations."""
  check_counts(
    "per_depth: ",
    {
      "n_random": (n_random, 1),
      "n_grad_starts": (n_grad_starts, 1),
      "grad_steps": (grad_steps, 1),
      "n_mutations": (0 if n_mutations is None else n_mutations, 0),
    },
  )
  if n_mutations is None:
    n_mutations = _CHILDREN + (0 if gradient else continuous.n_evaluations(n_grad_starts, grad_steps))

  def check(space: Any) -> None:
    if space.conditional_spec is None:
      raise ValueError(f"per_depth: it searches conditional parameters; the {space.name!r} space has none")

  def maximize(keys, score_fn, ctx, n):
    spec = ctx.space.conditional_spec
    spent = [0]

    def counted(cands):
      spent[0] += len(cands)
      return scored(score_fn, cands)

    found, starts = [], []
    for depth in range(1, spec.max_depth + 1):
      k_rand, k_ea = jax.random.split(jax.random.fold_in(keys[0], depth))
      randoms = _random_points(graph_edit.host_rng(k_rand), spec, depth, n_random)
      population = randoms + [p for p, ok in zip(ctx.points, ctx.ok) if ok and p.values[0] == depth]
      points, values = evolution.ea_maximize(
        k_ea,
        counted,
        population,
        ctx.space,
        n_ea=n_mutations,
        n_mut=evolution.n_mut_schedule(max(n_mutations, 1)),
        n=n_grad_starts if gradient else 1,
        exclude=ctx.exclude,
        population_scores=counted(population),
      )
      random_keys = {ctx.space.canonical_key(p) for p in randoms}
      found += [
        (float(v), p, "random" if ctx.space.canonical_key(p) in random_keys else "mutation")
        for p, v in zip(points, values)
      ]
      starts += points
    if gradient and starts:
      x0 = np.stack([np.asarray(p.values, np.float64) for p in starts])
      free = np.stack([np.asarray(p.active) for p in starts]) & ~spec.integer
      values, acq_values = continuous.maximize_continuous(
        jax.random.fold_in(keys[0], 0), ctx.value_fn, x0, free, spec.lower, spec.upper, steps=grad_steps
      )
      spent[0] += continuous.n_evaluations(len(starts), grad_steps)
      moved = [_to_point(v, spec) for v in np.asarray(values)]
      found += [(float(a), p, "gradient") for a, p in zip(np.asarray(acq_values), moved)]
    for value, point, origin in sorted(found, key=lambda f: -f[0]):
      if ctx.space.canonical_key(point) not in ctx.exclude:
        notes = {"origin": origin, "depth": int(point.values[0]), "gradient": gradient, "n_acq_evals": spent[0]}
        return [(point, value, notes)]
    return []

  return AcqOptimiser("per_depth", maximize, needs_values=gradient, from_space=False, check=check)


@flax.struct.dataclass
class ValueAcquisition:
  """An acquisition of raw values for `per_depth`'s gradient stage: one compile per capacity and
  kind of acquisition.

  model: point_model.ValueModel; best: [] the best score; acquisition: a closed-form acquisition
  (`functions.ei`, `pi`, `ucb`), its options leaves.
  """

  model: point_model.ValueModel
  best: Any
  acquisition: Any


def value_acquisition(va: ValueAcquisition, values: jax.Array) -> jax.Array:
  """The acquisition of one point, values [P] -> [], differentiable in its active values."""
  pred, pred_p = point_model.value_predictive(va.model, values[None])
  return va.acquisition(with_pending(pred, pred_p), va.best)[0]
