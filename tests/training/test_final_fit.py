"""Final training (NASBOT Sec. 5: the best models trained for longer, then tested): the merged
split, the schedule's default, the top-K choice, a layer graph trained to the end and continued
from a checkpoint as if never stopped, warm starts, and the orchestration's journal: a run
interrupted after a finished seed and rerun repeats nothing and writes the uninterrupted run's
final.json."""

import dataclasses
import json
import math
import os

import jax
import numpy as np
import pytest

from nas_jax.experiments import final_training
from nas_jax.experiments.report import Run
from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.training import checkpoints, datasets, saved_model, specialised
from nas_jax.training.final_fit import (
  FinalFit,
  final_fit_layer_graph,
  final_train_config,
  merge_train_val,
)
from nas_jax.training.train_config import TrainConfig
from nas_jax.training.conditional import final_fit_conditional
from nas_jax.training.nb201_training import final_fit_nb201
from nas_jax.wiring import config_files
from nas_jax.wiring import final as final_lib
from nas_jax.wiring.final import FinalFamily, NothingToTrain

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mlp(units=8):
  return {
    "kind": "mlp",
    "layers": [{"label": "ip"}, {"label": "relu", "units": units}, {"label": "linear"}, {"label": "op"}],
    "edges": [[0, 1], [1, 2], [2, 3]],
  }


CONFIG = TrainConfig(epochs=2, batch_size=32, learning_rate=3e-3, patience=2)


@pytest.fixture(scope="module")
def data():
  return merge_train_val(datasets.diabetes())


def test_merge_train_val_trains_on_train_and_validation_and_tests_on_test():
  d = datasets.diabetes()
  m = merge_train_val(d)
  np.testing.assert_array_equal(m.x_train, np.concatenate([d.x_train, d.x_val]))
  np.testing.assert_array_equal(m.y_train, np.concatenate([d.y_train, d.y_val]))
  for a, b in ((m.x_val, d.x_test), (m.y_val, d.y_test), (m.x_test, d.x_test), (m.y_test, d.y_test)):
    np.testing.assert_array_equal(a, b)
  assert (m.task, m.num_classes, m.name) == (d.task, d.num_classes, d.name)
  with pytest.raises(TypeError, match="^data: got a dict; expected a datasets.Dataset$"):
    merge_train_val({})


def test_the_final_schedule_has_no_early_stopping_and_the_papers_ratio():
  assert final_train_config(CONFIG, 5) == CONFIG._replace(epochs=5, patience=0)
  # NASBOT Sec. 5: 60K search and 150K final iterations, 2.5 x, rounded half up
  assert [final_training.default_epochs(e) for e in (1, 2, 8, 10, 50)] == [3, 5, 20, 25, 125]
  for bad in (0, -1, 2.0, True):
    with pytest.raises(ValueError, match=r"^epochs: .*; expected an integer >= 1$"):
      final_train_config(CONFIG, bad)
    with pytest.raises(ValueError, match=r"^checkpoint_every: .*; expected an integer >= 1$"):
      final_train_config(CONFIG, 5, bad)


def _obs(trial, arch, value, status=Status.OK, fidelity=None):
  return Observation(trial, arch, value, status, "" if status == Status.OK else "boom", 1.0, "w", fidelity=fidelity)


def _run(goal, observations, config=None):
  return Run("W", "t", goal, config, None, observations)


def test_top_k_follows_the_goal_and_skips_failures_duplicates_and_low_fidelities():
  a, b, c, d = mlp(8), mlp(16), mlp(32), mlp(64)
  obs = [
    _obs(0, a, 0.5),
    _obs(1, b, None, Status.FAILED),
    _obs(2, a, 0.9),  # a again, better: a's best row stands for it
    _obs(3, c, 0.7),
    _obs(4, d, 0.2),
    _obs(5, b, 0.7),  # ties c: the earlier trial first
  ]
  top = final_training.top_networks(_run("max", obs), 3)
  assert [o.trial_id for o in top] == [2, 3, 5]
  assert [o.trial_id for o in final_training.top_networks(_run("min", obs), 3)] == [4, 0, 3]
  assert [o.trial_id for o in final_training.top_networks(_run("max", obs), 10)] == [2, 3, 5, 4]
  # with fidelities, only full-fidelity values compete (a value after fewer epochs is not comparable)
  low = [_obs(0, a, 0.99, fidelity=1.0), _obs(1, b, 0.5, fidelity=3.0), _obs(2, c, 0.6, fidelity=3.0)]
  config = {"task": {"fidelities": "1,3"}}
  assert [o.trial_id for o in final_training.top_networks(_run("max", low, config), 3)] == [2, 1]
  # an Auto-Keras network reached from two parents is one network
  e1, e2 = {**a, "morph": {"parent": "x", "ops": []}}, {**a, "morph": {"parent": "y", "ops": []}}
  assert [o.trial_id for o in final_training.top_networks(_run("max", [_obs(0, e1, 0.3), _obs(1, e2, 0.4)]), 2)] == [1]


