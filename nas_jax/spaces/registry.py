"""`SPACES`: every search space by the name a config gives it."""

from __future__ import annotations

from typing import Callable

from nas_jax.spaces.cells import nb101_space, nb201_space
from nas_jax.spaces.conditional import conditional_space
from nas_jax.spaces.morph_space import morph_space
from nas_jax.spaces.space import Space, layer_graph_space

__all__ = ["SPACES"]

#: Search spaces by config name: name -> factory(**config.space fields but name).
SPACES: dict[str, Callable[..., Space]] = {
  "layer_graph": layer_graph_space,
  "nb201": nb201_space,
  "nb101": nb101_space,
  "autokeras": morph_space,
  "conditional": conditional_space,
}
