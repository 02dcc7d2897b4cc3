"""Pareto utilities: hypervolumes by hand, fronts and NSGA-II ranks against brute force, hypervolume
properties (front only, permutation, duplicates, monotone, Monte Carlo), the vectorised 2-D
improvement against differences of hypervolumes, ParEGO's scalarisation, NaN rows, and bad input."""

import hypothesis
import hypothesis.strategies as st
import numpy as np
import pytest

from nas_jax.acquisition import pareto as P

SETTINGS = dict(deadline=None, derandomize=True, database=None)


@st.composite
def score_arrays(draw, m=None, min_n=0, max_n=12, nan=False):
  """[n, m] float64 scores. Half the time on a small integer grid, so ties and duplicate rows are
  common; with nan=True some rows get a NaN (failed evaluations)."""
  m = draw(st.integers(1, 4)) if m is None else m
  n = draw(st.integers(min_n, max_n))
  if draw(st.booleans()):
    values = st.integers(0, 4).map(float)
  else:
    values = st.floats(0, 10, allow_nan=False, allow_infinity=False)
  x = np.array(draw(st.lists(st.lists(values, min_size=m, max_size=m), min_size=n, max_size=n)), float)
  x = x.reshape(n, m)
  if nan and n:
    failed = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    col = draw(st.integers(0, m - 1))
    x[np.array(failed), col] = np.nan
  return x


def _brute_front(x):
  ok = ~np.isnan(x).any(axis=1)
  return np.array([ok[i] and not any(P.dominates(x[j], x[i]) for j in range(len(x))) for i in range(len(x))], bool)


def _ref_for(x):
  """A reference point just below the data (so every finite row counts)."""
  ok = ~np.isnan(x).any(axis=1)
  return x[ok].min(axis=0) - 0.5 if ok.any() else np.zeros(x.shape[1])


# --- known values ---------------------------------------------------------------------------------


def test_hypervolume_known_values():
  assert P.hypervolume([[1, 3], [2, 2], [3, 1]], [0, 0]) == pytest.approx(6.0)
  # a single box in 3-D and 4-D: the product of its sides
  assert P.hypervolume([[1, 2, 3]], [0, 0, 0]) == pytest.approx(6.0)
  assert P.hypervolume([[2, 3, 4, 5]], [1, 1, 1, 1]) == pytest.approx(1 * 2 * 3 * 4)
  # two overlapping boxes: 8 + 3 - vol([0,0,0], (1,1,2)) = 8 + 3 - 2
  assert P.hypervolume([[2, 2, 2], [1, 1, 3]], [0, 0, 0]) == pytest.approx(9.0)
  # three boxes of 12 by inclusion-exclusion: every pair and the triple meet in the cube (2, 2, 2)
  pts = np.array([[3, 2, 2], [2, 3, 2], [2, 2, 3]], float)
  singles = 3 * 12
  pairs = 3 * 8  # each pair meets in a 2x2x2 box
  triple = 8
  assert P.hypervolume(pts, [0, 0, 0]) == pytest.approx(singles - pairs + triple)
  # a point not strictly better than ref adds nothing (one coordinate equal, one below)
  assert P.hypervolume([[1, 3], [2, 2], [3, 1], [5, 0], [-1, 9]], [0, 0]) == pytest.approx(6.0)
  assert P.hypervolume([[2, 2, 2], [9, 9, 0]], [0, 0, 0]) == pytest.approx(8.0)
  # m = 1 is max(x - ref, 0); n = 0 is 0
  assert P.hypervolume([[3.0], [1.5]], [1.0]) == pytest.approx(2.0)
  assert P.hypervolume([[0.5]], [1.0]) == 0.0
  assert P.hypervolume(np.zeros((0, 3)), [0, 0, 0]) == 0.0


def test_hypervolume_improvement_known_values():
  front = [[1, 3], [2, 2], [3, 1]]
  got = P.hypervolume_improvement([[4, 4], [2, 2], [2.5, 2.5], [0.5, 0.5], [4, 0]], front, [0, 0])
  # (4, 4) covers everything: 16 - 6; a front point adds 0; (2.5, 2.5) adds the part of [0, 2.5]^2
  # above the staircase: x in (2, 2.5], y in (1, 2.5]: 0.5 * 1.5, and x in (1, 2], y in (2, 2.5]: 0.5
  np.testing.assert_allclose(got, [10.0, 0.0, 0.75 + 0.5, 0.0, 0.0], atol=1e-12)
  np.testing.assert_allclose(P.hypervolume_improvement([[2.0], [5.0]], [[3.0]], [1.0]), [0.0, 2.0])
  np.testing.assert_allclose(P.hypervolume_improvement([[1, 1, 1]], np.zeros((0, 3)), [0, 0, 0]), [1.0])


