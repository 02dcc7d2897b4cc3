"""The closed-form likelihood gradient: gp's value everywhere, autodiff's gradient through the
Cholesky, and through an eigendecomposition of the clipped Gram matrix where the kernel is not PSD;
padding changes nothing. The eigendecompositions that run on the host's cores are XLA's."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from jax.scipy.linalg import cho_solve

from nas_jax.arch import host_threads
from nas_jax.features import pairwise
from nas_jax.surrogates import gp, gp_fit, gp_lml, kernels

NU_STR = (0.1, 0.2, 0.4)
N = 14


def _distances(n, seed):
  """OTMANN-scaled distances of n points: d symmetric at random (no metric, so exp(-beta d) is
  not PSD, as OTMANN's need not be: NASBOT Sec. 4), d_bar Euclidean."""
  rng = np.random.default_rng(seed)
  x = rng.uniform(0.0, 1.0, (n, 6))
  raw = np.triu(rng.uniform(100.0, 1000.0, (n, n)), 1)
  l2 = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
  d = np.stack([(1.0 + nu) * (raw + raw.T) for nu in NU_STR])
  d_bar = np.stack([l2 / (1.0 + nu) for nu in NU_STR])
  y = np.sin(3.0 * x[:, 0]) + x[:, 1] + 0.1 * rng.normal(size=n) + 5.0
  return d, d_bar, y


def _padded(d, d_bar, y, capacity, seed):
  """The points at random slots among `capacity`, finite garbage distances and NaN targets elsewhere."""
  rng = np.random.default_rng(seed)
  slots = np.sort(rng.choice(capacity, len(y), replace=False))
  dp = rng.uniform(0.0, 500.0, (len(NU_STR), capacity, capacity))
  dbp = rng.uniform(0.0, 1.0, (len(NU_STR), capacity, capacity))
  dp[:, slots[:, None], slots[None, :]], dbp[:, slots[:, None], slots[None, :]] = d, d_bar
  yp, mask = np.full(capacity, np.nan), np.zeros(capacity, bool)
  yp[slots], mask[slots] = y, True
  return pairwise.otmann_pair(dp, dbp), jnp.asarray(yp), jnp.asarray(mask)


@pytest.fixture(scope="module")
def problem():
  d, d_bar, y = _distances(N, 0)
  box = gp_fit.Box.create(*kernels.NasbotKernel.bounds(len(NU_STR), beta=(1e-5, 1e-3)))
  hypers = gp_fit.sample_box(jax.random.key(0), box, 6)
  return d, d_bar, y, [jax.tree.map(lambda x, i=i: x[i], hypers) for i in range(6)]


@functools.partial(jax.jit, static_argnums=(0, 5))
def _grad(fn, hypers, pair, y, mask, project):
  return ravel_pytree(jax.grad(lambda h: fn(h, pair, y, mask, project=project))(hypers))[0]


@functools.partial(jax.jit, static_argnums=(4,))
def _both_values(hypers, pair, y, mask, project):
  return (
    gp.log_marginal_likelihood(hypers, pair, y, mask, project=project),
    gp_lml.log_marginal_likelihood(hypers, pair, y, mask, project=project),
  )


def _clipped_lml(hypers, pair, y, mask, *, project=True):
  """The clipped likelihood written plainly, differentiated by autodiff through eigh (no padding:
  eigh's derivative is infinite at the repeated zero eigenvalues that padding creates)."""
  del mask, project
  shift, scale = gp.normalise(y, jnp.ones(y.shape, bool))
  z = (y - shift) / scale
  w, v = jnp.linalg.eigh(hypers.kernel(pair))
  chol = jnp.linalg.cholesky((v * jnp.maximum(w, 0.0)) @ v.T + jnp.exp(hypers.log_noise) * jnp.eye(len(y)))
  alpha = cho_solve((chol, True), z)
  return -0.5 * z @ alpha - jnp.log(jnp.diag(chol)).sum() - 0.5 * len(y) * jnp.log(2.0 * jnp.pi)


@pytest.mark.parametrize("project", [False, True])
def test_the_value_is_gps_padded_or_not(problem, project):
  d, d_bar, y, hypers = problem
  pair, yp, mask = _padded(d, d_bar, y, 32, seed=1)
  for h in hypers:
    want, got = (float(v) for v in _both_values(h, pair, yp, mask, project))
    if np.isnan(want):  # a non-PSD Gram matrix without projection: both fail alike
      assert np.isnan(got)
      continue
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_the_projected_gradient_is_that_of_the_clipped_likelihood(problem):
  d, d_bar, y, hypers = problem
  pair, yj, ones = pairwise.otmann_pair(d, d_bar), jnp.asarray(y), jnp.ones(N, bool)
  padded = _padded(d, d_bar, y, 32, seed=3)
  clipped = 0
  for h in hypers:
    clipped += int(np.linalg.eigvalsh(np.asarray(h.kernel(pair))).min() < -1e-8)
    want = _grad(_clipped_lml, h, pair, yj, ones, True)
    np.testing.assert_allclose(
      _grad(gp_lml.log_marginal_likelihood, h, pair, yj, ones, True), want, atol=1e-8, rtol=1e-8
    )
    np.testing.assert_allclose(_grad(gp_lml.log_marginal_likelihood, h, *padded, True), want, atol=1e-8, rtol=1e-8)
  assert clipped >= 2  # the clipping is exercised, not only PSD matrices


def _straight_through(hypers, pair, y, mask, *, project=True):
  return gp_lml.log_marginal_likelihood(hypers, pair, y, mask, project=project, straight_through=True)


@pytest.mark.parametrize("capacity", [32, gp_lml._HOST_EIGH_LEAST])
@pytest.mark.parametrize("project", [False, True])
def test_the_gradient_is_autodiffs_through_gp(problem, project, capacity):
  """Without projection, autodiff through the Cholesky (straight_through is then ignored); with
  it, through project_psd's straight-through clipping: the Adam fit's gradient (gp_fit.optimise),
  which differs from the clipped likelihood's where the kernel matrix is not PSD. At the larger
  capacity the eigendecomposition is numpy's, on the host."""
  d, d_bar, y, hypers = problem
  pair, yp, mask = _padded(d, d_bar, y, capacity, seed=2)
  checked = differs = 0
  for h in hypers:
    want = _grad(gp.log_marginal_likelihood, h, pair, yp, mask, project)
    if not np.all(np.isfinite(want)):  # a non-PSD Gram matrix without projection
      continue
    got = _grad(_straight_through, h, pair, yp, mask, project)
    np.testing.assert_allclose(got, want, atol=1e-8, rtol=1e-8)
    checked += 1
    clipped = _grad(gp_lml.log_marginal_likelihood, h, pair, yp, mask, project)
    differs += int(not np.allclose(got, clipped, atol=1e-6, rtol=1e-6))
  assert checked >= 2
  assert differs >= 2 if project else differs == 0


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_the_host_eigh_is_xlas(dtype):
  """From _HOST_EIGH_LEAST slots, under vmap (the fit's starts) and jit: the eigenvalues of
  jnp.linalg.eigh, ascending, and orthonormal eigenvectors that rebuild the matrix."""
  c = gp_lml._HOST_EIGH_LEAST
  x = jax.random.normal(jax.random.key(0), (3, c, c), dtype)
  x = x + jnp.swapaxes(x, 1, 2)
  w, v = jax.jit(jax.vmap(gp_lml._eigh))(x)
  want = jnp.linalg.eigh(x)[0]
  tol = 1e3 * jnp.finfo(dtype).eps
  assert w.dtype == v.dtype == dtype and w.shape == (3, c) and v.shape == (3, c, c)
  np.testing.assert_allclose(w, want, rtol=tol, atol=tol * np.abs(want).max())
  assert np.all(np.diff(np.asarray(w), axis=1) >= 0)
  np.testing.assert_allclose(v @ jnp.swapaxes(v, 1, 2), np.broadcast_to(np.eye(c), x.shape), atol=tol)
  np.testing.assert_allclose((v * w[:, None, :]) @ jnp.swapaxes(v, 1, 2), x, atol=tol * np.abs(want).max())


def test_the_host_eigh_of_a_non_finite_matrix_is_nan():
  """As XLA's: NaN where a matrix of the batch cannot be decomposed (the fit skips that step),
  the other matrices decomposed as ever; never an exception out of the callback."""
  c = gp_lml._HOST_EIGH_LEAST
  x = np.stack([np.eye(c), 2.0 * np.eye(c), np.eye(c)])
  x[1, 0, 0] = np.nan
  w, v = (np.asarray(a) for a in jax.jit(jax.vmap(gp_lml._eigh))(jnp.asarray(x)))
  assert np.isnan(w[1]).all() and np.isnan(v[1]).all()
  np.testing.assert_array_equal(w[[0, 2]], np.ones((2, c)))
  np.testing.assert_array_equal(np.abs(v[[0, 2]]), np.broadcast_to(np.eye(c), (2, c, c)))
  w, v = gp_lml._host_eigh(np.zeros((0, c, c)))  # an empty batch: empty results, no error
  assert w.shape == (0, c) and v.shape == (0, c, c)


def test_the_host_eigh_runs_no_jax_program_on_a_jax_array(monkeypatch):
  """pure_callback may pass jax Arrays. Indexing one would run an XLA program from inside the
  program that called back: with one core (taskset -c 0) a NASBOT search on NAS-Bench-201 hung at
  its first full fit on 128 slots. On one core the parts run on the calling thread, where the
  guard sees the index array that such a program would need moved to the device."""
  monkeypatch.setattr(host_threads, "CORES", 1)
  x = np.random.default_rng(0).normal(size=(4, 8, 8))
  x = jnp.asarray(x @ np.swapaxes(x, 1, 2))
  with jax.transfer_guard_host_to_device("disallow"):
    w, v = gp_lml._host_eigh(x)
  assert isinstance(w, np.ndarray) and isinstance(v, np.ndarray)
  np.testing.assert_allclose(w, np.linalg.eigh(np.asarray(x))[0], rtol=1e-10)


def test_the_adam_fit_is_the_same_with_xlas_eigh(problem, monkeypatch):
  """The fit (vmapped starts, a scan of steps) with the host's eigendecompositions ends where it
  does with XLA's, to rounding."""
  d, d_bar, y, _ = problem
  pair, yp, mask = _padded(d, d_bar, y, gp_lml._HOST_EIGH_LEAST, seed=3)
  box = gp_fit.Box.create(*kernels.NasbotKernel.bounds(len(NU_STR), beta=(1e-5, 1e-3)))

  def drop_traces():
    # The fit's jitted programs were traced with the other eigh; only theirs are dropped (all of
    # jax's caches would make every later test in this process compile again).
    gp_fit._fit_map.clear_cache()
    gp_fit.optimise.clear_cache()

  def fit():
    drop_traces()
    result = gp_fit.fit_map(jax.random.key(4), box, pair, yp, mask, n_starts=4, steps=20, project=True)
    return ravel_pytree(result.hypers)[0], result.lml

  host = fit()
  traced = []
  monkeypatch.setattr(gp_lml, "_eigh", lambda x: traced.append(x.shape) or tuple(jnp.linalg.eigh(x)))
  xla = fit()
  assert traced, "the second fit was not traced again with XLA's eigh"
  drop_traces()
  for got, want in zip(host, xla):
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
