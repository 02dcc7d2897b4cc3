"""save_variables / load_variables: exact round trips, atomic replacement, and clear errors on
missing, truncated or foreign files."""

import os

import flax.serialization
import jax.numpy as jnp
import numpy as np
import pytest
from flax.core import FrozenDict

from nas_jax.training import weights


def _tree():
  rng = np.random.default_rng(0)
  return {
    "params": {
      "1_conv3": {"conv": {"kernel": rng.standard_normal((3, 3, 1, 4)).astype(np.float32)}},
      "2_softmax": {"bias": np.arange(10, dtype=np.float64), "steps": np.int8(7)},
    },
    "batch_stats": {"1_conv3": {"bn": {"mean": np.ones(4, np.float16), "var": np.zeros(4, np.float32)}}},
  }


def _assert_same(got, want):
  assert isinstance(got, dict) and got.keys() == want.keys()
  for k in want:
    if isinstance(want[k], dict):
      _assert_same(got[k], want[k])
    else:
      assert got[k].dtype == want[k].dtype
      np.testing.assert_array_equal(got[k], want[k])


def test_a_nested_tree_round_trips_exactly_with_its_dtypes(tmp_path):
  path = tmp_path / "new" / "dir" / "weights.msgpack"  # the directory is created
  weights.save_variables(path, _tree())
  _assert_same(weights.load_variables(path), _tree())


def test_jax_leaves_and_frozen_dicts_are_saved_as_host_arrays(tmp_path):
  weights.save_variables(tmp_path / "w", FrozenDict({"params": {"k": jnp.ones((2, 3))}, "batch_stats": {}}))
  loaded = weights.load_variables(tmp_path / "w")
  assert type(loaded["params"]["k"]) is np.ndarray and loaded["batch_stats"] == {}
  np.testing.assert_array_equal(loaded["params"]["k"], np.ones((2, 3), np.float32))


def test_saving_replaces_an_existing_file_and_leaves_no_temporary(tmp_path):
  path = str(tmp_path / "w.msgpack")
  weights.save_variables(path, {"params": {"k": np.zeros(3)}})
  weights.save_variables(path, _tree())
  _assert_same(weights.load_variables(path), _tree())
  assert os.listdir(tmp_path) == ["w.msgpack"]


def test_a_writer_killed_before_the_rename_leaves_the_previous_file_whole(tmp_path, monkeypatch):
  path = str(tmp_path / "w.msgpack")
  weights.save_variables(path, _tree())

  def killed(src, dst):
    raise KeyboardInterrupt("killed between writing the temporary and renaming it")

  monkeypatch.setattr(os, "replace", killed)
  with pytest.raises(KeyboardInterrupt):
    weights.save_variables(path, {"params": {"k": np.zeros(3)}})
  _assert_same(weights.load_variables(path), _tree())


def test_a_missing_file_is_named(tmp_path):
  with pytest.raises(FileNotFoundError, match=r"load_variables: .*nothing\.msgpack: no such file"):
    weights.load_variables(tmp_path / "nothing.msgpack")


@pytest.mark.parametrize("cut", [0, 1, 40, -1])
def test_a_truncated_file_is_refused(tmp_path, cut):
  path = tmp_path / "w.msgpack"
  weights.save_variables(path, _tree())
  path.write_bytes(path.read_bytes()[:cut])
  with pytest.raises(ValueError, match=r"load_variables: .*w\.msgpack \(\d+ bytes\) is truncated or corrupt"):
    weights.load_variables(path)


def test_a_file_without_a_dict_and_a_tree_that_is_not_a_dict_are_refused(tmp_path):
  path = tmp_path / "w.msgpack"
  path.write_bytes(flax.serialization.msgpack_serialize([np.zeros(2)]))
  with pytest.raises(ValueError, match=r"holds a list; expected a dict of variables"):
    weights.load_variables(path)
  with pytest.raises(TypeError, match=r"variables: got list; expected a dict"):
    weights.save_variables(path, [np.zeros(2)])
