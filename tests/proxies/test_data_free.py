"""Synflow: a closed form on a linear network, invariance to the weights' signs, the masked and
specialised NB201 networks scoring alike, and float32 close to float64 on a small network;
synflow_signed: synflow where no gradient is negative, and its signed sum on an NB201 network."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nas_jax.models.nb201_net import Nb201Spec
from nas_jax.proxies.data_free import synflow, synflow_signed
from nas_jax.proxies.nb201_nets import nb201_proxy_net, nb201_specialised_proxy_net
from nas_jax.proxies.net import ProxyNet, is_weight

TINY = Nb201Spec(channels=2, cells_per_stage=1, num_classes=3, image_size=8)


def _linear_net(params):
  """x [B, 4] -> W2 (W1 x + b1) + b2: dense 4 -> 3 -> 2, no norm."""

  def apply(p, x):
    return (x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]

  return ProxyNet(apply, params, apply, lambda p, x, t: (apply(p, x), {}), (4,))


def _params(seed):
  k = jax.random.split(jax.random.key(seed), 4)
  shapes = {"w1": (4, 3), "b1": (3,), "w2": (3, 2), "b2": (2,)}
  return {n: jax.random.normal(kk, s, jnp.float64) for (n, s), kk in zip(shapes.items(), k)}


def test_synflow_of_a_linear_network_has_its_closed_form():
  p = _params(0)
  a = {n: np.abs(np.asarray(v)) for n, v in p.items()}
  # R = 1'|W2|'(|W1|'1 + |b1|) + 1'|b2|; W1's term is 1'|W2|'|W1|'1, W2's is 1'|W2|'(|W1|'1 + |b1|);
  # biases are made positive but not summed (the reference sums Conv2d/Linear weights only)
  h = a["w1"].sum(0) + a["b1"]
  expected = a["w2"].sum(1) @ a["w1"].sum(0) + a["w2"].sum(1) @ h
  np.testing.assert_allclose(synflow(_linear_net(p)), expected, rtol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16), st.lists(st.booleans(), min_size=4, max_size=4))
def test_synflow_ignores_the_signs_of_parameters(seed, flips):
  p = _params(seed)
  flipped = {n: -v if f else v for (n, v), f in zip(p.items(), flips)}
  np.testing.assert_allclose(synflow(_linear_net(flipped)), synflow(_linear_net(p)), rtol=1e-12)


@pytest.mark.slow  # masked == specialised is tests/models/test_nb201_net.py's, outputs and gradients
def test_masked_and_specialised_nb201_networks_score_alike_and_float32_is_close():
  key = jax.random.key(3)
  f = jax.jit(lambda ops, dtype=jnp.float64: synflow(nb201_proxy_net(ops, key, TINY), dtype), static_argnums=1)
  for cell in [(3, 2, 4, 1, 3, 3), (0, 0, 0, 1, 0, 0)]:
    masked = f(jnp.array(cell))
    special = jax.jit(lambda: synflow(nb201_specialised_proxy_net(cell, key, TINY)))()
    np.testing.assert_allclose(masked, special, rtol=1e-10)
  assert float(f(jnp.array((0, 0, 0, 1, 0, 0)))) > 0  # a skip from input to output: flow
  assert float(f(jnp.array((2, 0, 0, 0, 0, 1)))) == 0  # node 2 has no input: no flow
  ops = jnp.array((3, 2, 4, 1, 3, 3))
  np.testing.assert_allclose(f(ops, jnp.float32), f(ops), rtol=1e-4)


def test_nb201_proxy_net_shows_one_leaf_per_layer_and_synflow_sums_only_kernels():
  # The network scans a stage's cells, stacking their parameters on a leading axis; the ProxyNet
  # shows each cell's own, so a conv bias [C] is not taken for a weight [N, C].
  spec = TINY._replace(cells_per_stage=2)
  net = nb201_proxy_net(jnp.array((3, 2, 4, 1, 3, 3)), jax.random.key(0), spec)
  paths = jax.tree_util.tree_flatten_with_path(net.params)[0]
  weights = [(jax.tree_util.keystr(p), leaf.shape) for p, leaf in paths if is_weight(leaf)]
  assert all(p.endswith("['kernel']") for p, _ in weights), weights
  # stem, 3 convs in each of 2 reductions, 2 cells x 3 stages x 6 edges x (conv1, conv3), classifier
  assert len(weights) == 1 + 2 * 3 + 2 * 3 * 6 * 2 + 1
  assert sorted({len(s) for _, s in weights}) == [2, 4]
  # synflow by hand over the kernels only: |params| in, all-ones input, sum of logits out.
  # Compiled, not op by op, and the sums on the host: eagerly, each of the network's ~400
  # operations, and each leaf's product, would compile on its own.
  params = jax.tree.map(lambda w: np.abs(np.asarray(w)), net.params)
  x = jnp.ones((1, *net.input_shape))
  grads = jax.jit(jax.grad(lambda p: jnp.sum(net.plain(p, x))))(params)
  terms = [
    np.asarray(g) * w
    for (path, w), g in zip(jax.tree_util.tree_flatten_with_path(params)[0], jax.tree.leaves(grads))
    if jax.tree_util.keystr(path).endswith("['kernel']")
  ]
  by_hand = sum(np.sum(np.abs(t)) for t in terms)
  at = lambda score: jax.jit(lambda p: score(net._replace(params=p)))(net.params)
  np.testing.assert_allclose(at(synflow), by_hand, rtol=1e-12)
  # synflow_signed, one JVP, is the same sum without the absolute value; the reduction blocks'
  # batch norm makes some of these gradients negative, so it is below synflow here
  signed = at(synflow_signed)
  np.testing.assert_allclose(signed, sum(np.sum(t) for t in terms), rtol=1e-10)
  assert 0.5 * by_hand < signed < by_hand


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**16))
def test_synflow_signed_equals_synflow_where_no_gradient_is_negative(seed):
  # no batch norm: with |params| and a positive input every dR/dW is >= 0
  net = _linear_net(_params(seed))
  np.testing.assert_allclose(synflow_signed(net), synflow(net), rtol=1e-12)
