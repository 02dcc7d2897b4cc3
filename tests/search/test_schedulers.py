"""Multi-fidelity schedulers (search/strategies/schedulers.py): Hyperband's bracket sizes against
the paper's table, the promotions of ASHA, successive halving and Hyperband by hand, and the
Strategy contract (replay, no repeats, valid continuations) with every strategy as the sampler.

The objective is the contract suite's hash of a point in [0, 1), plus noise that shrinks with the
fidelity, so that rungs disagree a little and promotions must read the right rung.
"""

import dataclasses
import functools
import os
import sys

import jax
import numpy as np
import pytest

from nas_jax.search.state import Observation, Status
from nas_jax.search.strategies import schedulers
from nas_jax.wiring.parts import SCHEDULERS
from nas_jax.search.strategies.baselines import random_search
from nas_jax.search.strategy import split_proposal
from nas_jax.spaces import cells

sys.path.insert(0, os.path.dirname(__file__))
import test_strategy_contract as contract  # noqa: E402  (its cases: every strategy on a small space)

KEY = jax.random.key(3)
FIDELITIES = (1.0, 3.0, 9.0)


def _value(space, point, fidelity: float) -> float:
  noise = np.random.default_rng(abs(hash(repr(space.canonical_key(point)))) % 2**32).standard_normal()
  return contract._value(space, point) + 0.05 * (1.0 - fidelity / FIDELITIES[-1]) * noise


def _observe(space, proposals, start: int, failed: bool = False) -> list[Observation]:
  out = []
  for i, p in enumerate(proposals):
    point, fidelity, continues = split_proposal(p)
    out.append(
      Observation(
        trial_id=start + i,
        arch_json=space.to_json(point),
        value=None if failed else _value(space, point, fidelity),
        status=Status.FAILED if failed else Status.OK,
        error="boom" if failed else "",
        seconds=0.0,
        worker="test",
        info={"strategy": {}} if continues is None else {"continues": continues},
        fidelity=fidelity,
      )
    )
  return out


def _run(strategy, space, steps: int, failed=()):
  """`steps` single proposals, each observed before the next; (state, journal, proposals)."""
  state, journal, proposals = strategy.init(KEY), [], []
  for t in range(steps):
    state, points = strategy.propose(state, 1, [])
    assert len(points) == 1
    obs = _observe(space, points, len(journal), failed=t in failed)
    obs = [dataclasses.replace(o, info={**o.info, "strategy": strategy.notes(state, points[0])}) for o in obs]
    journal += obs
    proposals += points
    state = strategy.update(state, obs)
  return state, journal, proposals


def _wrap(name, sampler, space, **options):
  return SCHEDULERS[name](sampler, space, "max", FIDELITIES, **options)


def test_hyperband_brackets_are_the_papers():
  # Li et al. 2017, Table 1: R = 81, eta = 3 (5 rungs): brackets s = 4..0 start 81, 34, 15, 8, 5
  # networks at 1, 3, 9, 27, 81 epochs.
  assert schedulers.hyperband_brackets(5, 3) == ((0, 81), (1, 34), (2, 15), (3, 8), (4, 5))
  assert schedulers.hyperband_brackets(3, 3) == ((0, 9), (1, 5), (2, 3))
  assert schedulers.sh_brackets(3, 3) == ((0, 9),)


def test_asha_promotes_the_best_third_of_each_rung_as_soon_as_it_can():
  space = cells.nb201_space()
  _, journal, proposals = _run(_wrap("asha", random_search(space), space), space, 14)
  fidelities = [split_proposal(p)[1] for p in proposals]
  # 3 at rung 1 -> the best is promoted to 3; 3 more -> the second best; 9 at 1 and 3 at 3 -> one to 9.
  assert fidelities[:5] == [1, 1, 1, 3, 1]
  first3 = journal[:3]
  best = max(first3, key=lambda o: o.value)
  point, fidelity, continues = proposals[3]
  assert (space.to_json(point), fidelity, continues) == (best.arch_json, 3.0, best.trial_id)
  for t, p in enumerate(proposals):
    point, fidelity, continues = split_proposal(p)
    if continues is not None:  # the promoted network is among the best 1/3 of its rung so far
      rung = [o for o in journal[:t] if o.fidelity == journal[continues].fidelity]
      rank = sorted((o.value for o in rung), reverse=True).index(journal[continues].value)
      assert rank < len(rung) // 3 and fidelity == FIDELITIES[FIDELITIES.index(journal[continues].fidelity) + 1]
  assert 9.0 in fidelities


