"""The padded model of each network kind, behind one interface that the padded trainer reads.

`padded_mlp` and `padded_cnn` differ in their inputs (features or images) and in batch statistics
(CNNs only); a `PaddedModel` gives both the same signatures, with `input_shape` the shape of one
example ((D,) or (H, W, C)) and batch statistics an empty dict for MLPs.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, NamedTuple, Sequence

from nas_jax.arch.architecture import Architecture
from nas_jax.models import cnn_padding, padded_cnn, padded_cnn_variables, padded_mlp

__all__ = ["PaddedModel", "KINDS", "model_for"]


class PaddedModel(NamedTuple):
  """A padded model's pure functions (see `padded_mlp` and `padded_cnn` for each argument).

  Attributes:
    padding_for: (archs, input_shape) -> the padding that fits them.
    encode: (arch, padding, input_shape, num_outputs) -> (net, layout).
    apply: (params, batch_stats, net, x, decision, train, padding) -> (outputs, batch_stats).
    variable_shapes: (padding, input_shape, num_outputs) -> (params, batch_stats) ShapeDtypeStructs.
    net_shapes: (padding, input_shape) -> the net's ShapeDtypeStructs.
    init: (key, layout, padding, input_shape, num_outputs) -> (params, batch_stats), drawn as
      `arch_net.init_variables` draws the specialised network's.
    to_specialised: (params, batch_stats, layout) -> the `ArchNet` variables.
    macs: (padding, input_shape, num_outputs) -> one example's forward multiply-accumulates.
  """

  padding_for: Callable[[Sequence[Architecture], tuple[int, ...]], Any]
  encode: Callable[..., tuple[Any, Any]]
  apply: Callable[..., tuple[Any, Any]]
  variable_shapes: Callable[..., tuple[Any, Any]]
  net_shapes: Callable[..., Any]
  init: Callable[..., tuple[Any, Any]]
  to_specialised: Callable[..., dict[str, Any]]
  macs: Callable[..., int]


_MLP = PaddedModel(
  padding_for=lambda archs, shape: padded_mlp.padding_for(archs),
  encode=lambda arch, padding, shape, k: padded_mlp.encode(arch, padding, shape[0], k),
  apply=lambda params, stats, net, x, decision, train, padding: (padded_mlp.apply(params, net, x, decision), stats),
  variable_shapes=lambda padding, shape, k: (padded_mlp.param_shapes(padding, shape[0], k), {}),
  net_shapes=lambda padding, shape: padded_mlp.net_shapes(padding),
  init=lambda key, layout, padding, shape, k: (padded_mlp.init_params(key, layout, padding, shape[0]), {}),
  to_specialised=lambda params, stats, layout: {"params": padded_mlp.to_specialised(params, layout)},
  macs=lambda padding, shape, k: padded_mlp.macs(padding, shape[0], k),
)
_CNN = PaddedModel(
  padding_for=cnn_padding.padding_for,
  encode=padded_cnn.encode,
  apply=padded_cnn.apply,
  variable_shapes=padded_cnn_variables.param_shapes,
  net_shapes=padded_cnn.net_shapes,
  init=padded_cnn_variables.init_variables,
  to_specialised=padded_cnn_variables.to_specialised,
  macs=cnn_padding.macs,
)
_MODELS = MappingProxyType({"mlp": _MLP, "cnn": _CNN})
KINDS = tuple(_MODELS)


def model_for(kind: str) -> PaddedModel:
  """The padded model of a network kind ("mlp" or "cnn").

  Raises:
    ValueError: for another kind (the Auto-Keras family and cells have no padded model).
  """
  if kind not in _MODELS:
    raise ValueError(f"padded trainer: a {kind!r} network; it trains {' and '.join(KINDS)} networks")
  return _MODELS[kind]
