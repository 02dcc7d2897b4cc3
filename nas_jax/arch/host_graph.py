"""One architecture's real layers as plain numpy arrays (`HostGraph`), and the canonical key of a
layer graph, which searches de-duplicate by (`KeyMemo` remembers it per architecture object):
host-side views that no jit workload needs.
"""

from __future__ import annotations

import functools
import hashlib
import weakref
from typing import NamedTuple

import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.graph import adjacency_lists

__all__ = ["HostGraph", "from_arch", "canonical_key", "KeyMemo"]


class HostGraph(NamedTuple):
  """The real layers of one architecture as plain numpy arrays (n = number of real layers).

  Attributes:
    kind: "cnn" or "mlp".
    labels: [n] int32 label ids.
    units: [n] int32, 0 where a layer has none.
    strides: [n] int32, 0 where a layer has none.
    adj: [n, n] bool, `adj[i, j]` is the edge i -> j.
  """

  kind: str
  labels: np.ndarray
  units: np.ndarray
  strides: np.ndarray
  adj: np.ndarray

  @property
  def n(self) -> int:
    return len(self.labels)

  @property
  def roles(self) -> np.ndarray:
    """[n] int32 `Role` of each layer."""
    return labels_lib.label_table(self.kind).role[self.labels]

  @property
  def has_units(self) -> np.ndarray:
    """[n] bool, whether each layer carries a unit count."""
    return labels_lib.label_table(self.kind).has_units[self.labels]


def from_arch(arch: Architecture) -> HostGraph:
  """The real layers of one unbatched architecture (real layers come first, spec of `arch`)."""
  if not isinstance(arch, Architecture):
    raise TypeError(f"arch: got {type(arch).__name__}; expected an Architecture")
  if np.ndim(arch.labels) != 1:
    raise ValueError(f"arch: labels shape {np.shape(arch.labels)}; expected one architecture, [N]")
  n = int(np.asarray(arch.mask).sum())
  return HostGraph(
    kind=arch.kind,
    labels=np.asarray(arch.labels)[:n].astype(np.int32),
    units=np.asarray(arch.units)[:n].astype(np.int32),
    strides=np.asarray(arch.strides)[:n].astype(np.int32),
    adj=np.asarray(arch.adjacency)[:n, :n].astype(bool),
  )


def canonical_key(arch: Architecture) -> str:
  """A key of the labelled graph that does not depend on slot order or padding.

  Colour refinement (1-dimensional Weisfeiler-Lehman on the directed graph): a layer starts with
  its (label, units, stride) and is recoloured from its colour and the sorted colours of its
  parents and of its children until the colour partition stops refining; the key hashes the
  kind and the multiset of signatures of every round. Guarantee: graphs equal up to renumbering the layers get
  equal keys (every step is permutation-equivariant). The converse holds unless colour
  refinement fails to tell two graphs apart, which needs regular-like structure that the tests
  did not meet among NASBOT networks; such graphs would be treated as duplicates.

  Args:
    arch: one architecture, [N] leaves.

  Returns:
    "<kind>:<hex digest>".
  """
  return _refined_key(from_arch(arch))


class KeyMemo:
  """`canonical_key` computed once per architecture object: a search asks for the key of one
  object many times (its mutations, the EA's de-duplication, the featurizer's cache rows), and
  architectures are values, never changed in place. An entry dies with its architecture, and the
  memo with its owner (the space that keys its points, `spaces.space.layer_graph_space`).
  """

  def __init__(self) -> None:
    self._keys: dict[int, tuple[weakref.ref, str]] = {}  # id(arch) -> (weak reference, key)

  def __call__(self, arch: Architecture) -> str:
    hit = self._keys.get(id(arch))
    if hit is not None and hit[0]() is arch:
      return hit[1]
    key = canonical_key(arch)
    self._keys[id(arch)] = (weakref.ref(arch, functools.partial(self._forget, id(arch))), key)
    return key

  def _forget(self, i: int, ref: weakref.ref) -> None:
    if self._keys.get(i, (None,))[0] is ref:
      del self._keys[i]


def _refined_key(g: HostGraph) -> str:
  """canonical_key of a HostGraph (colour refinement, see `canonical_key`)."""
  names = labels_lib.label_table(g.kind).names
  signature = [(names[l], int(u), int(st)) for l, u, st in zip(g.labels, g.units, g.strides)]
  parents, children = adjacency_lists(g.adj)
  # Colours are ranks among the round's sorted distinct signatures, so equal signature
  # multisets give equal colourings; the key hashes every round's multiset, i.e. the history.
  rounds, n_classes = [], -1  # refinement stops once a round splits no colour class
  for _ in range(g.n + 1):
    rank = {sig: r for r, sig in enumerate(sorted(set(signature)))}
    colour = [rank[sig] for sig in signature]
    rounds.append(sorted(signature))
    if len(rank) == n_classes:
      break
    n_classes = len(rank)
    signature = [
      (colour[i], tuple(sorted(colour[p] for p in parents[i])), tuple(sorted(colour[c] for c in children[i])))
      for i in range(g.n)
    ]
  return f"{g.kind}:{hashlib.blake2b(repr(rounds).encode(), digest_size=10).hexdigest()}"
