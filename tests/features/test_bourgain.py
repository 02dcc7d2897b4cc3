"""Bourgain embedding and the Auto-Keras GP: known values computed by hand (E8, E9,
the n = 3 embedding, the GP), the authors' code's coordinate counts, and kernel invariants."""

import math

import hypothesis
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.linalg import cho_solve

import nas_jax
from nas_jax.features import bourgain, edit_distance as ed, pairwise
from nas_jax.surrogates import gp, kernels

KAPPA = kernels.Matern12.create()  # exp(-rho), no hyper-parameter (Auto-Keras eq. (2))
predict = jax.jit(gp.predict)


def gram(phi_a, phi_b=None):
  """kappa between coordinate sets: [n_a, n_b] numpy."""
  return np.asarray(KAPPA(pairwise.sq_euclidean(phi_a, phi_b)))


# ---- anchors (the authors' code's Bourgain construction) --------------------------------------


@pytest.mark.parametrize(
  "n, intended, code", [(1, 0, 0), (2, 1, 1), (3, 4, 3), (10, 12, 6), (47, 24, 10), (100, 35, 15)]
)
def test_coordinate_counts_match_the_spec(n, intended, code):
  for repeat, m in (("intended", intended), ("code", code)):
    anchors = bourgain.bourgain_anchors(jax.random.key(0), n, repeat=repeat)
    sizes = np.asarray(anchors.mask).sum(1)
    assert anchors.sets.shape[0] == m
    assert np.all(np.diff(sizes) >= 0) and all(s & (s - 1) == 0 for s in sizes)  # 2^i, level order
    assert np.all((np.asarray(anchors.sets) >= 0) & (np.asarray(anchors.sets) < n))


def test_anchors_depend_only_on_key_and_n():
  a, b = (bourgain.bourgain_anchors(jax.random.key(7), 47) for _ in range(2))
  np.testing.assert_array_equal(a.sets, b.sets)
  c = bourgain.bourgain_anchors(jax.random.key(8), 47)
  assert not np.array_equal(a.sets, c.sets)


# ---- known values ------------------------------------------------------------------------------


def test_n3_fixed_anchors_known_values():
  """Hand-computed: anchors ({1}, {3}, {1, 2}) in 1-based numbering."""
  d = np.array([[0, 1, 2], [1, 0, 1.5], [2, 1.5, 0]])
  phi = bourgain.bourgain_embed(d, bourgain.anchors_from_sets([[0], [2], [0, 1]], 3))
  np.testing.assert_allclose(phi, [[0, 2, 0], [1, 1.5, 0], [2, 0, 1.5]], atol=1e-12)
  rho = np.sqrt(np.asarray(pairwise.sq_euclidean(phi).sq_dist))
  upper = lambda m: [m[0, 1], m[0, 2], m[1, 2]]
  np.testing.assert_allclose(upper(rho), [1.118034, 3.201562, 2.345208], atol=1e-6)
  k = gram(phi)
  np.testing.assert_allclose(upper(k), [0.326922, 0.040699, 0.095827], atol=1e-6)
  np.testing.assert_allclose(np.linalg.eigvalsh(k), [0.668293, 0.978250, 1.353457], atol=1e-6)
  code03 = kernels.ExpSquared.create(1.0, math.sqrt(1.5))(pairwise.sq_euclidean(phi))  # exp(-rho^2/3)
  np.testing.assert_allclose(upper(np.asarray(code03)), [0.659241, 0.032822, 0.159880], atol=1e-6)


@pytest.mark.parametrize("anchor", [0, 1])
def test_e8_two_networks_embed_exactly(anchor):
  """E8 (computed by hand): d(G0, G1) = 7; with n = 2, rho = d for either anchor, kappa = e^-7."""
  g0 = ed.descriptor([64] * 3, [10])
  g1 = ed.descriptor([64] * 7, [10], [(1, 2, "add"), (2, 5, "add"), (5, 7, "add")])
  d = ed.edit_distances([g0, g1])
  phi = bourgain.bourgain_embed(d, bourgain.anchors_from_sets([[anchor]], 2))
  assert gram(phi)[0, 1] == pytest.approx(math.exp(-7.0), rel=1e-12)
  assert gram(phi)[0, 1] == pytest.approx(9.1188e-4, abs=1e-8)


def _e9_distances():
  """D_l of the 31 conv lists of length 0-4 over widths {16, 1024}."""
  lists = [list(w) for n in range(5) for w in np.ndindex(*(2,) * n)]
  return ed.edit_distances([ed.descriptor([(16, 1024)[i] for i in w]) for w in lists])


