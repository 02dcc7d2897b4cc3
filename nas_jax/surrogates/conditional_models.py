"""The six regression models of the arc-kernel paper (Swersky et al. 2013, Sec. 3) as values on one
interface, `fit_predict(model, ...)` (its Table 1 experiment is
`nas_jax.experiments.conditional_experiment`, which names them through `wiring.names.CONDITIONAL_MODELS`).

Inputs are plain arrays: u: [n, P] float in [0, 1], each parameter rescaled by its bounds (0
where inactive by convention), and active: [n, P] bool. A point's pattern is its active row;
points with equal patterns share an architecture. No model reads an inactive entry of u.
"""

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch.architecture import next_power_of_two
from nas_jax.features.featurizer import arc_to_pair, vector_to_pair
from nas_jax.features.featurizers import POOR_MAN_FILL
from nas_jax.features.pairwise import VectorPair
from nas_jax.surrogates.priors import arc_box, exp_squared
from nas_jax.surrogates.surrogate import gp_surrogate

__all__ = [
  "separate_linear",
  "separate_gp",
  "poor_man_linear",
  "poor_man_gp",
  "separate_hierarchical_gp",
  "hierarchical_gp",
  "fit_predict",
  "check_points",
  "check_targets",
  "poor_man_embedding",
]

_RIDGE = 1e-6
# Smallest padded GP size: patterns hold few points, and one compile should serve them all.
_MIN_CAPACITY = 8
# A model maps (key, (u, active) train, y_train, (u, active) test, options) -> mean [m], options
# being the GP fit's arguments of `gp_surrogate` (n_starts, steps).
_Model = Callable[[jax.Array, tuple, np.ndarray, tuple, dict], np.ndarray]


def poor_man_embedding(u: np.ndarray, active: np.ndarray) -> np.ndarray:
  """u with inactive entries replaced by POOR_MAN_FILL: [n, P], [n, P] bool -> [n, P] float."""
  return np.where(active, u, POOR_MAN_FILL)


def _linear(key, train, y_train, test, options) -> np.ndarray:
  """Least squares with an unpenalised intercept on the poor man's embedding: mean [m].

  Centring first keeps the intercept out of the ridge; a column that is constant over the
  training points (a parameter inactive in the whole pattern) centres to 0 and gets weight 0.
  """
  del key, options  # deterministic, nothing to fit iteratively
  x, x_test = poor_man_embedding(*train), poor_man_embedding(*test)
  x_mean, y_mean = x.mean(0), y_train.mean()
  xc = x - x_mean
  w = np.linalg.solve(xc.T @ xc + _RIDGE * np.eye(xc.shape[1]), xc.T @ (y_train - y_mean))
  return y_mean + (x_test - x_mean) @ w


def _gp_mean(key, box, make_pair, train, y_train, test, options) -> np.ndarray:
  """Posterior mean [m] of a maximum-likelihood GP; train and test padded to powers of two."""
  n, m = len(y_train), len(test[0])
  c, rows = next_power_of_two(n, _MIN_CAPACITY), next_power_of_two(m, _MIN_CAPACITY)
  surrogate = gp_surrogate(box, **options)
  y = jnp.asarray(np.pad(y_train, (0, c - n)))
  state = surrogate.fit(key, make_pair(train, train).pad(c, c), y, jnp.asarray(np.arange(c) < n))
  mean = surrogate.predict(state, make_pair(test, train).pad(rows, c)).mean
  return np.asarray(mean[:m], np.float64)


def _vector_gp(key, train, y_train, test, options) -> np.ndarray:
  """ARD ExpSquared on the poor man's embedding: mean [m].

  Within one pattern the inactive coordinates are the same constant for every point, so they
  add 0 to every distance and their length-scales have no effect on the likelihood: per
  pattern this is exactly the ARD kernel on the active coordinates, with one shape for all.
  """
  to_pair = lambda a, b: vector_to_pair((poor_man_embedding(*a),), (poor_man_embedding(*b),))
  return _gp_mean(key, exp_squared().box(VectorPair, train[0].shape[1]), to_pair, train, y_train, test, options)


def _arc_gp(key, train, y_train, test, options) -> np.ndarray:
  """ArcKernel (exp-squared profile, l = 1; omega_i, rho_i, variance, noise fitted): mean [m]."""
  return _gp_mean(key, arc_box(train[0].shape[1]), arc_to_pair, train, y_train, test, options)


