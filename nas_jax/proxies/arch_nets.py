"""The `ProxyNet` of a layer-graph Architecture (NASBOT's CNNs and MLPs, Auto-Keras chains).

The network is `models.arch_net`'s `ArchNet`, initialised by its `init_variables`; the views the
proxies need come from flax method interceptors on that one module, so there is no second network
builder: `plain` replaces every batch norm by the identity, and `tapped` records (and adds taps to)
the output of every module that owns a `kernel` parameter, the convs and dense layers.
"""

from __future__ import annotations

from typing import Any, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import kinds
from nas_jax.arch.architecture import Architecture
from nas_jax.models import arch_net
from nas_jax.proxies.net import ProxyNet

__all__ = ["arch_proxy_net"]


def _as_logits(out: jax.Array) -> jax.Array:
  """ArchNet's [B, K] log-probabilities pass as logits (cross-entropy is the same); a linear
  decision's [B] predictions become [B, 1]."""
  return out[:, None] if out.ndim == 1 else out


def _skip_batch_norm(next_fun, args, kwargs, context):
  if isinstance(context.module, nn.BatchNorm) and context.method_name == "__call__":
    return args[0]
  return next_fun(*args, **kwargs)


def _insert(tree: dict, path: tuple[str, ...], value: Any) -> None:
  for name in path[:-1]:
    tree = tree.setdefault(name, {})
  tree[path[-1]] = value


def _lookup(tree: Any, path: tuple[str, ...]) -> Any:
  for name in path:
    if tree is None:
      return None
    tree = tree.get(name)
  return tree


def arch_proxy_net(arch: Architecture, input_shape: Sequence[int], num_outputs: int, key: jax.Array) -> ProxyNet:
  """The ProxyNet of one layer-graph architecture, initialised as `arch_net.init_variables` does.

  Args:
    arch: one unbatched, valid Architecture of kind "cnn", "mlp" or "autokeras".
    input_shape: one example's shape: (H, W, C) for cnn and autokeras, (D,) for mlp.
    num_outputs: classes of a softmax decision layer (a linear decision has one output).
    key: the initialisation key.

  Returns:
    The ProxyNet. `apply` and `tapped` give [B, K] logits (a linear decision: [B, 1]); batch
    norm uses the batch's statistics. `tapped`'s activations are nested by module path, so their
    leaves come in the order of the kernels in `params`. `plain` is `apply` without batch norm
    (`apply` itself for MLPs, which have none).

  Raises:
    ValueError: on an unknown kind, an input shape of the wrong rank or non-positive sizes, a batch
      of architectures, a cycle or `num_outputs` < 1.
  """
  kind = kinds.of(arch)
  if not kind.network:
    allowed = ", ".join(k.name for k in kinds.ALL if k.network)
    raise ValueError(f"arch_proxy_net: arch.kind {kind.name!r} has no layer-graph network; allowed: {allowed}")
  shape = tuple(int(d) for d in input_shape)
  if len(shape) != kind.input_rank or min(shape) < 1:
    raise ValueError(
      f"arch_proxy_net: input_shape {shape} does not fit a {kind.name}; expected {kind.example_shape} of positive sizes"
    )
  if np.ndim(arch.labels) != 1:
    raise ValueError(f"arch_proxy_net: arch is a batch (labels {np.shape(arch.labels)}); expected one architecture")
  model = arch_net.build_model(arch, num_outputs)
  variables = arch_net.init_variables(model, key, jnp.zeros((1, *shape), jnp.float32))
  rest = {k: v for k, v in variables.items() if k != "params"}

  def run(params: Any, x: jax.Array) -> jax.Array:
    out, _ = model.apply({"params": params, **rest}, x, train=True, mutable=["batch_stats"])
    return _as_logits(out)

  def plain(params: Any, x: jax.Array) -> jax.Array:
    with nn.intercept_methods(_skip_batch_norm):
      return run(params, x)

  def tapped(params: Any, x: jax.Array, taps: Any) -> tuple[jax.Array, Any]:
    acts: dict = {}

    def tap(next_fun, args, kwargs, context):
      out = next_fun(*args, **kwargs)
      if context.method_name != "__call__" or not context.module.has_variable("params", "kernel"):
        return out
      _insert(acts, context.module.path, out)
      extra = _lookup(taps, context.module.path)
      return out if extra is None else out + extra

    with nn.intercept_methods(tap):
      logits = run(params, x)
    return logits, acts

  return ProxyNet(apply=run, params=variables["params"], plain=plain, tapped=tapped, input_shape=shape)
