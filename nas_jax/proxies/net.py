"""A network as the zero-cost proxies see it."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import jax

__all__ = ["ProxyNet", "is_weight"]


class ProxyNet(NamedTuple):
  """One initialised network and the views of it that the proxies read.

  Every function is pure and traceable, so a proxy of a `ProxyNet` built inside `jax.vmap` scores
  a batch of networks of one skeleton in one program.

  Attributes:
    apply: `(params, x [B, *input_shape]) -> logits [B, K]`. Batch norm, where the network has it,
      normalises with the batch's own statistics: the reference scores networks in training mode.
    params: the trainable parameters. The per-weight proxies sum over the leaves with
      `ndim >= 2` (conv kernels and dense matrices), as the reference's prunable layers are the
      weights of Conv2d and Linear; biases and batch-norm scales are not scored.
    plain: `(params, x) -> logits` of the same network with every batch norm removed, the copy that
      synflow scores.
    tapped: `(params, x, taps) -> (logits, acts)`: `acts` is a pytree of the measured layers'
      outputs (each conv and dense layer's, before any norm), `taps` a pytree of the same shapes
      added to them (`None` adds nothing); fisher differentiates with respect to taps at zero.
    input_shape: the shape of one example, `(H, W, C)` or `(D,)`.
    codes: `(params, x) -> [(codes [..., B, n] bool, weights [...]), ...]`, the sign patterns of
      the inputs of the network's ReLUs (what NASWOT reads), each weighted by how many ReLUs it
      stands for (the leading axes stack ReLUs, e.g. the cells of a scanned stage). None: every
      `jax.nn.relu` in `apply`'s traced program, weight 1 (`nas_jax.proxies.relu_codes`).
  """

  apply: Callable[[Any, jax.Array], jax.Array]
  params: Any
  plain: Callable[[Any, jax.Array], jax.Array]
  tapped: Callable[[Any, jax.Array, Any], tuple[jax.Array, Any]]
  input_shape: tuple[int, ...]
  codes: Optional[Callable[[Any, jax.Array], list[tuple[jax.Array, jax.Array]]]] = None


def is_weight(leaf: Any) -> bool:
  """Whether a parameter leaf is a layer weight the per-weight proxies sum over."""
  return getattr(leaf, "ndim", 0) >= 2