def test_successive_halving_runs_its_bracket_rung_by_rung():
  space = cells.nb201_space()
  _, journal, proposals = _run(_wrap("sh", random_search(space), space), space, 14)
  fidelities = [split_proposal(p)[1] for p in proposals]
  assert fidelities == [1.0] * 9 + [3.0] * 3 + [9.0] + [1.0]  # then the next bracket starts
  rung1 = sorted(journal[:9], key=lambda o: -o.value)
  assert [split_proposal(p)[2] for p in proposals[9:12]] == [o.trial_id for o in rung1[:3]]
  rung3 = max(journal[9:12], key=lambda o: o.value)
  assert split_proposal(proposals[12])[2] == rung3.trial_id


def test_hyperband_cycles_its_brackets():
  space = cells.nb201_space()
  _, _, proposals = _run(_wrap("hyperband", random_search(space), space), space, 9 + 3 + 1 + 5 + 1 + 3 + 1)
  fidelities = [split_proposal(p)[1] for p in proposals]
  expected = [1.0] * 9 + [3.0] * 3 + [9.0] + [3.0] * 5 + [9.0] + [9.0] * 3 + [1.0]
  assert fidelities == expected


def test_a_waiting_bracket_starts_the_next_one_instead_of_idling():
  space = cells.nb201_space()
  strategy = _wrap("sh", random_search(space), space)
  state, _, _ = _run(strategy, space, 8)
  state, (ninth,) = strategy.propose(state, 1, [])
  # The ninth network of the bracket is still running: the bracket waits, the next one starts.
  state, (other,) = strategy.propose(state, 1, [ninth])
  assert split_proposal(other)[1] == 1.0 and split_proposal(other)[2] is None
  assert strategy.notes(state, other)["bracket"] == 1 and strategy.notes(state, ninth)["bracket"] == 0
  # The ninth is lost (the search was killed): the old bracket gets a new ninth before any other.
  state, (again,) = strategy.propose(state, 1, [other])
  assert strategy.notes(state, again)["bracket"] == 0 and split_proposal(again)[1] == 1.0


def test_the_sampler_models_the_highest_fidelity_with_enough_successes():
  space = cells.nb201_space()
  strategy = _wrap("asha", random_search(space), space, min_points=2)
  state, journal, _ = _run(strategy, space, 30)
  state, _ = strategy.propose(state, 1, [])  # the sampler's view is fed at proposal time
  at9 = {o.arch_json["arch_str"] for o in journal if o.fidelity == 9.0}
  assert len(at9) >= 2
  history = state.sampler.history
  networks = {o.arch_json["arch_str"] for o in journal}
  assert len(history) == len(networks)  # every network, once: none is proposed again
  scored = {space.to_json(p)["arch_str"] for p, ok in zip(history.points, history.ok) if ok}
  assert scored == at9  # only the 9-epoch values are modelled


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_bad_options_and_single_fidelity_tasks_fail_with_one_line(scheduler):
  space = cells.nb201_space()
  with pytest.raises(ValueError, match="eta=1"):
    _wrap(scheduler, random_search(space), space, eta=1)
  with pytest.raises(ValueError, match="min_points=0"):
    _wrap(scheduler, random_search(space), space, min_points=0)
  with pytest.raises(ValueError, match="at least two"):
    SCHEDULERS[scheduler](random_search(space), space, "max", (200.0,))


