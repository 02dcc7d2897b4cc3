"""BANANAS cell encodings (BANANAS Sec. 4, and the authors' code): path, truncated path, isomorphism-invariant NB201
paths and adjacency encodings, as jit-able functions of one `Cell` (vmap for a batch).
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import kinds
from nas_jax.arch.architecture import next_power_of_two
from nas_jax.arch.cell import Cell
from nas_jax.features.pairwise import on_device

__all__ = [
  "path_encoding",
  "truncated_path_encoding",
  "path_iso_encoding",
  "adjacency_onehot",
  "adjacency_code",
  "adjacency_cont",
  "ENCODINGS",
  "encoding_size",
  "stack_cells",
  "encode",
]

_F = jnp.float32
# NB201 digit delta (the authors' code's alphabetical order) and iso-path digit (ours) per CSV op code.
_DELTA = np.array([3, 4, 1, 2, 0], np.int32)
_ISO_DIGIT = np.array([-1, -1, 1, 0, 2], np.int32)
# Routes R0..R3 (the cell's four input->output edge paths) as edge indices.
_ROUTES = ((3,), (0, 4), (1, 5), (0, 2, 5))
_NB101_TRIU = np.triu_indices(7, 1)
_NB101_PATHS = 364  # sum_{i=0}^{5} 3^i


def _nb101_extend_tables() -> np.ndarray:
  """[3, 364, 364] 0/1: T[d, I(p), I(p + (d,))], appending op d to the output end of path p."""
  lengths = np.zeros(_NB101_PATHS, np.int64)
  for length in range(6):
    lengths[(3**length - 1) // 2 : (3 ** (length + 1) - 1) // 2] = length
  t = np.zeros((3, _NB101_PATHS, _NB101_PATHS), np.float32)
  for idx in range(_NB101_PATHS):
    if lengths[idx] < 5:
      for d in range(3):
        t[d, idx, idx + 3 ** lengths[idx] * (d + 1)] = 1.0
  return t


_NB101_EXTEND = _nb101_extend_tables()


def _nb101_path(cell: Cell) -> jax.Array:
  """[364]: paths, in the authors' code's order, on the raw matrix (dangling vertices lie on no path)."""
  a = cell.adjacency.astype(_F)
  ext = jnp.asarray(_NB101_EXTEND)
  reach = [jnp.zeros(_NB101_PATHS, _F).at[0].set(1.0)]  # node 0: the empty path
  for j in range(1, 7):
    incoming = jnp.max(jnp.stack([a[i, j] * reach[i] for i in range(j)]), axis=0)
    if j < 6:
      incoming = jnp.minimum(incoming @ ext[cell.ops[j - 1]], 1.0)
    reach.append(incoming)
  return reach[6]


def _nb201_path(cell: Cell) -> jax.Array:
  """[155]: path201 as the authors' code encodes NB201: none and skip are ops, no pruning."""
  d = jnp.asarray(_DELTA)[cell.ops]
  idx = jnp.stack([d[3], 5 + d[0] + 5 * d[4], 5 + d[1] + 5 * d[5], 30 + d[0] + 5 * d[2] + 25 * d[5]])
  return jnp.zeros(155, _F).at[idx].max(1.0)


def path_encoding(cell: Cell) -> jax.Array:
  """Full path encoding: nb101 [364] (BANANAS Sec. 4), nb201 `path201` [155] (authors' code); 0/1 float32."""
  return _codes(cell).path(cell)


def truncated_path_encoding(cell: Cell, cutoff: int | None = None) -> jax.Array:
  """The first `cutoff` path features (the authors' code): default nb101 40, nb201 30; [cutoff]."""
  cutoff = kinds.of(cell).path_cutoff if cutoff is None else cutoff
  return path_encoding(cell)[:cutoff]


def path_iso_encoding(cell: Cell) -> jax.Array:
  """NB201 `path201_iso` [40] (ours, isomorphism-invariant): live routes, skip steps removed, iso digits.

  Constant on each `iso_class`; for nb101 the path encoding is already invariant, so this
  returns `path_encoding`.
  """
  return _codes(cell).path_iso(cell)


def _nb201_path_iso(cell: Cell) -> jax.Array:
  digit = jnp.asarray(_ISO_DIGIT)[cell.ops]
  out = jnp.zeros(40, _F)
  for route in _ROUTES:
    idx, length, live = 0, 0, True
    for e in route:
      is_op = cell.ops[e] >= 2
      idx = idx + jnp.where(is_op, 3**length * (digit[e] + 1), 0)
      length = length + is_op.astype(jnp.int32)
      live = live & (cell.ops[e] != 0)
    out = out.at[idx].max(live.astype(_F))
  return out


def adjacency_onehot(cell: Cell) -> jax.Array:
  """nb101 `adj_onehot` [36]: 21 raw edge bits + one-hot ops (BANANAS Sec. 4; Sec. 5.1); nb201 `adj201` [30]."""
  return _codes(cell).adj_onehot(cell)


def _nb201_adj_onehot(cell: Cell) -> jax.Array:
  return jnp.zeros(30, _F).at[5 * jnp.arange(6) + jnp.asarray(_DELTA)[cell.ops]].set(1.0)


