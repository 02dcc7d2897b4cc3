"""Promotions decided by the model (issue #20 item 3): `Strategy.predict` and a scheduler's
promote="model", which ranks each rung by the sampler's predicted full-fidelity score.

An oracle sampler (random search whose `predict` returns a known function of the network) shows
that the ranking follows the predictions and not the rung's values; a sampler without a model yet
falls back to the values exactly; `bo`'s predict is a function of its state (replay predicts the
same) and reads its observations; ASHA over BANANAS' joint model promotes by it and replays; the
preset and the config checks say what is allowed.
"""

import dataclasses
import os
import sys

import jax
import numpy as np
import pytest

from nas_jax.search.strategies import schedulers
from nas_jax.search.strategies.baselines import random_search
from nas_jax.search.strategies.presets import bananas
from nas_jax.search.strategy import split_proposal
from nas_jax.spaces import cells
from nas_jax.spaces.fidelity_space import FidelityPoint, fidelity_space
from nas_jax.wiring import config as config_lib
from nas_jax.wiring.config_files import load_config

sys.path.insert(0, os.path.dirname(__file__))
import test_fidelity_model as fidelity_tests  # noqa: E402  (its GP-BO on a fidelity space)
import test_schedulers as sched_tests  # noqa: E402  (its noisy hash objective and run loop)
import test_strategy_contract as contract  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIDELITIES = sched_tests.FIDELITIES
BASE = cells.nb201_space()


def _oracle(predict):
  """Random search on the fidelity space (a joint sampler) with the given `predict`."""
  return random_search(fidelity_space(BASE, FIDELITIES))._replace(predict=predict)


def _inverted(state, points):
  """Predicts the opposite of the objective: a model-ranked rung promotes its worst networks."""
  assert all(isinstance(p, FidelityPoint) and p.fidelity == FIDELITIES[-1] for p in points)
  return np.array([-contract._value(BASE, p.point) for p in points])


def _asha(sampler, promote):
  return schedulers.asha(sampler, BASE, "max", FIDELITIES, model="joint", promote=promote)


def _promotions(journal, proposals):
  """(t, promoted observation's trial id, the rung's successes before t) of every promotion."""
  out = []
  for t, p in enumerate(proposals):
    _, _, continues = split_proposal(p)
    if continues is not None:
      rung = [o for o in journal[:t] if o.fidelity == journal[continues].fidelity and o.value is not None]
      out.append((t, continues, rung))
  return out


def test_a_model_ranked_rung_promotes_by_the_predictions_not_the_values():
  strategy = _asha(_oracle(_inverted), "model")
  state, journal, proposals = sched_tests._run(strategy, BASE, 20)
  promotions = _promotions(journal, proposals)
  assert len(promotions) >= 4
  for t, continues, rung in promotions:
    predicted = sorted((-contract._value(BASE, BASE.from_json(o.arch_json)) for o in rung), reverse=True)
    mine = -contract._value(BASE, BASE.from_json(journal[continues].arch_json))
    assert predicted.index(mine) < len(rung) // 3  # in the top third by prediction
    notes = journal[t].info["strategy"]
    assert notes["ranked_by"] == "model" and notes["predicted"] == pytest.approx(mine, abs=1e-6)
  # The first promotion: the worst of the first three networks (noise-free), where "value" takes
  # the best of their noisy values at the rung.
  first3 = journal[:3]
  worst = min(first3, key=lambda o: contract._value(BASE, BASE.from_json(o.arch_json))).trial_id
  _, by_value = sched_tests._run(_asha(_oracle(_inverted), "value"), BASE, 4)[1:]
  best = max(first3, key=lambda o: o.value).trial_id
  assert promotions[0][1] == worst != best == split_proposal(by_value[3])[2]
  replayed = strategy.update(strategy.init(sched_tests.KEY), journal)
  _, live = strategy.propose(state, 3, [])
  _, again = strategy.propose(replayed, 3, [])
  assert [(BASE.to_json(p.point), p.fidelity, p.continues) for p in again] == [
    (BASE.to_json(p.point), p.fidelity, p.continues) for p in live
  ]


def test_successive_halving_promotes_its_rungs_by_the_predictions():
  strategy = schedulers.successive_halving(_oracle(_inverted), BASE, "max", FIDELITIES, model="joint", promote="model")
  _, journal, proposals = sched_tests._run(strategy, BASE, 13)
  true = lambda o: contract._value(BASE, BASE.from_json(o.arch_json))
  worst3 = sorted(journal[:9], key=true)[:3]  # the bracket's 9 networks at rung 1, the top 3 by prediction
  assert [split_proposal(p)[2] for p in proposals[9:12]] == [o.trial_id for o in worst3]
  assert split_proposal(proposals[12])[2] == min(journal[9:12], key=true).trial_id


