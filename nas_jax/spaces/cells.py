"""Search spaces over NAS-Bench-201 and NAS-Bench-101 cells (Dong & Yang 2020; Ying et al. 2019) as `Space`s:
sampling, mutation and neighbours on the host in numpy, seeded from a JAX key. The point type
(`Cell`), its keys and its JSON are `nas_jax.arch.cell`.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np

from nas_jax.arch.cell import (
  NB101_NODES,
  Cell,
  cell_from_json,
  cell_to_json,
  live_nodes,
  nb101_cell,
  nb101_is_valid,
  nb101_iso_key,
  nb101_path_key,
  nb201_arch_str,
  nb201_cell,
  nb201_iso_key,
)
from nas_jax.arch.cell_graphs import cell_layer_graph
from nas_jax.spaces.graph_edit import host_rng
from nas_jax.spaces.space import Space

__all__ = ["nb201_space", "nb101_space"]

_TRIU = np.triu_indices(NB101_NODES, 1)  # 21 entries, row-major (BANANAS' adjacency order)
# Draws of `mutate(..., require_change=True)` before it reports no change. A draw changes the key
# with probability 0.54-0.82 on average (NB101 simulated, NB201 exact), so 64 misses in a row are not expected.
_MUTATE_TRIES = 64


# ------------------------------------------------------------------------------- NB201


def _nb201_mutate(cell: Cell, rng: np.random.Generator, rate: float = 1.0) -> Cell:
  """Code mutation (github.com/naszilla/naszilla): each edge w.p. rate/4 gets one of its 4 other ops."""
  ops = np.asarray(cell.ops).copy()
  flip = rng.random(6) < rate / 4.0
  shift = rng.integers(1, 5, size=6)  # a uniform different op: (op + 1..4) mod 5
  ops = np.where(flip, (ops + shift) % 5, ops)
  return nb201_cell(ops)


def _nb201_neighbours(cell: Cell) -> list[Cell]:
  ops = np.asarray(cell.ops)
  out = []
  for e in range(6):
    for o in range(5):
      if o != ops[e]:
        out.append(nb201_cell(np.where(np.arange(6) == e, o, ops)))
  return out


# ------------------------------------------------------------------------------- NB101


def _nb101_sample(rng: np.random.Generator) -> Cell:
  """Rejection sampler of the BANANAS authors' code: Bernoulli(1/2) entries, uniform ops, until valid."""
  while True:
    a = np.zeros((NB101_NODES, NB101_NODES), np.int32)
    a[_TRIU] = rng.integers(0, 2, size=len(_TRIU[0]))
    cell = nb101_cell(a, rng.integers(0, 3, size=5))
    if nb101_is_valid(cell):
      return cell


def _nb101_mutate(cell: Cell, rng: np.random.Generator, rate: float = 1.0) -> Cell:
  """Code mutation (naszilla's): flips w.p. r/21, op changes w.p. r/5; 5000 tries, then r + 1."""
  a0, ops0 = np.asarray(cell.adjacency).astype(np.int32), np.asarray(cell.ops)
  while True:
    for _ in range(5000):
      a = a0.copy()
      flip = rng.random(len(_TRIU[0])) < rate / 21.0
      a[_TRIU] ^= flip.astype(np.int32)
      change = rng.random(5) < rate / 5.0
      ops = np.where(change, (ops0 + rng.integers(1, 3, size=5)) % 3, ops0)
      child = nb101_cell(a, ops)
      if nb101_is_valid(child):
        return child
    rate += 1.0


def _nb101_neighbours(cell: Cell) -> list[Cell]:
  """Op changes on live interior nodes, and valid single edge flips that touch a live path."""
  a0, ops0 = np.asarray(cell.adjacency).astype(np.int32), np.asarray(cell.ops)
  live = live_nodes(a0.astype(bool))
  out = []
  for n in range(5):
    if live[n + 1]:
      for d in range(3):
        if d != ops0[n]:
          out.append(nb101_cell(a0, np.where(np.arange(5) == n, d, ops0)))
  for i, j in zip(*_TRIU):
    a = a0.copy()
    a[i, j] ^= 1
    child = nb101_cell(a, ops0)
    if nb101_is_valid(child) and (live[i] and live[j] or live_nodes(a.astype(bool))[[i, j]].all()):
      out.append(child)
  return out


# ------------------------------------------------------------------------------- shared


def _mutate_fn(base, key_fn):
  def mutate(point: Cell, key: jax.Array, require_change: bool = False) -> tuple[Cell, bool]:
    """Code mutation (naszilla's) -> (child, True), or (point, False) when the key is unchanged.

    require_change=False is the code's operator, one draw, which leaves the key unchanged with
    probability 0.18 (NB201 strings) to 0.46 (NB101 path sets); BANANAS counts such a draw as a
    spent attempt. require_change=True (Ours) redraws, up to `_MUTATE_TRIES` times.
    """
    rng = host_rng(key)
    parent = key_fn(point)
    for _ in range(_MUTATE_TRIES if require_change else 1):
      child = base(point, rng)
      if key_fn(child) != parent:
        return child, True
    return point, False

  return mutate


def _cell_space(kind: str, given_kind: str, dedup_key: str, keys: dict, sample, mutate, neighbours) -> Space:
  """The Space of `kind` cells, de-duplicated by keys[dedup_key]; checks what a config passed."""
  if dedup_key not in keys:
    raise ValueError(f"{kind}_space: dedup_key={dedup_key!r}; allowed: {', '.join(keys)}")
  if given_kind != kind:  # configs pass their space section whole, kind included
    raise ValueError(f"{kind}_space: kind={given_kind!r}; allowed: {kind!r}")
  key_fn = keys[dedup_key]
  return Space(
    name=kind,
    kind=kind,
    sample=sample,
    mutate=_mutate_fn(mutate, key_fn),
    neighbours=neighbours,
    canonical_key=key_fn,
    to_json=cell_to_json,
    from_json=lambda obj: cell_from_json(obj, kind),
    initial=lambda n=None: sample(jax.random.PRNGKey(0), 10 if n is None else n),
    layer_graph=cell_layer_graph,
  )


def _nb201_all() -> list[Cell]:
  """Every NB201 cell, in the order of its six op codes."""
  return [nb201_cell(ops) for ops in itertools.product(range(5), repeat=6)]


def nb201_space(dedup_key: str = "string", kind: str = "nb201") -> Space:
  """The 15,625-cell NB201 space. dedup_key: "string" (Code) or "iso" (NB201's `iso_class`)."""

  def sample(key, n):
    ops = np.asarray(jax.random.randint(key, (n, 6), 0, 5))
    return [nb201_cell(o) for o in ops]

  keys = {"string": nb201_arch_str, "iso": nb201_iso_key}
  space = _cell_space("nb201", kind, dedup_key, keys, sample, _nb201_mutate, _nb201_neighbours)
  return space._replace(enumerate=_nb201_all)


def nb101_space(dedup_key: str = "path", kind: str = "nb101") -> Space:
  """The NB101 space, raw genotypes. dedup_key: "path" (Code) or "iso" (isomorphism)."""

  def sample(key, n):
    rng = host_rng(key)
    return [_nb101_sample(rng) for _ in range(n)]

  keys = {"path": nb101_path_key, "iso": nb101_iso_key}
  return _cell_space("nb101", kind, dedup_key, keys, sample, _nb101_mutate, _nb101_neighbours)
