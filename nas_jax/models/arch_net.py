"""A Flax module that runs any valid Architecture: its layer graph becomes a static layer list.

Layer semantics follow NASBOT (Sec. 2.2; App. A.3) and fill in what the paper leaves open (Sec. 5; App. C.2).
"""

from __future__ import annotations

import functools
import math
from types import MappingProxyType
from typing import Any, Callable, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import graph, host_graph, kinds
from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture
from nas_jax.models import convolution

__all__ = [
  "Node",
  "ArchNet",
  "network_nodes",
  "build_model",
  "init_variables",
  "kernel_sampler",
  "ACTIVATIONS",
  "KERNEL_INIT",
  "BN_MOMENTUM",
  "BN_EPSILON",
]

Role = labels_lib.Role
_F32 = jnp.float32
BN_MOMENTUM = 0.9  # short trainings: 0.99 would leave the running stats near their initial values
BN_EPSILON = 1e-5  # flax's default, named for the padded CNN's batch norm
# Conv and dense kernels: N(0, 1/fan_in), fan_in = prod(shape[:-1]) (LeCun, untruncated); the
# distribution that `init_variables` draws on the host.
KERNEL_INIT = nn.initializers.variance_scaling(1.0, "fan_in", "normal")


def _crelu(x: jax.Array) -> jax.Array:
  return jnp.concatenate([nn.relu(x), nn.relu(-x)], axis=-1)


# MLP processing labels -> activation after the dense layer. crelu doubles the width (TensorFlow's
# convention), so a crelu layer with `units` u outputs 2u features; leaky-relu uses slope 0.01.
ACTIVATIONS = MappingProxyType(
  {
    "relu": nn.relu,
    "crelu": _crelu,
    "leaky-relu": nn.leaky_relu,
    "softplus": nn.softplus,
    "elu": nn.elu,
    "logistic": nn.sigmoid,
    "tanh": jnp.tanh,
  }
)


class Node(NamedTuple):
  """One real layer of a network, in topological order.

  Attributes:
    slot: the layer's slot in the Architecture (names its parameters, e.g. "3_conv3").
    label: the layer label, e.g. "conv3".
    role: its `labels.Role`.
    kernel: spatial kernel size (0 where none).
    units: filters or neurons (0 where none).
    stride: 1 or 2 for conv/res, 2 for pools, 0 otherwise.
    parents: positions (in the node tuple, all earlier) of the layers feeding this one.
  """

  slot: int
  label: str
  role: int
  kernel: int
  units: int
  stride: int
  parents: tuple[int, ...]


def network_nodes(arch: Architecture) -> tuple[Node, ...]:
  """Reads one architecture on the host into a hashable, topologically ordered layer tuple.

  Args:
    arch: one unbatched, valid Architecture with concrete (not traced) leaves.

  Returns:
    The real layers as `Node`s; ip first, op last.

  Raises:
    ValueError: if `arch` is a batch, or its graph has a cycle.
  """
  g = host_graph.from_arch(arch)  # the real layers, slots 0..n-1
  order = graph.host_topological_order(g.adj)
  if order is None:
    raise ValueError("arch.adjacency: the graph has a cycle; a network must be a DAG")
  table = labels_lib.label_table(arch.kind)
  position = {u: k for k, u in enumerate(order)}
  nodes = []
  for u in order:
    lid = int(g.labels[u])
    nodes.append(
      Node(
        slot=u,
        label=table.names[lid],
        role=int(table.role[lid]),
        kernel=int(table.kernel[lid]),
        units=int(g.units[u]),
        stride=int(g.strides[u]),
        parents=tuple(sorted(position[int(p)] for p in np.flatnonzero(g.adj[:, u]))),
      )
    )
  return tuple(nodes)