def test_a_layer_graph_trains_all_epochs_and_scores_the_test_split_after_the_last(tmp_path, data):
  fit = final_fit_layer_graph(mlp(), data, 3, jax.random.key(0), train_config=CONFIG)
  assert isinstance(fit, FinalFit) and math.isfinite(fit.test_metric) and fit.seconds > 0
  assert fit.params == 10 * 8 + 8 + 8 + 1
  assert fit.spec == saved_model.ModelSpec("layer_graph", mlp(), (10,), "regression", 1, {})
  # the metric is the test MSE of the returned variables
  loaded = saved_model.load_model(saved_model.save_model(str(tmp_path / "model"), fit.spec, fit.variables))
  mse = float(np.mean((loaded.predict(data.x_test) - data.y_test) ** 2))
  assert mse == pytest.approx(fit.test_metric, rel=1e-4)
  again = final_fit_layer_graph(mlp(), data, 3, jax.random.key(0), train_config=CONFIG)
  assert again.test_metric == fit.test_metric  # deterministic for the key
  other = final_fit_layer_graph(mlp(), data, 3, jax.random.key(1), train_config=CONFIG)
  assert other.test_metric != fit.test_metric


def test_a_run_killed_after_a_checkpoint_continues_to_the_uninterrupted_result(tmp_path, monkeypatch, data):
  whole = final_fit_layer_graph(mlp(), data, 3, jax.random.key(5), train_config=CONFIG)
  path = str(tmp_path / "ckpt.msgpack")
  save = checkpoints.save

  def save_then_die(*args):
    save(*args)
    raise KeyboardInterrupt  # killed right after the first epoch's checkpoint

  monkeypatch.setattr(checkpoints, "save", save_then_die)
  with pytest.raises(KeyboardInterrupt):
    final_fit_layer_graph(mlp(), data, 3, jax.random.key(5), train_config=CONFIG, checkpoint_path=path)
  monkeypatch.setattr(checkpoints, "save", save)
  continued_from = []
  train_until = specialised.train_until

  def spy(*args, resume=None, **kwargs):
    continued_from.append(0 if resume is None else resume.epochs)
    return train_until(*args, resume=resume, **kwargs)

  monkeypatch.setattr(specialised, "train_until", spy)
  resumed = final_fit_layer_graph(mlp(), data, 3, jax.random.key(5), train_config=CONFIG, checkpoint_path=path)
  assert continued_from == [1, 2]  # epoch 1 came from the checkpoint; epochs 2 and 3 were trained
  assert resumed.test_metric == pytest.approx(whole.test_metric, rel=1e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), resumed.variables, whole.variables)
  # another key's run does not take this checkpoint
  continued_from.clear()
  final_fit_layer_graph(mlp(), data, 3, jax.random.key(6), train_config=CONFIG, checkpoint_path=path)
  assert continued_from[0] == 0


def test_a_warm_start_begins_at_the_given_variables(data):
  trained = final_fit_layer_graph(mlp(), data, 2, jax.random.key(0), train_config=CONFIG)
  still = CONFIG._replace(learning_rate=1e-12)  # training that moves nothing shows the start
  warm = final_fit_layer_graph(mlp(), data, 1, jax.random.key(3), train_config=still, init_variables=trained.variables)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), warm.variables, trained.variables)
  assert warm.test_metric == pytest.approx(trained.test_metric, rel=1e-5)


# The orchestration, with a stand-in trainer: which (network, seed) it trains, what it journals.


