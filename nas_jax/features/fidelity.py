"""A featurizer of (network, fidelity) points from a featurizer of networks: `with_fidelity`.

The points are `spaces.fidelity_space.FidelityPoint`s (read here by their `.point` and
`.fidelity` only: features/ sees no spaces). The base featurizer's cache holds the networks, so a
network observed at two fidelities is one cache row, computed once; `pairs` adds the fidelity:

  vectors (VectorPair)    a one-hot of the fidelity's index (its rung) appended to every vector,
                          [n, D] -> [n, D + R]: binary, so Hamming, ARD exp-squared and Matern
                          kernels and the ensemble all read it.
  distances (OtmannPair,  lam |i - j| added to every distance matrix (i, j the two points' rungs;
  DistancePair)           DistancePair's squared distances get (lam |i - j|)^2), where lam is the
                          mean distance between distinct train networks (per nu_str slice and per
                          d / d_bar for OTMANN): one rung apart is one typical network apart. An
                          exp(-beta d) kernel becomes the network kernel times exp(-beta lam |i-j|),
                          a kernel over fidelity; with p != 1 (OTMANN's d_bar^2) it is no longer an
                          exact product, and the GP's projection keeps it positive semi-definite.

lam is computed from the train points of each `pairs` call, so the train and cross pairs of one
fit share it. Featurizers of other pairs (ArcPair) are refused; `encode_values` is dropped (a
gradient optimiser builds raw values, which carry no fidelity).
"""

from __future__ import annotations

from typing import Sequence

import jax.numpy as jnp
import numpy as np

from nas_jax.features.featurizer import FeatureCache, Featurizer
from nas_jax.features.pairwise import DistancePair, OtmannPair, VectorPair

__all__ = ["with_fidelity", "rung_lam"]

_WRAPPABLE = (VectorPair, OtmannPair, DistancePair)


def rung_lam(d: np.ndarray) -> np.ndarray:
  """[...] the mean of the positive entries of each [n, n] slice of train distances d [..., n, n]
  (distinct networks; a network at two fidelities is at distance 0 from itself); 1 when none."""
  d = np.asarray(d, np.float64)
  positive = d > 0
  count = positive.sum(axis=(-2, -1))
  total = np.where(positive, d, 0.0).sum(axis=(-2, -1))
  return np.where(count > 0, total / np.maximum(count, 1), 1.0)


def with_fidelity(featurizer: Featurizer, fidelities: Sequence[float]) -> Featurizer:
  """`featurizer` (of base points) over FidelityPoints at `fidelities` (see the module docstring).

  Args:
    featurizer: a featurizer of VectorPairs, OtmannPairs or DistancePairs, built on the base space.
    fidelities: the fidelities, increasing; a point's rung is its fidelity's index.

  Returns:
    A Featurizer of the same name and pair type; dim grows by len(fidelities) for vectors.
  """
  if featurizer.pair_type not in _WRAPPABLE:
    raise ValueError(
      f"with_fidelity: featurizer {featurizer.name!r} gives {featurizer.pair_type.__name__}; fidelity is"
      f" added to {', '.join(t.__name__ for t in _WRAPPABLE)} only"
    )
  fids = tuple(float(f) for f in fidelities)
  if not fids or any(a >= b for a, b in zip(fids, fids[1:])):
    raise ValueError(f"with_fidelity: fidelities={fidelities!r}; expected increasing numbers")
  n_rungs = len(fids)

  def rungs(points: Sequence) -> np.ndarray:
    """[n] int, the points' rung indices."""
    out = []
    for p in points:
      f = float(p.fidelity)
      if f not in fids:
        raise ValueError(f"with_fidelity: a point at fidelity {f:g}; allowed: {', '.join(f'{x:g}' for x in fids)}")
      out.append(fids.index(f))
    return np.asarray(out, np.int64)

  def base(points: Sequence) -> list:
    return [p.point for p in points]

  def one_hot(points: Sequence, dtype) -> np.ndarray:
    return np.eye(n_rungs, dtype=dtype)[rungs(points)] if len(points) else np.zeros((0, n_rungs), dtype)

  def append(x, points: Sequence):
    """[n, D] vectors with the points' one-hots appended: [n, D + R]."""
    return jnp.concatenate([jnp.asarray(x), jnp.asarray(one_hot(points, np.dtype(x.dtype)))], axis=-1)

  def init(points: Sequence) -> FeatureCache:
    return featurizer.init(base(points))

  def extend(cache: FeatureCache, points: Sequence) -> FeatureCache:
    return featurizer.extend(cache, base(points))

  def pairs(cache: FeatureCache, train: Sequence, candidates: Sequence):
    pt, pc = featurizer.pairs(cache, base(train), base(candidates))
    if featurizer.pair_type is VectorPair:
      ft = append(pt.x1, train)
      return VectorPair(ft, ft), VectorPair(append(pc.x1, candidates), ft)
    rt, rc = rungs(train), rungs(candidates)
    gap_t = np.abs(rt[:, None] - rt[None, :]).astype(np.float64)  # [n, n] rungs apart
    gap_c = np.abs(rc[:, None] - rt[None, :]).astype(np.float64)  # [m, n]
    if featurizer.pair_type is OtmannPair:

      def add(x_t, x_c):
        lam = rung_lam(x_t)[..., None, None]  # [n_nu, 1, 1]: one scale per nu_str slice
        return jnp.asarray(x_t + lam * gap_t), jnp.asarray(np.asarray(x_c) + lam * gap_c)

      (d_t, d_c), (b_t, b_c) = add(np.asarray(pt.d), pc.d), add(np.asarray(pt.d_bar), pc.d_bar)
      return OtmannPair(d_t, b_t), OtmannPair(d_c, b_c)
    sq_t = np.asarray(pt.sq_dist, np.float64)
    lam = rung_lam(np.sqrt(np.maximum(sq_t, 0.0)))
    return (
      DistancePair(jnp.asarray(sq_t + (lam * gap_t) ** 2)),
      DistancePair(jnp.asarray(np.asarray(pc.sq_dist) + (lam * gap_c) ** 2)),
    )

  features = to_pair = None
  if featurizer.pair_type is VectorPair and featurizer.features is not None:

    def features(cache: FeatureCache, points: Sequence) -> tuple:
      x, *rest = featurizer.features(cache, base(points))
      return (np.concatenate([np.asarray(x), one_hot(points, np.asarray(x).dtype)], axis=-1), *rest)

    to_pair = featurizer.to_pair

  return featurizer._replace(
    dim=featurizer.dim + n_rungs
    if featurizer.pair_type is VectorPair and featurizer.dim is not None
    else featurizer.dim,
    init=init,
    extend=extend,
    pairs=pairs,
    features=features,
    to_pair=to_pair,
    encode_values=None,
    screen=None,  # the rung gaps are added to exact distances only: candidates are scored exactly
  )