class _Conv(nn.Module):
  """k x k conv, stride s, SAME padding, no bias: [B, H, W, C] -> [B, ceil(H/s), ceil(W/s), units],
  computed by `convolution.conv_same` (patches on CPU)."""

  units: int
  kernel: int
  stride: int
  kernel_init: Callable = KERNEL_INIT

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    k, s = self.kernel, self.stride
    w = self.param("kernel", self.kernel_init, (k, k, x.shape[-1], self.units), _F32)
    return convolution.conv_same(x, w, s)


class _ConvBN(nn.Module):
  """`_Conv` then batch norm: [B, H, W, C] -> [B, ceil(H/s), ceil(W/s), units]."""

  units: int
  kernel: int
  stride: int
  kernel_init: Callable = KERNEL_INIT

  @nn.compact
  def __call__(self, x: jax.Array, train: bool) -> jax.Array:
    x = _Conv(self.units, self.kernel, self.stride, self.kernel_init, name="conv")(x)
    bn = nn.BatchNorm(
      use_running_average=not train, momentum=BN_MOMENTUM, epsilon=BN_EPSILON, dtype=_F32, param_dtype=_F32, name="bn"
    )
    return bn(x)


class _ResBlock(nn.Module):
  """He et al. basic block: relu(bn(conv_k(relu(bn(conv_k/s(x))))) + shortcut(x)).

  The shortcut is the identity when channels and stride are unchanged, else a strided 1x1 conv
  with batch norm (He et al.'s projection shortcut).
  """

  units: int
  kernel: int
  stride: int
  kernel_init: Callable = KERNEL_INIT

  @nn.compact
  def __call__(self, x: jax.Array, train: bool) -> jax.Array:
    conv_bn = functools.partial(_ConvBN, self.units, kernel_init=self.kernel_init)
    h = nn.relu(conv_bn(self.kernel, self.stride, name="conv_a")(x, train))
    h = conv_bn(self.kernel, 1, name="conv_b")(h, train)
    shortcut = x
    if x.shape[-1] != self.units or self.stride != 1:
      shortcut = conv_bn(1, self.stride, name="projection")(x, train)
    return nn.relu(h + shortcut)


def _pool(label: str, x: jax.Array, stride: int) -> jax.Array:
  """3x3 window, SAME padding: [B, H, W, C] -> [B, ceil(H/s), ceil(W/s), C]. avg-pool averages
  the real inputs of a window only, so padding does not darken the borders."""
  window, strides = (3, 3), (stride, stride)
  if label == "max-pool":
    return nn.max_pool(x, window, strides, padding="SAME")
  return nn.avg_pool(x, window, strides, padding="SAME", count_include_pad=False)


def _flatten(x: jax.Array) -> jax.Array:
  return x.reshape(x.shape[0], -1)


def _layer(node: Node, h: jax.Array, train: bool, num_outputs: int, kernel_init: Callable) -> jax.Array:
  """One processing or decision layer on its (concatenated) input; called inside ArchNet."""
  name = f"{node.slot}_{node.label}"
  dense = functools.partial(nn.Dense, dtype=_F32, param_dtype=_F32, kernel_init=kernel_init, name=name)
  if node.role == Role.CONV:
    return nn.relu(_ConvBN(node.units, node.kernel, node.stride, kernel_init, name=name)(h, train))
  if node.role == Role.RES:
    return _ResBlock(node.units, node.kernel, node.stride, kernel_init, name=name)(h, train)
  if node.role == Role.POOL:
    return _pool(node.label, h, node.stride)
  if node.role == Role.FC:
    return nn.relu(dense(node.units)(_flatten(h)))
  if node.role == Role.ACT:
    return ACTIVATIONS[node.label](dense(node.units)(h))
  z = dense(num_outputs if node.label == "softmax" else 1)(_flatten(h))  # decision
  return nn.log_softmax(z) if node.label == "softmax" else z[:, 0]


def _to_size(x: jax.Array, size: int) -> jax.Array:
  """2x2 max-pools (stride 2, SAME) until the image is `size` pixels high: a skip's copy of the
  chain's pools (the Auto-Keras reference family); pooling a 1x1 image is the identity, so the count is exact."""
  while x.shape[1] > size:
    x = nn.max_pool(x, (2, 2), (2, 2), padding="SAME")
  return x


