"""Architecture pytree: stack/unstack/pad round trips and pytree behaviour under jit."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nas_jax
from nas_jax.arch.architecture import zero_padded
from nas_jax.spaces import pools, random_arch


def _same(a, b):
  assert a.kind == b.kind
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_stack_unstack_round_trip_is_exact():
  archs = [random_arch.random_architecture("cnn", np.random.default_rng(s)) for s in range(7)]
  batch = nas_jax.stack(archs)
  assert batch.labels.shape == (7, max(a.num_slots for a in archs))
  for a, b in zip(archs, nas_jax.unstack(batch)):
    _same(a, b)


def test_stack_pad_to_and_padding_is_empty():
  archs = pools.initial_pool("mlp")[:3]
  batch = nas_jax.stack(archs, pad_to=40)
  assert batch.adjacency.shape == (3, 40, 40)
  n = batch.mask.sum(1)
  for b in range(3):
    assert not batch.adjacency[b, n[b] :].any() and not batch.adjacency[b, :, n[b] :].any()
    assert (batch.units[b, n[b] :] == 0).all() and (batch.labels[b, n[b] :] == 0).all()
  with pytest.raises(ValueError, match="pad_to=5 is less than the number of layers"):
    nas_jax.stack(archs, pad_to=5)


def test_stack_rejects_mixed_kinds_and_empty():
  with pytest.raises(ValueError, match=r"archs\[1\].kind is 'mlp' but archs\[0\].kind is 'cnn'"):
    nas_jax.stack([pools.initial_pool("cnn")[0], pools.initial_pool("mlp")[0]])
  with pytest.raises(ValueError, match="archs is empty"):
    nas_jax.stack([])
  with pytest.raises(TypeError, match=r"archs\[0\] is a dict"):
    nas_jax.stack([{"kind": "cnn"}])


def test_pad_then_trim_is_identity():
  a = pools.initial_pool("cnn")[7]
  _same(nas_jax.pad(nas_jax.pad(a, 50), a.num_slots), a)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=3), st.lists(st.integers(0, 5), min_size=1, max_size=3))
def test_zero_padded_is_np_pad_of_the_trimmed_array(have, want):
  want = (want * 3)[: len(have)]
  x = np.arange(1, np.prod(have) + 1, dtype=np.int32).reshape(have)
  trimmed = x[tuple(slice(0, w) for w in want)]
  expected = np.pad(trimmed, [(0, w - t) for w, t in zip(want, trimmed.shape)])
  out = zero_padded(x, tuple(want))
  assert out.dtype == x.dtype and not np.shares_memory(out, x)
  np.testing.assert_array_equal(out, expected)


def test_pytree_through_jit_keeps_kind_static():
  a = pools.initial_pool("cnn")[0]
  out = jax.jit(lambda x: x)(a)
  assert out.kind == "cnn"
  assert len(jax.tree.leaves(a)) == 5


def test_unstack_and_to_json_reject_wrong_rank():
  a = pools.initial_pool("mlp")[0]
  with pytest.raises(ValueError, match="expected a batch"):
    nas_jax.unstack(a)
  with pytest.raises(ValueError, match="use unstack"):
    nas_jax.stack([a, a]).to_json()
