"""SAME-padded convolution as the layer-graph models compute it, on any backend.

On CPU a conv is a product of patches and kernel, skipping the taps that only see padding: XLA's
CPU `lax.conv` is far slower inside a `lax.scan` (as in every training epoch), for its kernel
gradient above all, and on the 2x2 or 1x1 images that 8x8 digits reach even in the forward pass.
Accelerators keep `lax.conv` for larger images, where patches would cost k*k memory.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["same_padding", "conv_by_patches", "conv_same"]


def same_padding(n: int, stride: int, kernel: int) -> tuple[int, int]:
  """(before, after): XLA's SAME padding of an axis of n pixels, the smaller half before, so that
  a strided window gives ceil(n / stride) outputs."""
  total = max((-(-n // stride) - 1) * stride + kernel - n, 0)
  return total // 2, total - total // 2


def conv_by_patches(x: jax.Array, w: jax.Array, s: int) -> jax.Array:
  """SAME-padded conv as a product of patches and kernel, skipping taps that only see padding.

  Args:
    x: [B, H, W, C]; w: [k, k, C, O]; s: stride.

  Returns:
    [B, ceil(H/s), ceil(W/s), O], equal to `lax.conv_general_dilated(..., "SAME")`.
  """
  k = w.shape[0]
  _, h, wd, _ = x.shape
  pads, taps = [], []
  for n in (h, wd):
    pads.append(same_padding(n, s, k))
    before = pads[-1][0]
    taps.append([i for i in range(k) if any(0 <= r * s + i - before < n for r in range(-(-n // s)))])
  oh, ow = -(-h // s), -(-wd // s)
  xp = jnp.pad(x, ((0, 0), *pads, (0, 0)))
  cols = [xp[:, i : i + (oh - 1) * s + 1 : s, j : j + (ow - 1) * s + 1 : s] for i in taps[0] for j in taps[1]]
  kernel = w[np.array(taps[0])][:, np.array(taps[1])].reshape(-1, w.shape[-1])
  return jnp.concatenate(cols, axis=-1) @ kernel


def conv_same(x: jax.Array, w: jax.Array, s: int) -> jax.Array:
  """[B, H, W, C] x [k, k, C, O] -> [B, ceil(H/s), ceil(W/s), O], SAME padding: by patches on CPU
  and on images no larger than the kernel, else by `lax.conv`."""
  if max(x.shape[1:3]) <= w.shape[0] or jax.default_backend() == "cpu":
    return conv_by_patches(x, w, s)
  return jax.lax.conv_general_dilated(x, w, (s, s), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
