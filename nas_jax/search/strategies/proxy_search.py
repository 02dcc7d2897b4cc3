"""`with_proxy`: any strategy searching with a proxy (Abdelfattah et al. 2021, Sec. 5): its zero-cost warm-up, and
the proxy's cost noted on its proposals.

Warm-up: N random points are scored by the proxy when the search starts, and the k it ranks best
are proposed first, best first; the wrapped strategy then goes on from their observations (give
it an initial phase of k points: BANANAS' and bo's `n_init`, regularised evolution's `n_init`,
local search's `n_restart`, so that its start is the warm-up). The N points come from the search
key alone, so a resumed search proposes the same ones.

Cost: the distinct points the proxy scored (warm-up, prescreened moves, features) since the last
proposal are noted on the next proposed point, as `proxy_scored` and `proxy_s` (their seconds,
`ProxyScores.seconds_per_score` each); the sum over a journal is what the proxy cost the search.
A resumed search scores its warm-up again, and charges it again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax

from nas_jax.acquisition import mutation
from nas_jax.acquisition.acq_optimiser import check_counts
from nas_jax.spaces.proxy_scores import ProxyMeter, proxy_order
from nas_jax.search.strategy import Strategy

__all__ = ["ProxyState", "warmup_points", "with_proxy"]

_WARMUP_STREAM = 0x3FFF_FFE1  # folds the search key for the warm-up's N points, apart from step keys


@dataclasses.dataclass(frozen=True)
class ProxyState:
  """inner: the wrapped strategy's state; warmup: the warm-up points, best first; seen:
  canonical keys observed; notes: canonical key -> notes of proposed warm-up points and charges."""

  inner: Any
  warmup: tuple = ()
  seen: frozenset = frozenset()
  notes: dict = dataclasses.field(default_factory=dict)


def warmup_points(space: Any, meter: ProxyMeter, key: jax.Array, n: int, k: int) -> list:
  """The k of n distinct random points (drawn with `key`) that the proxy ranks best, best first."""
  drawn = mutation.random_candidates(space, key, frozenset(), n=n, max_draws=20 * n)
  return [drawn[i] for i in proxy_order(meter, drawn)[:k]]


def with_proxy(strategy: Strategy, space: Any, meter: ProxyMeter, *, n: int = 0, k: int = 0) -> Strategy:
  """`strategy` with a warm-up of the best k of n proxy-scored random points (none when k = 0)
  and the proxy's cost noted on its proposals (the module docstring)."""
  check_counts("with_proxy: ", {"n": (n, k), "k": (k, 0)})

  def init(key):
    warm = warmup_points(space, meter, jax.random.fold_in(key, _WARMUP_STREAM), n, k) if k else []
    return ProxyState(strategy.init(key), tuple(warm))

  def propose(state, n_points, pending):
    taken = set(state.seen) | {space.canonical_key(q) for q in pending}
    out = [p for p in state.warmup if space.canonical_key(p) not in taken][:n_points]
    notes = dict(state.notes)
    rank = {space.canonical_key(p): i for i, p in enumerate(state.warmup)}
    notes.update(
      {space.canonical_key(p): {"origin": "zc_warmup", "proxy_rank": rank[space.canonical_key(p)]} for p in out}
    )
    inner = state.inner
    if len(out) < n_points:
      inner, more = strategy.propose(inner, n_points - len(out), list(pending) + out)
      out += more
    scored, seconds = meter.take()
    if out and scored:
      key = space.canonical_key(out[0])
      notes[key] = {**notes.get(key, {}), "proxy_scored": scored, "proxy_s": seconds}
    return dataclasses.replace(state, inner=inner, notes=notes), out

  def update(state, observations):
    if not observations:
      return state
    seen = state.seen | {space.canonical_key(space.from_json(o.arch_json)) for o in observations}
    notes = {k: v for k, v in state.notes.items() if k not in seen}
    return dataclasses.replace(state, inner=strategy.update(state.inner, observations), seen=seen, notes=notes)

  def notes(state, point):
    own = state.notes.get(space.canonical_key(point), {})
    return {**strategy.notes(state.inner, point), **own}

  predict = None if strategy.predict is None else (lambda state, points: strategy.predict(state.inner, points))
  restart = None
  if strategy.restart is not None:
    restart = lambda state: dataclasses.replace(state, inner=strategy.restart(state.inner), seen=frozenset(), notes={})
  return Strategy(init, propose, update, notes, predict, restart)