def _autokeras_layer(
  node: Node, parents: list[Node], ins: list[jax.Array], train: bool, num_outputs: int, kernel_init: Callable
) -> jax.Array:
  """One vertex of the Auto-Keras family (the authors' code's, `nas_jax.arch.main_chain`).

  parents, ins: the parent vertices and their outputs, in topological order. A conv block is
  ReLU(BN(conv(chain input)) + the add-skips), an add-skip being the 1x1 conv (with bias) of its
  start pooled to the block's size; a conv1 vertex passes its input on, and the block it feeds
  applies its pools and its 1x1 conv (named by the conv1 slot), because only the block knows the size.
  """
  name = f"{node.slot}_{node.label}"
  if node.role == Role.SKIP:
    return ins[0]
  if node.role == Role.CONV:
    (x,) = [h for p, h in zip(parents, ins) if p.role != Role.SKIP]
    h = _ConvBN(node.units, node.kernel, 1, kernel_init, name=name)(x, train)
    for p, z in zip(parents, ins):
      if p.role == Role.SKIP:
        dense = nn.Dense(p.units, dtype=_F32, param_dtype=_F32, kernel_init=kernel_init, name=f"{p.slot}_{p.label}")
        h = h + dense(_to_size(z, h.shape[1]))
    return nn.relu(h)
  if node.role == Role.CONCAT:  # the skip's start is an ancestor of the chain input: it comes first
    start, x = ins
    z = jnp.concatenate([x, _to_size(start, x.shape[1])], axis=-1)
    return nn.relu(_ConvBN(node.units, 1, 1, kernel_init, name=name)(z, train))
  if node.role == Role.POOL:
    return nn.max_pool(ins[0], (2, 2), (2, 2), padding="SAME")
  if node.role == Role.GAP:
    return ins[0].mean(axis=(1, 2))
  return _layer(node, ins[0], train, num_outputs, kernel_init)


def _average(stacked: jax.Array, decision: str) -> jax.Array:
  """op: [n_dec, B, K] log-probabilities -> log of the mean probability; [n_dec, B] -> mean."""
  if decision == "softmax":
    return jax.nn.logsumexp(stacked, axis=0) - jnp.log(float(stacked.shape[0]))
  return stacked.mean(0)


class ArchNet(nn.Module):
  """The network of one architecture.

  Several parents are concatenated on the last axis (channels for images, features for MLPs).
  CNN conv layers are conv + batch norm + relu; fc flattens and is dense + relu; pools keep the
  channels. MLP processing layers are dense + the activation named by the label. Autokeras
  networks follow their own vertex rules (`_autokeras_layer`).

  Decision layers: `softmax` is a dense layer to `num_outputs` classes, `linear` a dense layer to
  one output. `op` averages the decision outputs as the paper says (NASBOT Sec. 2.2): for softmax it
  averages class probabilities and returns their log, log(mean_d softmax(z_d)), computed stably
  with logsumexp; for linear it averages the predictions.

  Attributes:
    nodes: the layers, from `network_nodes(arch)`.
    kind: "cnn", "mlp" or "autokeras", a `kinds.Kind`'s name: its `input_rank` fixes the input's,
      its `main_chain` the Auto-Keras vertex rules.
    num_outputs: number of classes of a softmax decision layer (ignored by `linear`).
    kernel_init: initializer of every conv and dense kernel.
  """

  nodes: tuple[Node, ...]
  kind: str
  num_outputs: int
  kernel_init: Callable = KERNEL_INIT

  @nn.compact
  def __call__(self, x: jax.Array, *, train: bool) -> jax.Array:
    """Runs the network.

    Args:
      x: [B, H, W, C] images for a cnn or autokeras network, [B, D] features for an mlp.
      train: batch statistics and their update (True) or running averages (False).

    Returns:
      [B, num_outputs] float32 log-probabilities (softmax decision), or [B] float32 predictions
      (linear decision).
    """
    kind = kinds.of(self)
    if x.ndim != 1 + kind.input_rank:
      raise ValueError(f"ArchNet: input has shape {x.shape}; a {kind.name} takes {kind.batch_shape}")
    outputs = []
    for node in self.nodes:
      ins = [outputs[p] for p in node.parents]
      if node.role == Role.IP:
        h = x.astype(_F32)
      elif node.role == Role.OP:  # its parents are exactly the decision layers
        h = _average(jnp.stack(ins), self.nodes[node.parents[0]].label)
      elif kind.main_chain:
        parents = [self.nodes[p] for p in node.parents]
        h = _autokeras_layer(node, parents, ins, train, self.num_outputs, self.kernel_init)
      else:
        h = ins[0] if len(ins) == 1 else jnp.concatenate(ins, axis=-1)
        h = _layer(node, h, train, self.num_outputs, self.kernel_init)
      outputs.append(h)
    return outputs[-1]


