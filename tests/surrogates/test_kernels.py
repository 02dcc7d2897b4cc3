"""Kernels: hand-computed known values (and NASBOT eq. (7)), the arc properties (Swersky et al.
2013, Sec. 2), references on vectors, PSD Gram matrices, and pytree round trips under jit."""

import math

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.features import pairwise
from nas_jax.surrogates import kernels


def _one_param(x, a, x2, a2):
  return pairwise.arc_pair([[x]], [[a]], [[x2]], [[a2]], lower=[0.0], upper=[1.0])


# Hand-computed: (x, active, x', active') -> d with omega = rho = 1 on [0, 1].
ARC_CASES = [
  ((0.3, False, 0.9, False), 0.0),
  ((0.3, True, 0.9, False), 1.0),
  ((0.0, True, 1.0, True), 2.0),
  ((0.0, True, 0.5, True), math.sqrt(2.0)),
  ((0.25, True, 0.75, True), math.sqrt(2.0)),
]


def test_arc_distance_known_values():
  k = kernels.ArcKernel.create(1.0, [1.0], [1.0])
  for args, d in ARC_CASES:
    np.testing.assert_allclose(np.sqrt(k.sq_dist(_one_param(*args)))[0, 0], d, atol=1e-12)
  k2 = kernels.ArcKernel.create(1.0, [2.0], [0.5])
  np.testing.assert_allclose(np.sqrt(k2.sq_dist(_one_param(0.0, True, 1.0, True))), 2 * np.sqrt(2))


def test_arc_exp_squared_known_values():
  k = kernels.ArcKernel.create(1.0, [1.0], [1.0])
  expected = [1.0, math.exp(-0.5), math.exp(-2.0), math.exp(-1.0), math.exp(-1.0)]
  got = [float(k(_one_param(*args))[0, 0]) for args, _ in ARC_CASES]
  np.testing.assert_allclose(got, expected, rtol=1e-12)


def _random_arc(rng, n, p):
  values = rng.uniform(-1.0, 3.0, (n, p))
  active = rng.uniform(size=(n, p)) < 0.6
  return values, active


LOWER, UPPER = np.full(3, -1.0), np.full(3, 3.0)


def _arc_kernel(profile=kernels.exp_squared_profile):
  return kernels.ArcKernel.create(1.3, [0.7, 2.0, 1.1], [0.4, 1.0, 0.8], profile=profile)


@pytest.mark.parametrize("profile", [kernels.exp_squared_profile, kernels.matern52_profile])
def test_arc_inactive_values_never_change_the_kernel(profile):
  """Property 1 (Swersky et al. 2013, Sec. 2.1): same activity pattern, changed inactive values:
  exactly equal. The kernel ignores inactive entries even if a hand-made ArcPair carries garbage
  there."""
  rng = np.random.default_rng(0)
  values, active = _random_arc(rng, 6, 3)
  k = _arc_kernel(profile)
  base = k(pairwise.arc_pair(values, active, lower=LOWER, upper=UPPER))
  garbage = pairwise.arc_pair(values, active, lower=LOWER, upper=UPPER)
  garbage = garbage.replace(u1=jnp.where(garbage.active1, garbage.u1, 17.0))
  np.testing.assert_array_equal(k(garbage), base)


def test_arc_values_active_in_one_point_only_do_not_matter():
  """Property 2: a value active in x but not in x' can change freely: exactly equal."""
  rng = np.random.default_rng(1)
  k = _arc_kernel()
  x, x2 = rng.uniform(-1, 3, (1, 3)), rng.uniform(-1, 3, (1, 3))
  a, a2 = np.array([[True, True, False]]), np.array([[True, False, True]])
  base = k(pairwise.arc_pair(x, a, x2, a2, lower=LOWER, upper=UPPER))
  for new in rng.uniform(-1, 3, 5):
    x_changed = x.copy()
    x_changed[0, 1] = new  # parameter 1 is active in x only
    out = k(pairwise.arc_pair(x_changed, a, x2, a2, lower=LOWER, upper=UPPER))
    np.testing.assert_array_equal(out, base)