def test_ranks_crowding_and_order_known_values():
  x = np.array([[1, 3], [2, 2], [3, 1], [1, 1], [0, 0], [np.nan, 5], [1.5, 2.5]], float)
  np.testing.assert_array_equal(P.non_dominated(x), [1, 1, 1, 0, 0, 0, 1])
  np.testing.assert_array_equal(P.pareto_ranks(x), [0, 0, 0, 1, 2, 3, 0])
  cd = P.crowding_distance(x)
  # front 0 sorted by column 0: (1,3), (1.5,2.5), (2,2), (3,1); spans 2 and 2
  np.testing.assert_allclose(cd[[0, 2]], np.inf)
  np.testing.assert_allclose(cd[6], (2 - 1) / 2 + (3 - 2) / 2)
  np.testing.assert_allclose(cd[1], (3 - 1.5) / 2 + (2.5 - 1) / 2)
  np.testing.assert_allclose(cd[[3, 4]], np.inf)  # fronts of one point
  assert np.isnan(cd[5])
  np.testing.assert_array_equal(P.nsga2_order(x), [0, 2, 1, 6, 3, 4, 5])
  # all NaN: rank n
  np.testing.assert_array_equal(P.pareto_ranks([[np.nan, 1], [2, np.nan]]), [2, 2])


def test_dominates():
  assert P.dominates([2, 1], [1, 1]) and not P.dominates([1, 1], [2, 1])
  assert not P.dominates([1, 1], [1, 1])  # equal rows do not dominate each other
  assert not P.dominates([2, 0], [1, 1])
  assert not P.dominates([np.nan, 5], [0, 0]) and not P.dominates([5, 5], [np.nan, 0])


def test_duplicates_of_a_front_point_are_all_on_the_front():
  x = [[1, 2], [1, 2], [2, 1], [0, 0], [0, 0]]
  np.testing.assert_array_equal(P.non_dominated(x), [1, 1, 1, 0, 0])
  np.testing.assert_array_equal(P.pareto_ranks(x), [0, 0, 0, 1, 1])


# --- fronts and ranks: properties -----------------------------------------------------------------


@hypothesis.settings(max_examples=80, **SETTINGS)
@hypothesis.given(x=score_arrays(nan=True))
def test_non_dominated_matches_brute_force(x):
  np.testing.assert_array_equal(P.non_dominated(x), _brute_front(x))


@hypothesis.settings(max_examples=60, **SETTINGS)
@hypothesis.given(x=score_arrays(nan=True, max_n=15))
def test_ranks_are_fronts(x):
  ranks = P.pareto_ranks(x)
  ok = ~np.isnan(x).any(axis=1)
  n = len(x)
  assert ranks.shape == (n,) and ranks.dtype.kind == "i"
  if ok.any():
    assert (ranks[~ok] == ranks[ok].max() + 1).all()
    assert set(ranks[ok]) == set(range(ranks[ok].max() + 1))  # no empty front
  else:
    assert (ranks == n).all()
  np.testing.assert_array_equal(ranks == 0, _brute_front(x) if ok.any() else np.zeros(n, bool))
  for i in np.flatnonzero(ok):
    for j in np.flatnonzero(ok):
      if ranks[i] == ranks[j]:
        assert not P.dominates(x[i], x[j])
    if ranks[i] > 0:
      assert any(P.dominates(x[j], x[i]) for j in np.flatnonzero(ranks == ranks[i] - 1))


@hypothesis.settings(max_examples=60, **SETTINGS)
@hypothesis.given(x=score_arrays(nan=True, max_n=15))
def test_nsga2_order_ranks_then_crowding(x):
  order = P.nsga2_order(x)
  n = len(x)
  np.testing.assert_array_equal(np.sort(order), np.arange(n))
  ranks = P.pareto_ranks(x)[order]
  assert (np.diff(ranks) >= 0).all()
  assert set(order[: int((ranks == 0).sum())]) == set(np.flatnonzero(P.pareto_ranks(x) == 0))
  cd = P.crowding_distance(x)[order]
  ok = ~np.isnan(x).any(axis=1)[order]
  assert ok[: ok.sum()].all()  # NaN rows last
  for a in range(n - 1):
    if ranks[a] == ranks[a + 1] and ok[a + 1]:
      assert cd[a] > cd[a + 1] or (cd[a] == cd[a + 1] and order[a] < order[a + 1])
  # boundary points: the best and worst of each objective in a front of >= 3 points are inf
  full = P.pareto_ranks(x)
  cd_all = P.crowding_distance(x)
  for r in np.unique(full[~np.isnan(x).any(axis=1)]):
    idx = np.flatnonzero((full == r) & ~np.isnan(x).any(axis=1))
    if len(idx) <= 2:
      assert np.isinf(cd_all[idx]).all()
    else:
      assert (cd_all[idx] >= 0).all()
      for j in range(x.shape[1]):
        assert np.isinf(cd_all[idx[np.argmax(x[idx, j])]]) or (x[idx, j] == x[idx, j].max()).sum() > 1