def _nb101_adj_onehot(cell: Cell) -> jax.Array:
  edges = cell.adjacency[_NB101_TRIU].astype(_F)
  return jnp.concatenate([edges, jax.nn.one_hot(cell.ops, 3, dtype=_F).ravel()])


def adjacency_code(cell: Cell) -> jax.Array:
  """nb101 `adj_code` [26]: 21 edge bits, then op scalars (c1 0, c3 .5, mp 1) nodes 5..1."""
  _nb101_only("adjacency_code", cell)
  scalars = jnp.asarray(_codes(cell).op_scalars, _F)[cell.ops][::-1]
  return jnp.concatenate([cell.adjacency[_NB101_TRIU].astype(_F), scalars])


def adjacency_cont(cell: Cell) -> jax.Array:
  """nb101 `adj_cont` [27] (ours; BANANAS Sec. 5.1 leaves it undefined): `adj_code` plus the number of raw edges."""
  _nb101_only("adjacency_cont", cell)
  return jnp.append(adjacency_code(cell), cell.adjacency.sum().astype(_F))


def _nb101_only(name: str, cell: Cell) -> None:
  if _codes(cell).op_scalars is None:
    allowed = ", ".join(repr(k.name) for k, c in _CODES.items() if c.op_scalars is not None)
    raise ValueError(f"{name}: cell.kind={cell.kind!r}; allowed: {allowed}")


class _CellCodes(NamedTuple):
  """Where the encodings of the cell kinds differ: each kind's own functions of one cell, and the
  op scalars of `adjacency_code` (None: the kind has no `adj_code` / `adj_cont`)."""

  path: Callable[[Cell], jax.Array]
  path_iso: Callable[[Cell], jax.Array]
  adj_onehot: Callable[[Cell], jax.Array]
  op_scalars: tuple[float, ...] | None


# By `kinds.Kind` (a cell kind's encodings live here, above `arch`); nb101's paths are already
# isomorphism-invariant, so its path_iso is its path encoding.
_CODES = MappingProxyType(
  {
    kinds.NB101: _CellCodes(_nb101_path, _nb101_path, _nb101_adj_onehot, (0.5, 0.0, 1.0)),  # c1 0, c3 .5, mp 1
    kinds.NB201: _CellCodes(_nb201_path, _nb201_path_iso, _nb201_adj_onehot, None),
  }
)


def _codes(cell: Cell) -> _CellCodes:
  kind = kinds.of(cell)
  if kind not in _CODES:
    raise ValueError(f"cell.kind: {kind.name!r} has no cell encodings; allowed: {', '.join(k.name for k in _CODES)}")
  return _CODES[kind]


#: Cell encodings by name: name -> function of one cell; nb201 names map onto the generic ones (path = path201, ...).
ENCODINGS: MappingProxyType[str, Callable[[Cell], jax.Array]] = MappingProxyType(
  {
    "path": path_encoding,
    "trunc_path": truncated_path_encoding,
    "path_iso": path_iso_encoding,
    "adj_onehot": adjacency_onehot,
    "adj_code": adjacency_code,
    "adj_cont": adjacency_cont,
  }
)


def encoding_size(name: str, kind: str) -> int:
  """The feature dimension of encoding `name` for cells of `kind`; ValueError naming an unknown one."""
  if name not in ENCODINGS:
    raise ValueError(f"encoding: {name!r} is unknown; allowed: {', '.join(ENCODINGS)}")
  sizes = {
    "nb101": {"path": 364, "trunc_path": 40, "path_iso": 364, "adj_onehot": 36, "adj_code": 26, "adj_cont": 27},
    "nb201": {"path": 155, "trunc_path": 30, "path_iso": 40, "adj_onehot": 30},
  }
  if kind not in sizes or name not in sizes[kind]:
    allowed = ", ".join(sizes.get(kind, {}))
    raise ValueError(f"encoding_size: {name!r} is not defined for kind={kind!r}; allowed: {allowed}")
  return sizes[kind][name]


def stack_cells(cells: Sequence[Cell]) -> Cell:
  """A batch Cell (leading axis B) from a non-empty list of cells of one kind."""
  cells = list(cells)
  if not cells:
    raise ValueError("stack_cells: cells is empty; pass at least one Cell")
  kinds = {c.kind for c in cells}
  if len(kinds) != 1:
    raise ValueError(f"stack_cells: kinds {sorted(kinds)} are mixed; a batch holds one kind")
  return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *cells)


@functools.partial(jax.jit, static_argnames=("name",))
def _encode_batch(batch: Cell, name: str) -> jax.Array:
  return jax.vmap(ENCODINGS[name])(batch)


def encode(name: str, cells: Sequence[Cell] | Cell) -> jax.Array:
  """[B, D] float32 encodings of a list of cells (or a batch Cell) under encoding `name`.

  The batch is padded to a power of two before the jitted call, so varying B (candidate sets)
  compiles O(log B) times; the padding is cut off on the host (an eager slice would compile per B).
  """
  batch = cells if isinstance(cells, Cell) else stack_cells(cells)
  encoding_size(name, batch.kind)  # checks name and kind
  b = batch.ops.shape[0]
  cap = next_power_of_two(b)
  padded = jax.tree.map(lambda x: np.concatenate([x, np.repeat(x[:1], cap - b, 0)]), batch)
  return on_device(np.asarray(_encode_batch(padded, name))[:b])
