"""The L-BFGS fit: never below its starts, as good as the Adam fit on NASBOT's kernel, the same
hyper-parameters from the same key, inside the box, and NaN starts lose."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nas_jax.features import pairwise
from nas_jax.surrogates import gp, gp_fit, gp_lbfgs, kernels
from nas_jax.surrogates.surrogate import gp_surrogate

NU_STR = (0.1, 0.2, 0.4, 0.8)


@pytest.fixture(scope="module")
def nasbot_data():
  """40 points with OTMANN's scales (d ~ 1e3 mass units, d_bar in [0, 1]; distances in R^5, as
  benchmarks/bench_gp.py) and a smooth noisy target, under NASBOT's box with one leaf fixed."""
  rng = np.random.default_rng(0)
  x = rng.uniform(0.0, 1.0, (40, 5))
  dist = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
  d = np.stack([2e3 * (1.0 + nu) * dist for nu in NU_STR])
  d_bar = np.stack([dist / (1.0 + nu) / np.sqrt(5.0) for nu in NU_STR])
  y = jnp.asarray(np.sin(3.0 * x[:, 0]) + x[:, 1] ** 2 + 0.1 * rng.normal(size=40))
  lower, upper = kernels.NasbotKernel.bounds(len(NU_STR))
  box = gp_fit.Box.create(lower, upper.replace(log_alpha=lower.log_alpha))  # log_alpha held fixed
  return pairwise.otmann_pair(d, d_bar), y, jnp.ones(40, bool), box


@jax.jit  # compiled once for every example, where eagerly each operation compiles alone
def _lml(hypers, pair, y, mask):
  return jax.vmap(lambda h: gp.log_marginal_likelihood(h, pair, y, mask, project=True))(hypers)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_every_start_climbs_reproducibly_inside_the_box(nasbot_data, seed):
  pair, y, mask, box = nasbot_data
  key = jax.random.key(seed)
  result, _ = gp_lbfgs.fit_lbfgs(key, box, pair, y, mask, n_starts=4, project=True)
  start_lml = np.asarray(_lml(gp_fit.sample_box(key, box, 4), pair, y, mask))  # the fit's fresh starts
  assert np.all(np.asarray(result.lml) >= start_lml)
  (best,) = _lml(jax.tree.map(lambda a: a[None], result.hypers), pair, y, mask)
  np.testing.assert_allclose(best, np.nanmax(result.lml), rtol=1e-12)  # the best start is returned
  again, _ = gp_lbfgs.fit_lbfgs(key, box, pair, y, mask, n_starts=4, project=True)
  for a, b in zip(jax.tree.leaves(result.hypers), jax.tree.leaves(again.hypers)):
    np.testing.assert_array_equal(a, b)
  for lo, hi, leaf in zip(*(jax.tree.leaves(t) for t in (box.lower, box.upper, result.hypers))):
    assert np.all((leaf >= lo) & (leaf <= hi))
  assert float(result.hypers.kernel.log_alpha) == float(box.lower.kernel.log_alpha)  # the fixed leaf stays


@pytest.mark.slow
def test_lbfgs_is_as_good_as_the_adam_fit(nasbot_data):
  """Today's NASBOT fit (16 starts x 200 Adam steps) against 4 L-BFGS starts, same key."""
  pair, y, mask, box = nasbot_data
  for seed in range(3):
    key = jax.random.key(seed)
    adam = gp_fit.fit_map(key, box, pair, y, mask, n_starts=16, steps=200, project=True)
    result, n_iter = gp_lbfgs.fit_lbfgs(key, box, pair, y, mask, n_starts=4, project=True)
    lml_adam = float(gp.log_marginal_likelihood(adam.hypers, pair, y, mask, project=True))
    lml_lbfgs = float(gp.log_marginal_likelihood(result.hypers, pair, y, mask, project=True))
    assert lml_lbfgs >= lml_adam - 1e-6, (seed, lml_lbfgs, lml_adam)
    assert int(n_iter.min()) < 100  # the convergence test ends starts, not only the iteration cap


def _non_psd_problem():
  """exp(-beta d) of a non-metric d is not PSD for some beta: those starts have a NaN
  log-likelihood without projection (as tests/surrogates/test_gp_fit.py)."""
  d = np.zeros((1, 3, 3))
  d[:, 1, 2] = d[:, 2, 1] = 50.0
  pair = pairwise.otmann_pair(d, np.zeros_like(d))
  lower, upper = kernels.NasbotKernel.bounds(1, alpha=(0.01, 100.0), beta=(1e-4, 1.0), beta_bar=(1, 1))
  box = gp_fit.Box.create(lower.replace(log_alpha_bar=jnp.log(1e-6)), upper.replace(log_alpha_bar=jnp.log(1e-6)))
  return pair, jnp.array([0.0, 1.0, 2.0]), jnp.ones(3, bool), box


@pytest.mark.slow  # a compile of its own (the zoom line search is a large program)
def test_a_nan_start_loses_to_a_finite_one():
  pair, y, mask, box = _non_psd_problem()
  draws = gp_fit.sample_box(jax.random.key(2), box, 16)
  lml = np.asarray(jax.vmap(lambda h: gp.log_marginal_likelihood(h, pair, y, mask))(draws))
  nan, finite = int(np.flatnonzero(np.isnan(lml))[0]), int(np.flatnonzero(np.isfinite(lml))[0])
  starts = jax.tree.map(lambda x: x[jnp.array([nan, finite])], draws)  # the NaN start comes first
  result, _ = gp_lbfgs.fit_lbfgs(jax.random.key(0), box, pair, y, mask, n_starts=0, starts=starts)
  assert np.isnan(result.lml[0]) and bool(result.ok)
  assert float(result.lml[1]) >= lml[finite]
  np.testing.assert_allclose(gp.log_marginal_likelihood(result.hypers, pair, y, mask), result.lml[1], rtol=1e-12)


