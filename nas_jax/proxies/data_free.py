"""Synflow (Tanaka et al. 2020, as zero-cost-nas scores it: `foresight/pruners/measures/synflow.py`),
the data-free zero-cost proxy. Params and FLOPs, the other data-free baselines, are costs of the
architecture: `nas_jax.models.nb201_net.nb201_params` and `nb201_flops` for NB201 cells.

The reference, and how this follows it: the network's BN-free copy (`ProxyNet.plain`; for NB201
the reduction blocks keep their batch norms, as the reference's copy does), EVERY parameter
replaced by its absolute value (the reference takes `abs_` of the whole state dict: weights,
biases, batch-norm scales and offsets), in float64, fed one all-ones input [1, H, W, 3];
R = sum of the logits; score = sum over conv and dense weights (`is_weight`: the reference's
Conv2d and Linear `.weight`s; biases and norms are not summed) of |dR/dW * W|.

`synflow_signed` drops the absolute value: sum of dR/dW * W, the derivative of R as every weight is
scaled by (1 + t), at t = 0. One forward-mode JVP computes it, with no backward pass and no weight
gradients, which is what makes scoring a whole space affordable on a CPU. With |params| and an
all-ones input every gradient is >= 0 except upstream of a batch norm that subtracts a mean (the
NB201 reduction blocks'), so the two agree wherever a network has none and differ slightly there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nas_jax.proxies.net import ProxyNet, is_weight

__all__ = ["synflow", "synflow_signed"]


def synflow(net: ProxyNet, dtype: jnp.dtype = jnp.float64) -> jax.Array:
  """Synflow of `net`: sum over weights W of |dR/dW * W|, R = sum(plain(|params|, ones)).

  Args:
    net: the network; its `plain` form is scored.
    dtype: the arithmetic's dtype. float64 (the reference's) needs jax's x64 mode where the call
      is traced (`nas_jax.proxies.scoring` enables it for its own calls only): without it jax
      computes in float32.

  Returns:
    [] the score, in `dtype`.
  """
  params, flow = _flow(net, dtype)
  grads = jax.grad(flow)(params)
  terms = [jnp.sum(jnp.abs(g * p)) for p, g in zip(jax.tree.leaves(params), jax.tree.leaves(grads)) if is_weight(p)]
  return jnp.sum(jnp.stack(terms))


def synflow_signed(net: ProxyNet, dtype: jnp.dtype = jnp.float64) -> jax.Array:
  """Sum over weights W of dR/dW * W at |params| (`synflow` without the absolute value), by one JVP.

  Args, returns: as `synflow`'s.
  """
  params, flow = _flow(net, dtype)
  weights = jax.tree.map(lambda p: p if is_weight(p) else jnp.zeros_like(p), params)
  return jax.jvp(flow, (params,), (weights,))[1]


def _flow(net: ProxyNet, dtype: jnp.dtype):
  """(|params| in `dtype`, R): R(params) = the sum of `net.plain`'s logits on one all-ones input."""
  params = jax.tree.map(lambda p: jnp.abs(p).astype(dtype), net.params)
  x = jnp.ones((1, *net.input_shape), dtype)
  return params, lambda p: jnp.sum(net.plain(p, x))
