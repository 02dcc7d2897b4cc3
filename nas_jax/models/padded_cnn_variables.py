"""The padded CNN's variables (`padded_cnn`): their layout, and where a specialised network's go.

A slot's parameters are those of the kinds it computes (`cnn_padding.Padding.kinds`), at its
channels (`widths`): a conv's (`conv_a`, at the slot's kernel) and batch norm (`bn_a`); a res block's
also a second conv (`conv_b`), a projection and their batch norms (`bn_b`, `bn_p`); an fc's kernel
over the slot's input grid and bias. The decision layers' kernels span what they read
(`Padding.decision_input`). Pools have none. `to_padded` and `to_specialised` copy `ArchNet`
variables in and out along the `Place`s of `padded_cnn.encode`; `init_variables` draws what
`arch_net.init_variables` draws.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from nas_jax.arch import labels as labels_lib
from nas_jax.models import arch_net, cnn_padding, padded_cnn
from nas_jax.models.cnn_padding import BITS

__all__ = ["param_shapes", "to_padded", "to_specialised", "init_variables"]

Role = labels_lib.Role


def _slot_shapes(kinds: int, k: int, f: int, h: int, w: int) -> tuple[dict, dict]:
  """(params, batch_stats) shapes of a slot computing the kinds of bitmask `kinds` at kernel k and
  f channels, reading an h x w grid."""
  params, stats = {}, {}
  norms = (["bn_a"] if kinds & (BITS["conv"] | BITS["res"]) else []) + (["bn_b", "bn_p"] if kinds & BITS["res"] else [])
  if norms:
    params["conv_a"] = (k, k, f, f)
  if kinds & BITS["res"]:
    params.update(conv_b=(k, k, f, f), projection=(f, f))
  if kinds & BITS["fc"]:
    params.update(fc=(h, w, f, f), fc_bias=(f,))
  for bn in norms:
    params[bn] = {"scale": (f,), "bias": (f,)}
    stats[bn] = {"mean": (f,), "var": (f,)}
  return params, stats


def _is_shape(v) -> bool:
  return isinstance(v, tuple) and all(isinstance(d, int) for d in v)


def param_shapes(padding: cnn_padding.Padding, image_shape: Sequence[int], num_outputs: int) -> tuple[dict, dict]:
  """(params, batch_stats) as ShapeDtypeStructs in `apply`'s layout."""
  cnn_padding.check_image(image_shape)
  per_slot = zip(padding.kinds, padding.kernels, padding.widths, padding.grids)
  slots = [_slot_shapes(kinds, k, c, gh, gw) for kinds, k, c, (gh, gw, _, _) in per_slot]
  head = {
    "decision_kernel": (padding.decisions, *padding.decision_input, num_outputs),
    "decision_bias": (padding.decisions, num_outputs),
  }
  spec = lambda tree: jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, jnp.float32), tree, is_leaf=_is_shape)
  return {"slots": [spec(p) for p, _ in slots], **spec(head)}, {"slots": [spec(s) for _, s in slots]}


# A res block's convs in `ArchNet` and their padded batch norms.
_RES_PARTS = (("conv_a", "bn_a"), ("conv_b", "bn_b"), ("projection", "bn_p"))


