"""Cost metrics of a layer-graph network without training it: parameters, FLOPs, activation memory
and measured latency, for budget constraints and multi-objective search.

`network_costs` is a pure host computation from `arch_net.network_nodes(arch)` and the input shape:
it walks the layers in topological order with each layer's output shape, following `ArchNet`'s
layer semantics (`arch_net`). It compiles nothing.

What is counted, for ONE example:

* params: every trainable parameter, i.e. every leaf of the Flax "params" collection: conv and
  dense kernels, dense biases, batch-norm scales and offsets (BatchNorm's running statistics live
  in "batch_stats" and are not counted). A cnn conv layer is conv (no bias) + BN: k*k*C_in*u + 2u;
  a res block adds its second conv (k*k*u*u + 2u) and, when channels or stride change, the 1x1
  projection (C_in*u + 2u); fc / mlp / decision layers are dense: in*out + out, a softmax decision
  having `num_outputs` outputs and a linear one 1. An autokeras add-skip (conv1 vertex) is a 1x1
  conv with bias from its start's channels to its units; a concat vertex a 1x1 conv + BN on the
  concatenation.
* flops: the forward pass's multiply-accumulates (MACs) of convs and dense layers, times 2. A conv
  counts the standard 2*k*k*C_in*C_out*H_out*W_out with SAME padding (every tap, also those that
  only see padding), a dense layer 2*in*out (an add-skip's 1x1 conv is a dense layer applied at each
  of the H_out*W_out pixels of the block it merges into). Batch norm, activations, pools, adds,
  concatenations and the op layer's averaging are not counted. An mlp's MACs are
  `padded_mlp.layout_macs`, the padded MLP trainer's own count.
* memory_mb: an ESTIMATE of the peak activation memory of the forward pass, float32, in MiB
  (2**20 bytes). Each layer's output is one tensor, live from the step that creates it to the
  step of its last consumer; the input is live throughout (the caller holds it). The estimate is
  the peak over the walk of the sum of the live tensors while a layer runs (its inputs and its new
  output). Temporaries inside a layer are not counted: the concatenation of several parents, the
  conv before batch norm, a res block's inner tensors, the pooled copies an autokeras skip takes,
  the stacked decisions of op. An autokeras add-skip vertex passes its input on (no new tensor;
  its start stays live until the block it merges into). XLA fuses and reuses buffers in its own
  way, so the compiled program's peak may differ either way; the estimate ranks networks, it
  does not size an allocator. Parameters are not included (see `params`).

`xla_costs` reads the compiled model's own parameter count and FLOPs (for checking), and
`latency_ms` times the jitted inference pass on the default device.
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import kinds
from nas_jax.arch import labels as labels_lib
from nas_jax.arch import main_chain
from nas_jax.arch.architecture import Architecture
from nas_jax.models import arch_net, padded_mlp

__all__ = ["Costs", "KINDS", "network_costs", "xla_costs", "latency_ms"]

Role = labels_lib.Role
# The kinds that `arch_net.ArchNet` builds: "cnn", "mlp", "autokeras".
KINDS = tuple(k.name for k in kinds.ALL if k.network)
_BYTES = 4  # float32 activations
_MIB = 2**20


class Costs(NamedTuple):
  """Costs of one network for one example (see the module docstring for the conventions).

  Attributes:
    params: trainable parameters (the Flax "params" collection; batch statistics excluded).
    flops: forward-pass FLOPs, 2 x the multiply-accumulates of convs and dense layers.
    memory_mb: estimated peak activation memory of the forward pass, float32 MiB.
  """

  params: int
  flops: int
  memory_mb: float


def _is_int(v: Any) -> bool:
  return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check(arch: Any, input_shape: Any, num_outputs: Any) -> tuple[tuple[arch_net.Node, ...], tuple[int, ...], int]:
  """Checks the arguments in plain Python; returns (nodes, input_shape as ints, num_outputs)."""
  if not isinstance(arch, Architecture):
    raise ValueError(f"arch: got a {type(arch).__name__}; expected an Architecture")
  kind = kinds.of(arch)
  if not kind.network:
    raise ValueError(f"arch.kind: {kind.name!r} is not supported; allowed: {', '.join(KINDS)}")
  if (
    not isinstance(input_shape, (tuple, list))
    or len(input_shape) != kind.input_rank
    or not all(_is_int(d) and d >= 1 for d in input_shape)
  ):
    raise ValueError(
      f"input_shape: {input_shape!r}; {kind.name} networks take one example of shape {kind.example_shape},"
      " positive integers"
    )
  if not _is_int(num_outputs) or num_outputs < 1:
    raise ValueError(f"num_outputs: {num_outputs!r}; expected an integer >= 1")
  if kind.main_chain:
    main_chain.chain_view(arch)  # ValueError naming the layer that breaks the main-chain rules
  return arch_net.network_nodes(arch), tuple(int(d) for d in input_shape), int(num_outputs)


def _ceil_div(n: int, s: int) -> int:
  return -(-n // s)


def _decision_outputs(node: arch_net.Node, num_outputs: int) -> int:
  return num_outputs if node.label == "softmax" else 1


def _where(node: arch_net.Node) -> str:
  return f"arch: layer slot {node.slot} ({node.label})"


def _concat(node: arch_net.Node, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
  """The shape of the concatenation of a cnn layer's parents on their last axis."""
  if len({s[:-1] for s in shapes}) > 1:
    raise ValueError(f"{_where(node)}: its parents give shapes {shapes}; a concatenation needs one size")
  return (*shapes[0][:-1], sum(s[-1] for s in shapes))


