"""evaluate(): determinism for a key, learning above chance (digits) and below the constant
predictor (diabetes), the score is the best epoch, divergence gives NaN, early stopping, warm
starts from kept variables, and clear errors."""

import functools
import math

import jax
import numpy as np
import pytest

from nas_jax.arch.architecture import Architecture
from nas_jax.spaces import pools
from nas_jax.models import arch_net
from nas_jax.training import datasets, results_table, specialised, train_loop, weights
from nas_jax.training.train_config import TrainConfig


def _chain(kind, body, decision):
  layers = [{"label": "ip"}, *body, {"label": decision}, {"label": "op"}]
  return Architecture.from_json({"kind": kind, "layers": layers, "edges": [[i, i + 1] for i in range(len(layers) - 1)]})


TINY_MLP = _chain("mlp", [{"label": "relu", "units": 32}], "softmax")
TINY_REGRESSOR = _chain("mlp", [{"label": "tanh", "units": 16}], "linear")
TINY_CNN = _chain(
  "cnn", [{"label": "conv3", "units": 16, "stride": 1}, {"label": "max-pool"}, {"label": "fc", "units": 16}], "softmax"
)


@pytest.fixture(scope="module")
def digits_mlp():
  return datasets.digits("mlp")


def test_same_key_gives_identical_metrics_and_another_key_does_not(digits_mlp):
  config = TrainConfig(epochs=1)
  a, b, c = (specialised.evaluate(TINY_MLP, digits_mlp, config, jax.random.key(k)) for k in (0, 0, 1))
  timings = ("train_seconds", "eval_seconds", "compile_seconds")
  values = lambda r: {k: v for k, v in r._asdict().items() if k not in timings}
  assert values(a) == values(b)
  assert a.val_errors != c.val_errors


def test_tiny_mlp_learns_digits_and_its_score_is_the_best_epoch(digits_mlp):
  r = specialised.evaluate(TINY_MLP, digits_mlp, TrainConfig(epochs=3, learning_rate=1e-2), jax.random.key(0))
  assert r.val_accuracy > 0.8  # chance is 0.1
  assert 1 - r.test_error > 0.8
  assert r.val_error == min(r.val_errors) and r.val_errors[r.best_epoch - 1] == r.val_error
  assert len(r.val_errors) == r.epochs == 3 and r.val_loss < math.log(10)


def test_tiny_cnn_learns_digit_images():
  config = TrainConfig(epochs=3, learning_rate=1e-2, schedule="constant")
  r = specialised.evaluate(TINY_CNN, datasets.digits("cnn"), config, jax.random.key(0))
  assert r.val_accuracy > 0.5 and r.compile_seconds > 0


def test_tiny_regressor_beats_the_constant_predictor_on_diabetes():
  config = TrainConfig(epochs=10, batch_size=16, learning_rate=3e-3)
  r = specialised.evaluate(TINY_REGRESSOR, datasets.diabetes(), config, jax.random.key(0))
  assert r.val_error < 0.8 and r.test_error < 0.8  # a constant predicts with MSE ~ 1 (standardised)
  assert r.val_loss == pytest.approx(r.val_error) and math.isnan(r.val_accuracy)


@pytest.mark.parametrize(
  "arch, data", [(TINY_REGRESSOR, datasets.diabetes), (TINY_MLP, functools.partial(datasets.digits, "mlp"))]
)
def test_diverged_training_reports_nan_instead_of_raising(arch, data):
  config = TrainConfig(epochs=2, learning_rate=1e30, optimizer="sgd", schedule="constant")
  r = specialised.evaluate(arch, data(), config, jax.random.key(0))
  assert r.best_epoch == 0 and math.isnan(r.val_error) and math.isnan(r.test_error)
  assert all(math.isnan(e) for e in r.val_errors)


def test_an_architecture_that_does_not_fit_the_data_is_refused(digits_mlp):
  with pytest.raises(ValueError, match=r"shape \(1078, 64\) \(flat\); a cnn architecture needs images"):
    specialised.evaluate(TINY_CNN, digits_mlp, TrainConfig(), jax.random.key(0))
  with pytest.raises(ValueError, match=r"\(images\); an mlp architecture needs flat features"):
    specialised.evaluate(TINY_MLP, datasets.digits("cnn"), TrainConfig(), jax.random.key(0))
  with pytest.raises(ValueError, match=r"decision layers \['softmax'\] do not fit dataset 'diabetes'"):
    specialised.evaluate(
      _chain("mlp", [{"label": "relu", "units": 8}], "softmax"),
      datasets.diabetes(),
      TrainConfig(),
      jax.random.key(0),
    )
  with pytest.raises(ValueError, match="batch_size: 5000 exceeds the 1078 training examples"):
    specialised.evaluate(TINY_MLP, digits_mlp, TrainConfig(batch_size=5000), jax.random.key(0))
  with pytest.raises(TypeError, match="dataset: got dict"):
    specialised.evaluate(TINY_MLP, {}, TrainConfig(), jax.random.key(0))


