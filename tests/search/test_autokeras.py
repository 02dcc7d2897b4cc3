"""The Auto-Keras search end to end (Auto-Keras Sec. 3-4): provenance in the journal,
weights on disk, warm starts that replay exactly, resume, and the UCB on the cost scale."""

import json
import os
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from nas_jax.arch import morphism
from nas_jax.arch.morph_point import MorphPoint, weights_id
from nas_jax.features import bourgain
from nas_jax.features import edit_distance as ed
from nas_jax.features import featurizers
from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.acquisition import optimizers
from nas_jax.search.strategies import presets as ak
from nas_jax.spaces.morph_space import morph_space
from nas_jax.surrogates import point_model
from nas_jax.tasks import morph_task
from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPACE = morph_space(width=8)


def smoke_config(workdir, budget=4):
  c = config_files.load_config(os.path.join(ROOT, "configs", "autokeras_cnn_digits.py:smoke"))
  c.workdir, c.budget = str(workdir), budget
  return c


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
  """One smoke search of 3 networks, then resumed to 4 (the weights must still be there)."""
  workdir = tmp_path_factory.mktemp("ak")
  config_lib.search_from_config(smoke_config(workdir, 3), progress=False)
  first = journal.replay(os.path.join(workdir, loop.JOURNAL))
  config_lib.search_from_config(smoke_config(workdir, 4), progress=False)
  return workdir, first, journal.replay(os.path.join(workdir, loop.JOURNAL))


def test_journal_records_parents_ops_and_weights(searched):
  workdir, _, obs = searched
  assert len(obs) == 4 and all(o.ok for o in obs)
  by_weights = {o.info["task"]["weights"]: o for o in obs}
  children = [o for o in obs if "morph" in o.arch_json]
  assert children, "after the initial networks, proposals come from the tree search"
  for o in obs:
    stored = f"{weights_id(o.arch_json)}-{o.info['seed']}"  # only the journal knows the seed
    assert o.info["task"]["weights"] == stored
    assert os.path.exists(os.path.join(workdir, "weights", f"{stored}.msgpack"))
  for o in children:
    morph = o.arch_json["morph"]
    parent = by_weights[morph["parent"]]
    assert parent.trial_id == morph["parent_trial"] < o.trial_id
    assert o.info["task"]["warm_start"] is True
    ops = [morphism.Op.from_json(x) for x in morph["ops"]]
    replayed = morphism.replay(SPACE.from_json(parent.arch_json).arch, ops)
    assert replayed.to_json() == SPACE.from_json(o.arch_json).arch.to_json()
    assert 1 <= len(ops) <= 2  # the smoke config's max_ops


def test_resume_keeps_every_finished_result(searched):
  _, first, obs = searched
  assert [o.to_json() for o in obs[:3]] == [o.to_json() for o in first]


def test_missing_parent_weights_fail_with_a_clear_error(tmp_path):
  parent = SPACE.initial()[0]
  child = MorphPoint(
    morphism.apply_op(parent.arch, morphism.Op("wide", 1)),
    weights_id(parent.arch.to_json()),
    0,
    (morphism.Op("wide", 1),),
  )
  task = config_lib.build_search(smoke_config(tmp_path))[1]
  with pytest.raises(FileNotFoundError, match="no weights .* for parent"):
    task.evaluate(SPACE.to_json(child), 0)


def test_space_json_round_trip_and_descriptor_keys():
  g0 = SPACE.initial()[0]
  op = morphism.Op("deep", 1, kernel=5)
  child = MorphPoint(morphism.apply_op(g0.arch, op), "abc", 3, (op,))
  back = SPACE.from_json(json.loads(json.dumps(SPACE.to_json(child))))
  assert back.parent == "abc" and back.parent_trial == 3 and back.ops == (op,)
  assert back.arch.to_json() == child.arch.to_json()
  other = MorphPoint(morphism.apply_op(g0.arch, morphism.Op("deep", 1, kernel=3)))
  assert SPACE.canonical_key(other) == SPACE.canonical_key(child)  # kernel sizes are invisible to d
  with pytest.raises(ValueError, match="morph: .* expected an object with keys parent, parent_trial, ops"):
    SPACE.from_json({**SPACE.to_json(child), "morph": {"parent": "abc"}})


def test_ucb_is_the_paper_lcb_on_cost():
  """score = 1 - (mu - beta sigma), with mu, sigma of the zero-mean GP on costs 1 - score over the
  Bourgain coordinates (Auto-Keras Sec. 3.1-3.2), recomputed here in numpy."""
  g0, g1 = (p.arch for p in SPACE.initial())
  cand = morphism.apply_op(g0, morphism.Op("wide", 1))
  scores = np.array([0.9, 0.8])
  model = point_model.gp_fixed(kernel="matern12", target_offset=1.0)(featurizers.edit()(SPACE))
  history = [MorphPoint(g0), MorphPoint(g1)]
  fitted = point_model.fit(model, jax.random.key(0), model.featurizer.init(history), history, scores, 2)

  def score(cands):
    pred, _ = point_model.predict(fitted, cands)
    return np.asarray(pred.mean + 2.576 * pred.std)  # the bo strategy's "ucb" with kappa = beta

  descs = [ed.arch_descriptor(a, 10) for a in (g0, g1, cand)]
  d = ed.edit_distances(descs)
  anchors = bourgain.bourgain_anchors(jax.random.key(123), 2)
  phi = bourgain.bourgain_embed(d[:, :2], anchors)
  k = np.exp(-np.linalg.norm(phi[:, None] - phi[None], axis=-1))
  w = np.linalg.solve(k[:2, :2] + 1e-10 * np.eye(2), k[:2, 2])
  mu, sigma = w @ (1 - scores), np.sqrt(1 - w @ k[:2, 2])
  assert d[0, 1] == pytest.approx(7.0)
  np.testing.assert_allclose(score([MorphPoint(cand)]), [1 - (mu - 2.576 * sigma)], rtol=1e-6)
  np.testing.assert_allclose(score([MorphPoint(g0)]), [0.9], atol=1e-4)  # at a history point: its score