def _search_workdir(path, values=(0.3, 0.1, 0.2), goal="min"):
  os.makedirs(path)
  for i, v in enumerate(values):
    journal.append(os.path.join(path, loop.JOURNAL), _obs(i, mlp(8 * (i + 1)), v))
  with open(os.path.join(path, "search.json"), "w") as f:
    json.dump({"task": "t", "goal": goal}, f)
  with open(os.path.join(path, loop.CONFIG), "w") as f:
    json.dump({"space": {"name": "layer_graph", "kind": "mlp"}, "task": {"name": "train", "epochs": 4}}, f)
  return str(path)


class _Fake:
  """A family whose `fit` scores a network by its width and seed, and dies at call `die_at`."""

  def __init__(self, data, die_at=None):
    self.calls, self.die_at, self.data = [], die_at, data

  def family(self, *args):
    return FinalFamily("layer_graph", self.data, self.fit, 4)

  def fit(self, point_json, data, epochs, key, *, checkpoint_path, init_variables):
    self.calls.append((point_json["layers"][1]["units"], int(jax.random.key_data(key)[-1]), epochs))
    if len(self.calls) == self.die_at:
      raise KeyboardInterrupt
    units = point_json["layers"][1]["units"]
    spec = saved_model.ModelSpec("layer_graph", point_json, (10,), "regression", 1, {})
    return FinalFit(units / 100 + int(jax.random.key_data(key)[-1]) / 1000, {}, spec, units, 0.5)


@pytest.fixture
def fake_models(monkeypatch):
  def save(directory, spec, variables):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "model.json"), "w") as f:
      json.dump(spec.point, f)
    return directory

  monkeypatch.setattr(saved_model, "save_model", save)


def _strip(entries, workdir):
  return [{**e, "model_path": os.path.relpath(e["model_path"], workdir)} for e in entries]


def test_an_interrupted_final_training_repeats_nothing_and_ends_as_an_uninterrupted_one(
  tmp_path, monkeypatch, fake_models, data
):
  whole_dir, cut_dir = _search_workdir(tmp_path / "whole"), _search_workdir(tmp_path / "cut")
  whole = _Fake(data)
  monkeypatch.setattr(final_training, "final_family", whole.family)
  done = final_training.final_train(whole_dir, top_k=2, seeds=2)
  assert done.epochs == 10  # 2.5 x the search's 4
  assert whole.calls == [(16, 0, 10), (16, 1, 10), (24, 0, 10), (24, 1, 10)]  # goal min: 0.1 then 0.2

  cut = _Fake(data, die_at=3)
  monkeypatch.setattr(final_training, "final_family", cut.family)
  with pytest.raises(KeyboardInterrupt):
    final_training.final_train(cut_dir, top_k=2, seeds=2)
  rows = journal.replay(os.path.join(cut_dir, "final", loop.JOURNAL))
  assert [(r.info["rank"], r.info["seed"]) for r in rows] == [(1, 0), (1, 1)]
  rerun = _Fake(data)
  monkeypatch.setattr(final_training, "final_family", rerun.family)
  again = final_training.final_train(cut_dir, top_k=2, seeds=2)
  assert rerun.calls == [(24, 0, 10), (24, 1, 10)]  # only what the kill left undone
  with open(os.path.join(cut_dir, "final", "final.json")) as f:
    assert json.load(f) == again.entries
  assert _strip(again.entries, cut_dir) == _strip(done.entries, whole_dir)
  e = done.entries[0]
  assert list(e) == list(final_training.FIELDS)
  assert e["arch_json"] == mlp(16) and e["search_value"] == 0.1 and e["params"] == 16
  assert e["seeds"] == [0.16, 0.161] and e["test_mean"] == pytest.approx(0.1605)
  assert e["test_sd"] == pytest.approx(np.std([0.16, 0.161], ddof=1)) and e["seconds"] == 1.0
  assert e["model_path"] == os.path.join(whole_dir, "final", "models", "1-0")
  # a third run trains nothing; more seeds and networks add only theirs
  final_training.final_train(cut_dir, top_k=2, seeds=2)
  assert rerun.calls == [(24, 0, 10), (24, 1, 10)]
  final_training.final_train(cut_dir, top_k=3, seeds=3)
  assert rerun.calls[2:] == [(16, 2, 10), (24, 2, 10), (8, 0, 10), (8, 1, 10), (8, 2, 10)]
  with pytest.raises(ValueError, match=r"holds the final training of another network at rank 1 or of 10 epochs"):
    final_training.final_train(cut_dir, top_k=1, epochs=3)


