"""Cells of NAS-Bench-201 and NAS-Bench-101 (Ying et al. 2019; Dong & Yang 2020): the point type, its validity,
pruning, canonical keys, JSON and layer-graph view.

A `Cell` is a frozen pytree of small int arrays; everything here runs on the host in numpy. The
search spaces over cells (sampling, mutation, neighbours) are `nas_jax.spaces.cells`.
"""

from __future__ import annotations

import itertools
from typing import Any, Sequence

import flax.struct
import jax
import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture, from_arrays
from nas_jax.arch.json_io import show

__all__ = [
  "Cell",
  "NB201_OPS",
  "NB101_OPS",
  "NB201_EDGES",
  "NB101_NODES",
  "nb201_cell",
  "nb201_arch_str",
  "parse_arch_str",
  "nb201_iso_key",
  "nb101_cell",
  "live_nodes",
  "nb101_prune",
  "nb101_is_valid",
  "nb101_iso_key",
  "nb101_path_key",
  "cell_to_architecture",
  "cell_to_json",
  "cell_from_json",
]


# CSV op codes of the bundled NB201 table, code = index.
NB201_OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")


# Edge order e0..e5 = (source, target), the order of arch_str and of the CSV columns.
NB201_EDGES = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3))


# NB101 interior op digits (the BANANAS authors' code order): digit = index.
NB101_OPS = ("conv3x3-bn-relu", "conv1x1-bn-relu", "maxpool3x3")


NB101_NODES = 7  # input, 5 interior nodes, output


_NB101_MAX_EDGES = 9


@flax.struct.dataclass
class Cell:
  """One cell (a batch adds a leading axis B to both leaves).

  Attributes:
    ops: nb201: [6] int32 CSV op codes of edges e0..e5; nb101: [5] int32 digits of nodes 1..5.
    adjacency: nb201: [4, 4] bool, edge i -> j whose op is not `none`; nb101: [7, 7] bool, the
      raw (unpruned) strictly upper-triangular matrix.
    kind: static, "nb201" or "nb101".
  """

  ops: jax.Array
  adjacency: jax.Array
  kind: str = flax.struct.field(pytree_node=False)


def nb201_cell(ops: Sequence[int]) -> Cell:
  """An NB201 cell from 6 CSV op codes (0..4) in edge order e0..e5."""
  ops = np.asarray(ops, dtype=np.int32)
  if ops.shape != (6,) or ops.min() < 0 or ops.max() > 4:
    raise ValueError(f"nb201_cell: ops={ops.tolist()}; expected 6 op codes in 0..4")
  adj = np.zeros((4, 4), bool)
  for (i, j), o in zip(NB201_EDGES, ops):
    adj[i, j] = o != 0
  return Cell(ops=ops, adjacency=adj, kind="nb201")


def nb201_arch_str(cell: Cell) -> str:
  """The benchmark string `|o(e0)~0|+|o(e1)~0|o(e2)~1|+|...|` (NAS-Bench-201's `arch_str`)."""
  n = [NB201_OPS[int(o)] for o in np.asarray(cell.ops)]
  return f"|{n[0]}~0|+|{n[1]}~0|{n[2]}~1|+|{n[3]}~0|{n[4]}~1|{n[5]}~2|"


def parse_arch_str(s: Any) -> Cell:
  """The cell of a benchmark string (`nb201_arch_str`'s inverse); ValueError naming the entry."""
  if not isinstance(s, str):
    raise TypeError(f"arch_str: got a {type(s).__name__}; expected a str")
  groups = s.split("+")
  ops = []
  for node, group in enumerate(groups, start=1):
    entries = group.strip("|").split("|") if group.startswith("|") and group.endswith("|") else []
    if len(entries) != node:
      raise ValueError(f"arch_str: {show(s)}; group {node} must be |op~0|...|op~{node - 1}|")
    for src, entry in enumerate(entries):
      name, _, k = entry.partition("~")
      if name not in NB201_OPS or k != str(src):
        raise ValueError(f"arch_str: entry {show(entry)} of {show(s)}; expected op~{src} with op in {NB201_OPS}")
      ops.append(NB201_OPS.index(name))
  if len(groups) != 3:
    raise ValueError(f"arch_str: {show(s)} has {len(groups)} '+'-groups; expected 3")
  return nb201_cell(ops)


