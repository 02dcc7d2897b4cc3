"""Model-based multi-fidelity (issue #20 item 3): the surrogate sees (architecture, fidelity).

The fidelity space's JSON and keys, the wrapped featurizers against their base (the same pairs at
one fidelity, exactly the rung term apart otherwise), `bo` on a fidelity space (distinct unseen
proposals, replay), and ASHA with model="joint" over BANANAS (strategy level, NB201 cells, the
contract suite's hash objective) and over NASBOT (through the config, synthetic f1: no data).
"""

import json
import os
import sys

import jax
import ml_collections
import numpy as np
import pytest

from nas_jax.acquisition import functions, optimizers
from nas_jax.features import featurizers
from nas_jax.search.strategies.initial import random_design
from nas_jax.surrogates import point_model
from nas_jax.features.fidelity import rung_lam, with_fidelity
from nas_jax.search.strategies import schedulers
from nas_jax.search.strategies.bo import bo
from nas_jax.search.strategies.presets import bananas
from nas_jax.spaces import cells
from nas_jax.spaces.conditional import conditional_space
from nas_jax.spaces.fidelity_space import FidelityPoint, fidelity_space
from nas_jax.spaces.morph_space import morph_space
from nas_jax.spaces.space import layer_graph_space
from nas_jax.wiring import config as config_lib
from nas_jax.wiring.config_files import load_config

sys.path.insert(0, os.path.dirname(__file__))
import test_schedulers as sched_tests  # noqa: E402  (its noisy hash objective and run loop)
import test_strategy_contract as contract  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIDELITIES = (1.0, 3.0, 9.0)
KEY = jax.random.key(5)


def _fp(point, f):
  return FidelityPoint(point, float(f))


def test_fidelity_space_json_round_trips_and_a_network_is_one_point_at_every_fidelity():
  base = cells.nb201_space()
  space = fidelity_space(base, FIDELITIES)
  assert (space.name, space.kind, space.fidelities, space.base) == (base.name, base.kind, FIDELITIES, base)
  points = space.sample(KEY, 3) + space.initial(2) + space.neighbours(space.initial(1)[0])[:2]
  assert all(isinstance(p, FidelityPoint) and p.fidelity == 9.0 for p in points)  # new points: full fidelity
  child, ok = space.mutate(_fp(points[0].point, 1.0), KEY)
  assert ok and child.fidelity == 9.0 and space.canonical_key(child) != space.canonical_key(points[0])
  low = _fp(points[0].point, 3.0)
  obj = space.to_json(low)
  assert obj == {"kind": "fidelity", "fidelity": 3.0, "point": base.to_json(points[0].point)}
  assert space.to_json(space.from_json(json.loads(json.dumps(obj)))) == obj
  assert space.canonical_key(low) == space.canonical_key(points[0]) == base.canonical_key(points[0].point)
  for bad, match in [
    ({**obj, "fidelity": 2.0}, "fidelity=2.0; allowed: 1, 3, 9"),
    (obj["point"], "expected {'kind': 'fidelity'"),
    ({**obj, "extra": 1}, "expected {'kind': 'fidelity'"),
  ]:
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace("{", r"\{")) as e:
      space.from_json(bad)
    assert "\n" not in str(e.value)
  with pytest.raises(ValueError, match="canonical_key: got a"):
    space.canonical_key(points[0].point)  # a base point is not a point of this space
  with pytest.raises(ValueError, match="fidelities=.*expected increasing"):
    fidelity_space(base, (3, 1))


def _mixed(space, n: int = 4) -> tuple[list, list]:
  """(train, candidates): n networks, the first at every fidelity, the others at one each, and
  two unseen networks at two fidelities."""
  nets = [p.point for p in space.sample(KEY, n + 1)]
  train = [_fp(nets[0], f) for f in FIDELITIES] + [_fp(p, FIDELITIES[i % 3]) for i, p in enumerate(nets[1:n])]
  return train, [_fp(nets[n], 1.0), _fp(nets[n], 9.0), _fp(nets[1], 9.0)]


def _rung(points) -> np.ndarray:
  return np.asarray([FIDELITIES.index(p.fidelity) for p in points])


def test_vector_pairs_append_the_rung_one_hot():
  base_space = cells.nb201_space()
  space = fidelity_space(base_space, FIDELITIES)
  f = featurizers.encoding("path")(base_space)
  w = with_fidelity(f, FIDELITIES)
  assert (w.name, w.pair_type, w.dim) == (f.name, f.pair_type, f.dim + 3)
  train, cands = _mixed(space)
  cache = w.init(train)
  assert len(cache) == len(train) - 2  # a network at three fidelities is one cache row
  (bt, bc), (wt, wc) = (
    f.pairs(f.init([p.point for p in train]), [p.point for p in train], [p.point for p in cands]),
    w.pairs(cache, train, cands),
  )
  for b, x, pts in ((bt.x1, wt.x1, train), (bc.x1, wc.x1, cands), (bt.x2, wt.x2, train), (bc.x2, wc.x2, train)):
    x = np.asarray(x)
    np.testing.assert_array_equal(x[:, : f.dim], np.asarray(b))
    np.testing.assert_array_equal(x[:, f.dim :], np.eye(3)[_rung(pts)])
  # features/to_pair agree with pairs
  np.testing.assert_array_equal(np.asarray(w.features(cache, cands)[0]), np.asarray(wc.x1))
  np.testing.assert_array_equal(np.asarray(w.to_pair(w.features(cache, cands), w.features(cache, train)).x1), wc.x1)