def test_without_a_model_yet_the_values_rank_the_rung():
  calls = []

  def no_model(state, points):
    calls.append(len(points))
    return None

  _, journal, proposals = sched_tests._run(_asha(_oracle(no_model), "model"), BASE, 14)
  _, reference, expected = sched_tests._run(_asha(_oracle(None), "value"), BASE, 14)
  assert calls  # it was asked, once per proposal that could promote
  assert [(o.arch_json, o.fidelity, o.value) for o in journal] == [
    (o.arch_json, o.fidelity, o.value) for o in reference
  ]
  assert [split_proposal(p)[2] for p in proposals] == [split_proposal(p)[2] for p in expected]
  assert all("ranked_by" not in o.info["strategy"] for o in journal)


def test_promote_model_is_refused_without_the_joint_model_or_a_predicting_sampler():
  with pytest.raises(ValueError, match="promote='model' .* needs model='joint' .* got model='fidelity'"):
    schedulers.asha(_oracle(_inverted), BASE, "max", FIDELITIES, model="fidelity", promote="model")
  with pytest.raises(ValueError, match="and a sampler without one"):
    _asha(_oracle(None), "model")
  with pytest.raises(ValueError, match="scheduler: promote='best'; choose one of: value, model"):
    _asha(_oracle(_inverted), "best")


def test_bo_predict_is_a_function_of_its_state_and_reads_the_observations():
  space = fidelity_space(BASE, (1.0, 9.0))
  strategy = fidelity_tests._gp_bo(space, "gp_fixed")  # 3 random points, then the model
  state, journal = strategy.init(fidelity_tests.KEY), []
  probe = space.sample(jax.random.key(9), 4)
  for t in range(6):
    if len(state.history) < 3:  # the initial design (n_init = 3 observations) is not over
      assert strategy.predict(state, probe) is None
    state, (point,) = strategy.propose(state, 1, [])
    obs = contract._observe(space, [FidelityPoint(point.point, 1.0), point], len(journal), failed=False)
    journal += obs
    state = strategy.update(state, obs)
  observed = list(state.history.points[1::2])  # each network at 9
  mean = strategy.predict(state, observed + probe)
  assert mean.shape == (len(observed) + len(probe),) and np.all(np.isfinite(mean))
  np.testing.assert_array_equal(strategy.predict(state, observed + probe), mean)
  replayed = strategy.update(strategy.init(fidelity_tests.KEY), journal)
  np.testing.assert_allclose(strategy.predict(replayed, observed + probe), mean, rtol=1e-6)
  # The GP nearly interpolates its observations: it ranks the observed networks by their values.
  values = np.array([contract._value(space, p) for p in observed])
  assert np.array_equal(np.argsort(mean[: len(observed)]), np.argsort(values))
  lower = strategy.update(strategy.init(fidelity_tests.KEY), [dataclasses.replace(o, value=-o.value) for o in journal])
  assert np.array_equal(np.argsort(strategy.predict(lower, observed)), np.argsort(-values))


def test_asha_over_bananas_promotes_by_its_joint_model_and_replays():
  options = {**contract.CASES["bananas"].options, "k": 1, "epochs": 10}
  sampler = bananas(fidelity_space(BASE, FIDELITIES), "max", **options)
  strategy = _asha(sampler, "model")
  state, journal, proposals = sched_tests._run(strategy, BASE, 14)
  keys = [(BASE.canonical_key(p.point), p.fidelity) for p in proposals]
  assert len(set(keys)) == len(keys) and {p.fidelity for p in proposals} == set(FIDELITIES)
  ranked = [o.info["strategy"] for o in journal if o.info["strategy"].get("ranked_by")]
  assert ranked and all(r["ranked_by"] == "model" and np.isfinite(r["predicted"]) for r in ranked)
  replayed = strategy.update(strategy.init(sched_tests.KEY), journal)
  _, live = strategy.propose(state, 2, [])
  _, again = strategy.propose(replayed, 2, [])
  assert [(BASE.to_json(p.point), p.fidelity) for p in again] == [(BASE.to_json(p.point), p.fidelity) for p in live]


def test_the_model_preset_and_the_config_checks(tmp_path):
  path = os.path.join(ROOT, "configs", "multifidelity_nb201.py")
  c = load_config(f"{path}:asha_bananas+model")
  assert (c.scheduler, c.scheduler_config.model, c.scheduler_config.promote) == ("asha", "joint", "model")
  assert load_config(f"{path}:asha_bananas+joint").scheduler_config.promote == "value"
  with pytest.raises(ValueError, match=r"\+joint or \+model with a scheduler"):
    load_config(f"{path}:bananas+model")
  c = fidelity_tests._config(tmp_path / "bad", 4)
  c.scheduler_config.promote = "model"
  config_lib.check_search_config(c)  # model "joint" is set
  c.scheduler_config.model = "fidelity"
  with pytest.raises(ValueError, match="scheduler: promote='model' ranks each rung by the sampler's predictions"):
    config_lib.build_search(c)
  c.scheduler_config.promote = "best"
  with pytest.raises(ValueError, match="scheduler: promote='best'; choose one of: value, model"):
    config_lib.build_search(c)
