"""Acquisitions: values computed by hand, monotonicity properties of EI, averaging over
hyper-parameter samples, Thompson draws, pending points hallucinated, and options checked when an
acquisition is built."""

import math

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.acquisition import functions as acq
from nas_jax.surrogates.surrogate import Predictive

PHI_1 = 0.8413447460685429  # standard normal cdf at 1
PDF_1 = math.exp(-0.5) / math.sqrt(2 * math.pi)
PDF_0 = 1 / math.sqrt(2 * math.pi)


def _pred(mean, std, samples=None):
  return Predictive(jnp.asarray(mean, float), jnp.asarray(std, float), samples)


def test_ei_known_values():
  pred = _pred([1.0, 0.0, 3.0, -1.0], [1.0, 2.0, 0.0, 0.0])
  expected = [
    1.0 * PHI_1 + PDF_1,  # z = 1
    2.0 * PDF_0,  # mu = best: sigma phi(0)
    3.0,  # sigma = 0: mu - best
    0.0,  # sigma = 0 below best
  ]
  np.testing.assert_allclose(acq.ei()(pred, 0.0), expected, rtol=1e-12)
  # best + xi = 2 and mu = 2.5, sigma = 1: z = 0.5, Phi(0.5) = 0.6914624612740131.
  got = acq.ei(xi=1.0)(_pred([2.5], [1.0]), 1.0)
  expected_xi = 0.5 * 0.6914624612740131 + math.exp(-0.125) / math.sqrt(2 * math.pi)
  np.testing.assert_allclose(got, [expected_xi], rtol=1e-12)


def test_pi_known_values():
  pred = _pred([1.0, 0.0, 3.0, -1.0], [1.0, 2.0, 0.0, 0.0])
  np.testing.assert_allclose(acq.pi()(pred, 0.0), [PHI_1, 0.5, 1.0, 0.0], rtol=1e-12)
  np.testing.assert_allclose(acq.pi(xi=1.0)(pred, -1.0)[0], PHI_1, rtol=1e-12)


def test_sigma_scale_narrows_the_predictive_of_ei_and_pi():
  pred, narrow = _pred([1.0, -0.5], [2.0, 1.0]), _pred([1.0, -0.5], [0.4, 0.2])
  for make in (acq.ei, acq.pi):
    np.testing.assert_allclose(make(sigma_scale=0.2)(pred, 0.3), make()(narrow, 0.3), rtol=1e-12)


def test_ucb_and_lcb_known_values():
  pred = _pred([1.0, -2.0], [0.5, 2.0])
  np.testing.assert_allclose(acq.ucb(kappa=2.0)(pred), [2.0, 2.0])
  np.testing.assert_allclose(acq.lcb(kappa=2.0)(pred), [0.0, -6.0])


def test_gp_ucb_beta_schedule_is_ucbs_kappa_squared():
  beta_1 = 2.0 * math.log(math.pi**2 / (3 * 0.1))
  np.testing.assert_allclose(acq.gp_ucb_beta(1, dim=2), beta_1, rtol=1e-12)
  np.testing.assert_allclose(acq.gp_ucb_beta(10, dim=2), beta_1 + 2 * 3 * math.log(10), rtol=1e-12)
  pred = _pred([1.0], [2.0])
  kappa = math.sqrt(float(acq.gp_ucb_beta(10, dim=2)))
  np.testing.assert_allclose(acq.ucb(kappa=kappa)(pred), 1.0 + 2.0 * math.sqrt(beta_1 + 6 * math.log(10)), rtol=1e-12)
  with pytest.raises(ValueError, match="dim=0"):
    acq.gp_ucb_beta(1, dim=0)


@pytest.mark.parametrize(
  "make, option", [(acq.ei, "xi"), (acq.ei, "sigma_scale"), (acq.pi, "xi"), (acq.ucb, "kappa"), (acq.lcb, "kappa")]
)
@pytest.mark.parametrize("bad", [-1.0, float("nan"), "two", True])
def test_bad_options_are_refused_when_built(make, option, bad):
  with pytest.raises(ValueError, match=f"{option}={bad!r}"):
    make(**{option: bad})


def test_parts_say_what_the_engine_needs_of_them():
  closed = {a.name for a in ALL if a.closed_form}
  assert closed == {"ei", "pi", "ucb"}
  assert [a.name for a in ALL if a.joint] == ["ts"] and [a.name for a in ALL if not a.needs_model] == ["random"]


finite = dict(allow_nan=False, allow_infinity=False)


ALL = (acq.ei(), acq.pi(), acq.ucb(), acq.thompson(), acq.independent_thompson(), acq.uniform())
SCORING = [a for a in ALL if a.needs_model]
_ei = jax.jit(lambda pred, best: acq.ei()(pred, best))