def test_arc_switching_one_parameter_off_moves_exactly_omega():
  rng = np.random.default_rng(2)
  k = _arc_kernel()
  x = rng.uniform(-1, 3, (1, 3))
  a = np.ones((1, 3), bool)
  for i in range(3):
    a_off = a.copy()
    a_off[0, i] = False
    d = jnp.sqrt(k.sq_dist(pairwise.arc_pair(x, a, x, a_off, lower=LOWER, upper=UPPER)))
    assert float(d[0, 0]) == pytest.approx(float(jnp.exp(k.log_omega[i])), rel=1e-12)  # to rounding


def _embedding(k, values, lower, upper):
  u = (values - lower) / (upper - lower)
  angle = np.pi * np.exp(k.log_rho) * u
  w = np.exp(k.log_omega)
  return np.concatenate([w * np.sin(angle), w * np.cos(angle)], axis=1)


@pytest.mark.parametrize(
  "profile, base", [(kernels.exp_squared_profile, kernels.ExpSquared), (kernels.matern52_profile, kernels.Matern52)]
)
def test_arc_all_active_is_the_base_kernel_on_the_embedding(profile, base):
  rng = np.random.default_rng(3)
  values = rng.uniform(-1, 3, (7, 3))
  k = _arc_kernel(profile)
  arc = k(pairwise.arc_pair(values, np.ones((7, 3), bool), lower=LOWER, upper=UPPER))
  f = _embedding(k, values, LOWER, UPPER)
  ref = base.create(1.3, 1.0)(pairwise.vector_pair(f))
  np.testing.assert_allclose(arc, ref, rtol=1e-10, atol=1e-12)


def test_arc_small_rho_approaches_scaled_euclidean():
  """rho -> 0 with omega rho pi fixed gives the scaled Euclidean distance."""
  values = np.array([[0.1, 0.9], [0.6, 0.2]])
  rho = 1e-4
  k = kernels.ArcKernel.create(1.0, [2.0 / (np.pi * rho), 0.5 / (np.pi * rho)], [rho, rho])
  d2 = k.sq_dist(pairwise.arc_pair(values, np.ones((2, 2), bool), lower=[0, 0], upper=[1, 1]))
  np.testing.assert_allclose(d2[0, 1], (2.0 * 0.5) ** 2 + (0.5 * 0.7) ** 2, rtol=1e-6)


@hypothesis.settings(max_examples=30, deadline=None)
@hypothesis.given(st.integers(0, 2**31 - 1))
def test_arc_distance_is_a_pseudometric(seed):
  rng = np.random.default_rng(seed)
  values, active = _random_arc(rng, 3, 3)
  sq = np.asarray(_arc_kernel().sq_dist(pairwise.arc_pair(values, active, lower=LOWER, upper=UPPER)))
  # sq_dist is |f|^2 + |f'|^2 - 2 f.f': on the diagonal it cancels to rounding, ~1e-16 sum(w^2)
  # (sum(w^2) = 5.7 here), so d(x, x) is ~1e-8 and the triangle inequality holds to that.
  assert np.all(np.diag(sq) <= 1e-14)
  d = np.sqrt(sq)
  np.testing.assert_allclose(d, d.T, atol=1e-12)
  for i, j, l in [(0, 1, 2), (0, 2, 1), (1, 2, 0)]:
    assert d[i, j] <= d[i, l] + d[l, j] + 1e-7


@pytest.mark.parametrize(
  "make",
  [
    lambda v, a: _arc_kernel()(pairwise.arc_pair(v, a, lower=LOWER, upper=UPPER)),
    lambda v, a: kernels.ExpSquared.create(2.0, [0.5, 1.0, 2.0])(pairwise.vector_pair(v)),
    lambda v, a: kernels.Matern52.create(2.0, 0.7)(pairwise.sq_euclidean(v)),
    lambda v, a: kernels.Matern12.create(1.0, 1.0)(pairwise.sq_euclidean(v)),
    lambda v, a: kernels.Hamming.create(1.5, [0.5, 1.0, 3.0])(pairwise.vector_pair(a * 1.0)),
  ],
)
def test_gram_matrices_are_psd(make):
  rng = np.random.default_rng(4)
  values, active = _random_arc(rng, 30, 3)
  gram = np.asarray(make(values, active))
  np.testing.assert_allclose(gram, gram.T, atol=1e-12)
  assert np.linalg.eigvalsh(gram).min() > -1e-10