def test_e9_raw_exp_is_not_psd_but_the_embedding_is():
  d = _e9_distances()
  assert d.shape == (31, 31)
  assert np.linalg.eigvalsh(np.exp(-d)).min() == pytest.approx(-0.042878, abs=1e-6)
  for gamma, lam_min in ((0.25, -0.19963), (0.5, -0.22117)):
    assert np.linalg.eigvalsh(np.exp(-gamma * d)).min() == pytest.approx(lam_min, abs=1e-5)
  for repeat in bourgain.BOURGAIN_REPEATS:
    phi = bourgain.bourgain_embed(d, bourgain.bourgain_anchors(jax.random.key(1), 31, repeat=repeat))
    assert np.linalg.eigvalsh(gram(phi)).min() >= -1e-10
  # raw exp(-d) fed to the GP as a "distance pair" fails every rung of the noise ladder
  raw = pairwise.DistancePair(jnp.asarray(d**2))
  with pytest.raises(np.linalg.LinAlgError, match="not positive definite even with noise 1e-06"):
    gp.condition_fixed(KAPPA, raw, np.zeros(31), np.ones(31, bool))


def test_gp_known_values():
  """Hand-computed GP: phi = 0, 1 (K = [[1, e^-1], [e^-1, 1]]), y = (0.2, 0.3), candidate 0.5."""
  phi, y = np.array([[0.0], [1.0]]), np.array([0.2, 0.3])
  post = gp.condition_fixed(KAPPA, pairwise.sq_euclidean(phi), y, np.ones(2, bool))
  assert float(jnp.exp(post.hypers.log_noise)) == pytest.approx(1e-10)
  cand = np.array([[0.5], [0.0], [1.0], [1e3]])
  mean, var = predict(post, pairwise.sq_euclidean(cand, phi))
  weights = cho_solve((post.chol, True), jnp.asarray(gram(cand[:1], phi)[0]))
  np.testing.assert_allclose(weights, [0.443409, 0.443409], atol=1e-6)
  assert float(mean[0]) == pytest.approx(0.221705, abs=1e-6)
  assert float(var[0]) == pytest.approx(0.462117, abs=1e-6)
  np.testing.assert_allclose(mean[1:3], y, atol=1e-8)  # at training points: mu = y_i ...
  assert np.all(np.asarray(var[1:3]) <= 1e-9)  # ... and sigma^2 ~ 1e-10 (the jitter)
  assert float(mean[3]) == pytest.approx(0.0, abs=1e-12) and float(var[3]) == pytest.approx(1.0)


def test_one_network_has_no_coordinate_and_unit_kernel():
  """n = 1: the embedding is skipped (as in the authors' code), K = [[1]], candidates get kappa 1."""
  anchors = bourgain.bourgain_anchors(jax.random.key(0), 1)
  phi = bourgain.bourgain_embed([[0.0]], anchors)
  cand = bourgain.bourgain_embed([[3.0], [5.0]], anchors)
  assert phi.shape == (1, 0) and cand.shape == (2, 0)
  np.testing.assert_array_equal(gram(cand, phi), [[1.0], [1.0]])


# ---- invariants on edit distances of random descriptors ----------------------------------------

widths = st.sampled_from([16, 32, 64, 128, 512])
skip = st.tuples(st.integers(1, 4), st.integers(1, 3), st.sampled_from(ed.SKIP_TYPES)).map(
  lambda t: (t[0], t[0] + t[1], t[2])
)
descriptors = st.tuples(st.lists(widths, max_size=5), st.lists(widths, max_size=2), st.lists(skip, max_size=3))
N_HIST, N_CAND = 8, 4


def _embedded(hist, cands, seed):
  hist = [ed.descriptor(*x, sizes=(8, 2, 4)) for x in hist]
  cands = [ed.descriptor(*x, sizes=(8, 2, 4)) for x in cands]
  d = ed.edit_distances(hist + cands)
  anchors = bourgain.bourgain_anchors(jax.random.key(seed), N_HIST)
  phi = np.asarray(bourgain.bourgain_embed(d[:N_HIST, :N_HIST], anchors))
  phi_c = np.asarray(bourgain.bourgain_embed(d[N_HIST:, :N_HIST], anchors))  # out of sample
  return d, phi, phi_c


