"""Network morphism on Flax variables (Auto-Keras Sec. 3.3; weights as in the authors' code): the weights
that make each of the four ops of `nas_jax.arch.morphism` keep the network's function.

`morph(arch, variables, op, key)` returns the child architecture (`morphism.apply_op`) and the
child's variables, laid out as `arch_net.build_model(child).init` lays them out: one entry per
vertex named f"{slot}_{label}" in "params" (and in "batch_stats" for conv and concat blocks).
All work is host numpy on small arrays; leaves come back as numpy float32.

What each op writes (C = channels or units; "identity BN" = scale 1, bias 0, mean 0, var 1 - eps,
exact because flax's eval BN divides by sqrt(var + eps)):
- deep: the new conv block gets the centre-tap identity kernel and identity BN; a new fc block
  the identity kernel and bias 0. Exact because a block's output is a ReLU output (>= 0).
- wide on block j (C_old -> 2 C_old): every layer writing j's output (conv j, the conv1 vertices
  ending at j; fc j and its bias) gets C_old output channels copying channels idx (uniform with
  replacement, one idx for all of them); conv j's BN grows by scale 1, bias 0, mean 0, var 1.
  Every layer reading j's output (through max-pools) gets C_old zero input rows right after the
  old channels of its input segment: offset C_old, or C_chain + C_old for a concat that j starts.
  Exact because the copies are read with weight 0.
- add: the new conv1 vertex has kernel 0 and bias 0. concat: the new projection is the identity
  on the chain's channels and 0 on the skip's, with identity BN.

Noise (`noise=True`, the code's symmetry breaking): every kernel or dense-bias entry the op
creates gets U(-s/2, s/2) noise, s = 1e-4 * (max - min) of a reference: the old leaf it was
copied from for widened outputs (so a zero bias gets none), [0, 1] (s = 1e-4) for new layers and
for the zero rows of readers. Old entries and all BN parameters and statistics stay exact (the
code also perturbs a widened conv's old filters and new BN layers; we do not).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import jax
import numpy as np

from nas_jax.arch import graph, host_graph, main_chain, morphism
from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture
from nas_jax.models.arch_net import BN_EPSILON

__all__ = ["morph", "replay_morphs", "variable_shapes"]

_NOISE = 1e-4
Role = labels_lib.Role
_F32 = np.float32


class _Net(NamedTuple):
  """Host facts of one architecture, indexed by slot."""

  chain: main_chain.Chain
  names: tuple[str, ...]  # module name f"{slot}_{label}"
  roles: tuple[int, ...]
  kernels: tuple[int, ...]  # spatial kernel size of a conv block
  units: tuple[int, ...]
  kids: tuple[tuple[int, ...], ...]


def _net(arch: Architecture) -> _Net:
  chain = main_chain.chain_view(arch)
  g = host_graph.from_arch(arch)
  table = labels_lib.label_table(main_chain.KIND)
  lids = g.labels.tolist()
  _, kids = graph.adjacency_lists(g.adj)
  return _Net(
    chain,
    tuple(f"{u}_{table.names[l]}" for u, l in enumerate(lids)),
    tuple(int(table.role[l]) for l in lids),
    tuple(int(table.kernel[l]) for l in lids),
    tuple(g.units.tolist()),
    tuple(tuple(int(k) for k in ks) for ks in kids),
  )


def _chain_input_width(net: _Net, v: int, in_channels: int) -> int:
  """Channels (or features) of the chain tensor that vertex v reads: pools and gap keep them."""
  order = net.chain.order
  u = order[order.index(v) - 1]
  while net.roles[u] in (Role.POOL, Role.GAP):
    u = order[order.index(u) - 1]
  return in_channels if net.roles[u] == Role.IP else net.units[u]


def _bn_shapes(c: int) -> tuple[dict, dict]:
  return {"scale": (c,), "bias": (c,)}, {"mean": (c,), "var": (c,)}


def variable_shapes(arch: Architecture, in_channels: int, num_classes: int) -> dict[str, dict]:
  """The variable shapes `build_model(arch, num_classes).init` gives on [B, H, W, in_channels].

  Returns:
    {"params": {name: {... leaf: shape tuple}}, "batch_stats": {name: {"bn": {...}}}}.
  """
  net = _net(arch)
  params, stats = {}, {}
  for v, (name, role, k, c) in enumerate(zip(net.names, net.roles, net.kernels, net.units)):
    if role == Role.CONV:
      bn, bn_stats = _bn_shapes(c)
      params[name] = {"conv": {"kernel": (k, k, _chain_input_width(net, v, in_channels), c)}, "bn": bn}
      stats[name] = {"bn": bn_stats}
    elif role == Role.CONCAT:
      start, _, parent = next(t for t in net.chain.concats if t[1] == v)
      bn, bn_stats = _bn_shapes(c)
      params[name] = {"conv": {"kernel": (1, 1, net.units[parent] + net.units[start], c)}, "bn": bn}
      stats[name] = {"bn": bn_stats}
    elif role == Role.SKIP:
      start, _, _ = next(t for t in net.chain.adds if t[1] == v)
      params[name] = {"kernel": (net.units[start], c), "bias": (c,)}
    elif role in (Role.FC, Role.DECISION):
      out = c if role == Role.FC else num_classes
      params[name] = {"kernel": (_chain_input_width(net, v, in_channels), out), "bias": (out,)}
  return {"params": params, "batch_stats": stats}


def _where(path: Sequence[str]) -> str:
  return "variables" + "".join(f"[{k!r}]" for k in path)


def _kernel_dim(variables: Mapping, path: tuple[str, ...], ndim: int, axis: int) -> int:
  """One dimension of a kernel the shapes are derived from (input channels, classes)."""
  tree = variables
  for depth, key in enumerate(path):
    if not isinstance(tree, Mapping) or key not in tree:
      raise ValueError(f"{_where(path[:depth])}: has no entry {key!r}; the architecture needs it")
    tree = tree[key]
  if np.ndim(tree) != ndim:
    raise ValueError(f"{_where(path)}: has shape {np.shape(tree)}; expected a kernel with {ndim} axes")
  return int(np.shape(tree)[axis])


def _check(given: Any, expected: Mapping, path: tuple[str, ...] = ()) -> None:
  """ValueError naming the first module or leaf of `given` that differs from `expected`."""
  if not isinstance(given, Mapping):
    raise ValueError(f"{_where(path)}: got a {type(given).__name__}; expected a dict with keys {sorted(expected)}")
  extra = sorted(set(given) - set(expected))
  if extra:
    raise ValueError(
      f"{_where(path)}: has {extra[0]!r}, which the architecture does not have; expected keys {sorted(expected)}"
    )
  for key, want in expected.items():
    if key not in given:
      raise ValueError(f"{_where(path)}: has no entry {key!r}; the architecture needs it")
    if isinstance(want, Mapping):
      _check(given[key], want, path + (key,))
    elif tuple(np.shape(given[key])) != want:
      raise ValueError(
        f"{_where(path + (key,))}: has shape {tuple(np.shape(given[key]))}; the architecture needs {want}"
      )


def _noisy(rng: np.random.Generator, new: np.ndarray, ref_range: float, noise: bool) -> np.ndarray:
  """`new` (float32) plus U(-s/2, s/2) noise, s = 1e-4 * ref_range, when noise is on."""
  if not noise:
    return new.astype(_F32)
  s = _NOISE * ref_range
  return (new + rng.uniform(-s / 2, s / 2, new.shape)).astype(_F32)


def _identity_bn(c: int) -> tuple[dict, dict]:
  """Identity BN in eval mode: (x - 0) / sqrt((1 - eps) + eps) * 1 + 0 = x."""
  return (
    {"scale": np.ones(c, _F32), "bias": np.zeros(c, _F32)},
    {"mean": np.zeros(c, _F32), "var": np.full(c, 1 - BN_EPSILON, _F32)},
  )


def _widen_out(leaf: np.ndarray, idx: np.ndarray, rng: np.random.Generator, noise: bool) -> np.ndarray:
  """[..., C] -> [..., C + len(idx)]: the new output channels copy channels idx (last axis)."""
  return np.concatenate([leaf, _noisy(rng, leaf[..., idx], np.ptp(leaf), noise)], axis=-1)


def _insert_rows(
  kernel: np.ndarray, axis: int, offset: int, n: int, rng: np.random.Generator, noise: bool
) -> np.ndarray:
  """n zero input rows inserted at `offset` along `axis` (the kernel's input axis)."""
  shape = list(kernel.shape)
  shape[axis] = n
  head, tail = np.split(kernel, [offset], axis=axis)
  return np.concatenate([head, _noisy(rng, np.zeros(shape), 1.0, noise), tail], axis=axis)


def _readers(net: _Net, v: int) -> list[int]:
  """The weighted vertices that read v's output, looking through the width-keeping max-pools and
  gap (the affected layers of Auto-Keras Sec. 3.3; gap is only reached from the last block, which
  apply_op never widens)."""
  out = []
  for u in net.kids[v]:
    out += _readers(net, u) if net.roles[u] in (Role.POOL, Role.GAP) else [u]
  return out


def _wide(net: _Net, params: dict, stats: dict, target: int, rng: np.random.Generator, noise: bool) -> None:
  """Doubles block `target` in place (conv block or hidden fc; module docstring)."""
  c_old = net.units[target]
  idx = rng.integers(c_old, size=c_old)
  name = net.names[target]
  if net.roles[target] == Role.CONV:
    conv, bn = params[name]["conv"], params[name]["bn"]
    conv["kernel"] = _widen_out(conv["kernel"], idx, rng, noise)
    grow = lambda leaf, value: np.concatenate([leaf, np.full(c_old, value, _F32)])
    bn["scale"], bn["bias"] = grow(bn["scale"], 1), grow(bn["bias"], 0)
    bn_stats = stats[name]["bn"]
    bn_stats["mean"], bn_stats["var"] = grow(bn_stats["mean"], 0), grow(bn_stats["var"], 1)
    writers = [net.names[skip] for _, skip, end in net.chain.adds if end == target]
  else:
    writers = [name]
  for w in writers:
    params[w] = {leaf: _widen_out(params[w][leaf], idx, rng, noise) for leaf in ("kernel", "bias")}
  for r in _readers(net, target):
    # a concat reads [chain, skip]: the skip's segment starts after the chain parent's channels
    left = sum(net.units[parent] for start, cat, parent in net.chain.concats if (cat, start) == (r, target))
    if net.roles[r] in (Role.CONV, Role.CONCAT):
      conv = params[net.names[r]]["conv"]
      conv["kernel"] = _insert_rows(conv["kernel"], 2, left + c_old, c_old, rng, noise)
    else:  # conv1, fc, softmax: dense kernels [in, out]
      dense = params[net.names[r]]
      dense["kernel"] = _insert_rows(dense["kernel"], 0, left + c_old, c_old, rng, noise)


def _new_vertex(
  net: _Net, child: _Net, op: morphism.Op, rng: np.random.Generator, noise: bool
) -> tuple[dict, dict | None]:
  """(params, batch_stats or None) of the vertex that deep, add or concat appends."""
  new = len(net.names)
  c = child.units[new]
  fresh = lambda value: _noisy(rng, value, 1.0, noise)  # a new layer's reference range is [0, 1]
  if child.roles[new] == Role.FC:
    return {"kernel": fresh(np.eye(c)), "bias": fresh(np.zeros(c))}, None
  if op.type == "deep":
    k, mid = op.kernel, (op.kernel - 1) // 2
    kernel = np.zeros((k, k, c, c))
    kernel[mid, mid] = np.eye(c)
  else:
    c_start = net.units[net.chain.outputs[net.chain.convs.index(op.source)]]
    if op.type == "add":
      return {"kernel": fresh(np.zeros((c_start, c))), "bias": fresh(np.zeros(c))}, None
    kernel = np.eye(c + c_start, c)[None, None]  # the chain's channels come first (arch_net._autokeras_layer)
  bn, bn_stats = _identity_bn(c)
  return {"conv": {"kernel": fresh(kernel)}, "bn": bn}, {"bn": bn_stats}


def _host_copy(tree: Any) -> Any:
  """Nested dicts of fresh numpy float32 arrays (the caller's arrays are never aliased)."""
  if isinstance(tree, Mapping):
    return {k: _host_copy(v) for k, v in tree.items()}
  return np.array(tree, dtype=_F32)


def morph(
  arch: Architecture, variables: Mapping[str, Any], op: morphism.Op, key: jax.Array, *, noise: bool = False
) -> tuple[Architecture, dict[str, dict]]:
  """One function-preserving morph of a network and its variables (Auto-Keras Sec. 3.3).

  Args:
    arch: one autokeras Architecture.
    variables: its {"params", "batch_stats"} as `build_model(arch, n).init` gives them (n and the
      input channels are read from the softmax and first conv kernels).
    op: the `morphism.Op`.
    key: a jax PRNG key; it seeds wide's channel copies and the noise.
    noise: add the symmetry-breaking noise of the module docstring (off: the child computes
      the parent's function up to float rounding).

  Returns:
    (child architecture, child variables): nested dicts of numpy float32 arrays; modules the op
    does not touch are copied bitwise.

  Raises:
    ValueError: `variables` do not match `arch` (naming the module or leaf, expected vs given
      shape), or `op` does not apply (`morphism.apply_op`'s message).
  """
  net = _net(arch)
  in_channels = _kernel_dim(variables, ("params", net.names[net.chain.convs[0]], "conv", "kernel"), 4, 2)
  num_classes = _kernel_dim(variables, ("params", net.names[net.chain.order[-2]], "kernel"), 2, 1)
  _check(variables, variable_shapes(arch, in_channels, num_classes))
  child_arch = morphism.apply_op(arch, op)
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist())
  params, stats = _host_copy(variables["params"]), _host_copy(variables["batch_stats"])
  if op.type == "wide":
    _wide(net, params, stats, op.target, rng, noise)
  else:
    child = _net(child_arch)
    name = child.names[len(net.names)]
    params[name], new_stats = _new_vertex(net, child, op, rng, noise)
    if new_stats is not None:
      stats[name] = new_stats
  return child_arch, {"params": params, "batch_stats": stats}


def replay_morphs(
  arch: Architecture, variables: Mapping[str, Any], ops: Sequence[morphism.Op], key: jax.Array, *, noise: bool = False
) -> tuple[Architecture, dict[str, dict]]:
  """`morph` over a list, op i with `jax.random.fold_in(key, i)` (Auto-Keras Sec. 3.2: the warm start of a
  network chosen as ancestor + op sequence); (arch, variables) as given when `ops` is empty."""
  for i, op in enumerate(ops):
    arch, variables = morph(arch, variables, op, jax.random.fold_in(key, i), noise=noise)
  return arch, variables
