"""evaluate(): determinism for a key, learning above chance (digits) and below the constant
predictor (diabetes), the score is the best epoch, divergence gives NaN, and clear errors."""
import functools
import math

import jax
import numpy as np
import pytest

from nas_jax.arch.architecture import Architecture
from nas_jax.spaces import pools
from nas_jax.tasks import datasets, training


def _chain(kind, body, decision):
  layers = [{"label": "ip"}, *body, {"label": decision}, {"label": "op"}]
  return Architecture.from_json({"kind": kind, "layers": layers, "edges": [[i, i + 1] for i in range(len(layers) - 1)]})


TINY_MLP = _chain("mlp", [{"label": "relu", "units": 32}], "softmax")
TINY_REGRESSOR = _chain("mlp", [{"label": "tanh", "units": 16}], "linear")
TINY_CNN = _chain("cnn", [{"label": "conv3", "units": 16, "stride": 1}, {"label": "max-pool"},
                          {"label": "fc", "units": 16}], "softmax")


@pytest.fixture(scope="module")
def digits_mlp():
  return datasets.digits("mlp")


def test_same_key_gives_identical_metrics_and_another_key_does_not(digits_mlp):
  config = training.TrainConfig(epochs=1)
  a, b, c = (training.evaluate(TINY_MLP, digits_mlp, config, jax.random.key(k)) for k in (0, 0, 1))
  timings = ("train_seconds", "eval_seconds", "compile_seconds")
  values = lambda r: {k: v for k, v in r._asdict().items() if k not in timings}
  assert values(a) == values(b)
  assert a.val_errors != c.val_errors


def test_tiny_mlp_learns_digits_and_its_score_is_the_best_epoch(digits_mlp):
  r = training.evaluate(TINY_MLP, digits_mlp, training.TrainConfig(epochs=3, learning_rate=1e-2), jax.random.key(0))
  assert r.val_accuracy > 0.8  # chance is 0.1
  assert 1 - r.test_error > 0.8
  assert r.val_error == min(r.val_errors) and r.val_errors[r.best_epoch - 1] == r.val_error
  assert len(r.val_errors) == r.epochs == 3 and r.val_loss < math.log(10)


def test_tiny_cnn_learns_digit_images():
  config = training.TrainConfig(epochs=3, learning_rate=1e-2, schedule="constant")
  r = training.evaluate(TINY_CNN, datasets.digits("cnn"), config, jax.random.key(0))
  assert r.val_accuracy > 0.5 and r.compile_seconds > 0


def test_tiny_regressor_beats_the_constant_predictor_on_diabetes():
  config = training.TrainConfig(epochs=10, batch_size=16, learning_rate=3e-3)
  r = training.evaluate(TINY_REGRESSOR, datasets.diabetes(), config, jax.random.key(0))
  assert r.val_error < 0.8 and r.test_error < 0.8  # a constant predicts with MSE ~ 1 (standardised)
  assert r.val_loss == pytest.approx(r.val_error) and math.isnan(r.val_accuracy)


@pytest.mark.parametrize("arch, data", [(TINY_REGRESSOR, datasets.diabetes),
                                        (TINY_MLP, functools.partial(datasets.digits, "mlp"))])
def test_diverged_training_reports_nan_instead_of_raising(arch, data):
  config = training.TrainConfig(epochs=2, learning_rate=1e30, optimizer="sgd", schedule="constant")
  r = training.evaluate(arch, data(), config, jax.random.key(0))
  assert r.best_epoch == 0 and math.isnan(r.val_error) and math.isnan(r.test_error)
  assert all(math.isnan(e) for e in r.val_errors)