def test_vector_kernels_equal_closed_forms():
  x = np.array([[0.0, 0.0], [1.0, 2.0]])
  ls = np.array([0.5, 2.0])
  r2 = (1.0 / 0.5) ** 2 + (2.0 / 2.0) ** 2
  r = math.sqrt(r2)
  se = kernels.ExpSquared.create(3.0, ls)(pairwise.vector_pair(x))
  m52 = kernels.Matern52.create(3.0, ls)(pairwise.vector_pair(x))
  np.testing.assert_allclose(se[0, 1], 3.0 * math.exp(-r2 / 2), rtol=1e-12)
  expected = 3.0 * (1 + math.sqrt(5) * r + 5 * r2 / 3) * math.exp(-math.sqrt(5) * r)
  np.testing.assert_allclose(m52[0, 1], expected, rtol=1e-12)
  np.testing.assert_allclose(np.diag(m52), [3.0, 3.0], rtol=1e-12)
  m12 = kernels.Matern12.create(3.0, ls)(pairwise.vector_pair(x))
  np.testing.assert_allclose(m12[0, 1], 3.0 * math.exp(-r), rtol=1e-12)


def test_isotropic_kernel_on_distances_equals_vectors():
  rng = np.random.default_rng(5)
  x = rng.normal(size=(6, 4))
  k = kernels.Matern52.create(1.7, 0.9)
  np.testing.assert_allclose(k(pairwise.sq_euclidean(x)), k(pairwise.vector_pair(x)), atol=1e-12)
  with pytest.raises(ValueError, match="ARD length-scales"):
    kernels.ExpSquared.create(1.0, np.ones(4))(pairwise.sq_euclidean(x))


def test_hamming_kernel_known_value():
  x1, x2 = np.array([[1.0, 0.0, 1.0]]), np.array([[0.0, 0.0, 0.0]])
  k = kernels.Hamming.create(2.0, [0.5, 1.0, 4.0])
  np.testing.assert_allclose(k(pairwise.vector_pair(x1, x2))[0, 0], 2.0 * math.exp(-2.0 - 0.25))


def test_nasbot_kernel_known_value():
  """NASBOT eq. (7) by hand, n_nu = 2, p = 1, p_bar = 2."""
  d = np.array([[[0.0, 3.0]], [[0.0, 5.0]]])
  d_bar = np.array([[[0.0, 0.5]], [[0.0, 0.25]]])
  k = kernels.NasbotKernel.create(2.0, 0.5, [0.1, 0.2], [1.0, 4.0])
  expected = 2.0 * math.exp(-(0.1 * 3 + 0.2 * 5)) + 0.5 * math.exp(-(0.25 + 4 * 0.0625))
  out = k(pairwise.otmann_pair(d, d_bar))
  np.testing.assert_allclose(out[0], [2.5, expected], rtol=1e-12)
  np.testing.assert_allclose(k.diag(pairwise.otmann_pair(d, d_bar)), [2.5])


def test_sum_and_product_compose():
  rng = np.random.default_rng(6)
  pair = pairwise.vector_pair(rng.normal(size=(4, 2)))
  k1, k2 = kernels.ExpSquared.create(2.0, 0.5), kernels.Matern52.create(0.5, 2.0)
  np.testing.assert_allclose(kernels.Sum(k1, k2)(pair), k1(pair) + k2(pair))
  np.testing.assert_allclose(kernels.Product(k1, k2)(pair), k1(pair) * k2(pair))
  np.testing.assert_allclose(kernels.Product(k1, k2).diag(pair), np.full(4, 1.0))