def test_bad_arguments_and_searches_without_networks_get_one_line(tmp_path, monkeypatch, data):
  workdir = _search_workdir(tmp_path / "w")
  monkeypatch.setattr(final_training, "final_family", _Fake(data).family)
  for kwargs, says in (
    ({"top_k": 0}, r"^top_k: 0; expected an integer >= 1$"),
    ({"top_k": 1, "epochs": 0}, r"^epochs: 0; expected an integer >= 1$"),
    ({"top_k": 1, "seeds": 0}, r"^seeds: 0; expected an integer >= 1$"),
  ):
    with pytest.raises(ValueError, match=says):
      final_training.final_train(workdir, **kwargs)
  with pytest.raises(ValueError, match=r"^workdir: '.*empty' has no journal.jsonl; expected the --config.workdir"):
    final_training.final_train(str(tmp_path / "empty"), top_k=1)
  failed = str(tmp_path / "failed")
  os.makedirs(failed)
  journal.append(os.path.join(failed, loop.JOURNAL), _obs(0, mlp(), None, Status.FAILED))
  for name, text in (("search.json", {"task": "t", "goal": "min"}), (loop.CONFIG, {"space": {}, "task": {}})):
    with open(os.path.join(failed, name), "w") as f:
      json.dump(text, f)
  with pytest.raises(ValueError, match=r"^workdir: '.*failed' holds no successful evaluation at full fidelity"):
    final_training.final_train(failed, top_k=1)


def test_a_search_with_nothing_to_train_says_why_and_trains_nothing(tmp_path, monkeypatch):
  workdir = _search_workdir(tmp_path / "w", goal="max")
  monkeypatch.setattr(final_training, "final_family", lambda *a: NothingToTrain("nothing to train: synthetic"))
  out = final_training.final_train(workdir, top_k=2)
  assert out.why == "nothing to train: synthetic" and out.entries == [] and not os.path.exists(tmp_path / "w" / "final")
  table = lambda arch: {"test": arch["layers"][1]["units"] + 0.5, "params": 7}
  monkeypatch.setattr(final_training, "final_family", lambda *a: NothingToTrain("table", table))
  out = final_training.final_train(workdir, top_k=2)
  assert [(e["search_value"], e["test_mean"], e["params"]) for e in out.entries] == [(0.3, 8.5, 7), (0.2, 24.5, 7)]
  assert out.entries[0]["seeds"] == [] and out.entries[0]["model_path"] is None
  lines = final_training.format_table(out).splitlines()
  assert len(lines) == 3 and lines[1].split()[:3] == ["1", "0.3000", "8.5000"]


# Which trainer a search's config means (nas_jax.wiring.final).


def _config(spec):
  return json.loads(config_files.load_config(os.path.join(ROOT, spec)).to_json_best_effort())


def test_each_config_gets_its_familys_trainer_on_the_final_split(tmp_path):
  digits = datasets.digits("cnn")
  cnn = final_lib.final_family(_config("configs/nasbot_cnn_digits.py:smoke"), "W")
  assert (cnn.family, cnn.search_epochs, cnn.warm_start) == ("layer_graph", 1, None)
  assert cnn.fit.func is final_fit_layer_graph and cnn.fit.keywords["train_config"].epochs == 1
  assert cnn.data.x_train.shape == (len(digits.x_train) + len(digits.x_val), 8, 8, 1)
  mlp_family = final_lib.final_family(_config("configs/nasbot_mlp_diabetes.py"), "W")
  assert mlp_family.search_epochs == 50 and mlp_family.data.task == "regression"
  morph = final_lib.final_family(_config("configs/autokeras_cnn_digits.py:smoke"), str(tmp_path))
  assert morph.family == "layer_graph" and morph.fit.keywords["train_config"].patience == 3
  with pytest.raises(FileNotFoundError, match=f"no weights {tmp_path}/weights/abc-1.msgpack"):
    morph.warm_start(dataclasses.replace(_obs(0, mlp(), 0.5), info={"task": {"weights": "abc-1"}}))
  assert morph.warm_start(_obs(0, mlp(), 0.5)) is None  # no weights kept (a diverged network)
  cond = final_lib.final_family(_config("configs/arc_conditional_digits.py:smoke"), "W")
  assert cond.family == "conditional" and cond.fit.func is final_fit_conditional
  assert cond.fit.keywords == {"max_depth": 3} and cond.data.x_train.shape[1] == 64
  synthetic = final_lib.final_family(_config("configs/random_synthetic.py:smoke"), "W")
  assert isinstance(synthetic, NothingToTrain) and synthetic.lookup is None
  with pytest.raises(ValueError, match=r"^dataset: 'x.npz'; only a search of NB201 cells trains on a dataset"):
    final_lib.final_family(_config("configs/nasbot_cnn_digits.py:smoke"), "W", "x.npz")
  with pytest.raises(ValueError, match=r"^config.task.name: 'lookup' has no final training; known: train, "):
    final_lib.final_family({"task": {"name": "lookup"}}, "W")
  with pytest.raises(ValueError, match=r"^workdir: 'W' has no config.json with a task"):
    final_lib.final_family(None, "W")


