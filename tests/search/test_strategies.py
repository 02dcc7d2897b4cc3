"""Baseline strategies: no repeated or pending proposals, exhaustion, replay determinism, the EA's
pool-first order, its pi ∝ exp(f/sigma) selection by hand, mutants one step from their parent,
and EA beating random search on OneMax at equal budget."""

import math
import os
import sys
import tempfile

import jax
import numpy as np
import pytest

from nas_jax.acquisition.evolution import selection_probs
from nas_jax.search import loop
from nas_jax.search.executors import InlineExecutor
from nas_jax.search.state import Observation, Status
from nas_jax.search.strategies import baselines, local_search
from nas_jax.wiring.parts import STRATEGIES, make_strategy

sys.path.insert(0, os.path.dirname(__file__))
import search_helpers as h  # noqa: E402


def observe(space, points, values, start=0):
  return [
    Observation(
      trial_id=start + i,
      arch_json=space.to_json(p),
      value=v,
      status=Status.OK if v is not None else Status.FAILED,
      error="" if v is not None else "x",
      seconds=0.0,
      worker="t",
    )
    for i, (p, v) in enumerate(zip(points, values))
  ]


@pytest.mark.parametrize("make", [baselines.random_search, lambda s: baselines.evolution(s, "max")])
def test_proposals_are_new_distinct_and_not_pending(make):
  space = h.bits_space()
  strategy = make(space)
  seen = space.sample(jax.random.key(1), 30)
  state = strategy.update(strategy.init(jax.random.key(0)), observe(space, seen[:20], [1.0] * 20))
  pending = seen[20:]
  state, points = strategy.propose(state, 25, pending)
  assert len(points) == 25
  assert len(set(points)) == 25
  assert not set(points) & set(seen)


def test_random_search_returns_fewer_points_only_when_the_space_is_exhausted():
  space = h.bits_space(n_bits=3, n_initial=3)  # 8 points
  strategy = baselines.random_search(space)
  every = [tuple(int(b) for b in f"{i:03b}") for i in range(8)]
  state = strategy.update(strategy.init(jax.random.key(0)), observe(space, every[:6], [0.0] * 6))
  _, points = strategy.propose(state, 5, [every[6]])
  assert points == [every[7]]
  _, points = strategy.propose(state, 5, every[6:])
  assert points == []


# The EA is compared at a generation boundary (pool of 10, then one generation of 10): a replay
# starts a new generation, so mid-generation it may differ.
@pytest.mark.parametrize("make, steps", [(baselines.random_search, 15), (lambda s: baselines.evolution(s, "max"), 20)])
def test_replaying_observations_gives_the_same_next_proposals(make, steps):
  space = h.bits_space()
  strategy = make(space)
  state, done = strategy.init(jax.random.key(3)), []
  for t in range(steps):
    state, (p,) = strategy.propose(state, 1, [])
    obs = observe(space, [p], [float(sum(p))], start=t)
    done += obs
    state = strategy.update(state, obs)
  replayed = strategy.update(strategy.init(jax.random.key(3)), done)
  assert strategy.propose(state, 4, [])[1] == strategy.propose(replayed, 4, [])[1]


def test_local_search_walks_to_the_optimum_then_restarts_and_replays_from_any_split():
  space = h.bits_space(n_bits=6, n_initial=6)  # OneMax's optimum 111111 has 6 neighbours, none better
  s = local_search.local_search(space, "max", n_restart=2)
  state, done, currents = s.init(jax.random.key(0)), [], []
  for t in range(30):
    state, (p,) = s.propose(state, 1, [])
    obs = observe(space, [p], [float(sum(p))], start=t)
    done += obs
    state = s.update(state, obs)
    currents.append(None if state.current is None else state.history.points[state.current])
  assert len({tuple(o.arch_json["bits"]) for o in done}) == 30
  top = currents.index((1,) * 6)  # the walk reaches the optimum...
  assert None in currents[top : top + 7]  # ...and restarts once its 6 neighbours are observed
  halves = s.update(s.update(s.init(jax.random.key(0)), done[:13]), done[13:])
  assert (halves.current, halves.start, halves.queue) == (state.current, state.start, state.queue)


def test_selection_probabilities_by_hand():
  # scores [0, 1]: sigma = 0.5, so weights exp(0), exp(2).
  p = selection_probs(np.array([0.0, 1.0]))
  np.testing.assert_allclose(p, [1 / (1 + math.e**2), math.e**2 / (1 + math.e**2)], rtol=1e-12)
  np.testing.assert_allclose(selection_probs(np.array([3.0, 3.0, 3.0])), [1 / 3] * 3)
  # Shift and scale invariance: sigma makes the rule scale-free (NASBOT App. B.2).
  s = np.array([0.2, -1.0, 4.0, 2.5])
  np.testing.assert_allclose(selection_probs(s), selection_probs(100 * s - 7), rtol=1e-12)