def _distance_case(name: str):
  if name == "otmann":
    base_space, options = layer_graph_space("mlp", max_layers=12), dict(nu_str=(0.1, 0.8))
  else:
    base_space, options = morph_space(width=8), {}
  return base_space, (featurizers.otmann(**options) if name == "otmann" else featurizers.edit())(base_space)


@pytest.mark.parametrize("name", ["otmann", "edit"])
def test_distance_pairs_add_lam_times_the_rungs_apart(name):
  base_space, f = _distance_case(name)
  space = fidelity_space(base_space, FIDELITIES)
  w = with_fidelity(f, FIDELITIES)
  train, cands = _mixed(space)
  base = lambda pts: [p.point for p in pts]
  bt, bc = f.pairs(f.init(base(train)), base(train), base(cands))
  wt, wc = w.pairs(w.init(train), train, cands)
  gap_t = np.abs(_rung(train)[:, None] - _rung(train)[None, :])
  gap_c = np.abs(_rung(cands)[:, None] - _rung(train)[None, :])
  if name == "otmann":
    for field in ("d", "d_bar"):
      b_t, b_c = np.asarray(getattr(bt, field)), np.asarray(getattr(bc, field))
      lam = np.asarray([b_t[k][b_t[k] > 0].mean() for k in range(len(b_t))])[:, None, None]  # per nu_str
      assert np.all(lam > 0) and lam.shape[0] == 2
      np.testing.assert_allclose(np.asarray(getattr(wt, field)), b_t + lam * gap_t, rtol=1e-6)
      np.testing.assert_allclose(np.asarray(getattr(wc, field)), b_c + lam * gap_c, rtol=1e-6)
  else:
    b_t, b_c = np.asarray(bt.sq_dist, np.float64), np.asarray(bc.sq_dist, np.float64)
    d = np.sqrt(b_t)
    lam = d[d > 0].mean()
    np.testing.assert_allclose(np.asarray(wt.sq_dist), b_t + (lam * gap_t) ** 2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(wc.sq_dist), b_c + (lam * gap_c) ** 2, rtol=1e-5, atol=1e-6)
  same = gap_t == 0  # at one fidelity the wrapped pairs are the base's
  first = np.asarray(wt.d if name == "otmann" else wt.sq_dist)
  np.testing.assert_allclose(first[..., same], np.asarray(bt.d if name == "otmann" else bt.sq_dist)[..., same])
  assert rung_lam(np.zeros((3, 3))) == 1.0  # one network only: one rung apart is 1


def test_unwrappable_featurizers_and_optimisers_that_build_points_are_refused():
  cond = conditional_space(max_depth=2)
  with pytest.raises(ValueError, match="with_fidelity: featurizer 'arc' gives ArcPair"):
    with_fidelity(featurizers.arc()(cond), FIDELITIES)
  space = fidelity_space(cells.nb201_space(), FIDELITIES)
  for optimiser in (optimizers.enumeration(), optimizers.tree()):
    with pytest.raises(ValueError, match=f"bo: optimiser '{optimiser.name}' builds points itself"):
      bo(
        space,
        featurizer=featurizers.encoding("path"),
        surrogate=point_model.gp(),
        acquisition=functions.ei(),
        optimiser=optimiser,
      )


def _gp_bo(space, surrogate: str):
  return bo(
    space,
    featurizer=featurizers.encoding("path"),
    surrogate=point_model.gp(n_starts=2, fit_steps=10) if surrogate == "gp" else point_model.gp_fixed(kernel="hamming"),
    acquisition=functions.ei(),
    optimiser=optimizers.mutation_search(n_candidates=20, attempts_per_parent=20),
    initial=random_design(n=3),
  )


@pytest.mark.parametrize(
  "surrogate",
  ["gp_fixed", pytest.param("gp", marks=pytest.mark.slow)],  # the fitted ARD GP: 30 s
)
def test_gp_bo_on_a_fidelity_space_proposes_unseen_networks_at_full_fidelity_and_replays(surrogate):
  space = fidelity_space(cells.nb201_space(), (1.0, 9.0))
  strategy = _gp_bo(space, surrogate)
  state, journal, seen = strategy.init(KEY), [], []
  for t in range(5):
    state, (point,) = strategy.propose(state, 1, [])
    assert point.fidelity == 9.0 and space.canonical_key(point) not in seen
    seen.append(space.canonical_key(point))
    lows = [_fp(point.point, 1.0)] if t % 2 == 0 else []  # some networks also seen at fidelity 1
    obs = contract._observe(space, [*lows, point], len(journal), failed=t == 1)
    journal += obs
    state = strategy.update(state, obs)
  assert {p.fidelity for p in state.history.points} == {1.0, 9.0}
  assert state.cache is not None and len(state.cache) == 5  # one row per network
  after, live = strategy.propose(state, 2, [])
  _, again = strategy.propose(strategy.update(strategy.init(KEY), journal), 2, [])
  assert [space.to_json(p) for p in again] == [space.to_json(p) for p in live]
  keys = [space.canonical_key(p) for p in live]
  assert len(set(keys)) == 2 and not set(keys) & set(seen)
  assert all(strategy.notes(after, p)["origin"] == "ei" for p in live)


