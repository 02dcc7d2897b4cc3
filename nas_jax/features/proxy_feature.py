"""A proxy's score of the points as what a surrogate reads (our use of the proxies of Abdelfattah et
al. 2021): `with_proxy_feature` appends it to a vector featurizer's vectors (the ensemble's or a
vector GP's extra input), and `with_proxy_values` carries it beside any featurizer's pairs
(`ProxyPair`) for a GP's prior mean (`surrogates.proxy_prior`).

The proxy enters as its normalised rank among the train points (`rank_quantiles`), in [0, 1]:
scores of any scale or sign (synflow spans orders of magnitude) give the same inputs, and the
train and candidate values of one fit share one scale. The proxy is any value with
`score(points) -> [n]` (`spaces.proxy_scores.ProxyMeter`, which scores each point once).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import numpy as np

from nas_jax.features.featurizer import Featurizer
from nas_jax.features.pairwise import VectorPair, on_device, typed_dataclass

__all__ = ["rank_quantiles", "with_proxy_feature", "ProxyPair", "with_proxy_values"]


def rank_quantiles(train: np.ndarray, scores: np.ndarray) -> np.ndarray:
  """[m] float64 in [0, 1]: the mid-rank of each of `scores` [m] among `train` [n] (the share
  of train scores below it, plus half the share equal to it); 0.5 for every point when n = 0."""
  train, scores = np.sort(np.asarray(train, np.float64)), np.asarray(scores, np.float64)
  if not len(train):
    return np.full(len(scores), 0.5)
  below = np.searchsorted(train, scores, side="left")
  upto = np.searchsorted(train, scores, side="right")
  return (below + upto) / (2.0 * len(train))


def with_proxy_feature(part: Callable[[Any], Featurizer], proxy: Any) -> Callable[[Any], Featurizer]:
  """The featurizer part `part` (a vector featurizer, e.g. `encoding("path")`) with the proxy's
  rank quantile appended to every vector: [n, D] -> [n, D + 1], named "<name>+<proxy>"."""

  def build(space: Any) -> Featurizer:
    base = part(space)
    if base.pair_type is not VectorPair:
      raise ValueError(
        f"proxy feature: featurizer {base.name!r} gives {base.pair_type.__name__}, not vectors; append the"
        " proxy to an encoding (path, trunc_path, ...) or give a GP the proxy as its prior mean"
      )

    def pairs(cache, train: Sequence, candidates: Sequence):
      pt, pc = base.pairs(cache, train, candidates)
      zt = np.asarray(proxy.score(list(train)), np.float64)
      zc = np.asarray(proxy.score(list(candidates)), np.float64)
      append = lambda x, q: on_device(np.concatenate([np.asarray(x), q[:, None].astype(np.asarray(x).dtype)], 1))
      xt = append(pt.x1, rank_quantiles(zt, zt))
      return VectorPair(xt, xt), VectorPair(append(pc.x1, rank_quantiles(zt, zc)), xt)

    return base._replace(
      name=f"{base.name}+{proxy.name}",
      dim=base.dim + 1,
      pairs=pairs,
      features=None,
      to_pair=None,
      encode_values=None,
      binary=False,
    )

  return build


@typed_dataclass
class ProxyPair:
  """A featurizer's Pairwise [n1, n2] with the proxy's rank quantile of its n1 row points:
  pair: the base Pairwise; z: [n1] float (0 at padding)."""

  pair: Any
  z: jax.Array

  @property
  def shape(self) -> tuple[int, int]:
    return self.pair.shape

  def pad(self, n1: int, n2: int) -> "ProxyPair":
    z = np.asarray(self.z)
    return ProxyPair(self.pair.pad(n1, n2), on_device(np.concatenate([z, np.zeros(n1 - len(z), z.dtype)])))


def with_proxy_values(featurizer: Featurizer, proxy: Any) -> Featurizer:
  """`featurizer` whose pairs are `ProxyPair`s: its own pairs with the rank quantile of each
  row's proxy score among the train points'. Its pair_type stays the base's, so a surrogate
  picks the kernel of the base pairs (and must unwrap them: `surrogates.proxy_prior`)."""

  def with_values(base_pairs: Callable) -> Callable:
    def pairs(cache, train: Sequence, candidates: Sequence):
      pt, pc = base_pairs(cache, train, candidates)
      zt = np.asarray(proxy.score(list(train)), np.float64)
      zc = np.asarray(proxy.score(list(candidates)), np.float64)
      return ProxyPair(pt, on_device(rank_quantiles(zt, zt))), ProxyPair(pc, on_device(rank_quantiles(zt, zc)))

    return pairs

  screen = None if featurizer.screen is None else with_values(featurizer.screen)
  return featurizer._replace(
    pairs=with_values(featurizer.pairs), features=None, to_pair=None, encode_values=None, screen=screen
  )
