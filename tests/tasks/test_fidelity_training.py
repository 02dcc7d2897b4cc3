"""Multi-fidelity training: a run continued from its checkpoint equals one trained from scratch, a
low fidelity is the beginning of the full run, corrupt or foreign checkpoints train from scratch,
early-stopped runs are returned as they are, bad fidelities are refused, and every result carries
its learning curve."""

import math
import os
import pickle

import numpy as np
import pytest

from nas_jax.tasks import train_task
from nas_jax.training.train_config import TrainConfig

MLP = {
  "kind": "mlp",
  "layers": [{"label": "ip"}, {"label": "relu", "units": 8}, {"label": "linear"}, {"label": "op"}],
  "edges": [[0, 1], [1, 2], [2, 3]],
}
CONFIG = TrainConfig(epochs=3, batch_size=32, learning_rate=3e-3)
FIDELITIES = (1, 2, 3)


def _task(checkpoint_dir="", config=CONFIG, fidelities=FIDELITIES):
  return train_task.train_task("diabetes", "mlp", config, fidelities=fidelities, checkpoint_dir=checkpoint_dir)


def _same(a, b):
  np.testing.assert_allclose([a.value, a.test_value], [b.value, b.test_value], rtol=1e-5)
  np.testing.assert_allclose(np.asarray(a.curve), np.asarray(b.curve), rtol=1e-5)


@pytest.fixture(scope="module")
def full():
  """The full run, from scratch, without checkpoints."""
  return _task().evaluate(MLP, 7, 3.0)


def test_continuing_from_fidelity_1_equals_training_to_3_from_scratch(tmp_path, full):
  task = _task(str(tmp_path))
  low = task.evaluate(MLP, 7, 1.0)
  assert low.info["continued_from"] == 0 and len(os.listdir(tmp_path)) == 1
  high = task.evaluate(MLP, 7, 3.0)
  assert high.info["continued_from"] == 1 and high.info["epochs"] == 3
  _same(high, full)
  assert full.info["continued_from"] == 0 and [f for f, _ in full.curve] == [1.0, 2.0, 3.0]


def test_a_fidelity_alone_is_the_beginning_of_the_full_run(full):
  for f in (1, 2):
    r = _task().evaluate(MLP, 7, float(f))
    np.testing.assert_allclose(np.asarray(r.curve), np.asarray(full.curve[:f]), rtol=1e-5)
    assert r.value == pytest.approx(min(v for _, v in full.curve[:f]), rel=1e-5)  # MSE: the best is the least
    assert r.info["epochs"] == f


@pytest.mark.parametrize(
  "fidelities, match",
  [
    ((1, 2), r"the last must be the full fidelity, train_config.epochs=3"),
    ((2, 1, 3), "strictly increasing"),
    ((1, 1, 3), "strictly increasing"),
    ((0, 3), r"whole numbers of epochs in \[1, train_config.epochs=3\]"),
    ((1.5, 3), "whole numbers"),
    ((1, 4), "whole numbers"),
    ((True, 3), "whole numbers"),
    ("1,3", "whole numbers"),
  ],
)
def test_bad_fidelities_are_refused_in_one_line(fidelities, match):
  with pytest.raises(ValueError, match=match) as e:
    _task(fidelities=fidelities)
  assert str(e.value).startswith("fidelities: ") and "\n" not in str(e.value)


def test_bad_fidelity_calls_and_padded_fidelities_are_refused():
  with pytest.raises(
    ValueError, match=r"^fidelity: 2.5; expected a whole number of epochs in \[1, train_config.epochs=3\]$"
  ):
    _task().evaluate(MLP, 0, 2.5)
  with pytest.raises(ValueError, match=r"^fidelities: \(1, 3\) need the specialised trainer"):
    train_task.train_task("diabetes", "mlp", CONFIG, fidelities=(1, 3), trainer="padded")


# One case by default; each trains twice.
@pytest.mark.parametrize(
  "garbage",
  [b"not msgpack at all", pytest.param(b"", marks=pytest.mark.slow), pytest.param(None, marks=pytest.mark.slow)],
)
def test_a_corrupt_or_foreign_checkpoint_trains_from_scratch(tmp_path, full, garbage):
  task = _task(str(tmp_path))
  task.evaluate(MLP, 7, 1.0)
  (path,) = tmp_path.iterdir()
  if garbage is None:  # a well-formed checkpoint of another run (another learning rate)
    other = _task(str(tmp_path), config=CONFIG._replace(learning_rate=1e-2))
    os.remove(path)
    other.evaluate(MLP, 7, 1.0)
  else:
    path.write_bytes(garbage)
  high = task.evaluate(MLP, 7, 3.0)
  assert high.info["continued_from"] == 0
  _same(high, full)


def test_a_checkpoint_of_a_higher_fidelity_is_not_rewound(tmp_path, full):
  task = _task(str(tmp_path))
  task.evaluate(MLP, 7, 2.0)
  low = task.evaluate(MLP, 7, 1.0)
  assert low.info["continued_from"] == 0
  np.testing.assert_allclose(np.asarray(low.curve), np.asarray(full.curve[:1]), rtol=1e-5)


def test_an_early_stopped_run_is_returned_without_training(tmp_path):
  # No epoch after the first improves the validation MSE by min_delta=1: patience 1 stops at epoch 2.
  config = TrainConfig(epochs=4, batch_size=32, patience=1, min_delta=1.0)
  task = _task(str(tmp_path), config=config, fidelities=(3, 4))
  low = task.evaluate(MLP, 3, 3.0)
  assert low.info["epochs"] == 2
  high = task.evaluate(MLP, 3, 4.0)
  assert high.info["continued_from"] == 2 and high.info["epochs"] == 2 and high.info["train_seconds"] == 0.0
  assert high.value == low.value and high.curve == low.curve


def test_single_fidelity_results_carry_their_curve_and_the_task_pickles():
  config = TrainConfig(epochs=2, batch_size=32)
  task = train_task.train_task("digits", "mlp", config)
  arch = {**MLP, "layers": [{"label": "ip"}, {"label": "relu", "units": 8}, {"label": "softmax"}, {"label": "op"}]}
  r = task.evaluate(arch, 0)
  assert task.fidelities == () and len(r.curve) == config.epochs == r.info["epochs"]
  assert [f for f, _ in r.curve] == [1.0, 2.0]
  assert [v for _, v in r.curve] == pytest.approx([1 - e for e in r.info["val_errors"]])
  assert r.value == max(v for _, v in r.curve) and not any(math.isnan(v) for _, v in r.curve)
  multi = _task("checkpoints")  # built only: nothing is written
  assert multi.fidelities == (1.0, 2.0, 3.0)
  assert pickle.loads(pickle.dumps(multi.evaluate)) == multi.evaluate