def observed(strategy):
  """The strategy's state after G0 and G1 were evaluated (accuracies 0.9 and 0.8)."""
  obs = [
    Observation(trial_id=i, arch_json=SPACE.to_json(p), value=v, status=Status.OK, error="", seconds=1.0, worker="w")
    for i, (p, v) in enumerate(zip(SPACE.initial(), (0.9, 0.8)))
  ]
  return strategy.update(strategy.init(jax.random.key(0)), obs)


def test_proposals_skip_pending_and_are_deterministic():
  g0, g1 = SPACE.initial()
  strategy = ak.autokeras(SPACE, "max", max_ops=2)
  state = observed(strategy)
  _, (a,) = strategy.propose(state, 1, [])
  _, (b,) = strategy.propose(state, 1, [])
  assert SPACE.to_json(a) == SPACE.to_json(b)
  _, (c,) = strategy.propose(state, 1, [a])
  assert SPACE.canonical_key(c) != SPACE.canonical_key(a)
  assert a.parent in (weights_id(g0.arch.to_json()), weights_id(g1.arch.to_json()))
  with pytest.raises(ValueError, match="target='errors'; allowed: cost, accuracy"):
    ak.autokeras(SPACE, "max", target="errors")


@pytest.mark.slow  # fits NASBOT's OTMANN GP: ~70 s on 2 loaded cores
def test_cross_overs_propose_new_networks():
  """Item 6: the tree search on NASBOT's OTMANN GP (warm-startable children) and NASBOT's EA on
  the edit-distance UCB (mutants without a parent, trained from scratch)."""
  nasbot_gp = dict(featurizer=featurizers.otmann(), surrogate=point_model.gp(n_starts=8, fit_steps=100))
  tree = ak.autokeras(SPACE, "max", max_ops=2, **nasbot_gp)
  _, (a,) = tree.propose(observed(tree), 1, [])
  assert a.parent is not None and 1 <= len(a.ops) <= 2
  ea = ak.autokeras(SPACE, "max", optimiser=optimizers.ea(n_ea=20, pool=False))
  state = observed(ea)
  _, (b,) = ea.propose(state, 1, [])
  assert b.parent is None and SPACE.canonical_key(b) not in state.history.keys


def test_saved_network_round_trips(tmp_path):
  g0 = SPACE.initial()[0].arch
  variables = {"params": {"1_conv3": {"conv": {"kernel": np.ones((3, 3, 1, 8), np.float32)}}}}
  name = morph_task.save_network(str(tmp_path), g0.to_json(), variables, 7)
  assert name == f"{weights_id(g0.to_json())}-7"
  arch, back = morph_task.load_network(str(tmp_path), name)
  assert arch.to_json() == g0.to_json()
  np.testing.assert_array_equal(back["params"]["1_conv3"]["conv"]["kernel"], 1.0)
  # Another evaluation of the same network (a resumed trial has another seed) gets its own file.
  other = morph_task.save_network(str(tmp_path), g0.to_json(), {"params": {}}, 8)
  assert other != name and morph_task.load_network(str(tmp_path), name)[1]["params"]
  with pytest.raises(FileNotFoundError, match="no weights"):
    morph_task.load_network(str(tmp_path), weights_id(g0.to_json()))


def test_children_name_the_weights_their_parent_journalled():
  strategy = ak.autokeras(SPACE, "max", max_ops=2)
  obs = [
    Observation(
      trial_id=i,
      arch_json=SPACE.to_json(p),
      value=v,
      status=Status.OK,
      error="",
      seconds=1.0,
      worker="w",
      info={"seed": 5 + i, "task": {"weights": f"stored-{i}"}},
    )
    for i, (p, v) in enumerate(zip(SPACE.initial(), (0.9, 0.8)))
  ]
  _, (a,) = strategy.propose(strategy.update(strategy.init(jax.random.key(0)), obs), 1, [])
  assert a.parent == f"stored-{a.parent_trial}"


@pytest.mark.slow
def test_kill_9_then_resume_keeps_results_and_warm_starts(tmp_path):
  """A search killed with kill -9 after its third network resumes: nothing recorded is lost or
  retrained, and the networks proposed after the resume still warm-start from stored weights."""
  workdir = tmp_path / "run"
  cmd = [
    sys.executable,
    "launch/search.py",
    "--config=configs/autokeras_cnn_digits.py:smoke",
    f"--config.workdir={workdir}",
    "--config.budget=6",
    "--noprogress",
  ]
  p = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  path, end = workdir / loop.JOURNAL, time.monotonic() + 600
  while not path.exists() or path.read_bytes().count(b"\n") < 3:
    assert p.poll() is None and time.monotonic() < end, "the search ended or stalled before the kill"
    time.sleep(0.1)
  os.kill(p.pid, signal.SIGKILL)
  p.wait()
  before = journal.replay(str(path))
  done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
  assert done.returncode == 0, done.stderr[-3000:]
  after = journal.replay(str(path))
  assert [o.to_json() for o in after[: len(before)]] == [o.to_json() for o in before]
  assert len(after) == 6 and all(o.ok for o in after)
  assert any(o.info["task"]["warm_start"] for o in after[len(before) :])