def test_asha_joint_over_bananas_models_every_fidelity_and_replays():
  base = cells.nb201_space()
  # The contract suite's small options, one point per fit (replay is exact) and shorter training.
  options = {**contract.CASES["bananas"].options, "k": 1, "epochs": 10}
  sampler = bananas(fidelity_space(base, FIDELITIES), "max", **options)
  strategy = schedulers.asha(sampler, base, "max", FIDELITIES, model="joint")
  state, journal, proposals = sched_tests._run(strategy, base, 14, failed=(2,))
  keys = [(base.canonical_key(p.point), p.fidelity) for p in proposals]
  assert len(set(keys)) == len(keys) and {p.fidelity for p in proposals} == set(FIDELITIES)
  assert {p.fidelity for p in state.sampler.history.points} == set(FIDELITIES)  # the sampler saw every rung
  assert len(state.sampler.history) == len(journal)
  assert any(o.info["strategy"].get("origin") == "its" for o in journal)  # the model chose some networks
  replayed = strategy.update(strategy.init(sched_tests.KEY), journal)
  _, live = strategy.propose(state, 2, [])
  _, again = strategy.propose(replayed, 2, [])
  assert [(base.to_json(p.point), p.fidelity) for p in again] == [(base.to_json(p.point), p.fidelity) for p in live]


def test_joint_needs_a_sampler_on_the_fidelity_space():
  base = cells.nb201_space()
  sampler = bananas(base, "max", **contract.CASES["bananas"].options)
  strategy = schedulers.asha(sampler, base, "max", FIDELITIES, model="joint")
  with pytest.raises(ValueError, match="model='joint' but the sampler proposed a"):
    strategy.propose(strategy.init(KEY), 1, [])
  with pytest.raises(ValueError, match="scheduler: model='both'; choose one of: fidelity, joint"):
    schedulers.asha(sampler, base, "max", FIDELITIES, model="both")


def _config(workdir, budget: int):
  c = load_config(os.path.join(ROOT, "configs", "random_synthetic.py"))
  c.strategy = "nasbot"
  c.strategy_config = ml_collections.ConfigDict(contract.CASES["nasbot"].options)
  c.task.fidelities = "1,3,9"
  c.scheduler = "asha"
  c.scheduler_config.model = "joint"
  c.budget, c.workdir = budget, str(workdir)
  return c


def _strip(obs):
  return [
    (o.trial_id, json.dumps(o.arch_json, sort_keys=True), o.fidelity, o.value, o.info.get("continues")) for o in obs
  ]


@pytest.mark.slow  # NASBOT's OTMANN GP on CNNs, three searches (about 40 s)
def test_asha_joint_over_nasbot_through_the_config_resumes_to_the_same_journal(tmp_path):
  whole = config_lib.search_from_config(_config(tmp_path / "whole", 16), progress=False)
  assert len(whole) == 16 and {o.fidelity for o in whole} == set(FIDELITIES)
  assert any(o.info["strategy"].get("origin") == "ei" for o in whole)  # the GP chose some networks
  config_lib.search_from_config(_config(tmp_path / "cut", 9), progress=False)
  resumed = config_lib.search_from_config(_config(tmp_path / "cut", 16), progress=False)
  assert _strip(resumed) == _strip(whole)
  _, _, strategy = config_lib.build_search(_config(tmp_path / "whole", 16))
  state = strategy.update(strategy.init(jax.random.key(0)), whole)
  assert {p.fidelity for p in state.sampler.history.points} == set(FIDELITIES)


def test_scheduler_config_model_is_checked_in_one_line(tmp_path):
  c = _config(tmp_path / "bad", 4)
  c.scheduler_config.model = "both"
  config_lib.check_search_config(c)  # the shape is right: the scheduler checks its options
  with pytest.raises(ValueError, match="scheduler: model='both'; choose one of: fidelity, joint"):
    config_lib.build_search(c)
  c.scheduler_config.model, c.scheduler_config.eta = "joint", 1
  with pytest.raises(ValueError, match="scheduler: eta=1; expected an integer >= 2"):
    config_lib.build_search(c)


def test_the_joint_presets_set_the_model():
  path = os.path.join(ROOT, "configs", "multifidelity_nb201.py")
  for arg in ("asha_bananas+joint", "asha_nasbot+joint+smoke"):
    c = load_config(f"{path}:{arg}")
    assert c.scheduler == "asha" and c.scheduler_config.model == "joint"
  assert load_config(f"{path}:asha_bananas").scheduler_config.model == "fidelity"
  with pytest.raises(ValueError, match=r"\+joint or \+model with a scheduler"):
    load_config(f"{path}:bananas+joint")