def _conv(k: int, s: int, shape: tuple[int, ...], units: int) -> tuple[tuple[int, ...], int, int]:
  """conv (no bias) + BN on an [H, W, C] image: (output shape, params, MACs)."""
  h, w, c = shape
  ho, wo = _ceil_div(h, s), _ceil_div(w, s)
  return (ho, wo, units), k * k * c * units + 2 * units, k * k * c * units * ho * wo


def _dense(n_in: int, n_out: int) -> tuple[int, int]:
  """A dense layer with bias: (params, MACs)."""
  return n_in * n_out + n_out, n_in * n_out


def _image_layer(node: arch_net.Node, shape: tuple[int, ...], num_outputs: int) -> tuple[tuple[int, ...], int, int]:
  """One cnn processing or decision layer (`arch_net._layer`) on its concatenated input: (output shape,
  params, MACs)."""
  if node.role in (Role.CONV, Role.RES, Role.POOL) and len(shape) != 3:
    raise ValueError(f"{_where(node)}: its input has shape {shape}; it needs an image [H, W, C]")
  if node.role == Role.CONV:
    return _conv(node.kernel, node.stride, shape, node.units)
  if node.role == Role.RES:
    out, params, macs = _conv(node.kernel, node.stride, shape, node.units)
    _, p_b, m_b = _conv(node.kernel, 1, out, node.units)
    params, macs = params + p_b, macs + m_b
    if shape[-1] != node.units or node.stride != 1:  # the projection shortcut
      _, p_s, m_s = _conv(1, node.stride, shape, node.units)
      params, macs = params + p_s, macs + m_s
    return out, params, macs
  if node.role == Role.POOL:
    return (_ceil_div(shape[0], node.stride), _ceil_div(shape[1], node.stride), shape[2]), 0, 0
  if node.role not in (Role.FC, Role.DECISION):
    raise ValueError(f"{_where(node)}: role {Role(node.role).name} is not a layer of a cnn or autokeras network")
  n_out = node.units if node.role == Role.FC else _decision_outputs(node, num_outputs)
  return (n_out,), *_dense(math.prod(shape), n_out)


