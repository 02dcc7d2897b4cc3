"""Regularized evolution (Real et al. 2019, as the BANANAS baseline, Sec. 5.1): tournaments of 10 drawn with
replacement from an age-ordered population of at most 30, whose oldest member dies.
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

__all__ = ["EvolutionState", "regularized_evolution"]

_MUTATION_TRIES = 100  # mutants of one tournament winner tried before sampling a random point


@dataclasses.dataclass(frozen=True)
class EvolutionState:
  """key: the search key; history: every observation; population: indices into history of the
  living members, oldest first (OK observations only)."""

  key: jax.Array
  history: common.History
  population: tuple = ()


def regularized_evolution(
  space: Any,
  goal: str = "max",
  *,
  population_size: int = 30,
  tournament_size: int = 10,
  n_init: int = 10,
  objectives: tuple = (),
) -> Strategy:
  """RE over any Space (BANANAS Sec. 5.1; settings of the authors' code).

  The first n_init proposals are random. Then each child mutates the best of tournament_size
  members drawn with replacement. When the population reaches population_size the oldest member
  dies, so selection sees population_size - 1. Unlike the code, a child repeating an observed
  or pending point, or an unchanged one (`space.mutate` ok False), is redrawn (the Strategy
  contract forbids repeats).

  With other `objectives` ((name, goal) pairs, `Task.objectives`), a tournament is won by the
  contender first in NSGA-II order (non-domination rank, then crowding: `common.fitness`).
  """
  if goal not in GOALS:
    raise ValueError(f"regularized_evolution: goal={goal!r}; allowed: {', '.join(GOALS)}")
  for name, v in (("population_size", population_size), ("tournament_size", tournament_size), ("n_init", n_init)):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"regularized_evolution: {name}={v!r}; expected an int >= 1")
  objectives = common.check_objectives("regularized_evolution", objectives)

  def init(key):
    return EvolutionState(key=key, history=common.empty_history())

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(q) for q in pending}
    key = common.step_key(state.key, state.history, pending)
    if len(state.history) + len(pending) < n_init or not state.population:
      return state, mutation.random_candidates(space, key, exclude, n=n)
    rng = common.host_rng(key)
    pop = np.asarray(state.population)
    out, fitness = [], common.fitness(common.objective_scores(state.history, objectives))
    for j in range(n):
      contenders = rng.choice(pop, size=tournament_size, replace=True)
      winner = contenders[np.argmax(fitness[contenders])]  # ties: first drawn
      parent = state.history.points[winner]
      for t in range(_MUTATION_TRIES):
        child, changed = space.mutate(parent, jax.random.fold_in(key, j * _MUTATION_TRIES + t))
        if changed and common.fresh(space, [child], exclude):
          out.append(child)
          break
      else:
        out += mutation.random_candidates(space, jax.random.fold_in(key, -1 - j), exclude, n=1)
        exclude |= {space.canonical_key(q) for q in out[-1:]}
    return state, out

  def update(state, observations):
    history = common.add_observations(state.history, space, goal, observations)
    population = list(state.population)
    for i in range(len(state.history), len(history)):
      if history.ok[i]:
        population.append(i)
        if len(population) >= population_size:
          population.pop(0)
    return dataclasses.replace(state, history=history, population=tuple(population))

  return Strategy(init=init, propose=propose, update=update)
