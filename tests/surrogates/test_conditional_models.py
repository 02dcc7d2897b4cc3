"""The six conditional-space models of Swersky et al. 2013, Sec. 3: shapes, fit quality on a smooth
conditional function, invariance to inactive values, the poor man's fill, the NMSE table and
clear failures."""

import jax
import numpy as np
import pytest

from nas_jax.experiments import conditional_experiment
from nas_jax.surrogates import conditional_models as cm
from nas_jax.wiring.names import CONDITIONAL_MODELS as MODELS

# Shared by every GP fit here so that they reuse one compile per padded size.
FIT = dict(n_starts=4, steps=60)
N_TRAIN = 40


def conditional_data(n: int, seed: int = 0):
  """n points of a depth-1-or-2 space: P = 1 shared + 2 per layer; layer 2 active for half.

  Returns u: [n, 5] in [0, 1] (0 where inactive), active: [n, 5] bool, y: [n] float, where
  y = f(shared and layer-1 values) + g(layer-2 values) for depth 2, plus noise of sd 0.02.
  """
  rng = np.random.default_rng(seed)
  u = rng.uniform(0, 1, (n, 5))
  deep = np.arange(n) % 2 == 1
  active = np.ones((n, 5), bool)
  active[:, 3:] = deep[:, None]
  u = np.where(active, u, 0.0)
  f = np.sin(3 * u[:, 0]) + u[:, 1] - (u[:, 2] - 0.5) ** 2
  g = 0.5 + np.cos(2 * u[:, 3]) * u[:, 4]
  return u, active, f + g * deep + 0.02 * rng.normal(size=n)


def split(u, active, y):
  """(train, test) argument lists for fit_predict: first N_TRAIN points, then the rest."""
  return (u[:N_TRAIN], active[:N_TRAIN], y[:N_TRAIN]), (u[N_TRAIN:], active[N_TRAIN:])


def predict(name, u, active, y):
  (u_tr, a_tr, y_tr), (u_te, a_te) = split(u, active, y)
  return cm.fit_predict(MODELS[name], jax.random.key(0), u_tr, a_tr, y_tr, u_te, a_te, **FIT)


@pytest.fixture(scope="module")
def data():
  return conditional_data(80)


@pytest.fixture(scope="module")
def predictions(data):
  return {name: predict(name, *data) for name in MODELS}


@pytest.mark.parametrize("name", tuple(MODELS))
def test_every_model_predicts_finite_values_of_the_right_shape(predictions, name):
  mean = predictions[name]
  assert mean.shape == (80 - N_TRAIN,) and mean.dtype == np.float64
  assert np.all(np.isfinite(mean))


def test_hierarchical_gp_beats_the_constant_predictor(data, predictions):
  y_test = data[2][N_TRAIN:]
  assert conditional_experiment.nmse(y_test, predictions["hierarchical_gp"]) < 0.5


@pytest.mark.parametrize("name", tuple(MODELS))
def test_predictions_ignore_inactive_values(data, predictions, name):
  u, active, y = data
  noisy = np.where(active, u, np.random.default_rng(1).uniform(0, 1, u.shape))
  np.testing.assert_allclose(predict(name, noisy, active, y), predictions[name], rtol=1e-9, atol=1e-9)


def test_poor_man_embedding_fills_inactive_entries_with_minus_one(data):
  u, active, _ = data
  x = cm.poor_man_embedding(u, active)
  assert np.all(x[~active] == -1.0) and np.all(x[active] == u[active])


@pytest.mark.parametrize("name", ["poor_man_linear", "poor_man_gp"])
def test_poor_man_models_read_the_fill_value(data, predictions, name, monkeypatch):
  monkeypatch.setattr(cm, "POOR_MAN_FILL", 0.0)
  assert np.max(np.abs(predict(name, *data) - predictions[name])) > 1e-6


@pytest.mark.parametrize("name", ["separate_linear", "separate_gp", "separate_hierarchical_gp"])
def test_separate_models_predict_the_training_mean_for_an_unseen_pattern(data, name):
  u, active, y = data
  (u_tr, a_tr, y_tr), _ = split(u, active, y)
  unseen = np.array([[True, True, False, False, False]])  # a pattern no training point has
  mean = cm.fit_predict(MODELS[name], jax.random.key(0), u_tr, a_tr, y_tr, u_tr[:1] * unseen, unseen, **FIT)
  np.testing.assert_allclose(mean, [y_tr.mean()])


@pytest.mark.parametrize("name", ["separate_linear", "poor_man_linear"])
def test_linear_models_are_exact_on_a_linear_target(data, name):
  u, _, _ = data
  active = np.ones_like(u, bool)
  y = 2.0 + u @ np.array([1.0, -2.0, 0.5, 3.0, -1.0])
  (u_tr, a_tr, y_tr), (u_te, a_te) = split(u, active, y)
  mean = cm.fit_predict(MODELS[name], jax.random.key(0), u_tr, a_tr, y_tr, u_te, a_te)
  np.testing.assert_allclose(mean, y[N_TRAIN:], atol=1e-5)


def test_nmse_is_zero_for_a_perfect_predictor_and_one_for_the_test_mean():
  y = np.array([0.3, 1.0, -2.0, 0.7])
  assert conditional_experiment.nmse(y, y) == 0.0
  assert conditional_experiment.nmse(y, np.full(4, y.mean())) == pytest.approx(1.0)


def test_nmse_table_scores_every_model_on_every_split(data):
  table = conditional_experiment.nmse_table(jax.random.key(2), *data, n_splits=2, **FIT)
  assert set(table) == set(MODELS)
  for mean, stderr, scores in table.values():
    assert len(scores) == 2 and np.all(np.isfinite(scores))
    assert mean == pytest.approx(np.mean(scores)) and stderr >= 0


@pytest.mark.parametrize(
  "change, match",
  [
    (dict(model="tree_gp"), "model: 'tree_gp' is not a model"),
    (dict(active_train=np.ones((N_TRAIN, 4), bool)), "active_train"),
    (dict(active_train=np.ones((N_TRAIN, 5))), "active_train"),
    (dict(u_test=np.zeros((3, 4)), active_test=np.ones((3, 4), bool)), "u_test"),
    (dict(y_train=np.zeros(N_TRAIN - 1)), "y_train"),
    (dict(u_train=np.full((N_TRAIN, 5), 1.5)), "u_train"),
    (dict(u_test=np.full((40, 5), -0.1)), "u_test"),
  ],
)
def test_bad_input_raises_a_value_error_naming_it(data, change, match):
  u, active, y = data
  (u_tr, a_tr, y_tr), (u_te, a_te) = split(u, active, y)
  args = dict(
    model=cm.hierarchical_gp,
    key=jax.random.key(0),
    u_train=u_tr,
    active_train=a_tr,
    y_train=y_tr,
    u_test=u_te,
    active_test=a_te,
  )
  with pytest.raises(ValueError, match=match):
    cm.fit_predict(**{**args, **change})


def test_bad_table_and_nmse_arguments_raise(data):
  with pytest.raises(ValueError, match="models"):
    conditional_experiment.nmse_table(jax.random.key(0), *data, models=("hierarchical_gp", "tree_gp"))
  with pytest.raises(ValueError, match="train_fraction"):
    conditional_experiment.nmse_table(jax.random.key(0), *data, train_fraction=0.99)
  with pytest.raises(ValueError, match="y_pred"):
    conditional_experiment.nmse(np.ones(3), np.ones(4))
  with pytest.raises(ValueError, match="y_true"):
    conditional_experiment.nmse(np.ones(3), np.ones(3))