# --- hypervolume: properties ----------------------------------------------------------------------


@hypothesis.settings(max_examples=60, **SETTINGS)
@hypothesis.given(x=score_arrays(nan=True, max_n=10), seed=st.integers(0, 2**16))
def test_hypervolume_front_permutation_duplicates_nan(x, seed):
  ref = _ref_for(x)
  hv = P.hypervolume(x, ref)
  ok = ~np.isnan(x).any(axis=1)
  assert hv >= 0
  tol = 1e-9 * max(1.0, hv)
  assert P.hypervolume(x[P.non_dominated(x)], ref) == pytest.approx(hv, abs=tol)
  assert P.hypervolume(x[ok], ref) == pytest.approx(hv, abs=tol)  # NaN rows add nothing
  rng = np.random.default_rng(seed)
  assert P.hypervolume(x[rng.permutation(len(x))], ref) == pytest.approx(hv, abs=tol)
  doubled = np.concatenate([x, x[rng.integers(0, len(x), size=len(x))]]) if len(x) else x
  assert P.hypervolume(doubled, ref) == pytest.approx(hv, abs=tol)


@hypothesis.settings(max_examples=60, **SETTINGS)
@hypothesis.given(x=score_arrays(min_n=1, max_n=10), extra=st.data())
def test_hypervolume_is_monotone(x, extra):
  ref = _ref_for(x) - 1.0
  m = x.shape[1]
  point = np.array(extra.draw(st.lists(st.floats(-2, 12), min_size=m, max_size=m)))
  before = P.hypervolume(x, ref)
  after = P.hypervolume(np.vstack([x, point]), ref)
  assert after >= before - 1e-9 * max(1.0, before)


@pytest.mark.parametrize("m", [2, 3, 4])
@hypothesis.settings(max_examples=25, **SETTINGS)
@hypothesis.given(data=st.data())
def test_hypervolume_matches_monte_carlo(m, data):
  x = data.draw(score_arrays(m=m, min_n=1, max_n=10))
  ref = _ref_for(x)
  top = x.max(axis=0)
  box = np.prod(top - ref)
  n_samples = 20_000
  u = np.random.default_rng(0).uniform(ref, top, size=(n_samples, m))
  covered = (u[:, None, :] <= x[None, :, :]).all(axis=2).any(axis=1)
  frac = covered.mean()
  se = box * np.sqrt(max(frac * (1 - frac), 1 / n_samples) / n_samples)
  assert abs(P.hypervolume(x, ref) - box * frac) <= 5 * se


@pytest.mark.parametrize("m", [1, 2, 3])
@hypothesis.settings(max_examples=40, **SETTINGS)
@hypothesis.given(data=st.data())
def test_hypervolume_improvement_is_a_difference_of_hypervolumes(m, data):
  front = data.draw(score_arrays(m=m, max_n=8, nan=True))
  points = data.draw(score_arrays(m=m, min_n=1, max_n=6, nan=True))
  ref = np.full(m, data.draw(st.sampled_from([0.0, 0.5, 1.0])))
  hvi = P.hypervolume_improvement(points, front, ref)
  assert hvi.shape == (len(points),)
  base = P.hypervolume(front, ref)
  for i, p in enumerate(points):
    expected = 0.0 if np.isnan(p).any() else P.hypervolume(np.vstack([front, p]), ref) - base
    assert hvi[i] == pytest.approx(expected, abs=1e-9 * max(1.0, base))


def test_hypervolume_improvement_many_points_in_2d():
  rng = np.random.default_rng(0)
  front = rng.uniform(size=(50, 2))
  points = rng.uniform(size=(20_000, 2))
  hvi = P.hypervolume_improvement(points, front, [0.0, 0.0])
  assert hvi.shape == (20_000,) and (hvi >= 0).all()
  base = P.hypervolume(front, [0, 0])
  for i in rng.integers(0, 20_000, size=20):
    assert hvi[i] == pytest.approx(P.hypervolume(np.vstack([front, points[i]]), [0, 0]) - base, abs=1e-12)


# --- normalise and ParEGO -------------------------------------------------------------------------