def test_ea_proposes_the_initial_pool_first_then_one_step_mutants_of_observed_parents():
  space = h.bits_space()
  strategy = baselines.evolution(space, "max", n_mut=10)
  state = strategy.init(jax.random.key(0))
  state, first = strategy.propose(state, 10, [])
  assert first == space.initial()
  assert all(strategy.notes(state, p) == {"origin": "initial_pool"} for p in first)
  state = strategy.update(state, observe(space, first, [float(i) for i in range(10)]))
  by_id = dict(enumerate(first))
  state, children = strategy.propose(state, 10, [])
  assert len(children) == 10
  for c in children:
    notes = strategy.notes(state, c)
    assert notes["origin"] == "mutation"
    assert sum(a != b for a, b in zip(c, by_id[notes["parent"]])) == 1


def test_ea_selection_favours_the_best_parent():
  # Nine parents score 0, one scores 10: sigma = 3, so P(best) = e^(10/3) / (9 + e^(10/3)) = 0.757.
  space = h.bits_space(n_bits=12)
  strategy = baselines.evolution(space, "max", n_mut=10)
  parents = space.sample(jax.random.key(5), 10)
  state = strategy.update(strategy.init(jax.random.key(0)), observe(space, parents, [0.0] * 9 + [10.0]))
  state = baselines.EAState(key=state.key, history=state.history, pool=())
  counts = []
  for k in range(20):
    s = baselines.EAState(key=jax.random.key(k), history=state.history, pool=())
    s, children = strategy.propose(s, 10, [])
    counts += [strategy.notes(s, c)["parent"] == 9 for c in children]
  assert 0.65 < np.mean(counts) < 0.85


def test_ea_minimises_when_the_goal_is_min():
  space = h.bits_space(n_bits=12)
  strategy = baselines.evolution(space, "min", n_mut=10)
  parents = space.sample(jax.random.key(5), 10)
  state = strategy.update(strategy.init(jax.random.key(0)), observe(space, parents, [0.0] + [10.0] * 9))
  s = baselines.EAState(key=jax.random.key(1), history=state.history, pool=())
  s, children = strategy.propose(s, 10, [])
  assert np.mean([strategy.notes(s, c)["parent"] == 0 for c in children]) > 0.5


def test_ea_samples_while_nothing_has_succeeded():
  space = h.bits_space()
  strategy = baselines.evolution(space, "max")
  state = strategy.update(strategy.init(jax.random.key(0)), observe(space, space.initial(), [None] * 10))
  state, points = strategy.propose(state, 3, [])
  assert len(points) == 3 and all(strategy.notes(state, p)["origin"] == "sample" for p in points)


def test_ea_rejects_bad_n_mut_and_goal():
  with pytest.raises(ValueError, match="n_mut=0"):
    baselines.evolution(h.bits_space(), "max", n_mut=0)
  with pytest.raises(ValueError, match="goal='up'"):
    baselines.evolution(h.bits_space(), "up")


def _best(strategy, space, budget, seed):
  obs = loop.run(
    strategy,
    h.onemax_task(),
    InlineExecutor(),
    tempfile.mkdtemp(),
    space=space,
    budget=budget,
    key=jax.random.key(seed),
    progress=False,
  )
  return max(o.value for o in obs if o.ok)


def test_ea_beats_random_search_on_onemax_at_equal_budget():
  # 40 bits; the pool starts at 25 ones. Random samples average 20 ones; the EA must climb.
  space = h.bits_space(n_bits=40, pool_ones=25)
  ea = [_best(baselines.evolution(space, "max"), space, 70, s) for s in range(4)]
  rand = [_best(baselines.random_search(space), space, 70, s) for s in range(4)]
  assert np.mean(ea) > np.mean(rand)
  assert min(ea) > 25  # it improved on its pool


def test_registry_builds_known_names_and_lists_them_for_unknown_ones():
  import ml_collections

  task = h.onemax_task()
  for name, options in (("random", {}), ("ea", {"n_mut": 5})):
    config = ml_collections.ConfigDict({"strategy_config": options})
    s = make_strategy(name, config, h.bits_space(), task)
    assert len(s.propose(s.init(jax.random.key(0)), 3, [])[1]) == 3
  with pytest.raises(ValueError, match="'nasbot_v9' is unknown; choose one of: .*ea, .*random"):
    make_strategy("nasbot_v9", config, h.bits_space(), task)
  assert {"random", "ea"} <= set(STRATEGIES)