def test_an_nb201_search_looks_its_cells_up_or_trains_them_on_given_images(tmp_path):
  cell = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|"
  table = tmp_path / "t.csv"
  table.write_text(f"arch_str,cifar10_valid_acc,cifar10_test_acc,params_mb_cifar10\n{cell},90,91.5,0.25\n")
  config = {"space": {"name": "nb201"}, "task": {"name": "nb201", "path": str(table), "dataset": "cifar10"}}
  config["task"]["report_metric"] = "test"
  looked = final_lib.final_family(config, "W")
  assert isinstance(looked, NothingToTrain) and looked.why.startswith("nothing to train: ")
  assert looked.lookup({"kind": "nb201", "arch_str": cell}) == {"test": 91.5, "params": 250000}
  with pytest.raises(ValueError, match="is no cell of the NB201 table"):
    looked.lookup({"kind": "nb201", "arch_str": "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"})
  x, y = np.random.default_rng(0).normal(size=(20, 4, 4, 3)), np.arange(20) % 2 * 7
  np.savez(tmp_path / "images.npz", x=x, y=y)
  trained = final_lib.final_family(config, "W", str(tmp_path / "images.npz"))
  assert (trained.family, trained.fit, trained.search_epochs) == ("nb201", final_fit_nb201, None)
  assert trained.data.x_train.shape == (16, 4, 4, 3) and trained.data.num_classes == 2
  assert set(np.unique(trained.data.y_test)) <= {0, 1}  # labels 0 and 7 renumbered


def test_load_images_splits_and_standardises_or_says_what_is_wrong(tmp_path):
  x = np.random.default_rng(1).uniform(0, 255, size=(50, 4, 4, 3))
  np.savez(tmp_path / "ok.npz", x=x, y=np.arange(50) % 5)
  d = datasets.load_images(str(tmp_path / "ok.npz"), seed=3)
  assert (d.x_train.shape, d.x_val.shape, d.x_test.shape) == ((30, 4, 4, 3), (10, 4, 4, 3), (10, 4, 4, 3))
  assert d.task == "classification" and d.num_classes == 5 and d.x_train.dtype == np.float32
  np.testing.assert_allclose(d.x_train.mean(0), 0.0, atol=1e-5)  # per pixel position, training statistics
  np.savez(tmp_path / "flat.npz", x=x.reshape(50, -1), y=np.arange(50))
  np.savez(tmp_path / "noy.npz", x=x)
  np.savez(tmp_path / "frac.npz", x=x, y=np.linspace(0, 1, 50))
  (tmp_path / "bad.npz").write_bytes(b"not a zip")
  for name, says in (
    ("none.npz", "is not an existing .npz file"),
    ("flat.npz", r"holds x \(50, 48\) float64 and y \(50,\); expected x \[n, H, W, C\] and y \[n\]"),
    ("noy.npz", r"holds \['x'\]; expected x"),
    ("frac.npz", "y holds non-integer values"),
    ("bad.npz", "is not a readable .npz file"),
  ):
    with pytest.raises(ValueError, match=f"^load_images: '.*{name}' " + says):
      datasets.load_images(str(tmp_path / name))
