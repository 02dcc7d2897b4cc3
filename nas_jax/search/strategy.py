"""The Strategy interface (init, propose, update): pure functions of a state. Config names map to
factories `factory(config, space, task) -> Strategy` in `strategies.registry.STRATEGIES`.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from nas_jax.search.state import Observation

__all__ = ["Strategy", "no_notes"]


def no_notes(state: Any, point: Any) -> dict:
  """The default `Strategy.notes`: nothing to record."""
  del state, point
  return {}


class Strategy(NamedTuple):
  """A search strategy as pure functions (optax style). The loop owns every side effect.

  Attributes:
    init: `init(key) -> state`.
    propose: `propose(state, n, pending) -> (state, points)`: at most n new points, none of whose
      `space.canonical_key` is observed, pending or repeated; fewer only when the space has no
      unseen point left. `pending` lists points under evaluation.
    update: `update(state, observations) -> state`; observations of every status arrive, failed
      ones included (value None). Replaying a journal is `update(init(key), all_observations)`.
    notes: `notes(state, point) -> dict`, JSON-able facts about a point just proposed (e.g. its
      parent's trial id), recorded in `Observation.info["strategy"]`. Optional.
  """

  init: Callable[[Any], Any]
  propose: Callable[[Any, int, list], tuple[Any, list]]
  update: Callable[[Any, list[Observation]], Any]
  notes: Callable[[Any, Any], dict] = no_notes
