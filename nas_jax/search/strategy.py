"""The Strategy interface (init, propose, update): pure functions of a state. Config names map to
factories `factory(config, space, task) -> Strategy` in `wiring.parts.STRATEGIES`.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from nas_jax.search.state import Observation

__all__ = ["Strategy", "AtFidelity", "no_notes", "split_proposal"]


def no_notes(state: Any, point: Any) -> dict:
  """The default `Strategy.notes`: nothing to record."""
  del state, point
  return {}


class AtFidelity(NamedTuple):
  """A multi-fidelity strategy's proposal (`search.strategies.schedulers`): evaluate `point` at
  `fidelity` (one of `Task.fidelities`). `continues` is the trial id of the same point's
  evaluation at a lower fidelity that this one extends: the loop gives it that trial's
  evaluation seed, so a training task continues the same network; None for a new point."""

  point: Any
  fidelity: float
  continues: int | None = None


def split_proposal(proposal: Any) -> tuple[Any, float | None, int | None]:
  """(point, fidelity, continues) of a proposal: an `AtFidelity`, or a plain point (full
  fidelity, None, None)."""
  if isinstance(proposal, AtFidelity):
    return proposal.point, float(proposal.fidelity), proposal.continues
  return proposal, None, None


class Strategy(NamedTuple):
  """A search strategy as pure functions (optax style). The loop owns every side effect.

  Attributes:
    init: `init(key) -> state`.
    propose: `propose(state, n, pending) -> (state, points)`: at most n new points, none of whose
      `space.canonical_key` is observed, pending or repeated; fewer only when the space has no
      unseen point left. `pending` lists points under evaluation. A multi-fidelity strategy
      proposes `AtFidelity`s instead, and may propose an observed point at a higher fidelity.
    update: `update(state, observations) -> state`; observations of every status arrive, failed
      ones included (value None). Replaying a journal is `update(init(key), all_observations)`.
    notes: `notes(state, point) -> dict`, JSON-able facts about a point just proposed (e.g. its
      parent's trial id), recorded in `Observation.info["strategy"]`. Optional.
    predict: `predict(state, points) -> [m] float array or None`: the strategy's model of its
      observations, as the mean score (higher is better) it predicts at each point; None while it
      has no model. A function of the state alone, so a replayed state predicts the same.
      Optional (None: a strategy without a model); multi-fidelity schedulers promote by it.
    restart: `restart(state) -> state`: what `init` gave for the state's key, but keeping what
      depends on the points alone (e.g. a featurizer's distances between them), so that replaying
      a changed history onto it (a scheduler's view of a network revised, `schedulers`) costs
      only the points not seen before. `update(restart(s), obs)` must be the state
      `update(init(key), obs)` is, up to the rounding of what it kept (distances computed in
      other batches). Optional (None: the scheduler replays onto `init(key)`).
  """

  init: Callable[[Any], Any]
  propose: Callable[[Any, int, list], tuple[Any, list]]
  update: Callable[[Any, list[Observation]], Any]
  notes: Callable[[Any, Any], dict] = no_notes
  predict: Callable[[Any, list], Any] | None = None
  restart: Callable[[Any], Any] | None = None
