"""The OTMANN distances of the pairs of points an OTMANN featurizer has solved, and the features
of their networks, kept by that featurizer so that no pair is solved twice while it is remembered.

A search meets the same pairs again and again: a candidate of the acquisition search that is
later evaluated is compared with the same train points in `extend`; a candidate met again after
the featurizer's memo of candidates dropped it is compared with train points it met before. A
pair's distances are a function of the two points alone: each point's own network (never an
isomorphic twin's, whose layer order differs and whose LP agrees only to ~1e-13), the network of
the smaller key as the source, 0 for one network. So a remembered value is the value a new solve
gives, to the last bit, and a resumed search computes what the uninterrupted one did.

Points of one network (the same network key and byte-identical features, e.g. NAS-Bench-201
cells that differ only on edges no path uses: ~2.8 cells per network) can share one id
(`by_network`): their LPs are the same problem, so a pair of networks is solved once, whichever
points it comes from, and the value is the one each point's own solve gives.
"""

from __future__ import annotations

import hashlib

import numpy as np

from nas_jax.features.otmann_costs import OtmannFeatures

__all__ = ["OtmannStore"]

_SHIFT = 32  # a pair's code: the smaller network id in the high bits, the larger in the low ones


class OtmannStore:
  """Solved pairs by point ids, and each point's network key and features, for one featurizer's
  lifetime.

  Points get ids in the order they are met; a pair of ids (i <= j) is remembered as the code
  i << 32 | j with its (d, d_bar) [2, n_nu]. When a call would hold more than `capacity` pairs,
  everything is forgotten first (it would be solved again, to the same values).

  Args:
    n_nu: structural weights per pair.
    capacity: the most pairs remembered (each 16 n_nu bytes of values, plus its index entry).
      The default holds the ~1.1 M pairs of a 150-query NASBOT search on NAS-Bench-201, so
      that such a search never forgets, and re-solves, the pairs it needs again.
    by_network: ids name networks, not points: points whose network keys are equal and whose
      features (OtmannFeatures) are byte-identical share one id (the module docstring).
  """

  def __init__(self, n_nu: int, capacity: int = 1 << 21, by_network: bool = False):
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
      raise ValueError(f"OtmannStore: capacity={capacity!r}; expected a positive integer")
    self.n_nu, self.capacity, self.by_network = n_nu, capacity, by_network
    self.clear()

  def clear(self) -> None:
    self._ids: dict = {}  # point key -> id
    self._networks: dict = {}  # by_network: (network key, digest of the features) -> id
    # id -> the point's network key, in an object array grown by doubling so that a call's pairs
    # compare their keys in one numpy operation; its first len(self._features) entries are set
    self._keys = np.empty(1024, object)
    self._features: list[OtmannFeatures] = []  # id -> its network's feature row
    self._rows: dict[int, int] = {}  # pair code -> row of _values
    self._values = np.empty((0, 2, self.n_nu))

  def __len__(self) -> int:
    return len(self._rows)

  def make_room(self, n_pairs: int) -> None:
    """Forgets everything if n_pairs more would overflow `capacity` (call before taking ids)."""
    if len(self._rows) + n_pairs > self.capacity or len(self._features) + 2 * n_pairs >= 1 << _SHIFT:
      self.clear()

  def item(self, point_key) -> tuple[str, OtmannFeatures] | None:
    """The remembered (network key, features) of the point `point_key`, or None."""
    i = self._ids.get(point_key)
    return None if i is None else (self._keys[i], self._features[i])

  def point_ids(self, point_keys: list, keys: list[str], features: list[OtmannFeatures]) -> np.ndarray:
    """[k] int64 ids of the points, remembering the network key and features of those met first."""
    out = np.empty(len(keys), np.int64)
    for n, (p, k, f) in enumerate(zip(point_keys, keys, features)):
      i = self._ids.get(p)
      if i is None:
        i = self._ids[p] = self._new_id(k, f)
      out[n] = i
    return out

  def _new_id(self, key: str, features: OtmannFeatures) -> int:
    """The id of a point met first: its network's when `by_network` has met that network, else a new one."""
    i = len(self._features)
    if self.by_network:
      i = self._networks.setdefault((key, _digest(features)), i)
      if i < len(self._features):
        return i
    if i == len(self._keys):
      self._keys = np.concatenate([self._keys, np.empty(len(self._keys), object)])
    self._keys[i] = key
    self._features.append(features)
    return i

  def keys(self, ids: np.ndarray) -> np.ndarray:
    """[P] object array of the network keys (str) of point ids [P]."""
    return self._keys[ids]

  def network_features(self, i: int) -> OtmannFeatures:
    return self._features[i]

  @staticmethod
  def codes(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """[P] int64 codes of the unordered pairs (i[p], j[p])."""
    return np.minimum(i, j) << _SHIFT | np.maximum(i, j)

  @staticmethod
  def split(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ids (smaller, larger) of each code."""
    return codes >> _SHIFT, codes & ((1 << _SHIFT) - 1)

  def rows(self, codes: np.ndarray) -> np.ndarray:
    """[P] int64 rows of the remembered codes, -1 for the others."""
    return np.fromiter((self._rows.get(c, -1) for c in codes.tolist()), np.int64, len(codes))

  def values(self, rows: np.ndarray) -> np.ndarray:
    """[P, 2, n_nu] (d, d_bar) of remembered rows."""
    return self._values[rows]

  def put(self, codes: np.ndarray, values: np.ndarray) -> None:
    """Remembers (d, d_bar) [P, 2, n_nu] of new codes [P]."""
    start = len(self._rows)
    if start + len(codes) > len(self._values):
      grown = np.empty((max(2 * len(self._values), start + len(codes), 1024), 2, self.n_nu))
      grown[:start] = self._values[:start]
      self._values = grown
    self._values[start : start + len(codes)] = values
    self._rows.update(zip(codes.tolist(), range(start, start + len(codes))))


def _digest(f: OtmannFeatures) -> bytes:
  """A digest of a network's features: their arrays' bytes, dtypes and shapes."""
  h = hashlib.blake2b(digest_size=20)
  for x in f:
    x = np.ascontiguousarray(x)
    h.update(f"{x.dtype.str}{x.shape}".encode())
    h.update(x.tobytes())
  return h.digest()
