"""NAS-Bench-201 and NAS-Bench-101 cells as NASBOT layer graphs, so OTMANN can compare them.

OTMANN (NASBOT Sec. 3; App. A.3) reads layers with labels and masses (units x incoming channels) and
edges (path lengths). A cell becomes the network it builds, one layer per op with weights or a
pool, in the kinds "nb201_layers" and "nb101_layers" (`labels.CELL_LAYER_KINDS`, labelled with the
benchmarks' op names; label costs in `otmann_costs._cell_cost`; groups all/conv/pool as for CNNs).

NB201 (Dong & Yang 2020). Node j sums op_ij(x_i) over its in-edges, all with C channels:
- nor_conv_kxk (ReLU-conv-BN, C filters on C channels) is a conv layer of C units: mass C * C.
- avg_pool_3x3 is a pool layer: no units, mass = its input's channels, C (NASBOT's pool rule).
- skip_connect computes nothing, so it is no layer but edges from whatever makes x_i to whatever
  reads x_j; a layer for it would lengthen every path through it, and cells that differ only by
  such identity hops are one class (NB201's `iso_class`). `none` is no edge; an op whose input is
  identically zero, and anything that does not reach the output, computes nothing and is dropped.
  A cell whose output is identically zero (341 cells) is an input and an output, unconnected.
- Isomorphic cells must be at distance 0, but an NB201 `iso_class` is defined on the expression
  the canonical string writes, which cannot tell one tensor read twice (node 1 feeding two live
  paths) from two equal computations (two edges with equal ops on equal inputs): in 644 of the
  6,466 classes the cells' per-edge graphs differ. A cell is therefore converted as the member
  of its class with the most layers (then the smallest ops): over all 15,625 cells, those members
  always share one per-edge graph, and it is the cell's own for 14,893 cells (the most common
  graph of each class would match 14,947). Building the expression's graph instead, one layer
  per op occurrence, matches 10,825; one layer per distinct sub-expression, 9,694.

NB101 (Ying et al. 2019, and NASBench's model builder). The pruned cell's vertices are the layers:
conv3x3-bn-relu and conv1x1-bn-relu are conv layers, maxpool3x3 a pool. The output has C
channels, split among the k vertices feeding it (the first C mod k get one more); every other
vertex has the most channels of its successors. The input reaches a vertex through a 1x1
conv-bn-relu projection to the vertex's channels, a conv1x1-bn-relu layer (mass ch * C), and the
output through one to C channels. A vertex sums its inputs, cut to its own channels; the output
concatenates them (the op layer, non-processing: NASBOT's zeta share of the mass). The builder gives the extra
channels by vertex number, which isomorphic cells need not share, so the pruned cell is first
renumbered canonically (the numbering of `nb101_iso_key`, then by depth, so that it is
topological): isomorphic cells give identical architectures.

Masses (`graph.layer_masses` for the cell kinds): a summing layer's input has its smallest
summand's channels, not NASBOT's concatenation total. That is exact for NB201, and for NB101 off
by one channel only at a vertex all of whose summands have one channel more than it (k not
dividing C). The input layer counts C channels, not NASBOT's 1 unit for the raw datum: a cell's
input is the previous cell's C-channel output, so a conv on it weighs C * C like any other.
"""

from __future__ import annotations

import functools
import itertools
import numbers
from types import MappingProxyType

import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture, from_arrays
from nas_jax.arch.cell import (
  NB101_OPS,
  NB201_EDGES,
  NB201_OPS,
  Cell,
  nb101_is_valid,
  nb101_iso_key,
  nb201_cell,
  nb201_iso_key,
)

__all__ = ["DEFAULT_CHANNELS", "cell_layer_graph"]

# C, the channels of the cell's input and output: NB201's first stage (16 -> 32 -> 64) and
# NB101's first stack (128 -> 256 -> 512).
DEFAULT_CHANNELS = MappingProxyType({"nb201": 16, "nb101": 128})
_POOLS = ("avg_pool_3x3", "maxpool3x3")

