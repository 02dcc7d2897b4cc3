"""Hyper-parameter fitting: recovery of known hyper-parameters, failed starts lose, the slice
sampler's moments on a known density, and box validation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.features import pairwise
from nas_jax.surrogates import gp, gp_fit, kernels

TRUE_LENGTH, TRUE_NOISE = 1.0, 0.04


@pytest.fixture(scope="module")
def gp_data():
  """120 points on [0, 15] drawn from a GP with ExpSquared(1, 1) and noise variance 0.04."""
  rng = np.random.default_rng(0)
  x = rng.uniform(0, 15, (120, 1))
  pair = pairwise.vector_pair(x)
  cov = np.asarray(kernels.ExpSquared.create(1.0, TRUE_LENGTH)(pair)) + TRUE_NOISE * np.eye(120)
  y = jnp.asarray(np.linalg.cholesky(cov) @ rng.normal(size=120))
  box = gp_fit.Box.create(*kernels.ExpSquared.bounds(), noise=(1e-3, 1.0))
  return pair, y, jnp.ones(120, bool), box


def test_fit_map_recovers_known_hyper_parameters(gp_data):
  pair, y, mask, box = gp_data
  result = gp_fit.fit_map(jax.random.key(0), box, pair, y, mask, n_starts=6, steps=150)
  var_y = float(jnp.var(y))  # hyper-parameters are relative to Var(Y)
  length = float(jnp.exp(result.hypers.kernel.log_length_scale))
  noise = float(jnp.exp(result.hypers.log_noise)) * var_y
  assert bool(result.ok)
  assert abs(length / TRUE_LENGTH - 1) < 0.15, length
  assert abs(noise / TRUE_NOISE - 1) < 0.25, noise
  truth = gp.Hypers(kernels.ExpSquared.create(1.0 / var_y, TRUE_LENGTH), jnp.log(TRUE_NOISE / var_y))
  assert float(jnp.max(result.lml)) >= float(gp.log_marginal_likelihood(truth, pair, y, mask))


def test_sample_hypers_concentrate_near_the_truth_inside_the_box(gp_data):
  pair, y, mask, box = gp_data
  hypers, lml = gp_fit.sample_hypers(jax.random.key(1), box, pair, y, mask, n_samples=8, n_chains=4, burn_in=60)
  for lo, hi, leaf in zip(*(jax.tree.leaves(t) for t in (box.lower, box.upper, hypers))):
    assert np.all((leaf >= lo) & (leaf <= hi))
  lengths = np.exp(np.asarray(hypers.kernel.log_length_scale))
  assert abs(np.exp(np.log(lengths).mean()) / TRUE_LENGTH - 1) < 0.2, lengths
  assert len(np.unique(lengths)) > 4  # the chains move
  at_samples = jax.jit(jax.vmap(lambda h: gp.log_marginal_likelihood(h, pair, y, mask)))  # eagerly: a compile an op
  np.testing.assert_allclose(lml, at_samples(hypers), rtol=1e-10)


def _non_psd_problem(alpha, beta, n_nu=1):
  """OTMANN-like distances that are not a metric: exp(-beta d) has eigenvalue 1 - sqrt 2."""
  d = np.zeros((n_nu, 3, 3))
  d[:, 1, 2] = d[:, 2, 1] = 50.0
  pair = pairwise.otmann_pair(d, np.zeros_like(d))
  lower, upper = kernels.NasbotKernel.bounds(n_nu, alpha=alpha, beta=beta, beta_bar=(1, 1))
  box = gp_fit.Box.create(lower.replace(log_alpha_bar=jnp.log(1e-6)), upper.replace(log_alpha_bar=jnp.log(1e-6)))
  return pair, jnp.array([0.0, 1.0, 2.0]), jnp.ones(3, bool), box


def test_a_nan_start_loses_and_does_not_crash():
  pair, y, mask, box = _non_psd_problem(alpha=(0.01, 100.0), beta=(1e-4, 1.0))
  result = gp_fit.fit_map(jax.random.key(2), box, pair, y, mask, n_starts=16, steps=20)
  lml = np.asarray(result.lml)
  assert np.isnan(lml).any() and np.isfinite(lml).any()  # the scenario really has both
  assert bool(result.ok)
  best = gp.log_marginal_likelihood(result.hypers, pair, y, mask)
  np.testing.assert_allclose(best, np.nanmax(lml), rtol=1e-10)


def test_all_starts_failing_gives_a_false_flag():
  pair, y, mask, box = _non_psd_problem(alpha=(10.0, 100.0), beta=(1.0, 10.0))
  result = gp_fit.fit_map(jax.random.key(3), box, pair, y, mask, n_starts=4, steps=5)
  assert not bool(result.ok)
  fixed = gp_fit.fit_map(jax.random.key(3), box, pair, y, mask, n_starts=4, steps=5, project=True)
  assert bool(fixed.ok)


def test_optimise_vmap_and_chunks_agree():
  pair, y, mask, box = _non_psd_problem(alpha=(0.01, 1.0), beta=(1e-4, 1e-2))
  starts = gp_fit.sample_box(jax.random.key(4), box, 4)
  _, lml_vmap = gp_fit.optimise(starts, box, pair, y, mask, steps=10)
  _, lml_map = gp_fit.optimise(starts, box, pair, y, mask, steps=10, batch_size=1)
  np.testing.assert_allclose(lml_map, lml_vmap, rtol=1e-9)


def test_slice_sampler_matches_a_known_density():
  """N(0.3, 0.1^2) in x0 (truncation negligible) times uniform in x1 on [0, 1] x [0, 2];
  x2 has lower == upper, so it must never move."""
  lower, upper = jnp.array([0.0, 0.0, 5.0]), jnp.array([1.0, 2.0, 5.0])

  def log_density(x):
    return -0.5 * ((x[0] - 0.3) / 0.1) ** 2

  def chain(key):
    return gp_fit.slice_sample(key, log_density, jnp.array([0.9, 1.9, 5.0]), lower, upper, n_steps=1500)[0][200:]

  samples = jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(5), 4)).reshape(-1, 3)
  np.testing.assert_allclose(samples[:, 0].mean(), 0.3, atol=0.01)
  np.testing.assert_allclose(samples[:, 0].std(), 0.1, rtol=0.08)
  np.testing.assert_allclose(samples[:, 1].mean(), 1.0, atol=0.06)
  np.testing.assert_allclose(samples[:, 1].var(), 4.0 / 12.0, rtol=0.12)
  assert np.all(samples[:, 2] == 5.0)


def test_slice_sampler_leaves_a_zero_density_start():
  def log_density(x):
    return jnp.where(x[0] < 0.5, jnp.nan, 0.0)

  samples, log_p = gp_fit.slice_sample(
    jax.random.key(6),
    log_density,
    jnp.array([0.1]),
    jnp.array([0.0]),
    jnp.array([1.0]),
    n_steps=3,
  )
  assert np.all(samples >= 0.5) and np.all(log_p == 0.0)


@pytest.mark.parametrize(
  "upper_kernel, noise, message",
  [
    (kernels.Matern52.create(1.0, 1.0), (0.01, 0.1), "upper_kernel: tree"),
    (kernels.ExpSquared(jnp.log(1e-3), jnp.log(10.0)), (0.01, 0.1), "leaf 0: lower"),
    (kernels.ExpSquared.create(1.0, [1.0, 2.0]), (0.01, 0.1), "leaf 1: lower"),
    (kernels.ExpSquared.create(1.0, 1.0), (0.0, 0.1), "noise: "),
  ],
)
def test_box_validation_names_the_problem(upper_kernel, noise, message):
  with pytest.raises(ValueError, match=message):
    gp_fit.Box.create(kernels.ExpSquared.create(0.1, 0.1), upper_kernel, noise=noise)


def test_fit_arguments_are_checked_before_tracing(gp_data):
  pair, y, mask, box = gp_data
  with pytest.raises(ValueError, match="fit_map: n_starts=0"):
    gp_fit.fit_map(jax.random.key(0), box, pair, y, mask, n_starts=0)
  with pytest.raises(TypeError, match="box is a tuple"):
    gp_fit.fit_map(jax.random.key(0), (box.lower, box.upper), pair, y, mask)
  with pytest.raises(ValueError, match="n_samples=6 is not a multiple of n_chains=4"):
    gp_fit.sample_hypers(jax.random.key(0), box, pair, y, mask, n_samples=6)


def test_given_starts_run_first_and_the_fresh_ones_are_the_same_draws(gp_data):
  """fit_map(starts=s, n_starts=n): lml[0] is Adam from s alone; lml[1:] are the n random starts of
  fit_map(n_starts=n) from the same key."""
  pair, y, mask, box = gp_data
  key, given = jax.random.key(3), gp_fit.sample_box(jax.random.key(9), box, 1)
  with_start = gp_fit.fit_map(key, box, pair, y, mask, n_starts=2, starts=given, steps=20)
  fresh = gp_fit.fit_map(key, box, pair, y, mask, n_starts=2, steps=20)
  _, alone = gp_fit.optimise(given, box, pair, y, mask, steps=20)
  np.testing.assert_allclose(with_start.lml, np.concatenate([alone, fresh.lml]), rtol=1e-10)
  only = gp_fit.fit_map(key, box, pair, y, mask, n_starts=0, starts=given, steps=20)  # no fresh start
  np.testing.assert_allclose(only.lml, alone, rtol=1e-10)
  with pytest.raises(ValueError, match="fit_map: starts must be gp.Hypers of the box's tree"):
    gp_fit.fit_map(key, box, pair, y, mask, starts=box.lower)  # no leading axis of starts
  with pytest.raises(ValueError, match="fit_map: n_starts=0"):
    gp_fit.fit_map(key, box, pair, y, mask, n_starts=0)
