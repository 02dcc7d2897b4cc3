"""The data-dependent zero-cost proxies: grad_norm, snip, grasp, fisher, jacob_cov and NASWOT.

Each is a pure function `(net, batch) -> []` of a `ProxyNet` and one batch `(x [B, ...], y [B])`,
following the reference definitions (Abdelfattah et al. 2021, `foresight/pruners/measures/`;
Mellor et al. 2021 for NASWOT). Batch norm uses the batch's statistics (`net.apply`), as the
reference scores networks in training mode. The per-weight sums run over `is_weight` leaves, the
reference's Conv2d and Linear weights. Where this differs from the reference:
- the whole batch goes through in one pass; the reference splits it only when a GPU runs out of
  memory (`split_data`), which would change the batch-norm statistics;
- grasp takes one pass at temperature 1 (the reference's defaults `T=1, num_iters=1`), and its
  Hessian-gradient product is a forward-mode derivative of the gradient instead of a second
  backward pass through a graph built with `create_graph`;
- fisher reads each measured layer's output through `net.tapped` instead of backward hooks on an
  identity; as in the reference, each channel's value counts once per weight of that channel
  (its fan-in), the reference's broadcast to per-parameter arrays before summing;
- jacob_cov takes the eigenvalues with `eigvalsh` (the correlation matrix is symmetric) where the
  reference uses a general `eig`; a constant Jacobian row gives NaN, as the reference's fallback;
- NASWOT reads the ReLU codes a network gives (`ProxyNet.codes`, e.g. the NB201 network's sown
  codes) or else those of its traced program (`relu_codes`), the inputs of every `jax.nn.relu`
  call, where Mellor et al. hook every ReLU module;
- float targets (a regression network with one output) use the mean squared error; the reference
  defines the proxies for classification, with cross-entropy.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nas_jax.proxies import relu_codes as relu_codes_lib
from nas_jax.proxies.net import ProxyNet, is_weight

__all__ = ["grad_norm", "snip", "grasp", "fisher", "jacob_cov", "naswot", "loss", "JACOB_COV_EPS"]

Batch = tuple[jax.Array, jax.Array]
JACOB_COV_EPS = 1e-5  # the reference's k in -sum(log(lambda + k) + 1 / (lambda + k))


def loss(out: jax.Array, y: jax.Array) -> jax.Array:
  """The proxies' loss: [B, K] logits and [B] int labels -> mean cross-entropy (the reference's);
  [B, 1] outputs and [B] float targets -> mean squared error."""
  if jnp.issubdtype(y.dtype, jnp.integer):
    return optax.softmax_cross_entropy_with_integer_labels(out, y).mean()
  return jnp.mean(jnp.square(out[:, 0] - y))


def _check(where: str, net: ProxyNet, batch: Any, min_batch: int = 1) -> tuple[jax.Array, jax.Array]:
  """Shapes of `batch` against `net.input_shape`, in plain Python (shapes are static under jit)."""
  if not isinstance(net, ProxyNet):
    raise TypeError(f"{where}: net is a {type(net).__name__}; expected a ProxyNet")
  if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
    raise TypeError(f"{where}: batch must be a pair (x [B, ...], y [B]); got a {type(batch).__name__}")
  x, y = batch
  shape, want = tuple(np.shape(x)), tuple(net.input_shape)
  if len(shape) != len(want) + 1 or shape[1:] != want:
    raise ValueError(f"{where}: x has shape {shape}; expected [B, {', '.join(map(str, want))}]")
  if tuple(np.shape(y)) != shape[:1]:
    raise ValueError(f"{where}: y has shape {tuple(np.shape(y))}; expected [B] = ({shape[0]},) to match x")
  if shape[0] < min_batch:
    raise ValueError(f"{where}: the batch has {shape[0]} examples; this proxy needs at least {min_batch}")
  return jnp.asarray(x), jnp.asarray(y)


def _weight_fn(net: ProxyNet, x: jax.Array, y: jax.Array) -> tuple[list[jax.Array], Callable]:
  """(the weight leaves, `f(weights) -> loss` with every other parameter held at its value)."""
  leaves, treedef = jax.tree.flatten(net.params)
  at = [i for i, leaf in enumerate(leaves) if is_weight(leaf)]

  def f(weights: list[jax.Array]) -> jax.Array:
    full = list(leaves)
    for i, w in zip(at, weights):
      full[i] = w
    return loss(net.apply(treedef.unflatten(full), x), y)

  return [leaves[i] for i in at], f


def grad_norm(net: ProxyNet, batch: Batch) -> jax.Array:
  """sum over weights W of ||dL/dW||_2 (the Frobenius norm of each layer's gradient). Returns []."""
  x, y = _check("grad_norm", net, batch)
  weights, f = _weight_fn(net, x, y)
  return sum(jnp.linalg.norm(g.ravel()) for g in jax.grad(f)(weights))


def snip(net: ProxyNet, batch: Batch) -> jax.Array:
  """sum over weights of |dL/dW * W| (Lee et al.'s connection sensitivity at a mask of ones). Returns []."""
  x, y = _check("snip", net, batch)
  weights, f = _weight_fn(net, x, y)
  return sum(jnp.abs(g * w).sum() for g, w in zip(jax.grad(f)(weights), weights))


def grasp(net: ProxyNet, batch: Batch) -> jax.Array:
  """-sum over weights of W * (H g), g = dL/dW and H the Hessian of L in the weights. Returns []."""
  x, y = _check("grasp", net, batch)
  weights, f = _weight_fn(net, x, y)
  g = jax.lax.stop_gradient(jax.grad(f)(weights))
  _, hg = jax.jvp(jax.grad(f), (weights,), (g,))
  return -sum((w * h).sum() for w, h in zip(weights, hg))


def fisher(net: ProxyNet, batch: Batch) -> jax.Array:
  """sum over measured layers and their channels k of fan_in * 0.5 * mean_b(g_bk^2), with
  g_bk = sum over positions of act * dL/dact (Theis et al.'s pruning signal, as the reference).

  `net.tapped`'s activations pair with the weight leaves of `net.params` in order, one each, an
  activation's last axis being its weight's output (last) axis; the weight's other axes give the
  fan-in. Returns [].

  Raises:
    ValueError: if the activations do not pair with the weights that way.
  """
  x, y = _check("fisher", net, batch)
  shapes = jax.eval_shape(lambda p, v: net.tapped(p, v, None)[1], net.params, x)
  weights = [w for w in jax.tree.leaves(net.params) if is_weight(w)]
  acts_shapes = jax.tree.leaves(shapes)
  if len(acts_shapes) != len(weights) or any(a.shape[-1] != w.shape[-1] for a, w in zip(acts_shapes, weights)):
    raise ValueError(
      f"fisher: net.tapped gives activations with channels {[a.shape[-1] for a in acts_shapes]} but the weights "
      f"of net.params have outputs {[w.shape[-1] for w in weights]}; expected one activation per weight, in order"
    )

  def tapped_loss(taps: Any) -> tuple[jax.Array, Any]:
    out, acts = net.tapped(net.params, x, taps)
    return loss(out, y), acts

  zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
  grads, acts = jax.grad(tapped_loss, has_aux=True)(zeros)
  total = jnp.zeros(())
  for a, g, w in zip(jax.tree.leaves(acts), jax.tree.leaves(grads), weights):
    g_bk = (a * g).reshape(a.shape[0], -1, a.shape[-1]).sum(1)  # [B, C]: summed over positions
    total = total + (w.size // w.shape[-1]) * (0.5 * jnp.square(g_bk).mean(0)).sum()
  return total


def jacob_cov(net: ProxyNet, batch: Batch) -> jax.Array:
  """-sum over the eigenvalues l of corrcoef(J) of log(l + k) + 1 / (l + k), k = `JACOB_COV_EPS`,
  with J [B, prod(input_shape)] the gradients of the summed outputs with respect to each input.
  y is not read. Returns []."""
  x, _ = _check("jacob_cov", net, batch, min_batch=2)
  jac = jax.grad(lambda v: net.apply(net.params, v).sum())(x)
  lam = jnp.linalg.eigvalsh(jnp.corrcoef(jac.reshape(x.shape[0], -1)))
  return -jnp.sum(jnp.log(lam + JACOB_COV_EPS) + 1.0 / (lam + JACOB_COV_EPS))


def naswot(net: ProxyNet, batch: Batch) -> jax.Array:
  """log |K_H| (Mellor et al.), K_H [B, B] summed over the network's ReLUs of c c^T + (1 - c)(1 - c)^T,
  c [B, n] the binary codes of a ReLU's inputs (`net.codes`, each ReLU weighted as it says): each
  entry counts the units on which two examples agree. y is not read. Returns [], -inf when K_H
  is singular (e.g. two identical examples)."""
  x, _ = _check("naswot", net, batch, min_batch=2)
  if net.codes is None:
    pairs = [(c, 1.0) for c in relu_codes_lib.relu_codes(net.apply, net.params, x)]
  else:
    pairs = net.codes(net.params, x)
  k = jnp.zeros((x.shape[0], x.shape[0]), jnp.result_type(float))
  for c, w in pairs:
    c, w = c.astype(k.dtype), jnp.asarray(w, k.dtype)
    agree = jnp.einsum("...bn,...cn->...bc", c, c) + jnp.einsum("...bn,...cn->...bc", 1.0 - c, 1.0 - c)
    k = k + jnp.tensordot(w, agree, axes=w.ndim)
  return jnp.linalg.slogdet(k)[1]