# A layer while building: (label name, units, parent layer indices); layer 0 is the input.
_Layer = tuple[str, int, tuple[int, ...]]


def _nb201_edge_layers(ops: tuple[int, ...], channels: int) -> list[_Layer]:
  """One layer per op edge (skip_connect contracted), without those that compute nothing."""
  layers: list[_Layer] = [("input", channels, ())]
  makers = [{0}]  # per node, the layers whose outputs it sums
  for j in (1, 2, 3):
    summands = set()
    for e, (i, target) in enumerate(NB201_EDGES):
      op = NB201_OPS[ops[e]]
      if target != j or op == "none" or not makers[i]:  # a zero summand adds nothing
        continue
      if op == "skip_connect":
        summands |= makers[i]
      else:
        layers.append((op, 0 if op in _POOLS else channels, tuple(sorted(makers[i]))))
        summands.add(len(layers) - 1)
    makers.append(summands)
  layers.append(("output", 0, tuple(sorted(makers[3]))))
  live = {len(layers) - 1}
  for u in range(len(layers) - 1, 0, -1):  # parents sit in lower slots: one backward sweep
    if u in live:
      live |= set(layers[u][2])
  slot = {u: k for k, u in enumerate(sorted(live | {0}))}
  return [
    (name, units, tuple(slot[p] for p in parents)) for u, (name, units, parents) in enumerate(layers) if u in slot
  ]


@functools.lru_cache(maxsize=1)
def _nb201_representatives() -> dict[str, tuple[int, ...]]:
  """Canonical string (NB201's isomorphism rule) -> ops of the class member with the most layers (then the
  smallest ops), over all 15,625 cells; built on first use, then kept."""
  best = {}
  for ops in itertools.product(range(len(NB201_OPS)), repeat=len(NB201_EDGES)):
    key = nb201_iso_key(nb201_cell(ops))
    rank = (-len(_nb201_edge_layers(ops, 1)), ops)
    if key not in best or rank < best[key]:
      best[key] = rank
  return {key: ops for key, (_, ops) in best.items()}


def _nb101_canonical(cell: Cell) -> tuple[np.ndarray, list[int]]:
  """The pruned cell in the numbering of `nb101_iso_key`, interior vertices then sorted by their
  longest path from the input: ([v, v] bool strictly upper-triangular matrix, interior digits)."""
  edges, digits = nb101_iso_key(cell)
  v = len(digits) + 2
  a = np.zeros((v, v), bool)
  for i, j in edges:
    a[i, j] = True
  depth = np.zeros(v, int)
  for _ in range(v):  # v rounds of relaxation settle every longest path of a v-vertex DAG
    depth = np.array([max((depth[i] + 1 for i in np.flatnonzero(a[:, j])), default=0) for j in range(v)])
  order = [0] + sorted(range(1, v - 1), key=lambda u: (depth[u], u)) + [v - 1]
  return a[np.ix_(order, order)], [digits[u - 1] for u in order[1:-1]]


def _nb101_vertex_channels(a: np.ndarray, channels: int) -> list[int]:
  """NASBench's `compute_vertex_channels` with input and output at `channels`.

  Raises:
    ValueError if `channels` is below the number of vertices feeding the output.
  """
  v = a.shape[0]
  ch = [channels] + [0] * (v - 2) + [channels]
  feeds = [u for u in range(1, v - 1) if a[u, -1]]
  if not feeds:  # the trivial cell, input -> output
    return ch
  if channels < len(feeds):
    raise ValueError(
      f"channels: {channels} is fewer than the {len(feeds)} vertices feeding the NB101 cell's"
      " output; each needs at least one"
    )
  share, extra = divmod(channels, len(feeds))
  for rank, u in enumerate(feeds):
    ch[u] = share + (rank < extra)
  for u in range(v - 3, 0, -1):
    if not a[u, -1]:
      ch[u] = max(ch[w] for w in range(u + 1, v - 1) if a[u, w])
  return ch


