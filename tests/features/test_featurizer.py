"""Featurizers: the cache gives what a direct computation gives, whatever the order of extends;
cached rows are reused; train points must be cached; a featurizer says what it needs of a space."""

import jax
import numpy as np
import pytest

from nas_jax.arch.conditional_point import stack_points, to_unit
from nas_jax.features import encodings
from nas_jax.features import featurizer
from nas_jax.features import featurizers as F
from nas_jax.features import otmann
from nas_jax.features.otmann import otmann_distances
from nas_jax.arch.cell import nb201_cell
from nas_jax.spaces.cells import nb101_space, nb201_space
from nas_jax.spaces import morph_space
from nas_jax.spaces.conditional import conditional_space
from nas_jax.spaces.space import layer_graph_space

MLP = layer_graph_space("mlp", max_layers=12)
NB201 = nb201_space()


def test_otmann_pairs_equal_direct_distances_in_any_extend_order():
  pts = MLP.initial() + MLP.sample(jax.random.key(0), 4)
  cands = pts[3:5] + MLP.sample(jax.random.key(1), 2)  # two cached, two new
  f = F.otmann(nu_str=(0.1, 0.8))(MLP)
  at_once = f.init(pts)
  one_by_one = f.init([])
  for p in pts[::-1]:
    one_by_one = f.extend(one_by_one, [p])
  train = pts[1:5]
  ref_train = otmann_distances(train, train, nu_str=(0.1, 0.8))
  ref_cross = otmann_distances(cands, train, nu_str=(0.1, 0.8))
  for cache in (at_once, one_by_one):
    t, x = f.pairs(cache, train, cands)
    np.testing.assert_allclose(t.d, ref_train.d, atol=1e-9)
    np.testing.assert_allclose(t.d_bar, ref_train.d_bar, atol=1e-9)
    np.testing.assert_allclose(x.d, ref_cross.d, atol=1e-9)
    np.testing.assert_allclose(x.d_bar, ref_cross.d_bar, atol=1e-9)


def test_candidates_met_again_are_solved_only_against_new_train_points(monkeypatch):
  # The acquisition's candidates recur across proposals while the train set grows: the memo of
  # the OTMANN featurizer solves a candidate met again against the train points new to it only,
  # in one call with the unseen candidates, and gives the direct distances in any train order.
  solved = []
  direct = otmann.feature_pair_distances
  monkeypatch.setattr(
    F,
    "feature_pair_distances",
    lambda fa, fb, ia, ib, *a, **k: solved.append(len(ia)) or direct(fa, fb, ia, ib, *a, **k),
  )
  pts = MLP.initial() + MLP.sample(jax.random.key(0), 6)
  cands = MLP.sample(jax.random.key(1), 4)
  f = F.otmann(nu_str=(0.1, 0.8))(MLP)
  cache = f.init(pts[:4])
  calls = [(pts[:4], cands[:3]), (pts[:4], cands[:3]), (pts[:6], cands), (pts[5::-1], cands[::-1]), (pts[2:7], cands)]
  for i, (train, cand) in enumerate(calls):
    cache = f.extend(cache, train)
    solved.clear()
    _, x = f.pairs(cache, train, cand)
    ref = otmann_distances(cand, train, nu_str=(0.1, 0.8))
    np.testing.assert_allclose(x.d, ref.d, rtol=1e-12)
    np.testing.assert_allclose(x.d_bar, ref.d_bar, rtol=1e-12)
    # new pairs: all 12; none; the 3 old candidates x 2 new points + 1 new x 6; none; 4 x pts[6]
    assert sum(solved) == [12, 0, 3 * 2 + 6, 0, 4][i] and len(solved) <= 1


