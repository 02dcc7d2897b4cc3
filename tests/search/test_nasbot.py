"""NASBOT and RAND strategies: the pool first, no repeats, hallucination, resume by replay."""

import jax
import numpy as np
import pytest

from nas_jax.search.state import Observation, Status
from nas_jax.acquisition.optimizers import ea
from nas_jax.features.featurizers import otmann
from nas_jax.features.pairwise import OtmannPair
from nas_jax.search.strategies import presets as nasbot_lib
from nas_jax.surrogates import priors
from nas_jax.surrogates.point_model import gp
from nas_jax.spaces.space import layer_graph_space
from nas_jax.tasks.synthetic import synthetic_task

FAST = dict(featurizer=otmann(nu_str=(0.1, 0.8)), surrogate=gp(n_starts=2, fit_steps=10), optimiser=ea(lo=8, hi=8))


@pytest.fixture(scope="module")
def setup():
  space = layer_graph_space("mlp", max_layers=12)
  task = synthetic_task("f2")
  return space, task


def _observe(space, task, points, start=0):
  out = []
  for i, p in enumerate(points):
    js = space.to_json(p)
    out.append(
      Observation(
        trial_id=start + i,
        arch_json=js,
        value=task.evaluate(js, 0).value,
        status=Status.OK,
        error="",
        seconds=0.0,
        worker="test",
      )
    )
  return out


def _keys(space, points):
  return [space.canonical_key(p) for p in points]


def test_initial_pool_comes_first_and_is_never_repeated(setup):
  space, task = setup
  s = nasbot_lib.nasbot(space, task.goal, **FAST)
  state = s.init(jax.random.key(0))
  state, first = s.propose(state, 2, [])
  assert _keys(space, first) == _keys(space, space.initial())  # the 2 pool MLPs of <= 12 layers
  state, (extra,) = s.propose(state, 1, space.initial())  # whole pool pending, nothing observed
  assert space.canonical_key(extra) not in set(_keys(space, space.initial()))
  assert s.notes(state, extra) == {"origin": "sample"}


def test_bo_proposals_are_new_and_differ_from_pending(setup):
  space, task = setup
  s = nasbot_lib.nasbot(space, task.goal, **FAST)
  pool = space.initial()
  state = s.update(s.init(jax.random.key(1)), _observe(space, task, pool))
  d = state.cache.data[0]
  assert d.shape == (2, len(pool), len(pool))
  np.testing.assert_allclose(d[0], d[0].T, atol=1e-9)
  state, (a,) = s.propose(state, 1, [])
  state, (b,) = s.propose(state, 1, [a])
  seen = set(_keys(space, pool))
  assert space.canonical_key(a) not in seen
  assert space.canonical_key(b) not in seen | {space.canonical_key(a)}
  notes = s.notes(state, b)
  assert notes["origin"] == "ei" and notes["acquisition"] >= 0.0


def test_replay_rebuilds_the_same_distance_cache(setup):
  space, task = setup
  s = nasbot_lib.nasbot(space, task.goal, **FAST)
  obs = _observe(space, task, space.initial()[:4] + space.sample(jax.random.key(2), 3))
  one_by_one = s.init(jax.random.key(3))
  for o in obs:
    one_by_one = s.update(one_by_one, [o])
  at_once = s.update(s.init(jax.random.key(3)), obs)
  for a, b in zip(one_by_one.cache.data, at_once.cache.data):  # d and d_bar
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
  assert s.propose(one_by_one, 1, [])[1][0].to_json() == s.propose(at_once, 1, [])[1][0].to_json()


def test_warm_refits_fit_in_full_every_k_and_replay_exactly(setup):
  """refit_every=3: the anchor (full fit) moves at 3, 6, ... successes; a search resumed between
  anchors recomputes its anchor from the journal and proposes what the uninterrupted one did."""
  space, task = setup
  s = nasbot_lib.nasbot(
    space, task.goal, refit_every=3, **{**FAST, "surrogate": gp(n_starts=2, fit_steps=10, warm_steps=5)}
  )
  obs = _observe(space, task, space.initial() + space.sample(jax.random.key(7), 6))
  state = s.update(s.init(jax.random.key(8)), obs[:2])
  state, _ = s.propose(state, 1, [])
  assert state.anchor[0] == 2  # fewer successes than k: the anchor is every fit
  anchors, proposals = [], []
  for m in range(3, 9):
    state = s.update(state, [obs[m - 1]])
    state, (p,) = s.propose(state, 1, [])
    anchors.append(state.anchor[0])
    proposals.append(p)
    fresh = s.update(s.init(jax.random.key(8)), obs[:m])  # a resume: no anchor yet
    fresh, (q,) = s.propose(fresh, 1, [])
    assert space.to_json(q) == space.to_json(p) and fresh.anchor[0] == state.anchor[0]
  assert anchors == [3, 3, 3, 6, 6, 6]
  kept = state.anchor[1]
  state, _ = s.propose(state, 1, proposals[-1:])  # same successes: the anchor is reused, not refitted
  assert state.anchor[1] is kept