def _nb101_layers(cell: Cell, channels: int) -> list[_Layer]:
  a, digits = _nb101_canonical(cell)
  v = a.shape[0]
  ch = _nb101_vertex_channels(a, channels)
  layers: list[_Layer] = [("input", channels, ())]
  slot = {}  # vertex -> layer index

  def project(units: int) -> int:  # NB101's projection of the input is a conv1x1-bn-relu
    layers.append(("conv1x1-bn-relu", units, (0,)))
    return len(layers) - 1

  for u in range(1, v - 1):
    parents = [slot[w] for w in range(1, u) if a[w, u]] + ([project(ch[u])] if a[0, u] else [])
    op = NB101_OPS[digits[u - 1]]
    layers.append((op, 0 if op in _POOLS else ch[u], tuple(sorted(parents))))
    slot[u] = len(layers) - 1
  out = [slot[u] for u in range(1, v - 1) if a[u, -1]] + ([project(channels)] if a[0, -1] else [])
  return layers + [("output", 0, tuple(sorted(out)))]


def cell_layer_graph(cell: Cell, *, channels: int | None = None) -> Architecture:
  """The layer graph of the network a cell builds, for `otmann_distances` (see the module text).

  Cells of one isomorphism class (NB201's `iso_class`; graph isomorphism for NB101) give identical
  architectures. Layers are in a topological order: input first, output last.

  Args:
    cell: one (unbatched) nb201 or nb101 `Cell`; an nb101 genotype must be valid.
    channels: C, the channels of the cell's input and output; `DEFAULT_CHANNELS[cell.kind]` if
      None. NB201 layers all have C channels; NB101 splits C among the vertices feeding the output.

  Returns:
    An unbatched Architecture of kind "nb201_layers" or "nb101_layers" with N real layers:
    labels [N], units [N] (C on the input, output channels on convs, 0 on pools and the output),
    strides [N] (1 on convs and pools), adjacency [N, N], mask [N].

  Raises:
    ValueError naming the argument: not a Cell, a batch, an invalid nb101 genotype, or channels
    not a positive integer (or, for nb101, fewer than the vertices feeding the output).
  """
  if not isinstance(cell, Cell) or cell.kind not in DEFAULT_CHANNELS:
    raise ValueError(
      f"cell: got a {type(cell).__name__} of kind {getattr(cell, 'kind', None)!r}; expected an nb201 or nb101 Cell"
    )
  if np.ndim(cell.ops) != 1:
    raise ValueError(f"cell: a batch of cells (ops shape {np.shape(cell.ops)}); convert one cell at a time")
  if channels is None:
    channels = DEFAULT_CHANNELS[cell.kind]
  if isinstance(channels, bool) or not isinstance(channels, numbers.Integral) or channels < 1:
    raise ValueError(f"channels: {channels!r}; expected a positive integer or None")
  if cell.kind == "nb101" and not nb101_is_valid(cell):
    raise ValueError("cell: the nb101 genotype is invalid (no input->output path, or more than 9 edges after pruning)")
  channels = int(channels)
  if cell.kind == "nb201":
    layers = _nb201_edge_layers(_nb201_representatives()[nb201_iso_key(cell)], channels)
  else:
    layers = _nb101_layers(cell, channels)
  kind = f"{cell.kind}_layers"
  n = len(layers)
  adjacency = np.zeros((n, n), bool)
  for u, (_, _, parents) in enumerate(layers):
    adjacency[list(parents), u] = True
  labels = [labels_lib.label_id(kind, name) for name, _, _ in layers]
  strides = [0 < u < n - 1 for u in range(n)]  # 1 on every processing layer: cells keep the spatial size
  return from_arrays(kind, labels, [units for _, units, _ in layers], strides, adjacency)