@pytest.mark.slow
def test_a_warm_lbfgs_refit_climbs_from_a_poor_start(nasbot_data):
  pair, y, mask, box = nasbot_data
  surrogate = gp_surrogate(box, project=True, fitter=gp_lbfgs.lbfgs(2, max_iter=40), warm_steps=15)
  state = surrogate.fit(jax.random.key(1), pair, y, mask)
  corner = state.replace(posterior=state.posterior.replace(hypers=jax.tree.map(lambda lo: lo[None], box.lower)))
  climbed = surrogate.refit(jax.random.key(1), corner, pair, y, mask)
  assert float(climbed.lml[0]) > float(_lml(corner.posterior.hypers, pair, y, mask)[0]) + 1.0
  again = surrogate.refit(jax.random.key(1), state, pair, y, mask)
  assert float(again.lml[0]) >= float(state.lml[0])


@pytest.mark.parametrize(
  "kwargs, message",
  [
    (dict(n_starts=0), "lbfgs: n_starts=0"),
    (dict(max_iter=0), "lbfgs: max_iter=0"),
    (dict(gtol=-1.0), "lbfgs: gtol=-1.0"),
    (dict(ftol="x"), "lbfgs: ftol='x'"),
  ],
)
def test_lbfgs_options_are_checked(kwargs, message):
  with pytest.raises(ValueError, match=message):
    gp_lbfgs.lbfgs(**kwargs)


def test_fit_lbfgs_checks_its_arguments_before_tracing(nasbot_data):
  pair, y, mask, box = nasbot_data
  with pytest.raises(ValueError, match="fit_lbfgs: n_starts=0"):
    gp_lbfgs.fit_lbfgs(jax.random.key(0), box, pair, y, mask, n_starts=0)
  with pytest.raises(ValueError, match="fit_lbfgs: starts must be gp.Hypers of the box's tree"):
    gp_lbfgs.fit_lbfgs(jax.random.key(0), box, pair, y, mask, starts=box.lower)
  with pytest.raises(TypeError, match="fitter is a str"):
    gp_surrogate(box, fitter="lbfgs")
  with pytest.raises(ValueError, match="exclude each other"):
    gp_surrogate(box, fitter=gp_lbfgs.lbfgs(), n_hyper_samples=4)


def test_configs_name_the_fitter_and_get_one_clear_line_for_a_wrong_one():
  import types

  import ml_collections

  from nas_jax.spaces.cells import nb201_space
  from nas_jax.wiring import parts

  for name, options, message in (
    (
      "nasbot",
      {"surrogate": "gp", "surrogate_config": {"fitter": "bfgs"}},
      r"strategy_config.surrogate_config.fitter: 'bfgs' is unknown; choose one of: adam, lbfgs",
    ),
    (
      "bo",
      {"surrogate_config": {"fitter": "lbfgs", "fitter_config": {"steps": 3}}},
      r"strategy_config.surrogate_config.fitter 'lbfgs': .*'steps'",
    ),
  ):
    config = ml_collections.ConfigDict({"strategy_config": options})
    with pytest.raises(ValueError, match=message):
      parts.make_strategy(name, config, nb201_space(), types.SimpleNamespace(goal="max", objectives=()))
  assert parts.FITTERS["lbfgs"](n_starts=2, max_iter=7) == gp_lbfgs.Lbfgs(2, 7)


@pytest.mark.slow  # a compile of its own (~12 s on 2 cores)
def test_on_a_kernel_that_is_not_psd_every_start_climbs_reproducibly():
  """OTMANN distances need not be a metric, so NASBOT's Gram matrix has negative eigenvalues and
  the likelihood is that of its projection, with kinks where an eigenvalue crosses 0."""
  rng = np.random.default_rng(3)
  n = 16
  raw = np.triu(rng.uniform(100.0, 1000.0, (n, n)), 1)
  x = rng.uniform(0.0, 1.0, (n, 4))
  d = np.stack([(1.0 + nu) * (raw + raw.T) for nu in NU_STR])
  d_bar = np.stack([np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1)) / (1.0 + nu) for nu in NU_STR])
  pair, y, mask = pairwise.otmann_pair(d, d_bar), jnp.asarray(x[:, 0] + 0.1 * rng.normal(size=n)), jnp.ones(n, bool)
  box = gp_fit.Box.create(*kernels.NasbotKernel.bounds(len(NU_STR), beta=(1e-5, 1e-3)))
  key = jax.random.key(5)
  starts = gp_fit.sample_box(key, box, 4)
  kernels_at_starts = jax.vmap(lambda h: h.kernel(pair))(starts)
  assert np.any(np.linalg.eigvalsh(np.asarray(kernels_at_starts)).min(-1) < -1e-6)  # not PSD
  result, _ = gp_lbfgs.fit_lbfgs(key, box, pair, y, mask, n_starts=4, project=True)
  assert np.all(np.asarray(result.lml) >= np.asarray(_lml(starts, pair, y, mask)))
  again, _ = gp_lbfgs.fit_lbfgs(key, box, pair, y, mask, n_starts=4, project=True)
  for a, b in zip(jax.tree.leaves(result.hypers), jax.tree.leaves(again.hypers)):
    np.testing.assert_array_equal(a, b)