def nb201_iso_key(cell: Cell) -> str:
  """NB201's own canonical string (`to_unique_str`, github.com/D-X-Y/AutoDL-Projects); it reproduces
  the `iso_class` column exactly."""
  ops = np.asarray(cell.ops)
  s = ["0"]
  for j in (1, 2, 3):
    terms = []
    for i in range(j):
      op = NB201_OPS[int(ops[NB201_EDGES.index((i, j))])]
      if op == "none" or s[i] == "#":
        terms.append("#")
      elif op == "skip_connect":
        terms.append(s[i])
      else:
        terms.append(f"({s[i]})@{op}")
    s.append("+".join(sorted(terms)))
  return s[3]


def nb101_cell(adjacency: Any, ops: Sequence[int]) -> Cell:
  """An NB101 genotype: raw [7, 7] 0/1 strictly upper-triangular matrix, 5 interior digits 0..2.

  The genotype may be invalid (check with `nb101_is_valid`); the space only produces valid ones.
  """
  rows = adjacency.tolist() if isinstance(adjacency, np.ndarray) else adjacency
  if not (
    isinstance(rows, (list, tuple))
    and len(rows) == NB101_NODES
    and all(isinstance(r, (list, tuple)) and len(r) == NB101_NODES for r in rows)
    and all(isinstance(v, (int, np.integer)) and v in (0, 1) for r in rows for v in r)
  ):
    raise ValueError(f"nb101_cell: adjacency {show(adjacency)}; expected a 7x7 matrix of 0/1 integers")
  a = np.asarray(rows)
  ops = np.asarray(ops, dtype=np.int32)
  if np.tril(a).any():
    raise ValueError("nb101_cell: adjacency has entries on or below the diagonal; allowed: i < j")
  if ops.shape != (5,) or ops.min() < 0 or ops.max() > 2:
    raise ValueError(f"nb101_cell: ops={ops.tolist()}; expected 5 digits in 0..2")
  return Cell(ops=ops, adjacency=a.astype(bool), kind="nb101")


def live_nodes(a: np.ndarray) -> np.ndarray:
  """[V] bool: vertices reachable from 0 and reaching V-1 (a DAG, upper-triangular)."""
  v = a.shape[0]
  fwd = np.zeros(v, bool)
  fwd[0] = True
  for j in range(1, v):
    fwd[j] = (fwd[:j] & a[:j, j]).any()
  bwd = np.zeros(v, bool)
  bwd[-1] = True
  for i in range(v - 2, -1, -1):
    bwd[i] = (bwd[i + 1 :] & a[i, i + 1 :]).any()
  return fwd & bwd