def test_an_architecture_that_does_not_fit_the_data_is_refused(digits_mlp):
  with pytest.raises(ValueError, match=r"shape \(1078, 64\) \(flat\); a cnn architecture needs images"):
    training.evaluate(TINY_CNN, digits_mlp, training.TrainConfig(), jax.random.key(0))
  with pytest.raises(ValueError, match=r"\(images\); an mlp architecture needs flat features"):
    training.evaluate(TINY_MLP, datasets.digits("cnn"), training.TrainConfig(), jax.random.key(0))
  with pytest.raises(ValueError, match=r"decision layers \['softmax'\] do not fit dataset 'diabetes'"):
    training.evaluate(_chain("mlp", [{"label": "relu", "units": 8}], "softmax"), datasets.diabetes(),
                      training.TrainConfig(), jax.random.key(0))
  with pytest.raises(ValueError, match="batch_size: 5000 exceeds the 1078 training examples"):
    training.evaluate(TINY_MLP, digits_mlp, training.TrainConfig(batch_size=5000), jax.random.key(0))
  with pytest.raises(TypeError, match="dataset: got dict"):
    training.evaluate(TINY_MLP, {}, training.TrainConfig(), jax.random.key(0))


@pytest.mark.parametrize("field, value, error, match", [
    ("epochs", 0, ValueError, r"train_config.epochs: 0; expected an integer >= 1"),
    ("batch_size", 2.5, TypeError, r"train_config.batch_size: 2.5 is a float; expected an integer >= 1"),
    ("eval_batch_size", True, TypeError, r"train_config.eval_batch_size: True is a bool"),
    ("learning_rate", -1.0, ValueError, r"train_config.learning_rate: -1.0; expected a finite number > 0"),
    ("learning_rate", "0.1", TypeError, r"train_config.learning_rate: '0.1' is a str"),
    ("weight_decay", math.nan, ValueError, r"train_config.weight_decay: nan"),
    ("optimizer", "rmsprop", ValueError, r"'rmsprop' is unknown; choose one of: adam, sgd, momentum"),
    ("schedule", "step", ValueError, r"'step' is unknown; choose one of: constant, cosine"),
])
def test_bad_train_configs_name_the_field(digits_mlp, field, value, error, match):
  with pytest.raises(error, match=match):
    training.evaluate(TINY_MLP, digits_mlp, training.TrainConfig()._replace(**{field: value}), jax.random.key(0))


def test_weight_decay_changes_training_and_momentum_trains(digits_mlp):
  base = training.TrainConfig(epochs=1, optimizer="momentum", learning_rate=0.05)
  plain = training.evaluate(TINY_MLP, digits_mlp, base, jax.random.key(0))
  decayed = training.evaluate(TINY_MLP, digits_mlp, base._replace(weight_decay=0.5), jax.random.key(0))
  assert plain.val_accuracy > 0.5 and plain.val_loss < decayed.val_loss


@pytest.mark.parametrize("val_errors, best", [([0.5, 0.3, 0.4], 2), ([0.3, math.nan, 0.2, 0.2], 3),
                                               ([math.nan, math.nan], 0), ([0.1], 1)])
def test_best_epoch_is_the_earliest_smallest_finite_error(val_errors, best):
  assert training._best_epoch(val_errors) == best


def test_table_rows_show_accuracy_or_mse():
  r = training.EvalResult("classification", 0.25, 0.7, 0.5, 3, 4, 2.0, 0.1, 1.5, (0.3, 0.3, 0.25, 0.26))
  assert training.format_row("C1", r, 512.0).split() == ["C1", "0.7500", "0.5000", "3", "0.50", "1.50", "512"]
  assert "val MSE" in training.format_header("regression") and "val acc" in training.format_header("classification")


@pytest.mark.slow
@pytest.mark.parametrize("i", range(10))
def test_every_pool_cnn_learns_digits_in_two_epochs(i):
  r = training.evaluate(pools.initial_pool("cnn")[i], datasets.digits("cnn"), training.TrainConfig(epochs=2),
                        jax.random.key(0))
  assert r.val_accuracy > 0.5 and np.isfinite(r.test_error)
