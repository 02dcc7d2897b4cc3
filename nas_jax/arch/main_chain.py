"""The main chain of an Auto-Keras architecture (kind "autokeras", Auto-Keras Sec. 2; Sec. 3.1).

A network of this family is one main chain, ip -> conv blocks, concat projections and max-pools
-> gap -> fc blocks -> softmax -> op, plus skips between conv blocks. An add-skip is a `conv1`
vertex (one parent, the skip's start; one child, the conv block it merges into); a concat-skip
is a `concat` vertex with two parents, the chain's tensor and the skip's start. `chain_view`
checks these rules on the host and returns the view that descriptors, morphs and models read.
Slots are stable ids: morphs only append slots, so an op list addressed by slots replays.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from nas_jax.arch import graph
from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture

__all__ = ["KIND", "Chain", "chain_view", "check_arrays"]

#: The `kind` of the layer graphs of Auto-Keras' family.
KIND = "autokeras"
Role = labels_lib.Role
_IP, _OP, _CONV, _POOL, _FC, _DECISION, _SKIP, _CONCAT, _GAP = (
  int(r) for r in (Role.IP, Role.OP, Role.CONV, Role.POOL, Role.FC, Role.DECISION, Role.SKIP, Role.CONCAT, Role.GAP)
)
_IMAGE = (_CONV, _CONCAT, _POOL)
_BLOCK_OUT = (_CONV, _CONCAT)  # vertices whose output is a block's output h (ReLU'd, >= 0)


class Chain(NamedTuple):
  """Host view of one autokeras architecture; every int is a slot of the Architecture.

  Attributes:
    order: the main chain, ip first, op last (conv1 vertices are not on it).
    convs: conv blocks in chain order; descriptor rank i (1-based) is `convs[i - 1]`.
    fcs: hidden fc blocks in chain order (the classifier excluded).
    outputs: per conv block, the vertex holding the block's output: the block's last concat
      projection, or the conv itself.
    adds: (start, conv1 vertex, end conv block) per add-skip.
    concats: (start, concat vertex, chain parent) per concat-skip.
    rank: per chain vertex, the number of conv blocks up to and including it (the descriptor's
      `pos`, Auto-Keras Sec. 3.1).
  """

  order: tuple[int, ...]
  convs: tuple[int, ...]
  fcs: tuple[int, ...]
  outputs: tuple[int, ...]
  adds: tuple[tuple[int, int, int], ...]
  concats: tuple[tuple[int, int, int], ...]
  rank: dict

  def skip_triples(self) -> list[tuple[int, int, str]]:
    """The (u, v, type) triples of the descriptor (Auto-Keras Sec. 3.1), adds first."""
    return [(self.rank[s], self.rank[e], "add") for s, _, e in self.adds] + [
      (self.rank[s], self.rank[m], "concat") for s, _, m in self.concats
    ]


def _ancestor(parents: list[list[int]], a: int, b: int) -> bool:
  """Whether a reaches b."""
  stack, seen = [b], set()
  while stack:
    u = stack.pop()
    if u == a:
      return True
    if u not in seen:
      seen.add(u)
      stack.extend(parents[u])
  return False


def check_arrays(lids: np.ndarray, adj: np.ndarray) -> Chain:
  """Checks the main-chain rules on real layers only.

  Args:
    lids: [n] int label ids of the autokeras vocabulary; adj: [n, n] bool.

  Returns:
    The Chain view.

  Raises:
    ValueError naming the first layer (by index) that breaks a rule.
  """
  table = labels_lib.label_table(KIND)
  roles = [int(r) for r in table.role[np.asarray(lids)]]
  names = [table.names[int(i)] for i in lids]
  where = lambda u: f"layers[{u}] ({names[u]})"
  for role, name in ((_IP, "ip"), (_OP, "op"), (_GAP, "gap"), (_DECISION, "softmax")):
    found = [u for u, r in enumerate(roles) if r == role]
    if len(found) != 1:
      raise ValueError(f"layers: found {len(found)} '{name}' layers {found}; an autokeras network has exactly one")
  if graph.host_topological_order(adj) is None:
    raise ValueError("edges: the graph has a cycle; an architecture must be a DAG")
  parents, kids = graph.adjacency_lists(np.asarray(adj, bool))
  main = {}
  for u, role in enumerate(roles):
    ps = parents[u]
    skip_ps = [p for p in ps if roles[p] == _SKIP]
    if role == _IP:
      if ps:
        raise ValueError(f"{where(u)}: has parents {ps}; ip takes none")
      continue
    if role == _SKIP:
      if len(ps) != 1 or roles[ps[0]] not in _BLOCK_OUT:
        raise ValueError(f"{where(u)}: an add-skip has one parent, a conv or concat vertex; got {ps}")
      if len(kids[u]) != 1 or roles[kids[u][0]] != _CONV:
        raise ValueError(f"{where(u)}: an add-skip feeds exactly one conv block; its children are {kids[u]}")
      continue
    if role == _CONV:
      chain_ps = [p for p in ps if roles[p] != _SKIP]
      if len(chain_ps) != 1:
        raise ValueError(f"{where(u)}: a conv block has one input besides its add-skips; got {chain_ps}")
      main[u] = chain_ps[0]
      continue
    if skip_ps:
      raise ValueError(f"{where(u)}: only conv blocks take add-skips (conv1 parents {skip_ps})")
    if role == _CONCAT:
      if len(ps) != 2:
        raise ValueError(f"{where(u)}: a concat has two parents (the chain and the skip's start); got {ps}")
      early, late = (ps[0], ps[1]) if _ancestor(parents, ps[0], ps[1]) else (ps[1], ps[0])
      if not _ancestor(parents, early, late):
        raise ValueError(f"{where(u)}: the skip's start must come before the chain parent; {ps} are unordered")
      main[u] = late
      continue
    if len(ps) != 1:
      raise ValueError(f"{where(u)}: has parents {ps}; a {names[u]} layer has exactly one")
    main[u] = ps[0]
  op = roles.index(_OP)
  order = [op]
  while order[-1] in main:
    order.append(main[order[-1]])
  order.reverse()
  on_chain = set(order)
  for u, role in enumerate(roles):
    if role != _SKIP and u not in on_chain:
      raise ValueError(f"{where(u)}: not on the main chain from ip to op")
  sections = [roles[u] for u in order]
  gap, dec = sections.index(_GAP), sections.index(_DECISION)
  if not (
    all(r in _IMAGE for r in sections[1:gap])
    and all(r == _FC for r in sections[gap + 1 : dec])
    and dec == len(order) - 2
  ):
    raise ValueError(
      "layers: the main chain must read ip, conv/concat/max-pool layers, gap, fc layers,"
      f" softmax, op; it reads {' -> '.join(names[u] for u in order)}"
    )
  if sections[1] != _CONV:
    raise ValueError(f"{where(order[1])}: the first layer after ip must be a conv block")
  rank, count = {}, 0
  for u in order:
    count += roles[u] == _CONV
    rank[u] = count
  for u in order:
    if roles[u] == _CONCAT:
      if roles[main[u]] not in _BLOCK_OUT:
        raise ValueError(f"{where(u)}: a concat follows a conv block or another concat; it follows {where(main[u])}")
      start = next(p for p in parents[u] if p != main[u])
      if roles[start] not in _BLOCK_OUT or rank[start] >= rank[main[u]]:
        raise ValueError(
          f"{where(u)}: a concat-skip starts at a conv block's output in an earlier block; it starts at {where(start)}"
        )
  convs = tuple(u for u in order if roles[u] == _CONV)
  outputs = []
  for c in convs:
    k = order.index(c)
    while roles[order[k + 1]] == _CONCAT:
      k += 1
    outputs.append(order[k])
  pos = {u: k for k, u in enumerate(order)}
  skips = sorted((u for u, r in enumerate(roles) if r == _SKIP), key=lambda s: (pos[kids[s][0]], s))
  adds = tuple((parents[s][0], s, kids[s][0]) for s in skips)
  concats = tuple((next(p for p in parents[u] if p != main[u]), u, main[u]) for u in order if roles[u] == _CONCAT)
  return Chain(
    order=tuple(order),
    convs=convs,
    fcs=tuple(u for u in order if roles[u] == _FC),
    outputs=tuple(outputs),
    adds=adds,
    concats=concats,
    rank=rank,
  )


def chain_view(arch: Architecture) -> Chain:
  """The Chain of one unbatched autokeras Architecture (host; raises ValueError on a bad one)."""
  if not isinstance(arch, Architecture):
    raise TypeError(f"arch: got {type(arch).__name__}; expected an Architecture")
  if arch.kind != KIND:
    raise ValueError(f"arch.kind: {arch.kind!r}; the main-chain view needs an {KIND!r} architecture")
  if np.ndim(arch.labels) != 1:
    raise ValueError(f"arch: labels have shape {np.shape(arch.labels)}; expected one architecture (labels [N])")
  n = int(np.asarray(arch.mask).sum())
  lids = np.ascontiguousarray(np.asarray(arch.labels)[:n], np.int32)
  adj = np.packbits(np.asarray(arch.adjacency, bool)[:n, :n])
  return _cached_view(n, lids.tobytes(), adj.tobytes())


@functools.lru_cache(maxsize=4096)
def _cached_view(n: int, lids: bytes, adj: bytes) -> Chain:
  """A search asks for the same network's view several times (descriptor, key, morphs); the
  check costs far more than the bytes key."""
  adjacency = np.unpackbits(np.frombuffer(adj, np.uint8), count=n * n).reshape(n, n).astype(bool)
  return check_arrays(np.frombuffer(lids, np.int32), adjacency)