def _prune(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """(`a` [V, V] restricted to its live vertices and always to the first and last, their indices)."""
  keep = live_nodes(a)
  keep[0] = keep[-1] = True
  idx = np.flatnonzero(keep)
  return a[np.ix_(idx, idx)], idx


def nb101_prune(cell: Cell) -> tuple[np.ndarray, np.ndarray]:
  """Pruned (matrix [k+2, k+2] bool, interior digits [k]) as NAS-Bench-101 prunes; input and output kept."""
  a, idx = _prune(np.asarray(cell.adjacency))
  return a, np.asarray(cell.ops)[idx[1:-1] - 1]


def nb101_is_valid(cell: Cell) -> bool:
  """Input reaches output, and the pruned matrix has at most 9 edges (Ying et al. 2019)."""
  a = np.asarray(cell.adjacency)
  keep = live_nodes(a)
  return bool(keep[0]) and int(a[np.ix_(keep, keep)].sum()) <= _NB101_MAX_EDGES


def nb101_iso_key(cell: Cell) -> tuple:
  """Lexicographic minimum over interior relabellings of (sorted edges, op digits): our key, equal iff isomorphic."""
  a, ops = nb101_prune(cell)
  k = len(ops)
  best = None
  for perm in itertools.permutations(range(k)):
    new = [0] + [1 + perm.index(i) for i in range(k)] + [k + 1]  # old vertex -> new label
    edges = tuple(sorted((new[i], new[j]) for i, j in zip(*np.nonzero(a))))
    key = (edges, tuple(int(ops[p]) for p in perm))
    best = key if best is None or key < best else best
  return best


def nb101_path_key(cell: Cell) -> tuple:
  """The BANANAS authors' de-duplication key (github.com/naszilla/naszilla): the multiset of path indices, one per
  input->output path, sorted as naszilla's `Cell101.get_path_indices` sorts them, so two cells
  with the same paths are duplicates whatever order their vertices put the paths in."""
  a, ops = nb101_prune(cell)  # dropped vertices lie on no input->output path: same paths
  v = a.shape[0]
  paths = [[] for _ in range(v)]
  paths[0] = [()]
  for j in range(1, v):
    for i in range(j):
      if a[i, j]:
        step = () if j == v - 1 else (int(ops[j - 1]),)
        paths[j] += [p + step for p in paths[i]]
  return tuple(sorted(sum(3**i * (d + 1) for i, d in enumerate(p)) for p in paths[-1]))


def cell_to_architecture(cell: Cell) -> Architecture:
  """The cell as a layer graph with ops as nodes (input and output as ip/op), pruned.

  NB101: the pruned cell's vertices. NB201: one node per edge whose op is not `none`, joined
  op-node to op-node through the summing nodes 1, 2; op nodes on no input->output route dropped.

  Returns:
    An unbatched `Architecture` of kind `cell.kind` (units and strides 0).
  """
  kind = cell.kind
  lab = lambda name: labels_lib.label_id(kind, name)
  if kind == "nb101":
    a, ops = nb101_prune(cell)
    labels = [lab("input")] + [lab(NB101_OPS[int(d)]) for d in ops] + [lab("output")]
  else:
    ops = np.asarray(cell.ops)
    # nodes: 0 input, 1..6 edge e0..e5, 7 output; an op node on edge (i, j) feeds every op node
    # on an edge leaving j, which is a topological order because e0..e5 are sorted by target.
    a = np.zeros((8, 8), bool)
    for e, (i, j) in enumerate(NB201_EDGES):
      if ops[e] == 0:
        continue
      a[0, e + 1] |= i == 0
      a[e + 1, 7] |= j == 3
      for f, (i2, _) in enumerate(NB201_EDGES):
        a[e + 1, f + 1] |= (i2 == j) and ops[f] != 0
    a, idx = _prune(a)
    names = ["input"] + [NB201_OPS[int(o)] for o in ops] + ["output"]
    labels = [lab(names[i]) for i in idx]
  zeros = np.zeros(len(labels), np.int32)
  return from_arrays(kind, labels, zeros, zeros, a)


def cell_to_json(cell: Cell) -> dict:
  """The interchange JSON: nb201 {"kind", "arch_str"}; nb101 {"kind", "matrix", "ops"} (raw)."""
  if cell.kind == "nb201":
    return {"kind": "nb201", "arch_str": nb201_arch_str(cell)}
  ops = ["input"] + [NB101_OPS[int(d)] for d in np.asarray(cell.ops)] + ["output"]
  return {"kind": "nb101", "matrix": np.asarray(cell.adjacency).astype(int).tolist(), "ops": ops}


def cell_from_json(obj: Any, kind: str) -> Cell:
  """`cell_to_json`'s inverse for cells of `kind`, validated; ValueError naming the field."""
  if kind == "nb201":
    if not isinstance(obj, dict) or obj.get("kind") != "nb201" or "arch_str" not in obj:
      raise ValueError(f"nb201 from_json: {show(obj)}; expected {{'kind': 'nb201', 'arch_str': str}}")
    return parse_arch_str(obj["arch_str"])
  if not isinstance(obj, dict) or obj.get("kind") != "nb101":
    raise ValueError(f"nb101 from_json: {show(obj)}; expected {{'kind': 'nb101', 'matrix', 'ops'}}")
  ops = obj.get("ops")
  if not isinstance(ops, list) or len(ops) != 7 or ops[0] != "input" or ops[-1] != "output":
    raise ValueError(f"nb101 from_json: ops={show(ops)}; expected ['input', 5 ops, 'output']")
  bad = [o for o in ops[1:-1] if o not in NB101_OPS]
  if bad:
    raise ValueError(f"nb101 from_json: ops {show(bad)} unknown; allowed: {', '.join(NB101_OPS)}")
  cell = nb101_cell(obj.get("matrix"), [NB101_OPS.index(o) for o in ops[1:-1]])
  if not nb101_is_valid(cell):
    raise ValueError("nb101 from_json: matrix has no input->output path or > 9 pruned edges")
  return cell
