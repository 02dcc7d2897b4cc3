"""Pairwise inputs: distances equal brute force, padding adds zeros, inputs are validated."""

import jax
import numpy as np
import pytest

from nas_jax.features import pairwise


def test_sq_euclidean_equals_brute_force():
  rng = np.random.default_rng(0)
  x1, x2 = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
  expected = [[np.sum((a - b) ** 2) for b in x2] for a in x1]
  np.testing.assert_allclose(pairwise.sq_euclidean(x1, x2).sq_dist, expected, rtol=1e-12)
  np.testing.assert_allclose(np.diag(pairwise.sq_euclidean(x1).sq_dist), 0.0)


def test_hamming_counts_differing_bits():
  x1 = np.array([[1, 0, 1, 1], [0, 0, 0, 0]])
  x2 = np.array([[1, 1, 1, 1], [0, 0, 0, 1], [1, 0, 1, 1]])
  np.testing.assert_array_equal(pairwise.hamming(x1, x2).sq_dist, [[1, 2, 0], [4, 1, 3]])


def test_hamming_rejects_non_binary():
  with pytest.raises(ValueError, match="x2: has entries other than 0 and 1"):
    pairwise.hamming(np.zeros((2, 3)), np.full((2, 3), 0.5))


def test_arc_pair_rescales_and_zeroes_inactive_values():
  values = np.array([[2.0, 7.0], [4.0, np.nan]])
  active = np.array([[True, False], [True, False]])
  pair = pairwise.arc_pair(values, active, lower=[0.0, 5.0], upper=[4.0, 10.0])
  np.testing.assert_array_equal(pair.u1, [[0.5, 0.0], [1.0, 0.0]])
  np.testing.assert_array_equal(pair.active2, active)


@pytest.mark.parametrize(
  "kwargs, message",
  [
    (dict(lower=[0.0, 1.0], upper=[1.0, 1.0]), "need lower < upper"),
    (dict(lower=[0.0], upper=[1.0]), r"values1: shape \(1, 2\)"),
  ],
)
def test_arc_pair_validates(kwargs, message):
  with pytest.raises(ValueError, match=message):
    pairwise.arc_pair(np.zeros((1, 2)), np.ones((1, 2), bool), **kwargs)


def test_arc_pair_rejects_non_bool_activity():
  with pytest.raises(ValueError, match="active1: int64"):
    pairwise.arc_pair(np.zeros((1, 2)), np.ones((1, 2), int), lower=[0, 0], upper=[1, 1])


def test_otmann_pair_validates_shapes_and_signs():
  d = np.ones((4, 2, 3))
  with pytest.raises(ValueError, match="d_bar: shape"):
    pairwise.otmann_pair(d, np.ones((4, 3, 2)))
  with pytest.raises(ValueError, match="d: has negative"):
    pairwise.otmann_pair(-d, d)
  with pytest.raises(ValueError, match="d: shape"):
    pairwise.otmann_pair(d[0], d[0])
  assert pairwise.otmann_pair(d, 2 * d).shape == (2, 3)


def test_vector_pair_rejects_nan_and_dimension_mismatch():
  with pytest.raises(ValueError, match="x1: contains non-finite"):
    pairwise.vector_pair(np.array([[np.nan]]))
  with pytest.raises(ValueError, match="x2: shape"):
    pairwise.vector_pair(np.zeros((2, 3)), np.zeros((2, 4)))


def test_pad_appends_zeros_and_keeps_data():
  rng = np.random.default_rng(1)
  d = rng.uniform(size=(2, 3, 4))
  padded = pairwise.otmann_pair(d, d).pad(5, 6)
  assert padded.shape == (5, 6)
  np.testing.assert_array_equal(padded.d[:, :3, :4], d)
  assert np.all(np.asarray(padded.d_bar)[:, 3:, :] == 0)
  assert np.all(np.asarray(padded.d)[:, :, 4:] == 0)
  arc = pairwise.arc_pair(np.ones((2, 1)), np.ones((2, 1), bool), lower=[0], upper=[2]).pad(3, 4)
  np.testing.assert_array_equal(arc.active2[:, 0], [True, True, False, False])
  with pytest.raises(ValueError, match="less than the current size"):
    pairwise.vector_pair(np.ones((3, 2))).pad(2, 3)


def test_pad_runs_on_the_host_for_concrete_arrays_and_traces_under_jit(count_compiles):
  d = np.random.default_rng(3).uniform(size=(2, 3, 4))
  pair = pairwise.otmann_pair(d, d)
  pair.pad(5, 6)
  with count_compiles() as compiled:  # a search pads a new shape at almost every call
    for n1, n2 in [(7, 8), (3, 9), (11, 4)]:
      padded = pair.pad(n1, n2)
      np.testing.assert_array_equal(padded.d, np.pad(d, ((0, 0), (0, n1 - 3), (0, n2 - 4))))
  assert compiled[0] == 0
  traced = jax.jit(lambda p: p.pad(5, 6))(pair)
  np.testing.assert_array_equal(traced.d_bar, pair.pad(5, 6).d_bar)


def test_pairs_round_trip_as_pytrees_under_jit():
  rng = np.random.default_rng(2)
  pairs = [
    pairwise.vector_pair(rng.normal(size=(3, 2))),
    pairwise.sq_euclidean(rng.normal(size=(3, 2))),
    pairwise.otmann_pair(rng.uniform(size=(2, 3, 3)), rng.uniform(size=(2, 3, 3))),
    pairwise.arc_pair(rng.uniform(size=(3, 2)), rng.uniform(size=(3, 2)) > 0.5, lower=[0, 0], upper=[1, 1]),
  ]
  for pair in pairs:
    leaves, tree = jax.tree.flatten(pair)
    out = jax.jit(lambda p: p)(jax.tree.unflatten(tree, leaves))
    assert type(out) is type(pair)
    for a, b in zip(jax.tree.leaves(out), leaves):
      np.testing.assert_array_equal(a, b)
