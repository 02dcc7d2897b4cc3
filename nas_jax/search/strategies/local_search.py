"""First-improvement local search with random restarts (spec bananas.md 9): from the best of 10
random points, query neighbours in random order and move to the first that improves.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from nas_jax.acquisition import mutation
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy

__all__ = ["LocalSearchState", "local_search", "ls_factory"]


@dataclasses.dataclass(frozen=True)
class LocalSearchState:
  """key: the search key; history: every observation; current: history index of the current
  point (None while a restart batch runs); start: history length when the restart began;
  queue: the current point's unqueried neighbours, in their random order."""

  key: jax.Array
  history: common.History
  current: int | None = None
  start: int = 0
  queue: tuple = ()


def local_search(space: Any, goal: str = "max", *, n_restart: int = 10) -> Strategy:
  """Local search over `space.neighbours` (spec 9; on NB201 the 24 single-edge changes).

  A restart proposes n_restart random points; once all are observed the best becomes current.
  Between restarts only neighbours of the current point are proposed; if every neighbour is
  queried without improvement (and nothing is in flight), the search restarts. While a
  sequential step waits on pending points, extra workers get random points.
  """
  if goal not in GOALS:
    raise ValueError(f"local_search: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if isinstance(n_restart, bool) or not isinstance(n_restart, int) or n_restart < 1:
    raise ValueError(f"local_search: n_restart={n_restart!r}; expected an int >= 1")

  def neighbours(key, point):
    nb = space.neighbours(point)
    order = common.host_rng(key).permutation(len(nb))
    return tuple(nb[i] for i in order)

  def init(key):
    return LocalSearchState(key=key, history=common.empty_history())

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(q) for q in pending}
    key = common.step_key(state.key, state.history, pending)
    h = state.history
    if state.current is None and len(h) - state.start >= n_restart:
      batch = np.arange(state.start, len(h))
      scores = np.where(h.ok[batch], h.scores[batch], -np.inf)
      best = int(batch[np.argmax(scores)])
      state = dataclasses.replace(state, current=best, queue=neighbours(key, h.points[best]))
    out = []
    if state.current is not None:
      queue = common.fresh(space, state.queue, set(exclude))
      out, rest = queue[:n], queue[n:]
      exclude |= {space.canonical_key(q) for q in out}
      state = dataclasses.replace(state, queue=tuple(rest))
      if not out and not pending:  # a local optimum: restart
        state = dataclasses.replace(state, current=None, start=len(h))
    if len(out) < n:
      if state.current is None and len(h) + len(pending) - state.start < n_restart:
        want = n_restart - (len(h) + len(pending) - state.start)
      else:
        want = n - len(out)  # workers idle while a step is in flight
      out += mutation.random_candidates(space, jax.random.fold_in(key, 1), exclude, n=min(want, n - len(out)))
    return state, out

  def update(state, observations):
    history = common.add_observations(state.history, space, goal, observations)
    cur = state.current
    if cur is not None:
      for i in range(len(state.history), len(history)):
        if history.ok[i] and history.scores[i] > history.scores[cur]:
          cur = i
          break
    if cur != state.current:
      key = jax.random.fold_in(state.key, len(history))
      return dataclasses.replace(
          state, history=history, current=cur, queue=neighbours(key, history.points[cur])
      )
    return dataclasses.replace(state, history=history)

  return Strategy(init=init, propose=propose, update=update)


def ls_factory(config, space, task) -> Strategy:
  """`config.strategy = "local_search"`; `config.strategy_config` may set n_restart."""
  sc = config.get("strategy_config", None) if hasattr(config, "get") else None
  kwargs = sc.to_dict() if hasattr(sc, "to_dict") else dict(sc or {})
  return local_search(space, task.goal, **kwargs)