def build_model(arch: Architecture, num_outputs: int = 1) -> ArchNet:
  """The Flax module of one architecture.

  Args:
    arch: one unbatched Architecture (read on the host; its structure becomes static).
    num_outputs: classes of a softmax decision layer; a linear one always has one output.

  Raises:
    ValueError: on a batch, a cycle or `num_outputs` < 1.
  """
  if isinstance(num_outputs, bool) or not isinstance(num_outputs, (int, np.integer)) or num_outputs < 1:
    raise ValueError(f"build_model: num_outputs={num_outputs!r}; expected an integer >= 1")
  return ArchNet(nodes=network_nodes(arch), kind=arch.kind, num_outputs=int(num_outputs))


def kernel_sampler(key: jax.Array) -> Callable[[tuple[int, ...]], np.ndarray]:
  """`draw(shape)`: successive host draws of `KERNEL_INIT`'s N(0, 1/fan_in) kernels, float32, from a
  numpy Generator seeded with the key's data; the draws of `init_variables`, in the order it makes them."""
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist())
  return lambda shape: rng.standard_normal(shape, np.float32) / np.float32(math.sqrt(math.prod(shape[:-1])))


def init_variables(model: nn.Module, key: jax.Array, x: jax.Array) -> dict[str, Any]:
  """`model.init` (inference mode), with the kernels drawn on the host.

  Kernels get `KERNEL_INIT`'s distribution, N(0, 1/fan_in), from a numpy Generator seeded with the
  key's data, so the result is a function of the key. Biases and batch-norm variables keep their
  flax values. Why not `model.init`: XLA on CPU compiles every threefry draw, which makes
  initialising a pool network slow, and its zero-filled intermediate trees cost memory.

  Args:
    model: an ArchNet, or one of its layer modules (anything with a `kernel_init` field whose
      `__call__` takes `train`).
    key: a jax PRNG key.
    x: an input batch of the model's shape, e.g. [1, H, W, C] or [1, D].

  Returns:
    The variables: {"params": ..., "batch_stats": ...} (no batch_stats for MLPs).
  """
  init = functools.partial(model.clone(kernel_init=nn.initializers.zeros).init, train=False)
  paths, tree = jax.tree_util.tree_flatten_with_path(jax.eval_shape(init, key, x))
  is_kernel = [path[-1].key == "kernel" for path, _ in paths]

  def non_kernels(key, x):  # XLA drops the zero kernels: only these leaves are computed
    leaves = jax.tree.leaves(init(key, x))
    return [leaf for leaf, k in zip(leaves, is_kernel) if not k]

  rest = iter(jax.jit(non_kernels)(key, x))
  draw = kernel_sampler(key)
  leaves = [jnp.asarray(draw(leaf.shape)) if k else next(rest) for (_, leaf), k in zip(paths, is_kernel)]
  return jax.tree.unflatten(tree, leaves)