def test_a_revised_view_is_replayed_onto_the_samplers_restart():
  # NASBOT under ASHA: a network promoted to the model fidelity revises the sampler's view, which
  # is then replayed onto `restart` of the sampler's state. That keeps the OTMANN distances of
  # the networks seen before and nothing else, so the replay equals the one onto `init`.
  space = contract._case("nasbot").space()
  sampler = contract._build("nasbot", space, contract._case("nasbot").options)
  kept = []
  spied = sampler._replace(restart=lambda s: kept.append(len(s.cache)) or sampler.restart(s))
  strategy = _wrap("asha", spied, space, min_points=3)
  state, journal, _ = _run(strategy, space, 16)
  state, _ = strategy.propose(state, 1, [])  # the sampler's view is fed at proposal time
  assert kept and min(kept) > 0  # revisions happened, with distances to keep
  inner = state.sampler
  restarted = sampler.restart(inner)
  assert len(restarted.history) == 0 and restarted.cache is inner.cache
  assert (restarted.anchor, restarted.queue, restarted.notes) == ((), (), {})
  replayed = strategy.update(strategy.init(KEY), journal)
  replayed, _ = strategy.propose(replayed, 1, [])
  fresh = replayed.sampler  # the same view replayed onto init: every distance computed again
  assert fresh.history.trial_ids == inner.history.trial_ids
  np.testing.assert_array_equal(fresh.history.scores, inner.history.scores)
  order = [inner.cache.index[k] for k in fresh.cache.keys]
  for a, b in zip(fresh.cache.data, inner.cache.data):
    np.testing.assert_allclose(b[..., order, :][..., order], a, rtol=1e-12)


# --- the contract, with every registered strategy as the sampler -------------------------------


# A sampler that hands out a batch computed at once (EA generations, BO batches, BANANAS' k)
# resumes by computing a new batch (the contract suite's rule); between promotions a scheduler's
# journal rarely ends on a batch boundary, so here such samplers compute one point at a time.
ONE_AT_A_TIME = {"ea": {"n_mut": 1}, "bo": {"batch": 1}, "bananas": {"k": 1}}


@functools.lru_cache(maxsize=None)
def _contract_run(scheduler: str, name: str):
  case = contract._case(name)
  space = case.space()
  options = {**case.options, **ONE_AT_A_TIME.get(name, {})}
  strategy = _wrap(scheduler, contract._build(name, space, options), space, min_points=3)
  steps = 16
  state, journal, proposals = _run(strategy, space, steps, failed=(1,))
  return space, strategy, state, journal, proposals


# Model-based samplers fit a model per new network: under the synchronous schedulers (more new
# networks in 16 steps than ASHA) they take 10-40 s each, so those run with --runslow, as does
# Auto-Keras under ASHA (its tree search compiles per network: 12-36 s).
_MODEL_BASED = ("autokeras", "bananas", "bo", "conditional_bo", "gp_bo", "nasbot")
_PAIRS = [
  pytest.param(s, n, marks=[pytest.mark.slow] if (s != "asha" or n == "autokeras") and n in _MODEL_BASED else [])
  for s in SCHEDULERS
  for n in contract.NAMES
]


@pytest.mark.parametrize("scheduler, name", _PAIRS)
def test_every_strategy_samples_for_every_scheduler(scheduler, name):
  space, strategy, state, journal, proposals = _contract_run(scheduler, name)
  seen = [(space.canonical_key(split_proposal(p)[0]), split_proposal(p)[1]) for p in proposals]
  assert len(seen) == len(set(seen))  # no network twice at one fidelity
  for t, p in enumerate(proposals):
    point, fidelity, continues = split_proposal(p)
    if continues is None:  # a new network, never seen before at any fidelity
      assert all(space.canonical_key(point) != k for k, _ in seen[:t])
    else:  # a promotion continues the same network's run one rung lower
      parent = journal[continues]
      assert parent.ok and space.to_json(point) == parent.arch_json
      assert FIDELITIES.index(fidelity) == FIDELITIES.index(parent.fidelity) + 1
  # Replaying the journal proposes what the live run does, pending points included.
  replayed = strategy.update(strategy.init(KEY), journal)
  _, live = strategy.propose(state, 2, [])
  _, again = strategy.propose(replayed, 2, [])
  assert [(space.to_json(split_proposal(p)[0]), p[1:]) for p in again] == [
    (space.to_json(split_proposal(p)[0]), p[1:]) for p in live
  ]