def _pairs(places: Sequence[padded_cnn.Place], kernels: Sequence[int]):
  """Yields (specialised path, its `ArchNet` shape, padded path, index into the padded array) for
  every array of the places' variables, given each slot's padded kernel; paths are key tuples into
  {"params", "batch_stats"}."""
  for pl in places:
    (h, w), c, u, k, j = pl.size, pl.c_in, pl.units, pl.kernel, pl.slot
    if pl.role in (Role.FC, Role.DECISION):
      kernel, bias = ("params", pl.name, "kernel"), ("params", pl.name, "bias")
      if pl.role == Role.FC:
        yield kernel, (h * w * c, u), ("params", "slots", j, "fc"), np.s_[:h, :w, :c, :u]
        yield bias, (u,), ("params", "slots", j, "fc_bias"), np.s_[:u]
      else:
        yield kernel, (h * w * c, u), ("params", "decision_kernel"), np.s_[j, :h, :w, :c, :u]
        yield bias, (u,), ("params", "decision_bias"), np.s_[j, :u]
      continue
    if pl.role == Role.CONV:
      parts = [((), "conv_a", "bn_a", k, c)]
    elif pl.role == Role.RES:
      sizes = {"conv_a": (k, c), "conv_b": (k, u), "projection": (1, c)}
      parts = [((key,), key, bn, *sizes[key]) for key, bn in _RES_PARTS if key != "projection" or pl.projection]
    else:
      continue
    for sub, key, bn, kk, cin in parts:
      o = (kernels[j] - kk) // 2
      at = np.s_[o : o + kk, o : o + kk, :cin, :u] if key != "projection" else np.s_[:cin, :u]
      yield ("params", pl.name, *sub, "conv", "kernel"), (kk, kk, cin, u), ("params", "slots", j, key), at
      for group, names in (("params", ("scale", "bias")), ("batch_stats", ("mean", "var"))):
        for n in names:
          yield (group, pl.name, *sub, "bn", n), (u,), (group, "slots", j, bn, n), np.s_[:u]


def _tree(items) -> dict[str, Any]:
  """{"params": ..., "batch_stats": ...} nested from (path, leaf) pairs."""
  return {"params": {}, "batch_stats": {}, **traverse_util.unflatten_dict(dict(items))}


def _get(tree, path):
  for key in path:
    tree = tree[key]
  return tree


def to_padded(
  variables: dict[str, Any],
  places: Sequence[padded_cnn.Place],
  padding: cnn_padding.Padding,
  image_shape: Sequence[int],
  num_outputs: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
  """Copies an `ArchNet`'s variables ({"params", "batch_stats"}) into padded (params, batch_stats);
  zeros elsewhere."""
  params, stats = param_shapes(padding, image_shape, num_outputs)
  out = jax.tree.map(lambda s: np.zeros(s.shape, np.float32), {"params": params, "batch_stats": stats})
  for src, _, dst, at in _pairs(places, padding.kernels):
    value = np.asarray(_get(variables, src))
    _get(out, dst)[at] = value.reshape(_get(out, dst)[at].shape)
  return out["params"], out["batch_stats"]


def to_specialised(
  params: dict[str, Any], batch_stats: dict[str, Any], places: Sequence[padded_cnn.Place]
) -> dict[str, Any]:
  """The inverse of `to_padded`: the `ArchNet` variables of the places' network."""
  padded = {"params": params, "batch_stats": batch_stats}
  kernels = [int(np.shape(slot["conv_a"])[0]) if "conv_a" in slot else 0 for slot in params["slots"]]
  pairs = _pairs(places, kernels)
  return _tree((src, np.asarray(_get(padded, dst))[at].reshape(shape)) for src, shape, dst, at in pairs)


def init_variables(
  key: jax.Array,
  places: Sequence[padded_cnn.Place],
  padding: cnn_padding.Padding,
  image_shape: Sequence[int],
  num_outputs: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
  """Padded (params, batch_stats) initialised exactly as `arch_net.init_variables` initialises the
  `ArchNet`: the same kernel draws from the same key, in its order (the variable tree's sorted
  paths); batch norm scales and running variances 1, every other leaf 0."""
  draw = arch_net.kernel_sampler(key)
  shapes = _tree((src, np.zeros(shape, np.float32)) for src, shape, _, _ in _pairs(places, padding.kernels))
  paths, tree = jax.tree_util.tree_flatten_with_path(shapes)
  ones = ("scale", "var")
  leaves = [
    draw(a.shape) if path[-1].key == "kernel" else (np.ones if path[-1].key in ones else np.zeros)(a.shape, np.float32)
    for path, a in paths
  ]
  return to_padded(jax.tree.unflatten(tree, leaves), places, padding, image_shape, num_outputs)
