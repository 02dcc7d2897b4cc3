"""Network morphism on Auto-Keras architectures (Auto-Keras Sec. 3.3): the four operations as
architecture edits, the candidate set Omega(f), replay of an op list, and the initial networks.

Ops address blocks by slot (stable ids: an op appends slots and never renumbers), so an op list
replays on its ancestor. What the ops do to Flax parameters is `nas_jax.models.morph_variables`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch import main_chain
from nas_jax.arch.architecture import Architecture, from_arrays
from nas_jax.arch.json_io import show

__all__ = ["OP_TYPES", "Op", "apply_op", "replay", "candidate_ops", "sample_ops", "initial_architectures"]

#: The network morphism operations: a deeper layer, a wider layer, an add or a concat skip connection.
OP_TYPES = ("deep", "wide", "add", "concat")
KIND = main_chain.KIND
_VOCAB = labels_lib.vocabulary(KIND)
_ROLE = labels_lib.label_table(KIND).role


class Op(NamedTuple):
  """One morph.

  Attributes:
    type: one of OP_TYPES.
    target: deep / wide: the conv or hidden fc block (its slot); add / concat: the conv block the
      skip ends at.
    source: add / concat: the conv block the skip starts from; -1 otherwise.
    kernel: deep on a conv block: the new block's kernel size (3 or 5); 0 otherwise.
  """

  type: str
  target: int
  source: int = -1
  kernel: int = 0

  def to_json(self) -> list:
    return [self.type, int(self.target), int(self.source), int(self.kernel)]

  @classmethod
  def from_json(cls, obj: Any) -> "Op":
    """The inverse of `to_json`; ValueError on anything else."""
    if (
      not isinstance(obj, (list, tuple))
      or len(obj) != 4
      or obj[0] not in OP_TYPES
      or not all(isinstance(v, int) and not isinstance(v, bool) for v in obj[1:])
    ):
      raise ValueError(f"op: {show(obj)}; expected [type, target, source, kernel] with type one of {OP_TYPES}")
    return cls(*obj)


class _Graph:
  """A mutable host copy of one architecture's real layers."""

  def __init__(self, arch: Architecture):
    self.chain = main_chain.chain_view(arch)
    n = int(np.asarray(arch.mask).sum())
    self.labels = [int(x) for x in np.asarray(arch.labels)[:n]]
    self.units = [int(x) for x in np.asarray(arch.units)[:n]]
    self.strides = [int(x) for x in np.asarray(arch.strides)[:n]]
    self.edges = {(int(i), int(j)) for i, j in zip(*np.nonzero(np.asarray(arch.adjacency)[:n, :n]))}

  def add_vertex(self, label: str, units: int) -> int:
    self.labels.append(_VOCAB.index(label))
    self.units.append(units)
    self.strides.append(0)
    return len(self.labels) - 1

  def take_children(self, old: int, new: int) -> None:
    """Every consumer of `old` reads `new` instead."""
    moved = {(i, j) for i, j in self.edges if i == old}
    self.edges = (self.edges - moved) | {(new, j) for _, j in moved}

  def build(self) -> Architecture:
    n = len(self.labels)
    adj = np.zeros((n, n), bool)
    for i, j in self.edges:
      adj[i, j] = True
    return from_arrays(KIND, self.labels, self.units, self.strides, adj)


def _block_output(chain: main_chain.Chain, conv: int) -> int:
  return chain.outputs[chain.convs.index(conv)]


def _why_not(chain: main_chain.Chain, op: Op) -> str:
  """Why `op` does not apply ("" when it does)."""
  convs, fcs = chain.convs, chain.fcs
  if op.type not in OP_TYPES:
    return f"type {show(op.type)} is unknown; allowed: {', '.join(OP_TYPES)}"
  if op.type == "deep":
    if op.target in convs:
      return "" if op.kernel in (3, 5) else f"a new conv block has kernel 3 or 5, not {op.kernel}"
    return "" if op.target in fcs else "deep applies to a conv block or a hidden fc block"
  if op.type == "wide":
    if op.target in convs[:-1] or op.target in fcs:
      return ""
    return "wide applies to a conv block other than the last, or a hidden fc block"
  if op.source not in convs[:-1] or op.target not in convs[:-1]:
    return f"a skip joins two conv blocks other than the last; got source {op.source}"
  u, v = chain.rank[op.source], chain.rank[op.target]
  if u >= v:
    return f"a skip goes forward; block {op.source} (rank {u}) does not come before block {op.target} (rank {v})"
  if (u, v, op.type) in chain.skip_triples():
    return f"the network already has the skip ({u}, {v}, {op.type})"
  return ""


def apply_op(arch: Architecture, op: Op) -> Architecture:
  """The architecture after one morph (Auto-Keras Sec. 3.3; parameters: `nas_jax.models.morph_variables.morph`).

  deep inserts a block after the target block's output, as wide as that output, and the output's
  consumers (the chain, outgoing skips) move to the new block; wide doubles the target's width and that of the add-skips
  merging into it; add appends a conv1 vertex from the source block's output into the target conv;
  concat appends a concat vertex after the target block's output, which takes its consumers.

  Args:
    arch: one autokeras Architecture, trimmed or padded.
    op: the Op.

  Returns:
    The new Architecture, trimmed to its layers.

  Raises:
    ValueError naming the op, the layer and why it does not apply.
  """
  g = _Graph(arch)
  reason = _why_not(g.chain, op)
  if reason:
    raise ValueError(f"op {op.to_json()} does not apply to layer {op.target}: {reason}")
  return _edit(g, op)


