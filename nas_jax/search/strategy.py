"""The Strategy interface (init, propose, update), pure functions of a state, and the STRATEGIES
registry that maps config names to factories `factory(config, space, task) -> Strategy`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, NamedTuple

from nas_jax.search.state import Observation

__all__ = ["Strategy", "no_notes", "STRATEGIES", "make_strategy"]


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


def _lazy(module: str, factory: str) -> Callable:
  """A factory that imports `nas_jax.search.strategies.<module>` when called, so that choosing
  random search never imports (and compiles) the GP machinery of another strategy."""

  def make(config, space, task) -> Strategy:
    return getattr(importlib.import_module(f"nas_jax.search.strategies.{module}"), factory)(config, space, task)

  make.__name__ = make.__qualname__ = factory
  return make


# Adding a model-based method: a preset of `bo` in strategies/presets.py, one line here.
STRATEGIES: dict[str, Callable[..., Strategy]] = {
  "random": _lazy("baselines", "random_factory"),
  "ea": _lazy("baselines", "ea_factory"),
  "bo": _lazy("bo", "bo_factory"),
  "nasbot": _lazy("presets", "nasbot_factory"),
  "rand": _lazy("presets", "rand_factory"),
  "bananas": _lazy("presets", "bananas_factory"),
  "gp_bo": _lazy("presets", "gp_factory"),
  "local_search": _lazy("local_search", "ls_factory"),
  "regularized_evolution": _lazy("regularized_evolution", "re_factory"),
  "autokeras": _lazy("presets", "autokeras_factory"),
  "conditional_bo": _lazy("presets", "conditional_bo_factory"),
}


def make_strategy(name: str, config: Any, space: Any, task: Any) -> Strategy:
  """Builds the strategy registered as `name`; ValueError listing the known names otherwise."""
  if name not in STRATEGIES:
    raise ValueError(f"strategy: {name!r} is unknown; choose one of: {', '.join(sorted(STRATEGIES))}")
  return STRATEGIES[name](config, space, task)
