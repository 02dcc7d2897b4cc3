"""OtmannStore: pairs are unordered, rows come back as put, unknown pairs are -1, network keys
compare as arrays, and a store that would overflow its capacity forgets everything before the
call that needs the room; with `by_network`, points of one network share an id."""

import numpy as np
import pytest

from nas_jax.features.otmann_costs import OtmannFeatures
from nas_jax.features.otmann_store import OtmannStore


def test_pairs_are_unordered_and_come_back_as_put():
  store = OtmannStore(2, capacity=4)
  ids = store.point_ids(["a", "b", "c", "a"], ["net1", "net2", "net1", "ignored"], ["fa", "fb", "fc", "fd"])
  assert ids.tolist() == [0, 1, 2, 0] and store.item("a") == ("net1", "fa") and store.item("z") is None
  codes = store.codes(np.array([1, 0]), np.array([0, 2]))
  assert codes.tolist() == store.codes(np.array([0, 2]), np.array([1, 0])).tolist()
  assert [x.tolist() for x in store.split(codes)] == [[0, 0], [1, 2]]
  assert store.rows(codes).tolist() == [-1, -1]
  values = np.arange(8.0).reshape(2, 2, 2)
  store.put(codes, values)
  np.testing.assert_array_equal(store.values(store.rows(codes[::-1])), values[::-1])
  assert len(store) == 2 and store.keys(np.array([2, 0, 1])).tolist() == ["net1", "net1", "net2"]


def test_network_keys_of_many_points_compare_in_one_operation():
  store = OtmannStore(1)
  names = [f"net{i % 700:03d}" for i in range(3000)]  # past the key array's first two doublings
  ids = store.point_ids([f"p{i}" for i in range(3000)], names, [None] * 3000)
  i, j = ids[:-700], ids[700:]
  assert (store.keys(i) == store.keys(j)).all()
  np.testing.assert_array_equal(store.keys(ids[:-1]) > store.keys(ids[1:]), [a > b for a, b in zip(names, names[1:])])


def test_a_full_store_forgets_everything_before_the_call():
  store = OtmannStore(1, capacity=3)
  store.point_ids(["a", "b"], ["n1", "n2"], [0, 1])
  store.put(store.codes(np.array([0]), np.array([1])), np.ones((1, 2, 1)))
  store.make_room(2)  # 1 + 2 <= 3: kept
  assert len(store) == 1
  store.make_room(3)  # 1 + 3 > 3: forgotten, ids too
  assert len(store) == 0 and store.item("a") is None
  with pytest.raises(ValueError, match="OtmannStore: capacity=0; expected a positive integer"):
    OtmannStore(1, capacity=0)


def _features(n: int, mass: float = 1.0) -> OtmannFeatures:
  return OtmannFeatures(np.arange(8, dtype=np.int32), np.full(8, mass), np.zeros((6, 8)), np.int32(n))


def test_by_network_points_of_one_network_share_an_id():
  store = OtmannStore(1, capacity=4, by_network=True)
  f = _features(3)
  twin = OtmannFeatures(*(np.array(x, copy=True) for x in f))  # equal bytes, other arrays
  ids = store.point_ids(
    ["a", "b", "c", "d", "a"], ["net1", "net1", "net1", "net2", "net1"], [f, twin, _features(3, 2.0), f, f]
  )
  # b: a's network; c: other features (an isomorphic twin's layer order); d: another key
  assert ids.tolist() == [0, 0, 1, 2, 0]
  assert store.item("b") == ("net1", f) and store.item("c")[0] == "net1"
  per_point = OtmannStore(1).point_ids(["a", "b"], ["net1", "net1"], [f, twin])
  assert per_point.tolist() == [0, 1]
  store.make_room(5)  # forgets the networks with the points
  assert store.point_ids(["b"], ["net1"], [twin]).tolist() == [0] and store.item("a") is None