def _autokeras_layer(
  node: arch_net.Node, parents: list[arch_net.Node], ins: list[tuple[int, ...]], num_outputs: int
) -> tuple[tuple[int, ...], int, int]:
  """One autokeras vertex (`arch_net._autokeras_layer`): (output shape, params, MACs)."""
  if node.role == Role.SKIP:  # passes its start on; the block it merges into runs its 1x1 conv
    return ins[0], 0, 0
  if node.role == Role.CONV:
    (x,) = [h for p, h in zip(parents, ins) if p.role != Role.SKIP]
    out, params, macs = _conv(node.kernel, 1, x, node.units)
    for p, z in zip(parents, ins):
      if p.role == Role.SKIP:  # 1x1 conv with bias of the start pooled to the block's size
        p_s, m_s = _dense(z[-1], p.units)
        params, macs = params + p_s, macs + m_s * out[0] * out[1]
    return out, params, macs
  if node.role == Role.CONCAT:  # concat(chain, pooled start) -> 1x1 conv + BN
    start, x = ins
    return _conv(1, 1, (*x[:2], x[2] + start[2]), node.units)
  if node.role == Role.POOL:
    h, w, c = ins[0]
    return (_ceil_div(h, 2), _ceil_div(w, 2), c), 0, 0
  if node.role == Role.GAP:
    return (ins[0][-1],), 0, 0
  return _image_layer(node, ins[0], num_outputs)


def _peak_elements(nodes: tuple[arch_net.Node, ...], sizes: list[int], owner: list[int]) -> int:
  """The peak, over a topological walk, of the live tensors' elements (module docstring).

  Args:
    nodes: the layers; sizes: each layer's output elements (0 for a layer that makes no tensor);
    owner: the layer whose tensor each layer's output is (itself, or what an alias passes on).
  """
  last = list(range(len(nodes)))  # the step at which each tensor is last read
  for i, node in enumerate(nodes):
    for p in node.parents:
      last[owner[p]] = max(last[owner[p]], i)
  live = sizes[0]  # the input: held by the caller throughout
  peak = live
  for i in range(1, len(nodes)):
    live += sizes[i]
    peak = max(peak, live)
    live -= sum(sizes[j] for j in range(1, i + 1) if last[j] == i)
  return peak


def _image_costs(
  kind: kinds.Kind, nodes: tuple[arch_net.Node, ...], input_shape: tuple[int, ...], num_outputs: int
) -> Costs:
  """Costs of a cnn or autokeras network: a walk over output shapes."""
  shapes: list[tuple[int, ...]] = []
  sizes, owner = [], []
  params = macs = 0
  for i, node in enumerate(nodes):
    ins = [shapes[p] for p in node.parents]
    p_n = m_n = 0
    if node.role == Role.IP:
      shape = input_shape
    elif node.role == Role.OP:
      shape = ins[0]
    elif kind.main_chain:
      shape, p_n, m_n = _autokeras_layer(node, [nodes[p] for p in node.parents], ins, num_outputs)
    else:
      shape, p_n, m_n = _image_layer(node, ins[0] if len(ins) == 1 else _concat(node, ins), num_outputs)
    shapes.append(shape)
    alias = node.role == Role.SKIP
    owner.append(owner[node.parents[0]] if alias else i)
    sizes.append(0 if alias else math.prod(shape))
    params, macs = params + p_n, macs + m_n
  return Costs(params, 2 * macs, _peak_elements(nodes, sizes, owner) * _BYTES / _MIB)


def _mlp_costs(arch: Architecture, nodes: tuple[arch_net.Node, ...], num_inputs: int, num_outputs: int) -> Costs:
  """Costs of an mlp network from `padded_mlp`'s Layout: each dense layer's input rows and units."""
  decisions = [n for n in nodes if n.role == Role.DECISION]
  k = _decision_outputs(decisions[0], num_outputs) if decisions else 1
  _, layout = padded_mlp.encode(arch, padded_mlp.padding_for([arch]), num_inputs, k)
  params = sum((len(rows) + 1) * units for rows, units in zip(layout.rows, layout.units))
  sizes = []
  for node in nodes:
    if node.role == Role.IP:
      sizes.append(num_inputs)
    elif node.role == Role.ACT:
      sizes.append(node.units * (2 if node.label == "crelu" else 1))
    else:  # decision and op
      sizes.append(k)
  peak = _peak_elements(nodes, sizes, list(range(len(nodes))))
  return Costs(params, 2 * padded_mlp.layout_macs(layout), peak * _BYTES / _MIB)