def test_warm_refits_need_a_fitted_gp(setup):
  space, task = setup
  with pytest.raises(ValueError, match="refit_every=4 needs a surrogate with warm refits"):
    nasbot_lib.nasbot(space, task.goal, refit_every=4, surrogate=gp(n_hyper_samples=4))
  with pytest.raises(ValueError, match="refit_every=0"):
    nasbot_lib.nasbot(space, task.goal, refit_every=0)


def test_failed_evaluations_are_kept_but_not_modelled(setup):
  space, task = setup
  s = nasbot_lib.nasbot(space, task.goal, **FAST)
  points = space.initial() + space.sample(jax.random.key(6), 6)
  obs = _observe(space, task, points[:5])
  failed = Observation(
    trial_id=5,
    arch_json=space.to_json(points[5]),
    value=None,
    status=Status.FAILED,
    error="boom",
    seconds=0.0,
    worker="test",
  )
  state = s.update(s.init(jax.random.key(4)), obs + [failed])
  assert state.cache.data[0].shape[1] == 6 and int(state.history.ok.sum()) == 5
  state, (p,) = s.propose(state, 1, [])
  assert space.canonical_key(p) not in set(_keys(space, points[:6]))


def test_rand_needs_no_distances(setup):
  space, task = setup
  s = nasbot_lib.rand(space, task.goal, **FAST)
  state = s.update(s.init(jax.random.key(5)), _observe(space, task, space.initial()))
  assert state.cache is None
  state, (p,) = s.propose(state, 1, [])
  assert s.notes(state, p)["origin"] == "random"


def test_kernel_ablation_boxes_switch_a_term_off():
  box = priors.otmann_kernel(d_bar=False).box(OtmannPair, 4)
  assert float(box.lower.kernel.log_alpha_bar) == float(box.upper.kernel.log_alpha_bar) < -20
  box = priors.otmann_kernel(d=False).box(OtmannPair, 4)
  assert float(box.lower.kernel.log_alpha) == float(box.upper.kernel.log_alpha) < -20
  both = priors.nasbot_box(4)
  assert float(both.lower.kernel.log_alpha) < float(both.upper.kernel.log_alpha)
  with pytest.raises(ValueError, match="d=False and d_bar=False leave no term"):
    priors.otmann_kernel(d=False, d_bar=False)


def test_bad_options_are_named(setup):
  space, task = setup
  with pytest.raises(ValueError, match="ea: lo=0; expected an integer >= 1"):
    nasbot_lib.nasbot(space, task.goal, optimiser=ea(lo=0))
  with pytest.raises(TypeError, match="gp: kernel='both'; expected a kernel value"):
    nasbot_lib.nasbot(space, task.goal, surrogate=gp(kernel="both"))


def test_a_config_names_parts_through_the_tables_and_the_preset_makes_the_rest(setup):
  """`strategy="nasbot"` builds the parts its strategy_config names (the same values as FAST
  here) and leaves the others (EI, the pool) to the preset: it proposes what the preset does;
  RAND's acquisition is its own, so a config cannot name one."""
  import ml_collections

  from nas_jax.wiring.parts import STRATEGIES

  from tests.search.test_strategy_contract import _OTMANN as named

  space, task = setup
  from_config = STRATEGIES["nasbot"](ml_collections.ConfigDict({"strategy_config": named}), space, task)
  obs = _observe(space, task, space.initial() + space.sample(jax.random.key(3), 3))
  proposals = []
  for s in (from_config, nasbot_lib.nasbot(space, task.goal, **FAST)):
    state, (p,) = s.propose(s.update(s.init(jax.random.key(0)), obs), 1, [])
    proposals.append((space.canonical_key(p), s.notes(state, p)["origin"]))
  assert proposals[0] == proposals[1] and proposals[0][1] == "ei"
  with pytest.raises(ValueError, match="multiple values for keyword argument 'acquisition'"):
    STRATEGIES["rand"](ml_collections.ConfigDict({"strategy_config": {"acquisition": "ei"}}), space, task)