@pytest.mark.parametrize(
  "field, value, error, match",
  [
    ("epochs", 0, ValueError, r"train_config.epochs: 0; expected an integer >= 1"),
    ("batch_size", 2.5, TypeError, r"train_config.batch_size: 2.5 is a float; expected an integer >= 1"),
    ("eval_batch_size", True, TypeError, r"train_config.eval_batch_size: True is a bool"),
    ("learning_rate", -1.0, ValueError, r"train_config.learning_rate: -1.0; expected a finite number > 0"),
    ("learning_rate", "0.1", TypeError, r"train_config.learning_rate: '0.1' is a str"),
    ("weight_decay", math.nan, ValueError, r"train_config.weight_decay: nan"),
    ("optimizer", "rmsprop", ValueError, r"'rmsprop' is unknown; choose one of: adam, sgd, momentum"),
    ("schedule", "step", ValueError, r"'step' is unknown; choose one of: constant, cosine"),
    ("patience", -1, ValueError, r"train_config.patience: -1; expected an integer >= 0"),
    ("min_delta", math.inf, ValueError, r"train_config.min_delta: inf; expected a finite number >= 0"),
  ],
)
def test_bad_train_configs_name_the_field(digits_mlp, field, value, error, match):
  with pytest.raises(error, match=match):
    specialised.evaluate(TINY_MLP, digits_mlp, TrainConfig()._replace(**{field: value}), jax.random.key(0))


def test_weight_decay_changes_training_and_momentum_trains(digits_mlp):
  base = TrainConfig(epochs=1, optimizer="momentum", learning_rate=0.05)
  plain = specialised.evaluate(TINY_MLP, digits_mlp, base, jax.random.key(0))
  decayed = specialised.evaluate(TINY_MLP, digits_mlp, base._replace(weight_decay=0.5), jax.random.key(0))
  assert plain.val_accuracy > 0.5 and plain.val_loss < decayed.val_loss


@pytest.mark.parametrize(
  "val_errors, best", [([0.5, 0.3, 0.4], 2), ([0.3, math.nan, 0.2, 0.2], 3), ([math.nan, math.nan], 0), ([0.1], 1)]
)
def test_best_epoch_is_the_earliest_smallest_finite_error(val_errors, best):
  assert train_loop.best_epoch(val_errors) == best


@pytest.mark.parametrize(
  "losses, patience, min_delta, stop",
  [
    ([1.0, 0.9, 0.95, 0.96], 2, 1e-4, True),
    ([1.0, 0.9, 0.95], 2, 1e-4, False),
    ([4.0, 3.75, 3.5], 2, 0.5, False),  # 3.75 is stale, but 3.5 beats the best (4.0) by min_delta
    ([4.0, 3.75, 3.75], 2, 0.5, True),
    ([1.0, 1.0], 1, 0.0, False),  # equal to best - 0 is not "greater": an improvement
    ([1.0, math.nan], 1, 1e-4, True),  # NaN never improves
    ([math.nan, math.nan], 2, 0.0, True),
    ([math.nan, 1.0], 1, 1e-4, False),
    ([1.0, 2.0, 3.0, 4.0], 0, 0.0, False),  # patience 0: never
    ([], 1, 1e-4, False),
  ],
)
def test_should_stop_after_patience_epochs_without_improvement(losses, patience, min_delta, stop):
  records = [(0.0, loss, 0.0) for loss in losses]  # only the validation losses count
  assert train_loop.stops(records, TrainConfig(patience=patience, min_delta=min_delta)) is stop


def test_patience_stops_training_and_epochs_counts_the_trained_ones(digits_mlp):
  # A step of 1e-9 cannot lower the loss by 1.0: epoch 2 is stale, so patience 1 stops there.
  config = TrainConfig(epochs=3, learning_rate=1e-9, patience=1, min_delta=1.0)
  r = specialised.evaluate(TINY_MLP, digits_mlp, config, jax.random.key(0))
  assert r.epochs == 2 < config.epochs and len(r.val_errors) == r.epochs
  assert r.seconds_per_epoch == r.train_seconds / 2


