"""The kernel-quality measure of Auto-Keras Sec. 5.3: known normal scores, invariance to monotone
maps, and a kernel blind to performance doing worse than one that follows it."""

import numpy as np
import pytest
from scipy import special

from nas_jax.experiments import kernel_quality as kq


def test_normal_scores_known_values():
  z = kq.normal_scores(np.eye(2))  # ranks: zeros share 0.5, ones 2.5 -> Phi^-1(0.3), Phi^-1(0.7)
  assert special.ndtri(0.3) == pytest.approx(-0.524401, abs=1e-6)
  np.testing.assert_allclose(z, [[1.0, -1.0], [-1.0, 1.0]])


def test_any_increasing_function_of_performance_is_perfect():
  values = np.random.default_rng(0).uniform(0.9, 1.0, 12)
  p = kq.performance_matrix(values)
  assert kq.kernel_quality(np.exp(3 * p), values) == pytest.approx(0.0, abs=1e-12)
  assert kq.kernel_quality(-p, values) > 0.5  # reversed order: far from it


def test_shuffled_kernel_is_worse():
  rng = np.random.default_rng(1)
  values = rng.uniform(0.9, 1.0, 20)
  good = np.exp(-np.abs(values[:, None] - values[None, :]) * 50 + rng.normal(0, 0.05, (20, 20)))
  perm = rng.permutation(20)
  assert kq.kernel_quality(good, values) < kq.kernel_quality(good[np.ix_(perm, perm)], values)


def test_bad_input_is_named():
  with pytest.raises(ValueError, match="k: shape \\(2, 2\\); expected \\(3, 3\\)"):
    kq.kernel_quality(np.eye(2), [0.1, 0.2, 0.3])
  with pytest.raises(ValueError, match="m: holds NaN"):
    kq.normal_scores(np.array([[1.0, np.nan], [0.0, 1.0]]))