@hypothesis.settings(max_examples=30, deadline=None)
@hypothesis.given(
  st.lists(descriptors, min_size=N_HIST, max_size=N_HIST),
  st.lists(descriptors, min_size=N_CAND, max_size=N_CAND),
  st.integers(0, 2**16),
)
def test_embedding_and_kernel_invariants(hist, cands, seed):
  d, phi, phi_c = _embedded(hist, cands, seed)
  both = np.concatenate([phi, phi_c])
  rho = np.sqrt(np.asarray(pairwise.sq_euclidean(both).sq_dist))
  np.testing.assert_array_equal(rho, rho.T)
  np.testing.assert_array_equal(np.diag(rho), 0.0)
  # each coordinate is 1-Lipschitz in d, so rho <= sqrt(m) d
  lipschitz = np.abs(both[:, None, :] - both[None, :, :]).max(-1, initial=0.0)
  assert np.all(lipschitz <= d + 1e-12)
  assert np.all(rho <= math.sqrt(phi.shape[1]) * d + 1e-9)
  k = gram(both)
  np.testing.assert_array_equal(np.diag(k), 1.0)
  assert np.all((k > 0) & (k <= 1))
  assert np.linalg.eigvalsh(k).min() >= -1e-10  # history and candidates jointly PSD


@hypothesis.settings(max_examples=15, deadline=None)
@hypothesis.given(st.lists(descriptors, min_size=N_HIST, max_size=N_HIST), st.integers(0, 2**16))
def test_history_members_map_to_their_own_coordinates(hist, seed):
  """The out-of-sample map of a history network is its embedding (our out-of-sample map)."""
  _, phi, phi_c = _embedded(hist, hist[:N_CAND], seed)
  # atol: d(a, b) and d(b, a) may differ in the last bit (assignment sums in another order)
  np.testing.assert_allclose(phi_c, phi[:N_CAND], atol=1e-12)


def test_gp_on_embedded_networks_interpolates_and_bounds_sigma():
  rng = np.random.default_rng(3)
  convs = {tuple(rng.choice([16, 64, 256], rng.integers(1, 6))) for _ in range(40)}
  lists = [(list(c), [10], []) for c in sorted(convs)[: N_HIST + N_CAND]]  # distinct networks
  d, phi, phi_c = _embedded(lists[:N_HIST], lists[N_HIST:], 0)
  y = rng.uniform(0, 1, N_HIST)
  post = gp.condition_fixed(KAPPA, pairwise.sq_euclidean(phi), y, np.ones(N_HIST, bool))
  mean, var = predict(post, pairwise.sq_euclidean(np.concatenate([phi, phi_c]), phi))
  std = np.sqrt(np.asarray(var))
  assert np.all((std >= 0) & (std <= 1))
  np.testing.assert_allclose(np.asarray(mean)[:N_HIST], y, atol=1e-4)
  assert np.all(std[:N_HIST] <= 1e-4)


# ---- validation --------------------------------------------------------------------------------

ONE_ANCHOR = bourgain.anchors_from_sets([[0]], 3)


@pytest.mark.parametrize(
  "call, error, message",
  [
    (lambda: bourgain.bourgain_anchors(jax.random.key(0), 0), ValueError, "n: 0; expected"),
    (
      lambda: bourgain.bourgain_anchors(jax.random.key(0), 5, repeat="paper"),
      ValueError,
      "repeat: 'paper' is unknown; choose one of: intended, code",
    ),
    (lambda: bourgain.anchors_from_sets([[0], []], 3), ValueError, r"sets\[1\]: \[\]; an anchor set is a non-empty"),
    (lambda: bourgain.anchors_from_sets([[0, 3]], 3), ValueError, r"sets\[0\]: index 3 is not an integer in \[0, 3\)"),
    (
      lambda: bourgain.bourgain_embed(np.zeros((2, 4)), ONE_ANCHOR),
      ValueError,
      r"d: shape \(2, 4\); expected \[rows, n\] with n = 3",
    ),
    (
      lambda: bourgain.bourgain_embed(-np.ones((1, 3)), ONE_ANCHOR),
      ValueError,
      "d: has negative or non-finite entries",
    ),
    (lambda: bourgain.bourgain_embed(np.zeros((1, 3)), [[0]]), TypeError, "anchors: list given"),
  ],
)
def test_bad_arguments_are_named(call, error, message):
  with pytest.raises(error, match=message):
    call()


def test_public_api_round_trip():
  descs = [nas_jax.descriptor([64, 64, 64], [10]), nas_jax.descriptor([64, 128, 64], [10], [(1, 3, "add")])]
  d = nas_jax.edit_distances(descs)
  phi = nas_jax.bourgain_embed(d, nas_jax.bourgain_anchors(jax.random.key(0), 2))
  assert gram(phi)[0, 1] == pytest.approx(math.exp(-1.5), rel=1e-12)