def network_costs(arch: Architecture, input_shape: tuple[int, ...], num_outputs: int) -> Costs:
  """Parameters, FLOPs and estimated peak activation memory of one network, for one example.

  Pure host computation (no compile). A search costs each candidate once: the constrained space
  keeps the costs of the points it has seen (`spaces.constrained`).

  Args:
    arch: one unbatched Architecture of kind "cnn", "mlp" or "autokeras".
    input_shape: one example's shape: (H, W, C) for cnn and autokeras, (D,) for mlp; e.g.
      (8, 8, 1) or (64,) for digits (`training.datasets.input_spec`).
    num_outputs: classes of a softmax decision layer (a linear one always has one output).

  Returns:
    Costs(params, flops, memory_mb), conventions in the module docstring.

  Raises:
    ValueError: naming `arch`, `input_shape` or `num_outputs` when one is not allowed.
  """
  nodes, shape, k = _check(arch, input_shape, num_outputs)
  kind = kinds.of(arch)
  if kind.input_rank == 1:
    return _mlp_costs(arch, nodes, shape[0], k)
  return _image_costs(kind, nodes, shape, k)


def _forward(model: arch_net.ArchNet):
  return jax.jit(functools.partial(model.apply, train=False))


def xla_costs(arch: Architecture, input_shape: tuple[int, ...], num_outputs: int) -> dict[str, float]:
  """The compiled model's own numbers, to check `network_costs` against (it compiles the model).

  Args:
    arch, input_shape, num_outputs: as `network_costs`.

  Returns:
    {"params": the total size of the leaves of the Flax "params" collection (`jax.eval_shape` of
    `init`), "flops": XLA's `cost_analysis()` FLOPs of the jitted inference forward pass on a
    batch of 1, on the default backend}. XLA also counts batch norm, activations, pools and
    elementwise ops, and on CPU a conv runs as `convolution.conv_by_patches`, which skips the taps
    that only see padding, so its flops differ from `network_costs`'.
  """
  nodes, shape, k = _check(arch, input_shape, num_outputs)
  model = arch_net.ArchNet(nodes=nodes, kind=arch.kind, num_outputs=k)
  x = jax.ShapeDtypeStruct((1, *shape), jnp.float32)
  variables = jax.eval_shape(functools.partial(model.init, train=False), jax.random.key(0), x)
  params = sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(variables["params"]))
  analysis = _forward(model).lower(variables, x).compile().cost_analysis()
  if isinstance(analysis, (list, tuple)):  # older jax: one dict per computation
    analysis = analysis[0] if analysis else {}
  return {"params": int(params), "flops": float((analysis or {}).get("flops", math.nan))}


@functools.lru_cache(maxsize=256)
def _latency(
  kind: str, nodes: tuple[arch_net.Node, ...], input_shape: tuple[int, ...], num_outputs: int, batch: int, repeats: int
) -> float:
  model = arch_net.ArchNet(nodes=nodes, kind=kind, num_outputs=num_outputs)
  x = jnp.zeros((batch, *input_shape), jnp.float32)
  variables = arch_net.init_variables(model, jax.random.key(0), x)
  run = _forward(model).lower(variables, x).compile()
  for _ in range(3):  # warm up: first-call allocations, caches
    jax.block_until_ready(run(variables, x))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(run(variables, x))
    times.append(time.perf_counter() - start)
  return 1e3 * statistics.median(times)


def latency_ms(
  arch: Architecture, input_shape: tuple[int, ...], num_outputs: int, *, batch: int = 1, repeats: int = 20
) -> float:
  """Measured latency of the jitted inference forward pass on the current default device.

  Compiles once (not timed), runs 3 warm-up calls, then returns the median of `repeats` timed calls,
  each waited for with `block_until_ready`. Results are cached in-process per (kind, layers,
  shapes, batch, repeats), the last 256 kept: `latency_ms.cache_info()` / `latency_ms.cache_clear()`.

  Args:
    arch, input_shape, num_outputs: as `network_costs`.
    batch: examples per call; the input is [batch, *input_shape] float32.
    repeats: timed calls.

  Returns:
    Milliseconds per call (per batch, not per example).
  """
  nodes, shape, k = _check(arch, input_shape, num_outputs)
  for name, value in (("batch", batch), ("repeats", repeats)):
    if not _is_int(value) or value < 1:
      raise ValueError(f"{name}: {value!r}; expected an integer >= 1")
  return _latency(arch.kind, nodes, shape, k, int(batch), int(repeats))


latency_ms.cache_info = _latency.cache_info
latency_ms.cache_clear = _latency.cache_clear
