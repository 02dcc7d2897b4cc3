"""The GP surrogate: joint samples with the posterior covariance, kriging-believer hallucination,
hyper-parameter samples, and clear failures."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.features import pairwise
from nas_jax.surrogates import gp, gp_fit, kernels
from nas_jax.surrogates.surrogate import JointInputs, Surrogate, gp_surrogate, hallucinate

C = 16
BOX = gp_fit.Box.create(*kernels.ExpSquared.bounds(2, length_scale=(0.3, 3.0)))


@pytest.fixture(scope="module")
def data():
  """12 real points in [0, 3]^2 padded to 16, and 5 candidates; x [C, 2], y [C], mask [C]."""
  rng = np.random.default_rng(0)
  x = rng.uniform(0, 3, (C, 2))
  y = np.where(np.arange(C) < 12, np.sin(x).sum(1), np.nan)
  cands = np.concatenate([x[12:14], rng.uniform(0, 3, (3, 2))])  # 2 pending, 3 others
  return x, y, np.arange(C) < 12, cands


@pytest.fixture(scope="module")
def map_model(data):
  x, y, mask, _ = data
  surrogate = gp_surrogate(BOX, n_starts=4, steps=30, n_samples=4000)
  return surrogate, surrogate.fit(jax.random.key(0), pairwise.vector_pair(x), y, mask)


def test_joint_samples_have_the_posterior_mean_and_covariance(data, map_model):
  x, _, _, cands = data
  surrogate, state = map_model
  inputs = JointInputs(pairwise.vector_pair(cands, x), pairwise.vector_pair(cands))
  pred = surrogate.predict(state, inputs)
  marginal = surrogate.predict(state, pairwise.vector_pair(cands, x))
  np.testing.assert_allclose(pred.std, marginal.std, rtol=1e-10)
  assert marginal.samples is None and pred.samples.shape == (4000, 5)
  post = jax.tree.map(lambda v: v[0], state.posterior)
  mean, cov = gp.predict_joint(post, inputs.cross, inputs.test)
  np.testing.assert_allclose(pred.samples.mean(0), mean, atol=4 * float(pred.std.max()) / 60)
  np.testing.assert_allclose(np.cov(pred.samples.T), cov, atol=0.1 * float(np.diag(cov).max()))


@pytest.mark.parametrize("n_hyper_samples", [0, 4])
def test_hallucination_keeps_the_mean_and_shrinks_std_at_pending_points(data, n_hyper_samples):
  x, y, mask, cands = data
  surrogate = gp_surrogate(BOX, n_starts=4, steps=30, n_hyper_samples=n_hyper_samples, n_chains=2, burn_in=10)
  pair = pairwise.vector_pair(x)
  state = surrogate.fit(jax.random.key(1), pair, y, mask)
  pending = (np.arange(C) >= 12) & (np.arange(C) < 14)
  state_p = hallucinate(surrogate, state, pair, y, mask, pending)
  cross = pairwise.vector_pair(cands, x)
  pred, pred_p = surrogate.predict(state, cross), surrogate.predict(state_p, cross)
  assert pred.mean.shape == ((5,) if n_hyper_samples == 0 else (4, 5))
  np.testing.assert_allclose(pred_p.mean, pred.mean, atol=1e-9)
  assert np.all(pred_p.std <= pred.std + 1e-12)
  assert np.all(pred_p.std[..., :2] < 0.9 * pred.std[..., :2])


def test_hyper_samples_give_joint_draws_per_sample(data):
  x, y, mask, cands = data
  surrogate = gp_surrogate(BOX, n_hyper_samples=4, n_chains=2, burn_in=10, n_samples=3)
  state = surrogate.fit(jax.random.key(2), pairwise.vector_pair(x), y, mask)
  pred = surrogate.predict(state, JointInputs(pairwise.vector_pair(cands, x), pairwise.vector_pair(cands)))
  assert pred.samples.shape == (12, 5) and pred.std.shape == (4, 5)
  lengths = np.exp(np.asarray(state.posterior.hypers.kernel.log_length_scale))
  assert len(np.unique(lengths[:, 0])) == 4  # four distinct posterior samples


def test_fit_raises_when_the_gp_cannot_be_factorised():
  d = np.zeros((1, 3, 3))
  d[0, 1, 2] = d[0, 2, 1] = 50.0
  pair = pairwise.otmann_pair(d, np.zeros_like(d))
  lower, upper = kernels.NasbotKernel.bounds(1, alpha=(10, 100), beta=(1, 10), beta_bar=(1, 1))
  box = gp_fit.Box.create(lower, upper.replace(log_alpha_bar=lower.log_alpha_bar))
  y, mask = jnp.array([0.0, 1.0, 2.0]), jnp.ones(3, bool)
  with pytest.raises(np.linalg.LinAlgError, match="gp_surrogate.fit: the kernel matrix"):
    gp_surrogate(box, n_starts=2, steps=3).fit(jax.random.key(0), pair, y, mask)


def test_hallucinate_refits_a_surrogate_without_condition(data, map_model):
  x, y, mask, _ = data
  surrogate, state = map_model
  pair = pairwise.vector_pair(x)
  pending = np.arange(C) == 12
  refit_only = Surrogate(surrogate.fit, surrogate.predict)
  with pytest.raises(ValueError, match="hallucinate: key is None"):
    hallucinate(refit_only, state, pair, y, mask, pending)
  state_p = hallucinate(refit_only, state, pair, y, mask, pending, key=jax.random.key(3))
  assert bool(state_p.posterior.mask[0, 12])
  y_believed = np.where(pending, surrogate.predict(state, pair).mean, y)
  np.testing.assert_allclose(
    state_p.posterior.z[0, 12] * state_p.posterior.y_scale[0] + state_p.posterior.y_shift[0], y_believed[12], rtol=1e-10
  )


def test_a_warm_refit_climbs_from_its_start_and_never_ends_below_it(data, map_model):
  x, y, mask, _ = data
  surrogate, state = map_model
  pair = pairwise.vector_pair(x)
  more = np.arange(C) < 14  # two more observations
  y2 = np.where(more, np.sin(x).sum(1), 0.0)
  bad = jax.tree.map(lambda lo: lo[None], BOX.lower)  # the box's corner: a poor fit
  from_bad = state.replace(posterior=state.posterior.replace(hypers=bad))
  lml_bad = gp.log_marginal_likelihood(BOX.lower, pair, y2, more)
  climbed = surrogate.refit(jax.random.key(1), from_bad, pair, y2, more)
  assert float(climbed.lml[0]) > float(lml_bad) + 1.0
  # From the fitted hypers on their own data, 20 more steps cannot end lower than the start.
  again = surrogate.refit(jax.random.key(1), state, pair, np.nan_to_num(y), mask)
  assert float(again.lml[0]) >= float(state.lml[0]) - 1e-6
  np.testing.assert_allclose(surrogate.predict(again, pair).mean[:12], y[:12], atol=0.2)
  assert gp_surrogate(BOX, n_hyper_samples=4, n_chains=2).refit is None  # sampled hypers: no warm start


def test_a_refit_of_no_step_keeps_the_hypers_and_conditions_on_the_new_data(data, map_model):
  x, y, mask, _ = data
  surrogate, state = map_model
  kept = gp_surrogate(BOX, n_starts=4, steps=30, warm_steps=0)
  pair, more = pairwise.vector_pair(x), np.arange(C) < 14
  y2 = np.where(more, np.sin(x).sum(1), 0.0)
  new = kept.refit(jax.random.key(1), state, pair, y2, more)
  chex.assert_trees_all_equal(new.posterior.hypers, state.posterior.hypers)
  hypers = jax.tree.map(lambda h: h[0], state.posterior.hypers)
  np.testing.assert_allclose(new.lml[0], gp.log_marginal_likelihood(hypers, pair, y2, more), rtol=1e-12)
  expected = gp.predict(gp.condition(hypers, pair, y2, more), pair)[0]
  np.testing.assert_allclose(kept.predict(new, pair).mean, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
  "kwargs, error, message",
  [
    (dict(warm_steps=-1), ValueError, "gp_surrogate: warm_steps=-1"),
    (dict(n_starts=0), ValueError, "gp_surrogate: n_starts=0"),
    (dict(n_hyper_samples=6, n_chains=4), ValueError, "not a multiple of n_chains=4"),
    (dict(lr=-1.0), ValueError, "lr=-1.0"),
    (dict(batch_size=0), ValueError, "batch_size=0"),
  ],
)
def test_gp_surrogate_checks_its_options(kwargs, error, message):
  with pytest.raises(error, match=message):
    gp_surrogate(BOX, **kwargs)
  with pytest.raises(TypeError, match="box is a tuple"):
    gp_surrogate((BOX.lower, BOX.upper))


def test_fit_from_replaces_one_random_start_by_the_earlier_fit(data, map_model):
  """fit_from(state) with n_starts = 1 is Adam from state's hyper-parameters alone; with more
  starts it ends no lower than that."""
  x, y, mask, _ = data
  _, state = map_model
  pair, more = pairwise.vector_pair(x), np.arange(C) < 14
  y2 = np.where(more, np.sin(x).sum(1), 0.0)
  start = jax.tree.map(lambda h: h[:1], state.posterior.hypers)
  _, alone = gp_fit.optimise(start, BOX, pair, jnp.asarray(y2), jnp.asarray(more), steps=30)
  one = gp_surrogate(BOX, n_starts=1, steps=30).fit_from(jax.random.key(1), state, pair, y2, more)
  np.testing.assert_allclose(one.lml, alone, rtol=1e-8)
  four = gp_surrogate(BOX, n_starts=4, steps=30).fit_from(jax.random.key(1), state, pair, y2, more)
  assert float(four.lml[0]) >= float(alone[0]) - 1e-6
  assert gp_surrogate(BOX, n_hyper_samples=4, n_chains=2).fit_from is None  # sampled hypers: no start