def test_normalise():
  x = np.array([[1, 5, 2], [3, 5, np.nan], [2, 5, 4], [9, 9, np.nan]], float)
  got = P.normalise(x)
  # bounds from the rows with no NaN (0 and 2); the constant column maps to 0; NaN stays NaN
  np.testing.assert_allclose(got[[0, 2]], [[0, 0, 0], [1, 0, 1]])
  np.testing.assert_allclose(got[1, :2], [2, 0])
  assert np.isnan(got[1, 2]) and np.isnan(got[3, 2])
  np.testing.assert_allclose(P.normalise([[0.0, 1.0]], lo=[-1, 1], hi=[1, 1]), [[0.5, 0.0]])
  assert P.normalise(np.zeros((0, 2))).shape == (0, 2)


def test_parego_with_one_weight_orders_by_that_column():
  x = np.array([[0.0, 10.0], [1.0, 0.0], [0.5, 5.0], [0.9, 9.0]])
  s = P.parego_scalarise(x, [1.0, 0.0])
  # f = normalise(x): column 0 -> (0, 1, 0.5, 0.9); w = (1, 0): min_j(w_j f_j) = min(f_0, 0) = 0
  # and the rho term carries the order: rho * f_0
  np.testing.assert_allclose(s, 0.05 * np.array([0, 1, 0.5, 0.9]))
  np.testing.assert_array_equal(np.argsort(s), np.argsort(x[:, 0]))
  # weights (1/2, 1/2): min of the halves plus rho times their sum
  f = P.normalise(x)
  np.testing.assert_allclose(P.parego_scalarise(x, [0.5, 0.5], rho=0.1), 0.5 * f.min(1) + 0.1 * 0.5 * f.sum(1))
  assert np.isnan(P.parego_scalarise([[1, np.nan], [0, 0], [1, 1]], [0.5, 0.5])[0])


@hypothesis.settings(max_examples=80, **SETTINGS)
@hypothesis.given(x=score_arrays(min_n=2, max_n=10), seed=st.integers(0, 2**16))
def test_parego_prefers_a_dominating_point(x, seed):
  rng = np.random.default_rng(seed)
  w = P.simplex_weights(rng, x.shape[1])
  hypothesis.assume((w > 1e-6).all())
  s = P.parego_scalarise(x, w)
  for i in range(len(x)):
    for j in range(len(x)):
      if P.dominates(x[i], x[j]):
        assert s[i] > s[j]


def test_simplex_weights():
  rng = np.random.default_rng(0)
  w = np.array([P.simplex_weights(rng, 3) for _ in range(4000)])
  assert (w >= 0).all() and np.allclose(w.sum(1), 1.0, atol=1e-12)
  np.testing.assert_allclose(w.mean(0), [1 / 3] * 3, atol=0.02)  # Dirichlet(1): mean 1/m, var 1/18
  np.testing.assert_allclose(w.var(0), [1 / 18] * 3, atol=0.005)
  np.testing.assert_array_equal(P.simplex_weights(np.random.default_rng(0), 1), [1.0])


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
  "call, match",
  [
    (lambda: P.non_dominated([1.0, 2.0]), "scores has shape"),
    (lambda: P.pareto_ranks(np.zeros((3, 0))), "scores has shape"),
    (lambda: P.crowding_distance([[1.0, np.inf]]), "scores holds an infinite"),
    (lambda: P.hypervolume([[1.0, 2.0]], [0.0]), "ref has shape"),
    (lambda: P.hypervolume([[1.0, 2.0]], [0.0, np.nan]), "ref=.*not finite"),
    (lambda: P.hypervolume_improvement([[1.0, 2.0]], [[1.0]], [0.0, 0.0]), "front has shape"),
    (lambda: P.hypervolume_improvement([[1.0, 2.0]], [[1.0, 1.0]], [0.0]), "ref has shape"),
    (lambda: P.hypervolume_improvement([1.0, 2.0], [[1.0, 1.0]], [0.0, 0.0]), "points has shape"),
    (lambda: P.dominates([1.0, 2.0], [1.0]), "b has shape"),
    (lambda: P.normalise([[1.0, 2.0]], lo=[1.0, 1.0], hi=[0.0, 2.0]), "lo=.*hi=.*lo <= hi"),
    (lambda: P.normalise([[1.0, 2.0]], lo=[1.0]), "lo has shape"),
    (lambda: P.parego_scalarise([[1.0, 2.0]], [0.5, 0.6]), "weights=.*summing to 1"),
    (lambda: P.parego_scalarise([[1.0, 2.0]], [1.5, -0.5]), "weights=.*non-negative"),
    (lambda: P.parego_scalarise([[1.0, 2.0]], [1.0]), "weights has shape"),
    (lambda: P.parego_scalarise([[1.0, 2.0]], [0.5, 0.5], rho=-1.0), "rho=-1.0"),
    (lambda: P.simplex_weights(np.random.default_rng(0), 0), "m=0"),
    (lambda: P.simplex_weights(0, 2), "rng is a int"),
  ],
)
def test_bad_input_raises(call, match):
  with pytest.raises(ValueError, match=match):
    call()
