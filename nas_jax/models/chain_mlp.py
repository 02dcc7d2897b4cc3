"""The padded chain MLP of a batch of conditional points: one network shape for every point.

Every point becomes the same padded network: `max_depth` dense layers of `width` = 2**9 = 512
units, then a dense output layer. Per point, arrays (never shapes) carry the settings:
- units: layer i's outputs beyond its 2**log2_units are multiplied by 0, and its kernel starts as
  N(0, 1/fan_in) with the real fan-in, zero outside the real block. Masked weights get zero
  gradients, so they stay 0 and the network computes exactly what an unpadded one would.
- depth: layers past the depth are the identity, so depth D uses exactly D layers.
- activation: all four are computed and the point's one selected.
- dropout: inverted dropout on each layer's outputs, in training only.
- L2: log10_l2 gives c in `c * sum(kernel**2)`, which the trainer (`training.conditional`) adds to
  the loss for each active layer's kernel (not the output layer's).
- learning rate and batch size: read here too (`Settings.lr`, `accum`, `micro_steps`), for the
  trainer.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import conditional_point as cond_point
from nas_jax.models import arch_net

__all__ = ["Settings", "layout", "settings", "init_params", "forward"]

_F32 = jnp.float32


class Settings(NamedTuple):
  """Per-point settings as arrays, leading axis B; L = max_depth, W = width."""

  lr: np.ndarray  # [B] float32
  accum: np.ndarray  # [B] int32, micro-batches per Adam step (b / 16)
  micro_steps: np.ndarray  # [B] int32, micro-steps per epoch that do something
  layer_on: np.ndarray  # [B, L] bool
  unit_mask: np.ndarray  # [B, L, W] float32, 1 for the layer's real units (none when inactive)
  out_mask: np.ndarray  # [B, W] float32, the real units of the last active layer: the output's inputs
  fan_in: np.ndarray  # [B, L + 1] float32, real inputs of each layer and of the output layer
  activation: np.ndarray  # [B, L] int32, index into ACTIVATIONS
  dropout: np.ndarray  # [B, L] float32
  l2: np.ndarray  # [B, L] float32


def layout(spec: cond_point.ConditionalSpec) -> tuple[int, int]:
  """(width, micro-batch) of `spec`, which must be a `conditional_spec` (its layout is read here)."""
  if not isinstance(spec, cond_point.ConditionalSpec):
    raise TypeError(f"spec: {type(spec).__name__} given; expected a ConditionalSpec")
  ref = cond_point.conditional_spec(spec.max_depth)
  if spec.names != ref.names or not all(np.array_equal(a, b) for a, b in zip(spec[1:5], ref[1:5])):
    raise ValueError(
      f"spec: differs from conditional_spec(max_depth={spec.max_depth}); the trainer reads"
      " parameters by that layout and those bounds"
    )
  units = len(cond_point.SHARED) + cond_point.LAYER_FIELDS.index("log2_units")
  return 2 ** int(spec.upper[units]), 2 ** int(spec.lower[cond_point.SHARED.index("log2_batch")])


def settings(
  points: cond_point.ConditionalPoint, spec: cond_point.ConditionalSpec, n_train: int, d_in: int
) -> Settings:
  """The settings of a batch of points (values [B, P]) on `n_train` examples of `d_in` features."""
  width, micro = layout(spec)
  v = np.asarray(points.values, np.float64)
  layers = v[:, len(cond_point.SHARED) :].reshape(len(v), spec.max_depth, len(cond_point.LAYER_FIELDS))
  field = lambda name: layers[..., cond_point.LAYER_FIELDS.index(name)]
  shared = lambda name: v[:, cond_point.SHARED.index(name)]
  depth = shared("depth").astype(np.int64)
  layer_on = np.arange(1, spec.max_depth + 1) <= depth[:, None]
  units = (2 ** field("log2_units")).astype(np.int64)
  batch = (2 ** shared("log2_batch")).astype(np.int64)
  last = units[np.arange(len(v)), depth - 1]
  fan_in = np.concatenate([np.full((len(v), 1), d_in), units[:, :-1], last[:, None]], axis=1)
  width_range = np.arange(width)
  return Settings(
    lr=(10 ** shared("log10_lr")).astype(np.float32),
    accum=(batch // micro).astype(np.int32),
    micro_steps=((n_train // batch) * (batch // micro)).astype(np.int32),
    layer_on=layer_on,
    unit_mask=((width_range < units[..., None]) & layer_on[..., None]).astype(np.float32),
    out_mask=(width_range < last[:, None]).astype(np.float32),
    fan_in=fan_in.astype(np.float32),
    activation=field("activation").astype(np.int32),
    dropout=field("dropout").astype(np.float32),
    l2=(10 ** field("log10_l2")).astype(np.float32),
  )


def init_params(s: Settings, key: jax.Array, d_in: int, n_out: int) -> Any:
  """One point's params: LeCun-normal kernels on the real block, zero biases."""
  n_layers, width = s.unit_mask.shape
  keys = jax.random.split(key, n_layers + 1)
  rows = [jnp.ones(d_in, _F32)] + [s.unit_mask[i] for i in range(n_layers - 1)] + [s.out_mask]
  cols = [s.unit_mask[i] for i in range(n_layers)] + [jnp.ones(n_out, _F32)]
  kernel = lambda i: (
    jax.random.normal(keys[i], (rows[i].size, cols[i].size), _F32)
    * rows[i][:, None]
    * cols[i][None, :]
    / jnp.sqrt(s.fan_in[i])
  )
  return {
    "kernels": [kernel(i) for i in range(n_layers + 1)],
    "biases": [jnp.zeros(width, _F32)] * n_layers + [jnp.zeros(n_out, _F32)],
  }


def _activate(z: jax.Array, index: jax.Array) -> jax.Array:
  """ACTIVATIONS[index](z), as `arch_net` names them; the branches are element-wise, so computing
  all four is cheap."""
  branches = [arch_net.ACTIVATIONS[a](z) for a in cond_point.ACTIVATIONS]
  return jnp.select([index == i for i in range(len(branches) - 1)], branches[:-1], branches[-1])


def forward(params, s: Settings, x: jax.Array, key: jax.Array | None) -> jax.Array:
  """One point's outputs [m, n_out] for inputs x [m, d]; dropout when a key is given."""
  h = x
  for i in range(s.unit_mask.shape[0]):
    a = _activate(h @ params["kernels"][i] + params["biases"][i], s.activation[i]) * s.unit_mask[i]
    if key is not None:
      keep = jax.random.bernoulli(jax.random.fold_in(key, i), 1.0 - s.dropout[i], a.shape)
      a = jnp.where(keep, a / (1.0 - s.dropout[i]), 0.0)
    h = a if i == 0 else jnp.where(s.layer_on[i], a, h)
  return h @ params["kernels"][-1] + params["biases"][-1]
