"""Featurizers: what a surrogate reads of a set of points, as a NamedTuple of pure functions.

A featurizer turns points of a space into the inputs of a surrogate: a `Pairwise` value for a GP
(OTMANN distances, Bourgain coordinates of edit distances, encodings, arc parameters) and, for
vector featurizers, plain [n, D] vectors for the ensemble. Whatever does not depend on the
surrogate's hyper-parameters is computed once per point (vectors) or once per pair of points
(distances) and kept in a `FeatureCache` keyed by the space's canonical key, so a point observed,
pending or met again as an optimiser's candidate is never featurized twice.

    cache = f.init(points)                     # rows of the observed points
    cache = f.extend(cache, new_points)        # only keys not cached yet are computed
    train, cross = f.pairs(cache, train_points, candidates)

`pairs` needs every train point in the cache (extend with pending points first); candidates may
be anything: cached rows are gathered, the rest computed against the train points only.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from nas_jax.features.pairwise import ArcPair, OtmannPair, VectorPair, on_device

__all__ = [
  "by_identity",
  "FeatureCache",
  "Featurizer",
  "vector_featurizer",
  "distance_featurizer",
  "otmann_to_pair",
  "vector_to_pair",
  "arc_to_pair",
]


@dataclasses.dataclass(frozen=True)
class FeatureCache:
  """The featurized points, in the order they were added (a value: extend returns a new one).

  Attributes:
    keys: canonical keys of the cached points; index: key -> row.
    items: per-point prepared inputs of the distance (e.g. networks, descriptors), or ().
    data: vector featurizers: a tuple of [n, ...] arrays; distance featurizers: a tuple of
      [..., n, n] distance arrays.
  """

  keys: tuple = ()
  index: dict = dataclasses.field(default_factory=dict)
  items: tuple = ()
  data: tuple = ()

  def __len__(self) -> int:
    return len(self.keys)


class Featurizer(NamedTuple):
  """A featurizer as pure functions (see the module docstring).

  Attributes:
    name: what it computes (recorded in the journal's notes).
    pair_type: the Pairwise class `pairs` returns (surrogates pick a kernel by it).
    dim: the feature width D (vectors, ARD kernels), or the number of structural weights
      n_nu (OTMANN), or None.
    init: `(points) -> FeatureCache`.
    extend: `(cache, points) -> FeatureCache`, computing only new keys.
    pairs: `(cache, train, candidates) -> (Pairwise [n, n], Pairwise [m, n])`; a VectorPair's
      x1 holds the rows' [n, D] vectors, which vector surrogates (the ensemble) read.
    features: vector featurizers: `(cache, points) -> tuple of [n, ...]` arrays (cached rows
      gathered, others computed); to_pair: `(features_a, features_b) -> Pairwise`, traceable;
      None for distance featurizers.
    encode_values: `(values [m, P]) -> features`, a traceable encoding of raw parameter values
      for gradient ascent on them (conditional spaces), or None.
    binary: whether its vectors are 0/1 (what a Hamming kernel counts the mismatches of).
    screen: `pairs` with the distances of uncached candidates replaced by cheap lower bounds
      (cached points keep theirs), what an acquisition optimiser ranks candidates by before it
      scores the best of them exactly (`acquisition.optimizers.ea`); None: no cheap form.
  """

  name: str
  pair_type: type
  dim: int | None
  init: Callable[[Sequence], FeatureCache]
  extend: Callable[[FeatureCache, Sequence], FeatureCache]
  pairs: Callable[[FeatureCache, Sequence, Sequence], tuple]
  features: Callable[[FeatureCache, Sequence], tuple] | None = None
  to_pair: Callable[[tuple, tuple], Any] | None = None
  encode_values: Callable[[Any], tuple] | None = None
  binary: bool = False
  screen: Callable[[FeatureCache, Sequence, Sequence], tuple] | None = None


def _new(key_fn: Callable, cache: FeatureCache, points: Sequence) -> tuple[list, list]:
  """(keys, points) of the points whose key is neither cached nor repeated, in order."""
  keys, fresh = [], []
  seen = set(cache.index)
  for p in points:
    k = key_fn(p)
    if k not in seen:
      seen.add(k)
      keys.append(k)
      fresh.append(p)
  return keys, fresh


def by_identity(fn: Callable, size: int = 2) -> Callable:
  """fn memoised on the identity of its arguments, for its last `size` distinct calls.

  A surrogate's acquisition search asks for the same fitted train points' features once per batch
  of candidates; their keys, gathers and embeddings are the same every time. Only calls whose
  arguments cannot change are remembered (no list, dict or numpy array among them: a list given
  twice may have been edited in between); the memo holds them, so an id is never reused while
  remembered. Results are returned as computed: callers must not edit them.
  """
  memo: dict = {}

  def call(*args):
    frozen = not any(isinstance(a, (list, dict, set, np.ndarray)) for a in args)
    key = tuple(map(id, args))
    hit = memo.get(key) if frozen else None
    if hit is not None:
      return hit[1]
    out = fn(*args)
    if frozen:
      if len(memo) >= size:
        memo.pop(next(iter(memo)), None)
      memo[key] = (args, out)
    return out

  return call


def _rows(cache: FeatureCache, key_fn: Callable, points: Sequence) -> np.ndarray:
  """Cache rows of points that must be cached; ValueError naming the first one that is not."""
  rows = []
  for i, p in enumerate(points):
    k = key_fn(p)
    if k not in cache.index:
      raise ValueError(f"pairs: train point {i} is not in the cache; extend the cache with it first")
    rows.append(cache.index[k])
  return np.asarray(rows, np.int64)


def vector_featurizer(
  name: str,
  key_fn: Callable,
  encode: Callable[[Sequence], tuple],
  to_pair: Callable[[tuple, tuple], Any],
  pair_type: type,
  dim: int | None,
  encode_values: Callable[[Any], tuple] | None = None,
  binary: bool = False,
) -> Featurizer:
  """A featurizer of per-point features.

  Args:
    encode: `(points) -> tuple of [n, ...] arrays` (e.g. (x,) or (u, active)).
    to_pair: `(features_a, features_b) -> Pairwise [n_a, n_b]`, traceable.
    encode_values, binary: see `Featurizer`.
  """

  def extend(cache: FeatureCache, points: Sequence) -> FeatureCache:
    keys, fresh = _new(key_fn, cache, points)
    if not fresh:
      return cache
    feats = tuple(np.asarray(x) for x in encode(fresh))
    data = feats if not cache.data else tuple(np.concatenate([a, b]) for a, b in zip(cache.data, feats))
    index = {**cache.index, **{k: len(cache) + i for i, k in enumerate(keys)}}
    return FeatureCache(cache.keys + tuple(keys), index, (), data)

  def features(cache: FeatureCache, points: Sequence) -> tuple:
    scratch = extend(cache, points)  # the points not cached yet are computed, not kept
    rows = np.asarray([scratch.index[key_fn(p)] for p in points], np.int64)
    return tuple(x[rows] for x in scratch.data)

  @by_identity
  def train_features(cache: FeatureCache, train: Sequence) -> tuple:
    return tuple(x[_rows(cache, key_fn, train)] for x in cache.data)

  def pairs(cache: FeatureCache, train: Sequence, candidates: Sequence):
    ft = train_features(cache, train)
    fc = features(cache, candidates) if len(candidates) else tuple(x[:0] for x in ft)
    return to_pair(ft, ft), to_pair(fc, ft)

  return Featurizer(
    name,
    pair_type,
    dim,
    lambda points: extend(FeatureCache(), points),
    extend,
    pairs,
    features,
    to_pair,
    encode_values,
    binary,
  )


def distance_featurizer(
  name: str,
  key_fn: Callable,
  prepare: Callable[[Sequence], list],
  dist: Callable[[list, list], tuple],
  to_pair: Callable[[tuple, tuple], Any],
  pair_type: type,
  dim: int | None,
  *,
  dist_pairs: Callable[[list, list, np.ndarray, np.ndarray], tuple] | None = None,
  screen_pairs: Callable[[list, list, np.ndarray, np.ndarray], tuple] | None = None,
  memo_size: int = 2048,
) -> Featurizer:
  """A featurizer of pairwise distances (OTMANN, edit distance).

  Args:
    prepare: `(points) -> items`, what `dist` reads of each point (computed once per point).
    dist: `(items_a, items_b) -> tuple of [..., n_a, n_b] distance arrays`.
    to_pair: `(train distances [..., n, n], cross distances [..., m, n]) -> (Pairwise, Pairwise)`.
    dist_pairs: `(items_a, items_b, ia, ib) -> tuple of [..., P]` distances of the pairs
      (a[ia[p]], b[ib[p]]) alone, as `dist` computes them; given, the candidates of `pairs` go
      through a memo of the last `memo_size` candidates (`_candidate_memo`).
    screen_pairs: like dist_pairs, lower bounds of the distances, cheaper to compute; given, the
      featurizer's `screen` reads them (through a memo of their own) for uncached candidates.
  """
  memo = None if dist_pairs is None else _candidate_memo(prepare, dist_pairs, memo_size)

  def extend(cache: FeatureCache, points: Sequence) -> FeatureCache:
    keys, fresh = _new(key_fn, cache, points)
    if not fresh:
      return cache
    items = cache.items + tuple(prepare(fresh))
    n = len(cache)
    rows = dist(list(items[n:]), list(items))  # [..., k, n + k]: the new points against all
    if n == 0:
      data = tuple(np.asarray(r) for r in rows)
    else:
      data = tuple(
        np.concatenate([np.concatenate([old, np.swapaxes(r[..., :n], -1, -2)], -1), r], -2)
        for old, r in zip(cache.data, rows)
      )
    index = {**cache.index, **{k: n + i for i, k in enumerate(keys)}}
    return FeatureCache(cache.keys + tuple(keys), index, items, data)

  @by_identity
  def train_distances(cache: FeatureCache, train: Sequence) -> tuple[np.ndarray, tuple]:
    rows = _rows(cache, key_fn, train)
    return rows, tuple(x[..., rows[:, None], rows[None, :]] for x in cache.data)

  def pairs(cache: FeatureCache, train: Sequence, candidates: Sequence, memo=memo):
    rows, d_train = train_distances(cache, train)
    keys = [key_fn(p) for p in candidates]
    cached = [cache.index.get(k) for k in keys]
    missing = [i for i, r in enumerate(cached) if r is None]
    d_cross = [np.zeros(x.shape[:-2] + (len(candidates), len(rows))) for x in cache.data]
    hit = [i for i, r in enumerate(cached) if r is not None]
    if hit:
      got = np.asarray([cached[i] for i in hit], np.int64)
      for out, x in zip(d_cross, cache.data):
        out[..., hit, :] = x[..., got[:, None], rows[None, :]]
    if missing and memo is not None and len(rows):
      new = [np.zeros(x.shape[:-2] + (len(missing), len(rows))) for x in d_cross]
      memo([keys[i] for i in missing], [candidates[i] for i in missing], cache, rows, new)
    elif missing:
      new = dist(prepare([candidates[i] for i in missing]), [cache.items[r] for r in rows])
    for out, x in zip(d_cross, new if missing else ()):
      out[..., missing, :] = x
    return to_pair(d_train, tuple(d_cross))

  screen = None
  if screen_pairs is not None:
    screen = functools.partial(pairs, memo=_candidate_memo(prepare, screen_pairs, memo_size))
  return Featurizer(name, pair_type, dim, lambda points: extend(FeatureCache(), points), extend, pairs, screen=screen)


def _candidate_memo(prepare: Callable, dist_pairs: Callable, size: int) -> Callable:
  """Distances of the last `size` candidates (least recently used dropped) to the train points
  they were scored against, and their prepared items, by canonical key.

  An acquisition optimiser meets the same candidates proposal after proposal, each time against
  a train set grown by a point or two: under ASHA on NAS-Bench-201, 82% of NASBOT's EA candidates
  had been scored in an earlier call. A candidate met again is solved only against the train
  points new to it, and all the pairs of one call go to `dist_pairs` together. Distances are
  functions of the two points alone, so the memo returns what `dist` would.

  Returns:
    `memo(keys, candidates, cache, rows, out)`, which fills out: [..., m, n] arrays with the
    distances of the m candidates to the train points at cache rows `rows`.
  """
  ids: dict = {}  # train key -> a small int
  memo: collections.OrderedDict = collections.OrderedDict()  # key -> (item, sorted ids [k], distances [..., k])

  def fill(keys, candidates, cache, rows, out) -> None:
    tid = np.fromiter((ids.setdefault(cache.keys[r], len(ids)) for r in rows), np.int64, len(rows))
    entries = [memo.pop(k, None) for k in keys]  # stored again below, as the most recent
    todo = [c for c, e in zip(candidates, entries) if e is None]
    fresh = iter(prepare(todo) if todo else ())
    items = [next(fresh) if e is None else e[0] for e in entries]
    found = np.zeros((len(keys), len(tid)), bool)
    pos = np.zeros((len(keys), len(tid)), np.int64)
    for c, e in enumerate(entries):
      if e is not None and len(e[1]):
        pos[c] = np.minimum(np.searchsorted(e[1], tid), len(e[1]) - 1)
        found[c] = e[1][pos[c]] == tid
        for o, v in zip(out, e[2]):
          o[..., c, found[c]] = v[..., pos[c, found[c]]]
    ia, ib = np.nonzero(~found)
    if len(ia):
      for o, v in zip(out, dist_pairs(items, [cache.items[r] for r in rows], ia, ib)):
        o[..., ia, ib] = v
    for c, (k, e) in enumerate(zip(keys, entries)):
      new = ~found[c]
      have = (e[1], *e[2]) if e is not None else (np.zeros(0, np.int64), *(o[..., c, :0] for o in out))
      got = (
        np.concatenate([have[0], tid[new]]),
        *(np.concatenate([h, o[..., c, new]], -1) for h, o in zip(have[1:], out)),
      )
      order = np.argsort(got[0], kind="stable")
      memo[k] = (items[c], got[0][order], tuple(x[..., order] for x in got[1:]))
    while len(memo) > size:
      memo.popitem(last=False)

  return fill


def otmann_to_pair(d_train: tuple, d_cross: tuple) -> tuple[OtmannPair, OtmannPair]:
  """(d, d_bar) distances -> OtmannPairs."""
  return OtmannPair(*d_train), OtmannPair(*d_cross)


def vector_to_pair(fa: tuple, fb: tuple) -> VectorPair:
  return VectorPair(on_device(fa[0]), on_device(fb[0]))


def arc_to_pair(fa: tuple, fb: tuple) -> ArcPair:
  return ArcPair(on_device(fa[0]), on_device(fa[1]), on_device(fb[0]), on_device(fb[1]))
