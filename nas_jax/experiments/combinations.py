"""Every combination of the `bo` strategy's parts that the registries allow, per space kind.

A combination is valid when `strategies.bo.bo` builds it on a space of the kind: bo asks the
registries (`make_featurizer`, `point_model`, `make_optimiser`), which hold the rules, so a new
featurizer or optimiser enters the matrix unchanged (a new surrogate names its acquisition here).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from nas_jax.acquisition.functions import ACQUISITIONS
from nas_jax.acquisition.optimizers import optimisers_for
from nas_jax.features.featurizers import featurizers_for
from nas_jax.search.strategies.bo import bo
from nas_jax.spaces.registry import SPACES
from nas_jax.surrogates.point_model import SURROGATES

__all__ = ["SPACE_KINDS", "NATURAL_ACQUISITION", "Combination", "space_of", "valid_combinations", "bo_kwargs"]

SPACE_KINDS = ("nb201", "nb101", "cnn", "mlp", "autokeras", "conditional")
# The acquisition each surrogate's method uses: NASBOT's EI for GPs, BANANAS' ITS for the ensemble.
NATURAL_ACQUISITION = {"gp": "ei", "gp_fixed": "ei", "ensemble": "its"}

# Small options for a quick run of every combination (fast=True in `bo_kwargs`).
_FAST_SURROGATE = {
  "gp": dict(n_starts=2, fit_steps=20),
  "gp_fixed": {},
  "ensemble": dict(hidden=(8, 8), epochs=20, n_members=3),
}
_FAST_OPTIMIZER = {
  "ea": dict(lo=10, hi=20),
  "mutation": dict(n_candidates=30),
  "random": dict(n_candidates=50),
  "tree": dict(n_children=4, max_ops=2),
  "enumerate": {},
  "per_depth": dict(n_random=20, n_grad_starts=2, grad_steps=10, n_mutations=20),
}


class Combination(NamedTuple):
  """One configuration of `bo`: a space kind and a registered name for each part."""

  space: str
  featurizer: str
  surrogate: str
  acquisition: str
  optimizer: str


def space_of(kind: str) -> Any:
  """The default Space of `kind` (`SPACE_KINDS`): cnn and mlp are layer-graph spaces."""
  if kind not in SPACE_KINDS:
    raise ValueError(f"space kind: {kind!r} is unknown; allowed: {', '.join(SPACE_KINDS)}")
  if kind in ("cnn", "mlp"):
    return SPACES["layer_graph"](kind=kind)
  return SPACES[kind]()


def _accepted(space: Any, c: Combination) -> bool:
  """Whether `bo` builds `c`: it asks the registries (`make_featurizer`, `point_model`,
  `make_optimiser`) and checks what a part needs of the others, all before any evaluation."""
  try:
    bo(space, **bo_kwargs(c, fast=False))
  except ValueError:
    return False
  return True


def valid_combinations(kind: str, space: Any = None) -> list[Combination]:
  """The combination matrix of one space kind, in registry order.

  First every (featurizer, surrogate, optimizer) that `bo` accepts with the surrogate's natural
  acquisition (`NATURAL_ACQUISITION`), then each other acquisition with each surrogate on one
  representative: the surrogate's first featurizer there and the first optimiser other than
  "enumerate" (scoring a whole space per proposal is slow).

  Args:
    kind: a `SPACE_KINDS` entry.
    space: a Space of that kind to build the parts on; `space_of(kind)` if None.
  """
  if space is None:
    space = space_of(kind)
  elif space.kind != kind:
    raise ValueError(f"space: a {space.kind!r} space given for kind {kind!r}")
  optimizers = optimisers_for(kind)
  out = [
    c
    for f in featurizers_for(kind)
    for s in SURROGATES
    for o in optimizers
    if _accepted(space, c := Combination(kind, f, s, NATURAL_ACQUISITION[s], o))
  ]
  representative = next(o for o in optimizers if o != "enumerate")
  for surrogate in SURROGATES:
    featurizer = next((c.featurizer for c in out if c.surrogate == surrogate), None)
    if featurizer is None:
      continue
    others = [
      Combination(kind, featurizer, surrogate, a, representative)
      for a in ACQUISITIONS
      if a != NATURAL_ACQUISITION[surrogate]
    ]
    out += [c for c in others if _accepted(space, c)]
  return out


def bo_kwargs(combination: Combination, fast: bool) -> dict:
  """Keyword arguments of `strategies.bo.bo` for `combination` (all but space and goal).

  The initial design is the space's pool, and the model is fitted from the first success on.
  fast=True shrinks every part for a smoke run (a GP of 2 starts x 20 steps, an ensemble of 3
  nets of (8, 8) units trained 20 epochs, 20-50 candidates per optimisation, 2 gradient starts x 10
  steps per depth); fast=False keeps the registries' defaults.
  """
  c = Combination(*combination)
  return dict(
    featurizer=c.featurizer,
    featurizer_config={},
    surrogate=c.surrogate,
    surrogate_config=dict(_FAST_SURROGATE.get(c.surrogate, {})) if fast else {},
    acquisition=c.acquisition,
    acquisition_config={},
    optimizer=c.optimizer,
    optimizer_config=dict(_FAST_OPTIMIZER.get(c.optimizer, {})) if fast else {},
    initial="pool",
    min_ok=1,
  )