@pytest.mark.parametrize(
  "arch, kind, config",
  [
    (TINY_MLP, "mlp", TrainConfig(epochs=3, learning_rate=0.03, schedule="constant")),
    (TINY_CNN, "cnn", TrainConfig(epochs=2, learning_rate=1e-2, schedule="constant")),
  ],
)
def test_warm_start_from_saved_best_variables_resumes_the_best_epoch(tmp_path, arch, kind, config):
  data = datasets.digits(kind)
  source = specialised.evaluate(arch, data, config, jax.random.key(0), keep_variables=True)
  if kind == "mlp":  # the kept variables must be the best epoch's, not the last one's
    assert source.best_epoch < source.epochs
  weights.save_variables(tmp_path / "best.msgpack", source.variables)
  still = TrainConfig(epochs=1, learning_rate=1e-9)
  warm = specialised.evaluate(
    arch, data, still, jax.random.key(1), init_variables=weights.load_variables(tmp_path / "best.msgpack")
  )
  # Not exact for the cnn: its epoch re-estimates the batch-norm running statistics.
  assert warm.val_errors[0] == pytest.approx(source.val_error, abs=0.01)
  assert warm.val_loss == pytest.approx(source.val_loss, rel=0.01)


def test_warm_start_from_the_random_init_reproduces_the_cold_run_and_spares_the_given_arrays(digits_mlp):
  config, key = TrainConfig(epochs=1, learning_rate=1e-2), jax.random.key(0)
  cold = specialised.evaluate(TINY_MLP, digits_mlp, config, key)
  init_key = jax.random.split(key)[0]  # the key evaluate initialises from
  given = arch_net.init_variables(arch_net.build_model(TINY_MLP, 10), init_key, digits_mlp.x_train[:1])
  before = jax.tree.map(np.array, given)
  warm = specialised.evaluate(TINY_MLP, digits_mlp, config, key, init_variables=given)
  assert warm.val_errors == cold.val_errors and warm.val_loss == cold.val_loss
  assert cold.variables is None and warm.variables is None  # kept only when asked
  # The train state is donated to the epoch: it must not have been built on the caller's buffers.
  jax.tree.map(np.testing.assert_array_equal, jax.tree.map(np.asarray, given), before)


@pytest.mark.parametrize(
  "edit, error, match",
  [
    (
      lambda v: v["params"]["1_relu"].update(kernel=np.zeros((64, 31))),
      ValueError,
      r"init_variables: params/1_relu/kernel has shape \(64, 31\); the model expects \(64, 32\)",
    ),
    (
      lambda v: v["params"]["2_softmax"].pop("bias"),
      ValueError,
      r"init_variables: params/2_softmax/bias is missing \(1 of the model's 4 leaves are\)",
    ),
    (
      lambda v: v.update(batch_stats={"1_relu": {"mean": np.zeros(32)}}),
      ValueError,
      r"init_variables: batch_stats/1_relu/mean is not a variable of the model",
    ),
  ],
)
def test_init_variables_that_do_not_fit_name_the_path(digits_mlp, edit, error, match):
  model = arch_net.build_model(TINY_MLP, 10)
  variables = jax.tree.map(np.asarray, arch_net.init_variables(model, jax.random.key(0), digits_mlp.x_train[:1]))
  edit(variables)
  with pytest.raises(error, match=match):
    specialised.evaluate(TINY_MLP, digits_mlp, TrainConfig(epochs=1), jax.random.key(0), init_variables=variables)


def test_init_variables_must_be_a_dict(digits_mlp):
  with pytest.raises(TypeError, match=r"init_variables: got list; expected a dict"):
    specialised.evaluate(TINY_MLP, digits_mlp, TrainConfig(epochs=1), jax.random.key(0), init_variables=[])


def test_table_rows_show_accuracy_or_mse():
  r = train_loop.EvalResult("classification", 0.25, 0.7, 0.5, 3, 4, 2.0, 0.1, 1.5, (0.3, 0.3, 0.25, 0.26))
  assert results_table.format_row("C1", r, 512.0).split() == ["C1", "0.7500", "0.5000", "3", "0.50", "1.50", "512"]
  assert "val MSE" in results_table.format_header("regression") and "val acc" in results_table.format_header(
    "classification"
  )


@pytest.mark.slow
@pytest.mark.parametrize("i", range(10))
def test_every_pool_cnn_learns_digits_in_two_epochs(i):
  r = specialised.evaluate(
    pools.initial_pool("cnn")[i], datasets.digits("cnn"), TrainConfig(epochs=2), jax.random.key(0)
  )
  assert r.val_accuracy > 0.5 and np.isfinite(r.test_error)
