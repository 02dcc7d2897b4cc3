"""GP algebra: scikit-learn reference at fixed hyper-parameters, padding invariance, rank-one
updates, escalating jitter, PSD projection and the Cholesky derivative."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk_kernels

from nas_jax.features import pairwise
from nas_jax.surrogates import gp, kernels

NOISE = 0.05
LENGTH = np.array([0.7, 1.3])
# Jitted once per shape: eager dispatch of every small op costs more than the algebra here.
condition = jax.jit(gp.condition, static_argnames=("project", "jitter"))
predict = jax.jit(gp.predict)
add_point = jax.jit(gp.add_point)
predict_joint = jax.jit(gp.predict_joint)
log_marginal_likelihood = jax.jit(gp.log_marginal_likelihood, static_argnames=("project",))


def _data(n=12, m=5, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.uniform(0, 3, (n, 2))
  y = np.sin(x).sum(1) + 0.1 * rng.normal(size=n) + 4.0
  return x, y, rng.uniform(0, 3, (m, 2))


def _padded(x, y, capacity, seed=1):
  """Pads with finite garbage points and NaN targets; returns x [C, D], y [C], mask [C]."""
  rng = np.random.default_rng(seed)
  n = len(y)
  xp = rng.normal(size=(capacity, x.shape[1])) * 5
  yp = np.full(capacity, np.nan)
  slots = np.sort(rng.choice(capacity, n, replace=False))
  xp[slots], yp[slots] = x, y
  mask = np.zeros(capacity, bool)
  mask[slots] = True
  return xp, yp, mask


@pytest.mark.parametrize(
  "ours, theirs",
  [
    (kernels.ExpSquared.create(1.7, LENGTH), sk_kernels.ConstantKernel(1.7, "fixed") * sk_kernels.RBF(LENGTH, "fixed")),
    (
      kernels.Matern52.create(1.7, LENGTH),
      sk_kernels.ConstantKernel(1.7, "fixed") * sk_kernels.Matern(LENGTH, "fixed", nu=2.5),
    ),
    (
      kernels.Matern12.create(1.7, LENGTH),
      sk_kernels.ConstantKernel(1.7, "fixed") * sk_kernels.Matern(LENGTH, "fixed", nu=0.5),
    ),
  ],
)
def test_posterior_and_likelihood_equal_sklearn(ours, theirs):
  x, y, xs = _data()
  ref = GaussianProcessRegressor(theirs, alpha=NOISE, optimizer=None, normalize_y=True).fit(x, y)
  mean_ref, cov_ref = ref.predict(xs, return_cov=True)
  _, std_ref = ref.predict(xs, return_std=True)
  xp, yp, mask = _padded(x, y, 16)  # also checks that padding is invisible
  hypers = gp.Hypers(ours, jnp.log(NOISE))
  post = condition(hypers, pairwise.vector_pair(xp), yp, mask)
  mean, var = predict(post, pairwise.vector_pair(xs, xp))
  mean_j, cov = predict_joint(post, pairwise.vector_pair(xs, xp), pairwise.vector_pair(xs))
  lml = log_marginal_likelihood(hypers, pairwise.vector_pair(xp), yp, mask)
  np.testing.assert_allclose(mean, mean_ref, rtol=1e-10)
  np.testing.assert_allclose(mean_j, mean_ref, rtol=1e-10)
  np.testing.assert_allclose(np.sqrt(var), std_ref, rtol=1e-8, atol=1e-12)
  np.testing.assert_allclose(cov, cov_ref, atol=1e-10)
  np.testing.assert_allclose(lml, ref.log_marginal_likelihood_value_, rtol=1e-10)


def test_padding_changes_nothing_including_gradients():
  x, y, xs = _data(n=7, seed=3)
  hypers = gp.Hypers(kernels.Matern52.create(0.8, LENGTH), jnp.log(0.02))
  xp, yp, mask = _padded(x, y, 16, seed=4)

  def everything(h, xa, ya, m):
    pair = pairwise.VectorPair(xa, xa)
    lml = log_marginal_likelihood(h, pair, ya, m)
    mean, var = predict(condition(h, pair, ya, m), pairwise.VectorPair(xs, xa))
    return lml, mean, var

  @jax.jit
  def values_and_grad(h, xa, ya, m):
    return everything(h, xa, ya, m), jax.grad(lambda h: everything(h, xa, ya, m)[0])(h)

  plain, grad_plain = values_and_grad(hypers, x, y, np.ones(7, bool))
  padded, grad_padded = values_and_grad(hypers, xp, yp, mask)
  for a, b in zip(plain, padded):
    np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
  for a, b in zip(jax.tree.leaves(grad_plain), jax.tree.leaves(grad_padded)):
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def test_rank_one_update_equals_full_refit():
  x, y, xs = _data(n=9, seed=5)
  capacity = 12
  xp = np.zeros((capacity, 2))
  xp[:9] = x
  yp = np.zeros(capacity)
  yp[:9] = y
  mask = np.arange(capacity) < 8
  mask[3] = False  # a failed evaluation inside the prefix stays masked out
  hypers = gp.Hypers(kernels.ExpSquared.create(1.2, LENGTH), jnp.log(0.03))
  pair = pairwise.vector_pair(xp)
  post = condition(hypers, pair, yp, mask)
  updated = add_point(post, pairwise.vector_pair(xp[8:9], xp), y[8], 8)
  mask_full = mask.copy()
  mask_full[8] = True
  full = condition(hypers, pair, yp, mask_full, y_shift=post.y_shift, y_scale=post.y_scale)
  assert bool(updated.ok)
  np.testing.assert_array_equal(updated.mask, mask_full)
  np.testing.assert_allclose(updated.chol, full.chol, atol=1e-12)
  np.testing.assert_allclose(updated.alpha, full.alpha, rtol=1e-9, atol=1e-12)
  for a, b in zip(predict(updated, pairwise.vector_pair(xs, xp)), predict(full, pairwise.vector_pair(xs, xp))):
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_rank_one_update_flags_an_occupied_later_slot():
  x, y, _ = _data(n=6)
  mask = np.array([True, True, False, True, False, False])
  hypers = gp.Hypers(kernels.ExpSquared.create(1.0, 1.0), jnp.log(0.1))
  post = condition(hypers, pairwise.vector_pair(x), y, mask)
  bad = add_point(post, pairwise.vector_pair(x[2:3], x), y[2], 2)
  good = add_point(post, pairwise.vector_pair(x[4:5], x), y[4], 4)
  assert not bool(bad.ok) and bool(good.ok)


def test_jitter_rescues_a_singular_psd_matrix():
  chol, ok = gp.cholesky_with_jitter(jnp.ones((4, 4)))
  assert bool(ok)
  np.testing.assert_allclose(chol @ chol.T, np.ones((4, 4)), atol=1e-4)
  assert not bool(jnp.all(jnp.isfinite(jnp.linalg.cholesky(jnp.ones((4, 4))))))


def test_the_posterior_reports_its_jitter_and_it_is_logged_once(caplog):
  x, y, _ = _data()
  kernel = kernels.ExpSquared.create(1.0, LENGTH)
  clean = condition(gp.Hypers(kernel, jnp.log(NOISE)), pairwise.vector_pair(x, x), y, np.ones(len(y), bool))
  assert float(clean.jitter) < 1e-12
  x2 = np.concatenate([x, x])  # every point twice and no noise: a singular kernel matrix
  y2, mask = np.concatenate([y, y]), np.ones(2 * len(y), bool)
  post = condition(gp.Hypers(kernel, jnp.log(1e-30)), pairwise.vector_pair(x2, x2), y2, mask)
  assert bool(post.ok) and any(abs(j - float(post.jitter)) <= 1e-3 * j for j in gp._JITTERS[1:])
  note = gp.JitterNote()
  with caplog.at_level("WARNING"):
    note(clean.jitter, "clean")
    note(post.jitter, "test")
    note(post.jitter, "test")
  assert caplog.text.count("jitter") == 1 and f"{float(post.jitter):.0e} x mean(diag)" in caplog.text


def test_indefinite_matrix_gives_a_flag_and_a_clear_error():
  a = jnp.array([[1.0, 2.0], [2.0, 1.0]])
  _, ok = jax.jit(gp.cholesky_with_jitter)(a)
  assert not bool(ok)
  with pytest.raises(np.linalg.LinAlgError, match="cholesky: the kernel matrix is not positive"):
    gp.cholesky(a)


def test_cholesky_derivative_matches_finite_differences():
  rng = np.random.default_rng(6)
  b = rng.normal(size=(5, 5))
  a = jnp.asarray(b @ b.T + 0.5 * np.eye(5))
  check_grads(jax.jit(lambda m: gp.cholesky_with_jitter(m)[0]), (a,), order=1, modes=("fwd", "rev"))
  np.testing.assert_allclose(gp.cholesky(a), np.linalg.cholesky(np.asarray(a)), atol=1e-12)


def _non_psd_pair():
  """Three networks, 1 and 2 both at distance 0 from network 0 but far from each other: not a
  metric, and exp(-beta d) is then not PSD (eigenvalue 1 - sqrt 2 for large beta)."""
  d = np.zeros((1, 3, 3))
  d[0, 1, 2] = d[0, 2, 1] = 50.0
  return pairwise.otmann_pair(d, np.zeros_like(d))


def test_project_psd_fixes_a_non_psd_gram_matrix():
  pair = _non_psd_pair()
  k = kernels.NasbotKernel.create(1.0, 1e-6, [1.0], [1.0])
  gram = np.asarray(k(pair))
  assert np.linalg.eigvalsh(gram).min() < -0.4  # the construction really is not PSD
  projected = np.asarray(gp.project_psd(jnp.asarray(gram)))
  assert np.linalg.eigvalsh(projected).min() > -1e-12
  np.testing.assert_allclose(projected, projected.T, atol=1e-15)
  y, mask = jnp.array([0.0, 1.0, 2.0]), jnp.ones(3, bool)
  hypers = gp.Hypers(k, jnp.log(0.005))
  assert not bool(condition(hypers, pair, y, mask).ok)
  post = condition(hypers, pair, y, mask, project=True)
  assert bool(post.ok) and np.isfinite(float(log_marginal_likelihood(hypers, pair, y, mask, project=True)))


def test_project_psd_keeps_a_psd_matrix_and_its_gradient():
  rng = np.random.default_rng(7)
  b = rng.normal(size=(4, 4))
  a = jnp.asarray(b @ b.T + np.eye(4))
  np.testing.assert_allclose(gp.project_psd(a), a, atol=1e-12)
  g = jax.grad(lambda m: jnp.sum(gp.project_psd(m) ** 2))(a)
  np.testing.assert_allclose(g, 2 * a, atol=1e-12)


def test_normalise_uses_only_real_points():
  shift, scale = gp.normalise(jnp.array([1.0, 3.0, np.nan, 100.0]), jnp.array([1, 1, 0, 0], bool))
  np.testing.assert_allclose([shift, scale], [2.0, 1.0])
  _, scale_one = gp.normalise(jnp.array([5.0, 5.0]), jnp.array([True, True]))
  assert float(scale_one) == 1.0


def test_validate_data_names_the_problem():
  pair = pairwise.vector_pair(np.zeros((3, 1)))
  with pytest.raises(ValueError, match="mask is int64"):
    gp.validate_data(pair, np.zeros(3), np.ones(3, int), where="f")
  with pytest.raises(ValueError, match=r"pair has shape \(3, 3\)"):
    gp.validate_data(pair, np.zeros(4), np.ones(4, bool), where="f")
  with pytest.raises(ValueError, match="not finite at real points"):
    gp.validate_data(pair, np.array([0.0, np.nan, 1.0]), np.ones(3, bool), where="f")
  with pytest.raises(ValueError, match="no True entry"):
    gp.validate_data(pair, np.zeros(3), np.zeros(3, bool), where="f")


def _unit_diagonal_with_min_eigenvalue(lam_min, n=6):
  """A DistancePair whose Matern12 Gram matrix (unit diagonal, positive entries) has lam_min."""
  x = np.linspace(0.0, 1.0, n)[:, None]
  k0 = np.exp(-np.abs(x - x.T) * 0.3)
  t = (np.linalg.eigvalsh(k0).min() - lam_min) / (1.0 - lam_min)  # (w - t) / (1 - t) = lam_min
  k = (k0 - t * np.eye(n)) / (1.0 - t)
  assert np.linalg.eigvalsh(k).min() == pytest.approx(lam_min, rel=1e-3)
  return pairwise.DistancePair(jnp.asarray(np.log(k) ** 2))


def test_condition_fixed_climbs_the_noise_ladder_and_says_so(caplog):
  """The Auto-Keras code's jitter: alpha 1e-10, then x10 up to 1e-6; lam_min = -5e-9 first works at 1e-8."""
  pair, y, mask = _unit_diagonal_with_min_eigenvalue(-5e-9), np.linspace(0, 1, 6), np.ones(6, bool)
  with caplog.at_level("WARNING"):
    post = gp.condition_fixed(kernels.Matern12.create(), pair, y, mask)
  assert float(jnp.exp(post.hypers.log_noise)) == pytest.approx(1e-8)
  assert "needed noise 1e-08" in caplog.text
  assert float(post.y_shift) == 0.0 and float(post.y_scale) == 1.0  # raw targets, zero mean
  with pytest.raises(np.linalg.LinAlgError, match="even with noise 1e-09"):
    gp.condition_fixed(kernels.Matern12.create(), pair, y, mask, noises=(1e-10, 1e-9))


def test_condition_without_jitter_factorises_once():
  pair = _unit_diagonal_with_min_eigenvalue(-5e-9)
  hypers = gp.Hypers(kernels.Matern12.create(), jnp.log(1e-10))
  y, mask = np.zeros(6), np.ones(6, bool)
  assert not bool(condition(hypers, pair, y, mask, jitter=False).ok)
  assert bool(condition(hypers, pair, y, mask).ok)  # the default escalates
