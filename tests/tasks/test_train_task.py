"""The training Task: goals and names per dataset, argument checks, and (slow) values equal to
`specialised.evaluate`'s on the same seed: accuracy for classification, MSE for regression."""

import pickle

import jax
import pytest

from nas_jax.arch.architecture import Architecture
from nas_jax.search.task import TaskResult
from nas_jax.tasks import train_task
from nas_jax.training import datasets, specialised
from nas_jax.training.train_config import TrainConfig

TINY_MLP = {
  "kind": "mlp",
  "layers": [{"label": "ip"}, {"label": "relu", "units": 8}, {"label": "linear"}, {"label": "op"}],
  "edges": [[0, 1], [1, 2], [2, 3]],
}
TINY_CNN = {
  "kind": "cnn",
  "layers": [
    {"label": "ip"},
    {"label": "conv3", "units": 8, "stride": 1},
    {"label": "max-pool"},
    {"label": "fc", "units": 16},
    {"label": "softmax"},
    {"label": "op"},
  ],
  "edges": [[i, i + 1] for i in range(5)],
}
ONE_EPOCH = TrainConfig(epochs=1, batch_size=32)


def test_goal_follows_the_dataset_and_the_task_pickles():
  cls = train_task.train_task("digits", "cnn", ONE_EPOCH)
  reg = train_task.train_task("diabetes", "mlp", ONE_EPOCH)
  assert (cls.name, cls.goal) == ("train-digits-cnn", "max")
  assert (reg.name, reg.goal) == ("train-diabetes-mlp", "min")
  assert pickle.loads(pickle.dumps(reg.evaluate)) == reg.evaluate


def test_train_task_rejects_bad_arguments():
  with pytest.raises(ValueError, match="kind='rnn'"):
    train_task.train_task("digits", "rnn", ONE_EPOCH)
  with pytest.raises(TypeError, match="train_config is a dict"):
    train_task.train_task("digits", "cnn", {"epochs": 1})
  with pytest.raises(ValueError, match="'mnist' is neither a known dataset"):
    train_task.train_task("mnist", "cnn", ONE_EPOCH)


def test_an_architecture_of_the_other_kind_fails_before_training():
  task = train_task.train_task("diabetes", "mlp", ONE_EPOCH)
  with pytest.raises(ValueError, match="a cnn architecture; this task trains mlp"):
    task.evaluate(TINY_CNN, 0)


@pytest.mark.slow
@pytest.mark.parametrize("dataset, kind, arch", [("diabetes", "mlp", TINY_MLP), ("digits", "cnn", TINY_CNN)])
def test_values_are_training_metrics_of_the_same_seed(dataset, kind, arch):
  task = train_task.train_task(dataset, kind, ONE_EPOCH)
  result = task.evaluate(arch, 11)
  ref = specialised.evaluate(
    Architecture.from_json(arch), datasets.get_dataset(dataset, kind=kind), ONE_EPOCH, jax.random.key(11)
  )
  assert isinstance(result, TaskResult)
  if kind == "cnn":
    assert result.value == pytest.approx(1 - ref.val_error) and result.test_value == pytest.approx(1 - ref.test_error)
    assert 0.0 <= result.value <= 1.0
  else:
    assert result.value == pytest.approx(ref.val_error) and result.test_value == pytest.approx(ref.test_error)
  assert result.info["best_epoch"] == ref.best_epoch == 1
