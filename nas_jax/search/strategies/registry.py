"""`STRATEGIES`: every search strategy by the name a config gives it, and `make_strategy`."""

from __future__ import annotations

from typing import Any, Callable

from nas_jax.search.strategies import baselines, bo, local_search, presets, regularized_evolution
from nas_jax.search.strategy import Strategy

__all__ = ["STRATEGIES", "make_strategy"]

#: Search strategies by config name: name -> factory(config, space, task). A model-based method
#: is a preset of `bo` in presets.py and one line here.
STRATEGIES: dict[str, Callable[..., Strategy]] = {
  "random": baselines.random_factory,
  "ea": baselines.ea_factory,
  "bo": bo.bo_factory,
  "nasbot": presets.nasbot_factory,
  "rand": presets.rand_factory,
  "bananas": presets.bananas_factory,
  "gp_bo": presets.gp_factory,
  "local_search": local_search.ls_factory,
  "regularized_evolution": regularized_evolution.re_factory,
  "autokeras": presets.autokeras_factory,
  "conditional_bo": presets.conditional_bo_factory,
}


def make_strategy(name: str, config: Any, space: Any, task: Any) -> Strategy:
  """Builds the strategy registered as `name`; ValueError listing the known names otherwise."""
  if name not in STRATEGIES:
    raise ValueError(f"strategy: {name!r} is unknown; choose one of: {', '.join(sorted(STRATEGIES))}")
  return STRATEGIES[name](config, space, task)
