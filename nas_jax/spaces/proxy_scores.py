"""A proxy as a value for search: a cheap score of a space's points without training (a zero-cost
proxy such as synflow, or a table of precomputed scores), the meter that scores each point once
and counts what that cost, and `prescreened`, a space whose moves are chosen by the proxy.

Search parts take the meter, never a proxy's name: where the scores come from is decided in
`nas_jax.wiring.proxy_sources`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import jax
import numpy as np

from nas_jax.spaces.space import Space

__all__ = ["ProxyScores", "ProxyMeter", "proxy_order", "prescreened"]


@dataclasses.dataclass(frozen=True)
class ProxyScores:
  """A proxy of a space's points.

  Attributes:
    name: what it is (e.g. "synflow"), recorded in the parts' names.
    score: `(points) -> [n]` float64, higher is better; non-finite (nan, inf) where the proxy has
      no value.
    seconds_per_score: what scoring one point costs (e.g. 1 / the scorer's measured cells per
      second), charged to the search for every distinct point scored.
  """

  name: str
  score: Callable[[Sequence], np.ndarray]
  seconds_per_score: float = 0.0

  def __post_init__(self):
    s = self.seconds_per_score
    if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 <= s < math.inf:
      raise ValueError(f"ProxyScores: seconds_per_score={s!r}; expected a finite number of seconds >= 0")


class ProxyMeter:
  """Scores points by a proxy once per canonical key, and counts the distinct points scored.

  One search owns one meter (its strategy's builder makes it): the memo is what a search that
  caches its proxy's scores would pay for, and `take` hands the cost of the points scored since
  the last call to the strategy, which notes it on its proposals.
  """

  def __init__(self, proxy: ProxyScores, key_fn: Callable[[Any], Any]):
    self.proxy = proxy
    self._key = key_fn
    self._memo: dict = {}
    self._charged = 0

  @property
  def name(self) -> str:
    return self.proxy.name

  def score(self, points: Sequence) -> np.ndarray:
    """[n] float64 scores of `points`, higher is better; a non-finite score (nan or +-inf: no
    value) becomes -inf, the worst."""
    keys = [self._key(p) for p in points]
    todo: dict = {}
    for k, p in zip(keys, points):
      if k not in self._memo and k not in todo:
        todo[k] = p
    if todo:
      got = np.asarray(self.proxy.score(list(todo.values())), np.float64)
      if got.shape != (len(todo),):
        raise ValueError(
          f"proxy {self.name!r}: returned shape {got.shape} for {len(todo)} points; expected [{len(todo)}]"
        )
      self._memo.update(zip(todo, np.where(np.isfinite(got), got, -np.inf)))
    return np.asarray([self._memo[k] for k in keys], np.float64)

  def take(self) -> tuple[int, float]:
    """(points, seconds): the distinct points scored since the last call, and their cost."""
    n = len(self._memo) - self._charged
    self._charged = len(self._memo)
    return n, n * float(self.proxy.seconds_per_score)


def proxy_order(meter: ProxyMeter, points: Sequence) -> np.ndarray:
  """Indices of `points` by decreasing proxy score (stable: ties keep their order)."""
  return np.argsort(-meter.score(points), kind="stable") if len(points) else np.zeros(0, np.int64)


def prescreened(space: Space, meter: ProxyMeter, *, one_in: int) -> Space:
  """`space` whose moves the proxy chooses (Abdelfattah et al. 2021, Sec. 5, move proposal): `mutate` draws
  `one_in` mutants and returns the one the proxy ranks best, and `neighbours` keeps the best
  ceil(1/one_in) of the neighbourhood, best first. Regularised evolution's children and local
  search's steps come from these, so either strategy runs on it unchanged."""
  if isinstance(one_in, bool) or not isinstance(one_in, int) or one_in < 2:
    raise ValueError(f"prescreened: one_in={one_in!r}; expected an integer >= 2 (1 would keep every move)")

  def mutate(point, key):
    drawn = [space.mutate(point, jax.random.fold_in(key, i)) for i in range(one_in)]
    changed = [child for child, ok in drawn if ok]
    if not changed:
      return point, False
    return changed[int(proxy_order(meter, changed)[0])], True

  def neighbours(point):
    nb = list(space.neighbours(point))
    keep = math.ceil(len(nb) / one_in)
    return [nb[i] for i in proxy_order(meter, nb)[:keep]]

  return space._replace(mutate=mutate, neighbours=neighbours)