def test_otmann_features_kept_per_network_give_the_direct_distances_across_slot_sizes():
  """Each network's features are built once on its own slot count and batched again with others
  (padding slots carry no mass): the same distances as from the stacked architectures."""
  cnn = layer_graph_space("cnn")
  pool = cnn.initial()
  sizes = [int(np.asarray(a.mask).sum()) for a in pool]
  assert len({-(-n // 8) for n in sizes}) >= 2  # networks of different slot multiples
  f = F.otmann(nu_str=(0.1, 0.4))(cnn)
  cache = f.init(pool[:6])
  t, x = f.pairs(cache, pool[:6], pool[6:])
  ref_train = otmann_distances(pool[:6], pool[:6], nu_str=(0.1, 0.4))
  ref_cross = otmann_distances(pool[6:], pool[:6], nu_str=(0.1, 0.4))
  np.testing.assert_allclose(t.d, ref_train.d, rtol=1e-12, atol=1e-9)
  np.testing.assert_allclose(x.d, ref_cross.d, rtol=1e-12, atol=1e-9)
  np.testing.assert_allclose(x.d_bar, ref_cross.d_bar, rtol=1e-12, atol=1e-12)
  assert all(len(item.features.labels) % 8 == 0 for item in cache.items)
  with pytest.raises(TypeError, match="feature_distances: fa is a list; expected OtmannFeatures"):
    otmann.feature_distances(pool, None, "cnn")
  with pytest.raises(ValueError, match="feature_distances: kind='rnn'"):
    otmann.feature_distances(cache.items[0].features, None, "rnn")


def test_extend_computes_only_new_keys_and_repeats_are_one_row():
  f = F.encoding("path")(NB201)
  cells = NB201.sample(jax.random.key(2), 5)
  cache = f.init(cells[:3] + cells[:1])  # a repeated point is one row
  assert len(cache) == 3
  assert f.extend(cache, cells[:3]) is cache  # nothing new: the same cache, nothing computed
  cache = f.extend(cache, cells[2:])
  assert len(cache) == 5 and cache.keys == tuple(NB201.canonical_key(c) for c in cells)
  t, x = f.pairs(cache, cells[1:4], cells)
  np.testing.assert_array_equal(np.asarray(x.x1), np.asarray(encodings.encode("path", cells)))
  np.testing.assert_array_equal(np.asarray(t.x1), np.asarray(encodings.encode("path", cells[1:4])))


def test_by_identity_remembers_frozen_arguments_only_and_its_last_calls():
  calls = []
  f = featurizer.by_identity(lambda *args: calls.append(args) or len(calls), size=2)
  a, b, c = (1, 2), (3,), (4,)
  assert [f(a), f(a), f(b), f(a)] == [1, 1, 2, 1]  # the same objects: computed once each
  assert f(tuple([1, 2])) == 3  # an equal tuple that is another object is another call
  assert f(c) == 4 and f(a) == 5  # two newer calls evicted a's
  listed = [1, 2]
  assert f(listed) == 6 and f(listed) == 7  # a list may change between calls: never remembered
  assert f(a, np.zeros(2)) == 8 and f(a, np.zeros(2)) == 9


def test_repeated_pairs_of_one_train_tuple_equal_fresh_ones():
  """The train side is remembered per (cache, train) object: a later cache, or an edited list,
  must give its own train features."""
  f = F.edit()(morph_space.morph_space())
  points = morph_space.morph_space().sample(jax.random.key(4), 6)
  cache = f.init(points)
  train = tuple(points[:4])
  first = f.pairs(cache, train, points[4:])
  again = f.pairs(cache, train, points[4:])
  for x, y in zip(jax.tree.leaves(first), jax.tree.leaves(again)):
    np.testing.assert_array_equal(x, y)
  listed = list(points[:4])
  f.pairs(cache, listed, [])
  listed[0] = points[5]
  fresh = f.pairs(f.init(listed), tuple(listed), [])[0]
  np.testing.assert_array_equal(f.pairs(cache, listed, [])[0].sq_dist, fresh.sq_dist)


def test_train_points_must_be_cached():
  f = F.encoding("trunc_path")(NB201)
  cells = NB201.sample(jax.random.key(3), 3)
  with pytest.raises(ValueError, match="train point 1 is not in the cache"):
    f.pairs(f.init(cells[:1]), cells[:2], [])


def test_arc_features_are_to_unit_and_the_traceable_encoding_matches():
  space = conditional_space(max_depth=3)
  pts = space.initial() + space.sample(jax.random.key(4), 3)
  f = F.arc()(space)
  t, _ = f.pairs(f.init(pts), pts, [])
  u, active = to_unit(stack_points(pts), space.conditional_spec)
  np.testing.assert_allclose(np.asarray(t.u1), u)
  values = np.stack([np.asarray(p.values, np.float64) for p in pts])
  u2, a2 = f.encode_values(values)
  np.testing.assert_allclose(np.asarray(u2), u, atol=1e-12)
  np.testing.assert_array_equal(np.asarray(a2), active)


def test_each_featurizer_builds_on_the_spaces_that_offer_what_it_reads():
  cond = conditional_space(max_depth=2)
  F.otmann()(cond), F.arc()(cond), F.poor_man()(cond), F.edit()(morph_space.morph_space())
  assert F.encoding("adj_code")(nb101_space()).dim == 26 and F.encoding("path")(NB201).binary
  assert not F.encoding("adj_cont")(nb101_space()).binary
  with pytest.raises(ValueError, match="featurizer 'arc' reads conditional parameters .* the 'nb201' space has none"):
    F.arc()(NB201)
  with pytest.raises(ValueError, match="featurizer 'path' encodes cells; the 'layer_graph' space holds Architectures"):
    F.encoding("path")(MLP)
  with pytest.raises(ValueError, match="'adj_code' is not defined for kind='nb201'"):
    F.encoding("adj_code")(NB201)
  with pytest.raises(ValueError):
    F.edit()(NB201)  # cells are not networks of the Auto-Keras family
  with pytest.raises(TypeError, match="solver: 'lp' given; expected an OTMANN solver value"):
    F.otmann(solver="lp")
  with pytest.raises(ValueError, match="encoding: 'paths' is unknown"):
    F.encoding("paths")


def test_otmann_pairs_met_before_are_remembered_to_the_last_bit(monkeypatch):
  """A featurizer remembers every pair of points it solved (`OtmannStore`): candidates met again
  in a new cache or in another order are scored without a new LP, with exactly the values a
  fresh featurizer computes. Two cells of one network are distance 0 apart, and each is solved
  on its own layer order (agreeing to ~1e-13), so no history changes a value."""
  solved = []
  direct = otmann.feature_pair_distances
  monkeypatch.setattr(
    F,
    "feature_pair_distances",
    lambda fa, fb, ia, ib, *a, **k: solved.append(len(ia)) or direct(fa, fb, ia, ib, *a, **k),
  )
  # ops (0->1, 0->2, 1->2, 0->3, 1->3, 2->3): node 1 reaches nothing, so its input op is dead;
  # two cell strings, one network.
  twins = [nb201_cell([1, 0, 0, 2, 0, 0]), nb201_cell([4, 0, 0, 2, 0, 0])]
  assert NB201.canonical_key(twins[0]) != NB201.canonical_key(twins[1])
  cells = NB201.sample(jax.random.key(5), 10)
  train, cands = cells[:6], cells[6:]
  fresh = F.otmann()(NB201)
  t_ref, x_ref = fresh.pairs(fresh.init(train), train, cands)
  warm = F.otmann()(NB201)
  warm.init(cands[::-1] + train[::-1])  # every pair solved once, in other calls and orders
  solved.clear()
  cache = warm.init(train)  # a new cache: the train distances again
  t, x = warm.pairs(cache, train, cands[::-1])
  assert sum(solved) == 0
  np.testing.assert_array_equal(t.d, t_ref.d)
  np.testing.assert_array_equal(t.d_bar, t_ref.d_bar)
  np.testing.assert_array_equal(x.d, x_ref.d[:, ::-1])
  np.testing.assert_array_equal(x.d_bar, x_ref.d_bar[:, ::-1])
  archs = [NB201.layer_graph(c) for c in cells]
  ref = otmann_distances(archs[6:], archs[:6], nu_str=otmann.KERNEL_NU_STR)
  np.testing.assert_allclose(x_ref.d, ref.d, rtol=1e-12)
  t2, x2 = warm.pairs(warm.extend(cache, twins[:1]), train + twins[:1], twins[1:])
  assert np.all(x2.d[:, 0, -1] == 0) and np.all(x2.d_bar[:, 0, -1] == 0)
  np.testing.assert_allclose(x2.d[:, 0, :-1], t2.d[:, -1, :-1], rtol=1e-12)


def test_otmann_cells_of_one_network_are_solved_once_to_the_same_bits(monkeypatch):
  """Cells whose networks have one key and the same features share the store's pairs: the second
  cell's distances need no LP, and are what a featurizer that never met the first one computes."""
  solved = []
  direct = otmann.feature_pair_distances
  monkeypatch.setattr(
    F,
    "feature_pair_distances",
    lambda fa, fb, ia, ib, *a, **k: solved.append(len(ia)) or direct(fa, fb, ia, ib, *a, **k),
  )
  # node 1 reaches nothing, so its input op (first) is dead: two cell strings, one network
  twin_a, twin_b = nb201_cell([1, 0, 0, 2, 0, 0]), nb201_cell([4, 0, 0, 2, 0, 0])
  train = NB201.sample(jax.random.key(7), 6)
  shared = F.otmann()(NB201)
  cache = shared.init(train)
  shared.pairs(cache, train, [twin_a])
  solved.clear()
  _, x = shared.pairs(cache, train, [twin_b])
  assert sum(solved) == 0
  alone = F.otmann()(NB201)
  _, x_ref = alone.pairs(alone.init(train), train, [twin_b])
  assert sum(solved) > 0
  np.testing.assert_array_equal(x.d, x_ref.d)
  np.testing.assert_array_equal(x.d_bar, x_ref.d_bar)
