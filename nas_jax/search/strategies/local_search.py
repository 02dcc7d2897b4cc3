"""First-improvement local search with random restarts (the BANANAS authors' code,
github.com/naszilla/naszilla): from the best of 10 random points, query neighbours in random order
and move to the first that improves.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from nas_jax.acquisition import mutation, pareto
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy

__all__ = ["LocalSearchState", "local_search"]


@dataclasses.dataclass(frozen=True)
class LocalSearchState:
  """key: the search key; history: every observation; current: history index of the current
  point (None while a restart batch runs); start: history length when the restart began;
  queue: the current point's neighbours, in their random order (queried ones are skipped when
  proposing). Every field follows from the observations alone, so a replayed journal gives the
  state, and the proposals, of the uninterrupted run."""

  key: jax.Array
  history: common.History
  current: int | None = None
  start: int = 0
  queue: tuple = ()


def local_search(space: Any, goal: str = "max", *, n_restart: int = 10, objectives: tuple = ()) -> Strategy:
  """Local search over `space.neighbours` (naszilla's; on NB201 the 24 single-edge changes).

  A restart proposes n_restart random points; once n_restart observations have arrived the best
  becomes current. Between restarts only neighbours of the current point are proposed, and the
  first observation that beats the current point becomes current. When every neighbour has been
  observed without improvement, the search restarts. While neighbours are in flight and none is
  left to propose, extra workers get random points.

  With other `objectives` ((name, goal) pairs, `Task.objectives`) it is Pareto local search: a
  restart starts from the batch's first point in NSGA-II order (`common.fitness` of the batch),
  and a neighbour becomes current when it dominates the current point on every objective.
  """
  if goal not in GOALS:
    raise ValueError(f"local_search: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if isinstance(n_restart, bool) or not isinstance(n_restart, int) or n_restart < 1:
    raise ValueError(f"local_search: n_restart={n_restart!r}; expected an int >= 1")
  objectives = common.check_objectives("local_search", objectives)

  def neighbours(key, point):
    nb = space.neighbours(point)
    order = common.host_rng(key).permutation(len(nb))
    return tuple(nb[i] for i in order)

  def init(key):
    return LocalSearchState(key=key, history=common.empty_history())

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(q) for q in pending}
    key = common.step_key(state.key, state.history, pending)
    out = common.fresh(space, state.queue, exclude)[:n] if state.current is not None else []
    in_restart = len(state.history) + len(pending) - state.start
    if state.current is None and in_restart < n_restart:
      want = min(n_restart - in_restart, n)
    else:
      want = n - len(out)  # workers idle while a step is in flight
    out += mutation.random_candidates(space, jax.random.fold_in(key, 1), exclude, n=want) if want else []
    return state, out

  def update(state, observations):
    # One observation at a time, so that any split of the journal into updates gives one state.
    history = common.add_observations(state.history, space, goal, observations)
    cur, start, queue = state.current, state.start, state.queue
    seen = set(state.history.keys)
    left = {space.canonical_key(q) for q in queue} - seen  # neighbours not observed yet

    def move_to(i):
      nb = neighbours(jax.random.fold_in(state.key, i + 1), history.points[i])
      return i, nb, {space.canonical_key(q) for q in nb} - seen

    scores = common.objective_scores(history, objectives)
    for i in range(len(state.history), len(history)):
      seen.add(space.canonical_key(history.points[i]))
      left.discard(space.canonical_key(history.points[i]))
      if cur is None and i + 1 - start >= n_restart:
        batch = np.arange(start, i + 1)
        rank = common.fitness(scores[batch])  # of the batch alone: any split of the journal agrees
        cur, queue, left = move_to(int(batch[np.argmax(np.where(history.ok[batch], rank, -np.inf))]))
      elif cur is not None and history.ok[i] and pareto.dominates(scores[i], scores[cur]):
        cur, queue, left = move_to(i)
      if cur is not None and not left:  # every neighbour observed, none better: restart
        cur, start, queue = None, i + 1, ()
    return dataclasses.replace(state, history=history, current=cur, start=start, queue=queue)

  return Strategy(init=init, propose=propose, update=update)