def _edit(g: _Graph, op: Op) -> Architecture:
  """`apply_op` on a host copy, without the eligibility rules (the initial G1 has a skip into
  the last block)."""
  chain = g.chain
  if op.type == "deep":
    conv = op.target in chain.convs
    after = _block_output(chain, op.target) if conv else op.target
    new = g.add_vertex(f"conv{op.kernel}" if conv else "fc", g.units[after])  # the width it reads
    g.take_children(after, new)
    g.edges.add((after, new))
  elif op.type == "wide":
    g.units[op.target] *= 2
    for _, skip, end in chain.adds:
      if end == op.target:
        g.units[skip] *= 2
  elif op.type == "add":
    skip = g.add_vertex("conv1", g.units[op.target])
    g.edges |= {(_block_output(chain, op.source), skip), (skip, op.target)}
  else:
    out = _block_output(chain, op.target)
    cat = g.add_vertex("concat", g.units[out])
    g.take_children(out, cat)
    g.edges |= {(out, cat), (_block_output(chain, op.source), cat)}
  return g.build()


def replay(arch: Architecture, ops: Sequence[Op]) -> Architecture:
  """`apply_op` over a list; the architecture itself when `ops` is empty."""
  for op in ops:
    arch = apply_op(arch, op)
  return arch


def candidate_ops(
  arch: Architecture, *, kernels: Sequence[int] = (3, 5), max_width: int = 1024, max_layers: int = 100
) -> list[Op]:
  """Omega(f) in full (`omega = "all"`): every op that applies and keeps widths <= max_width and
  the layer count <= max_layers, grouped as deep, wide, skips."""
  chain = main_chain.chain_view(arch)
  units = np.asarray(arch.units)
  room = int(np.asarray(arch.mask).sum()) < max_layers
  deep = [Op("deep", c, kernel=k) for c in chain.convs for k in kernels] + [Op("deep", f) for f in chain.fcs]
  wide = [Op("wide", b) for b in (*chain.convs[:-1], *chain.fcs) if 2 * int(units[b]) <= max_width]
  skips = [
    Op(t, b, a) for i, a in enumerate(chain.convs[:-1]) for b in chain.convs[i + 1 : -1] for t in ("add", "concat")
  ]
  triples = set(chain.skip_triples())
  skips = [o for o in skips if (chain.rank[o.source], chain.rank[o.target], o.type) not in triples]
  return (deep if room else []) + wide + (skips if room else [])


def sample_ops(arch: Architecture, rng: np.random.Generator, n: int = 8, **limits) -> list[Op]:
  """Omega(f) as the authors' code samples it (Alg. 1 line 6; `omega = "sample"`): n draws, each a type
  (deep, wide, skip) with probability 1/3 and then a uniform op of that type. Types with no
  applicable op are redrawn; repeats are kept (the caller de-duplicates children)."""
  groups = {"deep": [], "wide": [], "skip": []}
  for o in candidate_ops(arch, **limits):
    groups["skip" if o.type in ("add", "concat") else o.type].append(o)
  live = [g for g in groups.values() if g]
  if not live:
    return []
  return [g[rng.integers(len(g))] for g in (live[rng.integers(len(live))] for _ in range(n))]


def initial_architectures(*, width: int = 64, n_blocks: int = 3) -> list[Architecture]:
  """The code's two initial networks (github.com/keras-team/autokeras): G0 = n_blocks x
  [conv3(width) -> max-pool] -> gap -> softmax, and G1 = G0 deepened on blocks A, A, B, C with
  add-skips (1, 3), (3, 5), (5, 7) (code 0.2.x) when n_blocks = 3; only G0 otherwise."""
  if isinstance(width, bool) or not isinstance(width, int) or width < 1:
    raise ValueError(f"width: {show(width)}; expected an integer >= 1")
  if isinstance(n_blocks, bool) or not isinstance(n_blocks, int) or n_blocks < 1:
    raise ValueError(f"n_blocks: {show(n_blocks)}; expected an integer >= 1")
  names = ["ip"] + ["conv3", "max-pool"] * n_blocks + ["gap", "softmax", "op"]
  n = len(names)
  adj = np.zeros((n, n), bool)
  adj[np.arange(n - 1), np.arange(1, n)] = True
  lids = np.array([_VOCAB.index(x) for x in names], np.int32)
  units = np.where(_ROLE[lids] == labels_lib.Role.CONV, width, 0)
  g0 = from_arrays(KIND, lids, units, np.where(lids == _VOCAB.index("max-pool"), 2, 0), adj)
  if n_blocks != 3:
    return [g0]
  a, b, c = main_chain.chain_view(g0).convs
  g1 = replay(g0, [Op("deep", a, kernel=3), Op("deep", a, kernel=3), Op("deep", b, kernel=3), Op("deep", c, kernel=3)])
  convs = main_chain.chain_view(g1).convs
  for u, v in ((1, 3), (3, 5), (5, 7)):
    g1 = _edit(_Graph(g1), Op("add", convs[v - 1], convs[u - 1]))
  return [g0, g1]
