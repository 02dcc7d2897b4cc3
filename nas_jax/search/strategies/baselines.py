"""Baseline strategies: random search, and the paper's EA baseline (NASBOT Sec. 5; App. C.1): the
App. B evolutionary loop run on the objective itself, from the initial pool, N_mut = 10.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import numpy as np

from nas_jax.acquisition.evolution import selection_probs
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy

__all__ = [
  "RandomState",
  "random_search",
  "EAState",
  "evolution",
]

_ROUNDS = 8  # sampling rounds of 4n draws before a propose call gives up on a full batch
_MUTATION_TRIES = 20  # mutations of one parent tried before that candidate is dropped


@dataclasses.dataclass(frozen=True)
class RandomState:
  """key: the search key; history: everything observed."""

  key: jax.Array
  history: common.History


def _sample_fresh(space: Any, key: jax.Array, n: int, exclude: set) -> list:
  """Up to n sampled points with new canonical keys (fewer only if the space seems exhausted)."""
  out = []
  for r in range(_ROUNDS):
    if len(out) >= n:
      break
    out += common.fresh(space, space.sample(jax.random.fold_in(key, r), 4 * (n - len(out))), exclude)
  return out[:n]


def random_search(space: Any, goal: str = "max") -> Strategy:
  """Samples uniformly from `space.sample`, skipping points observed or pending.

  Args:
    space: a Space (sample, canonical_key, from_json are used).
    goal: the task's goal; random search ignores scores but records them in its history.
  """
  if goal not in GOALS:
    raise ValueError(f"random_search: goal={goal!r}; allowed: {', '.join(GOALS)}")

  def init(key):
    return RandomState(key=key, history=common.empty_history())

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(p) for p in pending}
    key = common.step_key(state.key, state.history, pending)
    return state, _sample_fresh(space, key, n, exclude)

  def update(state, observations):
    return dataclasses.replace(state, history=common.add_observations(state.history, space, goal, observations))

  return Strategy(init=init, propose=propose, update=update)


@dataclasses.dataclass(frozen=True)
class EAState:
  """State of the EA baseline.

  Attributes:
    key: the search key.
    history: everything observed.
    pool: initial-pool points not yet proposed.
    batch: the current generation's mutants not yet proposed, as (point, parent trial id).
    notes: canonical key -> notes of each proposed, not yet observed point.
  """

  key: jax.Array
  history: common.History
  pool: tuple
  batch: tuple = ()
  notes: dict = dataclasses.field(default_factory=dict)


def _generation(
  space: Any, history: common.History, fitness: np.ndarray, n_mut: int, key: jax.Array, exclude: set
) -> tuple:
  """N_mut mutants of parents drawn with replacement, pi(z_i) proportional to exp(f_i / sigma),
  sigma the std of the f_i: the EA acquisition optimiser's rule, `selection_probs` (NASBOT App. B.2).

  A parent adds nothing when its `_MUTATION_TRIES` mutations all leave it unchanged
  (`space.mutate` ok False) or repeat a known point. `fitness` [n] is what selection reads
  (`common.fitness`: the scores, or NSGA-II's order with several objectives).
  Returns ((point, parent trial id), ...).
  """
  ok = np.flatnonzero(history.ok)
  rng = common.host_rng(key)
  parents = rng.choice(ok, size=n_mut, p=selection_probs(fitness[ok], selection="paper"))
  taken = set(exclude)
  out = []
  for j, i in enumerate(parents):
    for t in range(_MUTATION_TRIES):
      child, changed = space.mutate(history.points[i], jax.random.fold_in(key, j * _MUTATION_TRIES + t))
      if changed and common.fresh(space, [child], taken):
        out.append((child, history.trial_ids[i]))
        break
  return tuple(out)


def evolution(space: Any, goal: str, *, n_mut: int = 10, objectives: tuple = ()) -> Strategy:
  """The EA baseline of NASBOT (Sec. 5; App. C.1) on the true objective.

  It proposes the initial pool (`space.initial()`) first. Then it works in generations: n_mut
  parents are drawn with replacement from all OK observations with pi ∝ exp(f/sigma) and each is
  mutated once (`space.mutate`); the mutants are handed out one per free worker, and the next
  generation is drawn, from everything observed by then, when they run out. Before any
  evaluation succeeds it falls back to random samples. A resumed search (`update` on the
  replayed journal) starts a new generation; mutants of the interrupted one are not kept.

  Args:
    space: a Space.
    goal: the task's goal ("max" or "min"); selection uses scores.
    n_mut: mutants per generation (10 in the paper's baseline).
    objectives: the task's other objectives ((name, goal) pairs); with them, selection reads
      NSGA-II's order (non-domination rank, then crowding) as the fitness (`common.fitness`).
  """
  if goal not in GOALS:
    raise ValueError(f"evolution: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if isinstance(n_mut, bool) or not isinstance(n_mut, int) or n_mut < 1:
    raise ValueError(f"evolution: n_mut={n_mut!r}; expected an integer >= 1")
  objectives = common.check_objectives("evolution", objectives)

  def init(key):
    return EAState(key=key, history=common.empty_history(), pool=tuple(space.initial()))

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(p) for p in pending}
    key = common.step_key(state.key, state.history, pending)
    pool = common.fresh(space, state.pool, set(exclude))
    out = common.fresh(space, pool[:n], exclude)
    notes = {**state.notes, **{space.canonical_key(p): {"origin": "initial_pool"} for p in out}}
    pool, batch = pool[len(out) :], list(state.batch)
    for g in range(_ROUNDS):
      if len(out) >= n:
        break
      if not batch:
        gkey = jax.random.fold_in(key, g)
        if state.history.ok.any():
          fitness = common.fitness(common.objective_scores(state.history, objectives))
          batch = list(_generation(space, state.history, fitness, n_mut, gkey, exclude))
        if not batch:  # nothing to mutate yet, or every mutant repeats: sample instead
          batch = [(p, None) for p in _sample_fresh(space, gkey, n - len(out), set(exclude))]
      while batch and len(out) < n:
        point, parent = batch.pop(0)
        if common.fresh(space, [point], exclude):
          out.append(point)
          origin = "sample" if parent is None else "mutation"
          notes[space.canonical_key(point)] = {"origin": origin, "parent": parent}
    return dataclasses.replace(state, pool=tuple(pool), batch=tuple(batch), notes=notes), out

  def update(state, observations):
    return common.observe(state, space, goal, observations)

  return Strategy(init=init, propose=propose, update=update, notes=common.notes_reader(space))