def _rows(points: tuple, which: np.ndarray) -> tuple:
  return tuple(x[which] for x in points)


def _per_pattern(model: _Model) -> _Model:
  """`model` fitted separately on each pattern's training points (Bergstra et al.'s separate
  models). A test point whose pattern has fewer than 2 training points gets the mean of all
  training targets (Ours: the paper does not say)."""

  def separate(key, train, y_train, test, options):
    patterns, ids = np.unique(train[1], axis=0, return_inverse=True)
    ids = ids.reshape(-1)  # numpy 2.0.x gave the inverse of an axis-unique a trailing axis
    mean = np.full(len(test[0]), y_train.mean())
    for i, pattern in enumerate(patterns):
      fit_rows, test_rows = ids == i, np.all(test[1] == pattern, axis=1)
      if fit_rows.sum() >= 2 and test_rows.any():
        mean[test_rows] = model(
          jax.random.fold_in(key, i),
          _rows(train, fit_rows),
          y_train[fit_rows],
          _rows(test, test_rows),
          options,
        )
    return mean

  separate.__doc__ = f"{(model.__doc__ or '').splitlines()[0]} Fitted on each pattern's points apart."
  return separate


# The arc-kernel paper's six models (Swersky et al. 2013, Table 1), each a `_Model`.
separate_linear = _per_pattern(_linear)
separate_gp = _per_pattern(_vector_gp)
poor_man_linear = _linear
poor_man_gp = _vector_gp
separate_hierarchical_gp = _per_pattern(_arc_gp)
hierarchical_gp = _arc_gp


def check_points(u_name: str, u, active_name: str, active, n_params: int | None = None) -> tuple:
  """Checked (u [n, P] float64, active [n, P] bool). Raises ValueError naming the argument."""
  u, active = np.asarray(u, np.float64), np.asarray(active)
  if u.ndim != 2 or (n_params is not None and u.shape[1] != n_params):
    expected = "[n, P]" if n_params is None else f"[n, {n_params}] (P of the training points)"
    raise ValueError(f"{u_name}: shape {u.shape}; expected {expected}")
  if active.dtype != bool or active.shape != u.shape:
    raise ValueError(
      f"{active_name}: {active.dtype} of shape {active.shape}; expected bool of {u_name}'s shape {u.shape}"
    )
  if not np.all((u >= 0) & (u <= 1)):
    raise ValueError(f"{u_name}: has entries outside [0, 1] or NaN; expected values rescaled by their bounds")
  return u, active


def check_targets(name: str, y, n: int) -> np.ndarray:
  """Checked y [n] float64, finite; ValueError naming the argument."""
  y = np.asarray(y, np.float64)
  if y.shape != (n,) or not np.all(np.isfinite(y)):
    raise ValueError(f"{name}: shape {y.shape} or non-finite entries; expected [{n}] finite")
  return y


def fit_predict(
  model: _Model,
  key: jax.Array,
  u_train,
  active_train,
  y_train,
  u_test,
  active_test,
  *,
  n_starts: int = 8,
  steps: int = 200,
) -> np.ndarray:
  """Fits `model` on the training points and predicts the test points' mean.

  GPs normalise their targets and fit maximum-likelihood hyper-parameters from n_starts
  log-uniform starts in their box (vmapped, `steps` Adam steps each); the linear models are a
  least-squares fit with an intercept (ridge 1e-6) on raw targets.

  Args:
    model: one of the six models of this module (e.g. `hierarchical_gp`); key: PRNG key for the GP starts.
    u_train: [n, P] float in [0, 1]; active_train: [n, P] bool; y_train: [n] float, n >= 2.
    u_test: [m, P] float in [0, 1]; active_test: [m, P] bool.
    n_starts, steps: the GP fit.

  Returns:
    mean: [m] float64.

  Raises:
    ValueError on a model that is not a function, shapes, u outside [0, 1] or non-finite targets.
  """
  if not callable(model):
    raise ValueError(f"model: {model!r} is not a model; expected one of conditional_models' six, e.g. hierarchical_gp")
  train = check_points("u_train", u_train, "active_train", active_train)
  test = check_points("u_test", u_test, "active_test", active_test, train[0].shape[1])
  y_train = check_targets("y_train", y_train, len(train[0]))
  if len(y_train) < 2:
    raise ValueError(f"y_train: {len(y_train)} training points; a model needs at least 2")
  return np.asarray(model(key, train, y_train, test, dict(n_starts=n_starts, steps=steps)))
