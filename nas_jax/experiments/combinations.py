"""Every combination of the `bo` strategy's parts that builds, per space kind.

A combination is valid when `bo` builds it on a space of the kind: each part says what it needs of
the space and of the others (a featurizer of the space's points, a surrogate of the featurizer's
pairs, an optimiser's `check`), so a new part in the tables of `wiring.parts` enters the matrix
unchanged (a new surrogate names its acquisition here).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple

from nas_jax.search.strategy import Strategy
from nas_jax.search.task import Task
from nas_jax.wiring import parts

__all__ = [
  "SPACE_KINDS",
  "NATURAL_ACQUISITION",
  "ACQUISITIONS",
  "Combination",
  "space_of",
  "featurizers_for",
  "optimisers_for",
  "valid_combinations",
  "bo_config",
  "strategy_of",
]

#: The spaces whose combinations are listed.
SPACE_KINDS = ("nb201", "nb101", "cnn", "mlp", "autokeras", "conditional")
# The acquisition each surrogate's method uses: NASBOT's EI for GPs, BANANAS' ITS for the ensemble.
NATURAL_ACQUISITION = MappingProxyType({"gp": "ei", "gp_fixed": "ei", "ensemble": "its"})
#: The acquisitions that read a model (the model-free `random` left out).
ACQUISITIONS = tuple(a for a in parts.ACQUISITIONS if parts.ACQUISITIONS[a]().needs_model)

# Small options for a quick run of every combination (fast=True in `bo_config`).
_FAST_SURROGATE = MappingProxyType(
  {
    "gp": dict(n_starts=2, fit_steps=20),
    "gp_fixed": {},
    "ensemble": dict(hidden=(8, 8), epochs=20, n_members=3),
  }
)
_FAST_OPTIMIZER = MappingProxyType(
  {
    "ea": dict(lo=10, hi=20),
    "mutation": dict(n_candidates=30),
    "random": dict(n_candidates=50),
    "tree": dict(n_children=4, max_ops=2),
    "enumerate": {},
    "per_depth": dict(n_random=20, n_grad_starts=2, grad_steps=10, n_mutations=20),
  }
)
_CHECK = Task("combination", "max", None)  # what building a strategy reads of a task: its goal


class Combination(NamedTuple):
  """One configuration of `bo`: a space kind and a name of `wiring.parts` for each part."""

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
    return parts.SPACES["layer_graph"](kind=kind)
  return parts.SPACES[kind]()


def _builds(make) -> bool:
  try:
    make()
  except ValueError:
    return False
  return True


def featurizers_for(space: Any) -> list[str]:
  """The featurizer names whose featurizer builds on `space`."""
  return [name for name, ctor in parts.FEATURIZERS.items() if _builds(lambda: ctor()(space))]


def optimisers_for(space: Any) -> list[str]:
  """The optimiser names whose optimiser finds what it needs in `space`."""
  checks = {name: ctor().check for name, ctor in parts.OPTIMISERS.items()}
  return [name for name, check in checks.items() if check is None or _builds(lambda: check(space))]


def bo_config(combination: Combination, fast: bool) -> dict:
  """The `strategy_config` of strategy "bo" for `combination`.

  The initial design is the space's pool, and the model is fitted from the first success on.
  fast=True shrinks every part for a smoke run (a GP of 2 starts x 20 steps, an ensemble of 3
  nets of (8, 8) units trained 20 epochs, 20-50 candidates per optimisation, 2 gradient starts x 10
  steps per depth); fast=False keeps the parts' defaults.
  """
  c = Combination(*combination)
  return dict(
    featurizer=c.featurizer,
    surrogate=c.surrogate,
    surrogate_config=dict(_FAST_SURROGATE.get(c.surrogate, {})) if fast else {},
    acquisition=c.acquisition,
    optimizer=c.optimizer,
    optimizer_config=dict(_FAST_OPTIMIZER.get(c.optimizer, {})) if fast else {},
    initial="pool",
    min_ok=1,
  )


def strategy_of(combination: Combination, space: Any, task: Task = _CHECK, fast: bool = True) -> Strategy:
  """The bo strategy of `combination` on `space` for `task`, built as a config builds it."""
  config = {"strategy": "bo", "strategy_config": bo_config(combination, fast)}
  return parts.make_strategy("bo", config, space, task)


def valid_combinations(kind: str) -> list[Combination]:
  """The combination matrix of one space kind, in table order.

  First every (featurizer, surrogate, optimizer) that `bo` builds with the surrogate's natural
  acquisition (`NATURAL_ACQUISITION`), then each other acquisition with each surrogate on one
  representative: the surrogate's first featurizer there and the first optimiser other than
  "enumerate" (scoring a whole space per proposal is slow).

  Args:
    kind: a `SPACE_KINDS` entry; the parts are built on `space_of(kind)`.
  """
  space = space_of(kind)
  optimizers = optimisers_for(space)
  accepted = lambda c: _builds(lambda: strategy_of(c, space, fast=False))
  out = [
    c
    for f in featurizers_for(space)
    for s in parts.SURROGATES
    for o in optimizers
    if accepted(c := Combination(kind, f, s, NATURAL_ACQUISITION[s], o))
  ]
  representative = next(o for o in optimizers if o != "enumerate")
  for surrogate in parts.SURROGATES:
    featurizer = next((c.featurizer for c in out if c.surrogate == surrogate), None)
    if featurizer is None:
      continue
    others = [
      Combination(kind, featurizer, surrogate, a, representative)
      for a in ACQUISITIONS
      if a != NATURAL_ACQUISITION[surrogate]
    ]
    out += [c for c in others if accepted(c)]
  return out
