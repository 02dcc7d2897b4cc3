"""Auto-Keras edit distance: known values computed by hand, a pure-Python reference
(DP, brute-force assignment), the properties of Theorem 1 (Auto-Keras Sec. 3.1), and input validation."""

import itertools
import math

import hypothesis
import hypothesis.strategies as st
import jax
import numpy as np
import pytest

import nas_jax
from nas_jax.features import edit_distance as ed
from nas_jax.features import edit_terms

SIZES = (8, 4, 4)  # fixed capacities, so hypothesis examples share compiled code


# ---- pure-Python references --------------------------------------------------------------------


def ref_width(x, y):
  return abs(x - y) / max(x, y)


def ref_dp_table(a, b):
  """The DP for eq. (4) of Auto-Keras Sec. 3.1 as a full table [len(a) + 1][len(b) + 1]."""
  t = [[float(i + j) if i * j == 0 else 0.0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
  for i in range(1, len(a) + 1):
    for j in range(1, len(b) + 1):
      t[i][j] = min(t[i - 1][j] + 1, t[i][j - 1] + 1, t[i - 1][j - 1] + ref_width(a[i - 1], b[j - 1]))
  return t


def ref_layers(a, b):
  return ref_dp_table(a, b)[-1][-1]


def ref_eq4(a, b):
  """eq. (4) read literally: every layer of the shorter list matched in order."""
  short, long_ = (a, b) if len(a) <= len(b) else (b, a)
  best = min(
    sum(ref_width(x, long_[j]) for x, j in zip(short, js))
    for js in itertools.combinations(range(len(long_)), len(short))
  )
  return best + len(long_) - len(short)


def ref_skip(s, t):
  if s[2] != t[2]:
    return 1.0
  du, dd = abs(s[0] - t[0]), abs((s[1] - s[0]) - (t[1] - t[0]))
  return (du + dd) / (max(s[0], t[0]) + max(s[1] - s[0], t[1] - t[0]))


def ref_skips(sa, sb):
  """eq. (7) by brute force over every injection of the smaller set."""
  small, big = (sa, sb) if len(sa) <= len(sb) else (sb, sa)
  best = min(
    sum(ref_skip(x, big[j]) for x, j in zip(small, js)) for js in itertools.permutations(range(len(big)), len(small))
  )
  return best + len(big) - len(small)


def greedy_skips(sa, sb):
  pairs = sorted((ref_skip(x, y), i, j) for i, x in enumerate(sa) for j, y in enumerate(sb))
  used_a, used_b, total = set(), set(), 0.0
  for c, i, j in pairs:
    if i not in used_a and j not in used_b:
      used_a.add(i), used_b.add(j)
      total += c
  return total + abs(len(sa) - len(sb))


def ref_distance(a, b, lam=1.0):
  return ref_layers(a[0], b[0]) + ref_layers(a[1], b[1]) + lam * ref_skips(a[2], b[2])


def desc(lists, sizes=SIZES):
  return ed.descriptor(*lists, sizes=sizes)


def matrix(lists, **kwargs):
  return ed.edit_distance_terms([desc(x) for x in lists], **kwargs)


# ---- known values (computed by hand, lambda = 1) -----------------------------------------------

E6_A = ([64, 64, 128], [64], [(1, 2, "add")])
E6_B = ([32, 64, 128, 128], [], [])


@pytest.mark.parametrize(
  "a, b, d_l, d_s",
  [
    (([64, 64, 64], [], []), ([64, 64, 64, 64], [], []), 1.0, 0.0),  # E1 deep
    (([64, 64, 64], [], []), ([64, 128, 64], [], []), 0.5, 0.0),  # E2 wide
    (([16, 512, 16], [], []), ([512, 16, 512], [], []), 2.0, 0.0),  # E3 DP, not eq. (4)
    (([64], [], [(1, 3, "add")]), ([64], [], [(2, 4, "add"), (1, 2, "concat")]), 0.0, 1.25),  # E4
    (
      ([64], [], [(1, 3, "add"), (2, 5, "add")]),
      ([64], [], [(1, 4, "add"), (3, 5, "add")]),
      0.0,
      0.25 + 1 / 3,
    ),  # E5 Hungarian
    (E6_A, E6_B, 2.5, 1.0),  # E6 both kinds
    (([64] * 3, [], [(1, 2, "add")]), ([64] * 4, [], [(2, 3, "add")]), 1.0, 1 / 3),  # E7
    (([64] * 3, [10], []), ([64] * 7, [10], [(1, 2, "add"), (2, 5, "add"), (5, 7, "add")]), 4.0, 3.0),  # E8 G0 vs G1
  ],
)
def test_known_distances(a, b, d_l, d_s):
  da, db = [ed.descriptor(*a)], [ed.descriptor(*b)]
  terms = ed.edit_distance_terms(da, db)
  assert terms.layers[0, 0] == pytest.approx(d_l, abs=1e-12)
  assert terms.skips[0, 0] == pytest.approx(d_s, abs=1e-12)
  assert ed.edit_distances(da, db)[0, 0] == pytest.approx(d_l + d_s, abs=1e-12)


def test_e3_whole_dp_table_and_eq4_value():
  """Each prefix pair gives one entry of the table of E3; eq. (4) literal is 2.90625."""
  a, b = [16, 512, 16], [512, 16, 512]
  table = [[0, 1, 2, 3], [1, 0.96875, 1, 2], [2, 1, 1.9375, 1], [3, 2, 1, 2]]
  prefixes = lambda x, lengths: [ed.descriptor(x[:i]) for i in lengths]
  got = ed.edit_distances(prefixes(a, range(4)), prefixes(b, range(4)))
  np.testing.assert_allclose(got, table, atol=1e-12)
  assert ref_eq4(a, b) == pytest.approx(2.90625)


def test_e6_conv_rows_lambda_and_joint():
  a, b = E6_A[0], E6_B[0]
  rows = [[1, 0.5, 1, 2, 3], [2, 1.5, 0.5, 1.5, 2.5], [3, 2.5, 1.5, 0.5, 1.5]]
  prefixes = lambda x, lengths: [ed.descriptor(x[:i]) for i in lengths]
  got = ed.edit_distances(prefixes(a, (1, 2, 3)), prefixes(b, range(5)))
  np.testing.assert_allclose(got, rows, atol=1e-12)
  pair = [ed.descriptor(*E6_A)], [ed.descriptor(*E6_B)]
  assert ed.edit_distances(*pair, lam=0.1)[0, 0] == pytest.approx(2.6, abs=1e-12)
  # joint: [64, 64, 128, 64] vs [32, 64, 128, 128] substitutes the dense 64 for a conv 128.
  joint = ed.edit_distances(*pair, layer_match="joint")[0, 0]
  assert joint == pytest.approx(0.5 + 0.5 + 1.0, abs=1e-12)


def test_e5_greedy_matching_is_worse():
  sa, sb = [(1, 3, "add"), (2, 5, "add")], [(1, 4, "add"), (3, 5, "add")]
  assert greedy_skips(sa, sb) == pytest.approx(0.6)
  assert ref_skips(sa, sb) == pytest.approx(0.25 + 1 / 3)


# ---- the jitted DP against the reference -------------------------------------------------------


def test_vmapped_dp_equals_reference_on_random_padded_lists():
  rng = np.random.default_rng(0)
  n, cap = 300, 7
  lengths = rng.integers(0, cap + 1, (2, n))
  widths = rng.choice([1, 3, 16, 64, 100, 128, 512], size=(2, n, cap))
  masks = np.arange(cap) < lengths[..., None]
  padded = np.where(masks, widths, 1)
  got = jax.jit(jax.vmap(edit_terms.layer_edit_distance))(padded[0], masks[0], padded[1], masks[1])
  real = lambda k, p: list(widths[k, p, : lengths[k, p]])
  want = [ref_layers(real(0, p), real(1, p)) for p in range(n)]
  np.testing.assert_allclose(got, want, atol=1e-12)
  # The batched DP stops after the longest real row list: a batch whose lists are all short
  # (here at most 2 rows) must still see every column, and pairs with no rows at all.
  batched = jax.jit(edit_terms.layer_edit_distances)
  np.testing.assert_array_equal(batched(padded[0], masks[0], padded[1], masks[1]), got)
  short = lengths[0] <= 2
  np.testing.assert_allclose(
    batched(padded[0][short], masks[0][short], padded[1][short], masks[1][short]), np.asarray(want)[short], atol=1e-12
  )


# ---- hypothesis properties (Theorem 1, and metric properties) ----------------------------------

widths = st.sampled_from([16, 32, 64, 128, 512]) | st.integers(1, 1024)
skip = st.tuples(st.integers(1, 5), st.integers(1, 4), st.sampled_from(ed.SKIP_TYPES)).map(
  lambda t: (t[0], t[0] + t[1], t[2])
)
descriptors = st.tuples(st.lists(widths, max_size=6), st.lists(widths, max_size=3), st.lists(skip, max_size=4))
settings = hypothesis.settings(max_examples=40, deadline=None)


@settings
@hypothesis.given(descriptors, descriptors)
def test_terms_equal_the_reference(a, b):
  terms = matrix([a, b])
  assert terms.layers[0, 1] == pytest.approx(ref_layers(a[0], b[0]) + ref_layers(a[1], b[1]), abs=1e-12)
  assert terms.skips[0, 1] == pytest.approx(ref_skips(a[2], b[2]), abs=1e-12)
  joint = ed.edit_distance_terms([desc(a)], [desc(b)], layer_match="joint").layers[0, 0]
  assert joint == pytest.approx(ref_layers(a[0] + a[1], b[0] + b[1]), abs=1e-12)
  assert joint <= terms.layers[0, 1] + 1e-12  # joint only adds conv-dense substitutions


@settings
@hypothesis.given(descriptors, descriptors, descriptors)
def test_pseudometric_and_triangle_inequality(a, b, c):
  terms = matrix([a, b, c])
  for m in (terms.layers, terms.skips, terms.total(1.0), terms.total(0.3)):
    assert np.all(m >= 0) and np.all(np.diag(m) == 0)
    np.testing.assert_array_equal(m, m.T)
    for i, j, k in itertools.permutations(range(3)):
      assert m[i, k] <= m[i, j] + m[j, k] + 1e-12


@settings
@hypothesis.given(descriptors, descriptors)
def test_zero_iff_equal_descriptors(a, b):
  d = ed.edit_distances([desc(a)], [desc(b)])[0, 0]
  equal = a[0] == b[0] and a[1] == b[1] and sorted(a[2]) == sorted(b[2])
  assert (d == 0) == equal


@settings
@hypothesis.given(descriptors, descriptors)
def test_bounds_of_each_term(a, b):
  """||L_a| - |L_b|| <= D_l <= max per kind; the same for D_s; DP <= eq. (4); Hungarian <= greedy."""
  for x, y in ((a[0], b[0]), (a[1], b[1])):
    d_l = ed.edit_distances([desc((x, [], []))], [desc((y, [], []))])[0, 0]
    assert abs(len(x) - len(y)) - 1e-12 <= d_l <= max(len(x), len(y)) + 1e-12
    assert d_l <= ref_eq4(x, y) + 1e-12
  d_s = ed.edit_distance_terms([desc(a)], [desc(b)]).skips[0, 0]
  assert abs(len(a[2]) - len(b[2])) - 1e-12 <= d_s <= max(len(a[2]), len(b[2])) + 1e-12
  assert d_s <= greedy_skips(a[2], b[2]) + 1e-12


@settings
@hypothesis.given(descriptors, descriptors, st.randoms(use_true_random=False))
def test_skip_order_and_padding_change_nothing(a, b, rnd):
  want = ed.edit_distances([desc(a), desc(b)])
  shuffled = [(x[0], x[1], rnd.sample(x[2], len(x[2]))) for x in (a, b)]
  got = ed.edit_distances([ed.descriptor(*x, sizes=(16, 8, 8)) for x in shuffled], chunk_size=1)
  np.testing.assert_array_equal(got, want)


@settings
@hypothesis.given(
  st.lists(st.tuples(widths, widths), min_size=8, max_size=8), st.lists(st.tuples(skip, skip), min_size=8, max_size=8)
)
def test_elementary_distances_are_in_range(width_pairs, skip_pairs):
  d_l = np.asarray(edit_terms.width_distance(*np.array(width_pairs).T))
  assert np.all((d_l >= 0) & (d_l < 1))
  codes = np.array([[(u, v, ed.SKIP_TYPES.index(t)) for u, v, t in p] for p in skip_pairs])
  d_s = np.asarray(edit_terms.skip_distance(codes[:, 0], codes[:, 1]))
  np.testing.assert_allclose(d_s, [ref_skip(s, t) for s, t in skip_pairs], atol=1e-12)
  assert np.all((d_s >= 0) & (d_s <= 1))


# ---- batches, padding and the public API -------------------------------------------------------


def test_batches_lists_and_chunks_agree(monkeypatch):
  rng = np.random.default_rng(1)
  widths_ = lambda most: list(rng.integers(1, 300, rng.integers(0, most + 1)))
  lists = [(widths_(6), widths_(2), [(1, 3, "add")] * int(rng.integers(0, 3))) for _ in range(9)]
  descs = [ed.descriptor(*x) for x in lists]
  sym = nas_jax.edit_distances(descs)
  batch = ed.stack_descriptors(descs, sizes=(16, 8, 8))
  np.testing.assert_array_equal(nas_jax.edit_distances(batch, batch, chunk_size=5), sym)
  np.testing.assert_array_equal(nas_jax.edit_distances(descs[:4], descs, chunk_size=3), sym[:4])
  # Skip assignments in blocks of 4 pairs (2 x 2 skip slots, 16 d_s entries), across chunks of 3.
  monkeypatch.setattr(ed, "_BLOCK_COSTS", 16)
  np.testing.assert_array_equal(nas_jax.edit_distances(descs[:4], descs, chunk_size=3), sym[:4])
  want = [[ref_distance(x, y) for y in lists] for x in lists]
  np.testing.assert_allclose(sym, want, atol=1e-12)


def test_stack_pads_to_powers_of_two_and_keeps_real_entries_first():
  batch = ed.stack_descriptors([ed.descriptor([5, 6, 7], [10], [(1, 2, "concat")]), ed.descriptor([])])
  assert batch.conv.shape == (2, 4) and batch.dense.shape == (2, 1) and batch.skips.shape == (2, 1, 3)
  np.testing.assert_array_equal(batch.conv_mask, [[True, True, True, False], [False] * 4])
  np.testing.assert_array_equal(batch.skips[0, 0], [1, 2, 1])
  back = ed.pad_descriptor(batch, (3, 1, 1))
  np.testing.assert_array_equal(back.conv[0], [5, 6, 7])


def test_skip_terms_match_scipys_assignment_for_small_and_large_skip_sets():
  """Pairs with at most 720 matchings (up to 5 skips a side, or e.g. 2 into 8) are solved by trying
  every matching at once, the others by scipy; both must equal scipy's optimal assignment plus 1
  per unmatched skip."""
  from scipy.optimize import linear_sum_assignment

  rng = np.random.default_rng(7)
  cost = rng.random((600, 8, 8))
  n_a, n_b = rng.integers(0, 9, 600), rng.integers(0, 9, 600)
  want = np.abs(n_a - n_b).astype(float)
  for p in np.flatnonzero((n_a > 0) & (n_b > 0)):
    c = cost[p, : n_a[p], : n_b[p]]
    r, k = linear_sum_assignment(c)
    want[p] += c[r, k].sum()
  ways = np.array([math.perm(int(max(a, b)), int(min(a, b))) for a, b in zip(n_a, n_b)])
  both = (n_a > 0) & (n_b > 0)
  assert (both & (ways > 720)).any() and (both & (ways <= 720) & (np.maximum(n_a, n_b) > 5)).any()
  assert ((n_a <= 5) & (n_a > n_b) & (n_b > 0)).any()
  np.testing.assert_allclose(edit_terms.skip_edit_distances(cost, n_a, n_b), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("s_a, s_b", [(1, 1), (2, 3), (4, 1), (3, 4), (4, 4)])
def test_jitted_skip_terms_equal_the_hosts_bit_for_bit(s_a, s_b):
  """Up to FEW_SKIPS skip slots a side, D_s comes out of the jitted chunk: it must be the host's
  value to the last bit (the matrix's entries must not depend on which path a batch took), for
  every count of real skips including none."""
  rng = np.random.default_rng(s_a * 10 + s_b)
  cost = rng.random((400, s_a, s_b))
  cost[:50] = np.round(cost[:50], 1)  # ties between matchings, and exact zeros
  n_a, n_b = rng.integers(0, s_a + 1, 400), rng.integers(0, s_b + 1, 400)
  want = edit_terms.skip_edit_distances(cost, n_a, n_b)
  got = np.asarray(jax.jit(edit_terms.few_skip_edit_distances)(cost, n_a, n_b))  # x64: conftest
  np.testing.assert_array_equal(got, want)


def test_a_batch_with_many_skips_matches_the_reference_and_the_few_skip_path():
  """A batch with room for 8 skips takes the host's assignments; every entry must be the
  reference, and the pairs with up to 4 skips a side the values of a batch whose capacity is 4
  (the jitted path) to the last bit."""
  rng = np.random.default_rng(11)
  triples = lambda k: [
    (int(u), int(u) + 1 + int(g), ("add", "concat")[int(t)]) for u, g, t in rng.integers((1, 0, 0), (6, 3, 2), (k, 3))
  ]
  lists = [(list(rng.integers(1, 300, rng.integers(1, 7))), [10], triples(k)) for k in (0, 1, 3, 4, 5, 7, 2, 6, 4)]
  descs = [ed.descriptor(*x) for x in lists]
  terms = ed.edit_distance_terms(descs)
  want = [[ref_distance(x, y) for y in lists] for x in lists]
  np.testing.assert_allclose(terms.total(), want, atol=1e-12)
  few = [i for i, x in enumerate(lists) if len(x[2]) <= 4]
  alone = ed.edit_distance_terms([descs[i] for i in few])
  np.testing.assert_array_equal(terms.skips[np.ix_(few, few)], alone.skips)


@pytest.mark.parametrize("skips", [0, 6])
def test_one_network_has_a_zero_matrix_on_either_skip_path(skips):
  """No pair at all (a search's first observed network), with room for few or many skips."""
  one = ed.descriptor([3, 5], [10], [(1, 2, "add")] * skips)
  np.testing.assert_array_equal(nas_jax.edit_distances([one]), [[0.0]])
  np.testing.assert_array_equal(nas_jax.edit_distances([one], [one]), [[0.0]])


def test_jitted_skip_terms_refuse_more_than_few_slots():
  with pytest.raises(ValueError, match=r"cost: 5 x 2 skip slots; few_skip_edit_distances takes at most 4 a side"):
    edit_terms.few_skip_edit_distances(np.zeros((1, 5, 2)), np.zeros(1, int), np.zeros(1, int))


def test_stack_equals_padding_each_descriptor_and_refuses_holes():
  rng = np.random.default_rng(3)
  widths_ = lambda most: list(rng.integers(1, 300, rng.integers(0, most + 1)))
  skips = lambda: [
    (1, int(v), ("add", "concat")[int(t)]) for v, t in rng.integers((2, 0), (5, 2), (rng.integers(0, 4), 2))
  ]
  descs = [ed.descriptor(widths_(7), widths_(3), skips()) for _ in range(12)]
  batch = ed.stack_descriptors(descs, sizes=(8, 4, 4))
  one_by_one = [ed.pad_descriptor(d, (8, 4, 4)) for d in descs]
  for field in ("conv", "conv_mask", "dense", "dense_mask", "skips", "skip_mask"):
    np.testing.assert_array_equal(getattr(batch, field), np.stack([getattr(d, field) for d in one_by_one]))
  holed = descs[0].replace(conv_mask=np.array([False, True] + [False] * (len(descs[0].conv_mask) - 2)))
  with pytest.raises(ValueError, match=r"descs\[1\]: conv_mask has a real entry after a padded one"):
    ed.stack_descriptors([descs[1], holed])
  skip_holed = ed.descriptor([3], [], [(1, 2, "add")], sizes=(1, 1, 2)).replace(skip_mask=np.array([False, True]))
  with pytest.raises(ValueError, match=r"descs\[0\]: skip_mask has a real entry after a padded one"):
    ed.stack_descriptors([skip_holed, holed])
  # By default the capacities are the largest among descs (not their real entries), rounded up.
  roomy = [ed.descriptor([5], [10], [], sizes=(5, 3, 3)), descs[2]]
  assert ed.stack_descriptors(roomy).conv.shape == (2, 8) and ed.stack_descriptors(roomy).skips.shape[1] == 4
  np.testing.assert_array_equal(ed.stack_descriptors(roomy).conv[0], [5] + [1] * 7)


@pytest.mark.parametrize(
  "args, error, message",
  [
    (([64, 0],), ValueError, r"conv\[1\]: 0 is not allowed; a width is an integer >= 1"),
    (([64], [2.5]), ValueError, r"dense\[0\]: 2.5 is not allowed"),
    (([64], [], [(2, 2, "add")]), ValueError, r"skips\[0\]: u, v = 2, 2; a skip needs 1 <= u < v"),
    (([64], [], [(0, 2, "add")]), ValueError, r"skips\[0\]: u, v = 0, 2"),
    (([64], [], [(1, 2, "sum")]), ValueError, r"skips\[0\]: type 'sum' is unknown; allowed: add, concat"),
    (([64], [], [(1, 2)]), ValueError, r"skips\[0\]: \(1, 2\) is not a triple"),
    (("64",), TypeError, "conv: str given"),
  ],
)
def test_descriptor_rejects_bad_fields(args, error, message):
  with pytest.raises(error, match=message):
    ed.descriptor(*args)


def test_api_rejects_bad_arguments():
  descs = [ed.descriptor([64, 64, 64])]
  with pytest.raises(ValueError, match="sizes=.* needs an integer >= 3"):
    ed.descriptor([1, 2, 3], sizes=(2, 1, 1))
  with pytest.raises(ValueError, match="layer_match: 'both' is unknown; choose one of: separate,"):
    ed.edit_distances(descs, layer_match="both")
  with pytest.raises(ValueError, match="lam: -1"):
    ed.edit_distances(descs, lam=-1)
  with pytest.raises(ValueError, match="descs_a: one Descriptor given"):
    ed.edit_distances(descs[0])