def test_wrong_pair_type_raises_type_error():
  with pytest.raises(TypeError, match="NasbotKernel: got a VectorPair; expected OtmannPair"):
    kernels.NasbotKernel.create(1.0, 1.0, [1.0], [1.0])(pairwise.vector_pair(np.ones((2, 2))))


@pytest.mark.parametrize(
  "call, message",
  [
    (lambda: kernels.ExpSquared.create(-1.0), "variance: -1.0 is not positive"),
    (lambda: kernels.ArcKernel.create(1.0, [1.0], [1.5]), "rho: .* above 1"),
    (lambda: kernels.NasbotKernel.create(1, 1, [1, 1], [1]), "beta, beta_bar: shapes"),
    (lambda: kernels.ExpSquared.bounds(variance=(2.0, 1.0)), "variance: .* not a range"),
  ],
)
def test_invalid_values_raise(call, message):
  with pytest.raises(ValueError, match=message):
    call()


def _all_kernels():
  se = kernels.ExpSquared.create(2.0, [0.5, 1.0])
  nas = kernels.NasbotKernel.create(1.0, 2.0, [0.1, 0.2], [1.0, 3.0], p=1.0, p_bar=2.0)
  arc = kernels.ArcKernel.create(1.0, [1.0, 2.0], [0.5, 1.0], profile=kernels.matern52_profile)
  rng = np.random.default_rng(7)
  x = rng.uniform(size=(3, 2))
  vec = pairwise.vector_pair(x)
  otm = pairwise.otmann_pair(rng.uniform(size=(2, 3, 3)), rng.uniform(size=(2, 3, 3)))
  arc_pair = pairwise.arc_pair(x, x > 0.3, lower=[0, 0], upper=[1, 1])
  return [
    (se, vec),
    (kernels.Matern52.create(1.0, 0.3), vec),
    (kernels.Matern12.create(1.0, 0.3), vec),
    (kernels.Hamming.create(1.0, 2.0), pairwise.vector_pair((x > 0.5) * 1.0)),
    (nas, otm),
    (arc, arc_pair),
    (kernels.Sum(se, kernels.Product(se, se)), vec),
  ]


@pytest.mark.parametrize("kernel, pair", _all_kernels())
def test_kernels_round_trip_as_pytrees_under_jit(kernel, pair):
  leaves, tree = jax.tree.flatten(kernel)
  rebuilt = jax.tree.unflatten(tree, leaves)
  assert rebuilt == kernel  # dataclass equality also compares the static fields
  np.testing.assert_allclose(jax.jit(lambda k, p: k(p))(rebuilt, pair), kernel(pair), rtol=1e-12)
  doubled = jax.jit(lambda k: jax.tree.map(lambda v: v * 2.0, k))(kernel)
  assert jax.tree.structure(doubled) == tree


def test_kernels_with_the_same_leaves_have_different_tree_structures():
  """jax compares dataclass tree structures without their class; a jit cache then mixed up
  ExpSquared, Matern52 and Matern12 traces, so each kernel carries its class as static data."""
  same_leaves = [
    cls.create(1.3, np.array([0.7, 1.2])) for cls in (kernels.ExpSquared, kernels.Matern52, kernels.Matern12)
  ]
  trees = [jax.tree_util.tree_structure(k) for k in same_leaves]
  assert all((a == b) == (i == j) for i, a in enumerate(trees) for j, b in enumerate(trees))
  x = np.zeros((3, 3))  # Pairwise types with alike leaves differ too
  assert jax.tree_util.tree_structure(pairwise.VectorPair(x, x)) != jax.tree_util.tree_structure(
    pairwise.OtmannPair(x, x)
  )
  pair = pairwise.vector_pair(np.array([[0.0, 0.0], [1.0, 2.0]]))
  gram = jax.jit(lambda k, p: k(p))
  for _ in range(20):  # every call must run its own kernel, whatever the cache holds
    values = [float(gram(k, pair)[0, 1]) for k in same_leaves]
    assert len(set(values)) == 3