@hypothesis.settings(max_examples=150, deadline=None)
@hypothesis.given(
  mu=st.floats(-10, 10, **finite),
  sigma=st.floats(0, 10, **finite),
  d_mu=st.floats(0, 5, **finite),
  d_sigma=st.floats(0, 5, **finite),
  best=st.floats(-10, 10, **finite),
)
def test_ei_is_nonnegative_increasing_in_mu_and_sigma(mu, sigma, d_mu, d_sigma, best):
  pred = _pred([mu, mu + d_mu, mu], [sigma, sigma, sigma + d_sigma])
  base, more_mu, more_sigma = np.asarray(_ei(pred, best))
  assert base >= 0.0
  assert base >= max(mu - best, 0.0) - 1e-12  # Jensen: E max(f - best, 0) >= max(E f - best, 0)
  tol = 1e-12 * (1 + abs(mu) + sigma)
  assert more_mu >= base - tol
  assert more_sigma >= base - tol
  if sigma > 0.1 and d_mu > 1e-3 and (mu - best) / sigma > -5:
    assert more_mu > base  # strictly increasing wherever Phi(z) is not negligible


def test_acquisitions_average_over_hyper_samples():
  mean = np.array([[0.5, 1.0, -1.0], [1.5, 0.0, 2.0]])
  std = np.array([[1.0, 0.3, 2.0], [0.2, 1.0, 0.5]])
  batched = _pred(mean, std)
  for fn in (acq.ei(), acq.pi(), acq.ucb()):
    per_sample = [fn(_pred(mean[s], std[s]), 0.5) for s in range(2)]
    np.testing.assert_allclose(fn(batched, 0.5), np.mean(per_sample, axis=0), rtol=1e-12)


def test_thompson_returns_one_of_the_joint_draws():
  samples = jnp.arange(12.0).reshape(4, 3)
  pred = _pred(np.zeros(3), np.ones(3), samples)
  ts = acq.thompson()
  draws = {tuple(np.asarray(ts(pred, 0.0, jax.random.key(k)))) for k in range(30)}
  assert draws == {tuple(row) for row in np.asarray(samples)}
  with pytest.raises(ValueError, match="pred.samples is None"):
    ts(_pred(np.zeros(3), np.ones(3)), 0.0, jax.random.key(0))
  with pytest.raises(ValueError, match="key is None"):
    ts(pred, 0.0)


def test_independent_thompson_has_the_predictive_moments():
  pred = _pred([1.0, -2.0], [0.5, 3.0])
  draws = jax.vmap(lambda k: acq.independent_thompson()(pred, 0.0, k))(jax.random.split(jax.random.key(0), 20000))
  np.testing.assert_allclose(draws.mean(0), [1.0, -2.0], atol=0.05)
  np.testing.assert_allclose(draws.std(0), [0.5, 3.0], rtol=0.03)


@pytest.mark.parametrize("acquisition", SCORING, ids=lambda a: a.name)
@pytest.mark.parametrize("hyper_samples", [False, True])
def test_every_acquisition_at_padded_slots_cut_to_m_equals_it_at_m(acquisition, hyper_samples):
  # bo computes acquisitions at a padded candidate capacity and cuts (one compile per capacity):
  # the first m values must be those of m candidates, draws (ts, its) included.
  rng = np.random.default_rng(0)
  r, m = 16, 7
  shape = (3, r) if hyper_samples else (r,)
  mean, std = rng.normal(size=shape), rng.uniform(0.1, 2.0, size=shape)
  samples = jnp.asarray(rng.normal(size=(5, r)))
  full = _pred(mean, std, samples)
  cut = _pred(mean[..., :m], std[..., :m], samples[:, :m])
  for k in range(5):
    key = jax.random.key(k)
    got = acquisition(full, 0.3, key)[:m]
    np.testing.assert_array_equal(got, acquisition(cut, 0.3, key))


def test_pending_points_keep_the_real_mean_and_the_hallucinated_std():
  real = _pred([1.0, 0.2, -0.5], [1.0, 0.8, 0.3])
  hallucinated = _pred([7.0, 7.0, 7.0], [0.1, 0.8, 0.3])  # its mean must be ignored
  got = acq.ei()(acq.with_pending(real, hallucinated), 0.5)
  np.testing.assert_allclose(got, acq.ei()(_pred([1.0, 0.2, -0.5], [0.1, 0.8, 0.3]), 0.5))
  assert got[0] < acq.ei()(real, 0.5)[0]  # less std near a point in flight: less EI
