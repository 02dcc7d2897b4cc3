"""The ProxyNet of layer-graph architectures (the paper's figure CNN and MLP, and a small ReLU MLP):
its views against ArchNet (apply is training-mode ArchNet, taps add to the measured layers, plain
drops batch norm), and every proxy finite and invariant to the batch order on them. Batches are
seeded synthetic Gaussians with digits' shapes (8x8x1 images, 64 features; no dataset is read).
Networks and measures are called through jax.jit: called eagerly, each of their operations would
compile on its own."""

import functools
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.arch import json_io
from nas_jax.models import arch_net
from nas_jax.proxies import arch_nets, measures
from nas_jax.proxies.net import is_weight

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "arch"))
from networks import FIG1B, FIG16  # noqa: E402

ALL = [measures.grad_norm, measures.snip, measures.grasp, measures.fisher, measures.jacob_cov, measures.naswot]
RELU_MLP = {
  "kind": "mlp",
  "layers": [
    {"label": "ip"},
    {"label": "relu", "units": 16},
    {"label": "crelu", "units": 8},
    {"label": "softmax"},
    {"label": "op"},
  ],
  "edges": [[0, 1], [1, 2], [2, 3], [3, 4]],
}
# conv + batch norm + relu, a res block with a projection shortcut, a pool, fc, softmax: every CNN
# layer kind a proxy reads, at the fewest shapes (the default tests run eagerly, and each new shape
# compiles).
SMALL_CNN = {
  "kind": "cnn",
  "layers": [
    {"label": "ip"},
    {"label": "conv3", "units": 8, "stride": 1},
    {"label": "res3", "units": 8, "stride": 2},
    {"label": "avg-pool"},
    {"label": "fc", "units": 8},
    {"label": "softmax"},
    {"label": "op"},
  ],
  "edges": [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6]],
}
B = 8


def _batch(shape, classes, seed=1):
  kx, ky = jax.random.split(jax.random.key(seed))
  x = jax.random.normal(kx, (B, *shape), jnp.float32)
  y = jax.random.randint(ky, (B,), 0, classes) if classes else jax.random.normal(ky, (B,), jnp.float32)
  return x, y


def _cnn():
  return arch_nets.arch_proxy_net(json_io.from_json(SMALL_CNN), (8, 8, 1), 10, jax.random.key(0))


def test_apply_is_archnet_in_training_mode_and_params_are_its_initial_kernels():
  arch = json_io.from_json(SMALL_CNN)
  net = _cnn()
  model = arch_net.build_model(arch, 10)
  variables = arch_net.init_variables(model, jax.random.key(0), jnp.zeros((1, 8, 8, 1)))
  x, _ = _batch((8, 8, 1), 10)
  # Both compiled alike: equal to the bit.
  want, _ = jax.jit(functools.partial(model.apply, train=True, mutable=["batch_stats"]))(variables, x)
  np.testing.assert_array_equal(jax.jit(net.apply)(net.params, x), want)
  jax.tree.map(np.testing.assert_array_equal, net.params, variables["params"])


def test_tapped_acts_pair_with_the_kernels_and_taps_add_to_the_layer_outputs():
  net = _cnn()
  x, _ = _batch((8, 8, 1), 10)
  logits, acts = net.tapped(net.params, x, None)
  np.testing.assert_array_equal(logits, net.apply(net.params, x))
  kernels = [w for w in jax.tree.leaves(net.params) if is_weight(w)]
  assert [a.shape[-1] for a in jax.tree.leaves(acts)] == [w.shape[-1] for w in kernels] and len(kernels) == 6
  # A tap on the decision layer's dense output shifts the logits before the log-softmax.
  taps = jax.tree.map(jnp.zeros_like, acts)
  shift = jnp.zeros((B, 10)).at[:, 3].set(2.0)
  taps["5_softmax"] = shift
  tapped, _ = net.tapped(net.params, x, taps)
  np.testing.assert_allclose(tapped, jax.nn.log_softmax(acts["5_softmax"] + shift), rtol=1e-5, atol=1e-6)


def test_plain_drops_batch_norm_so_examples_no_longer_share_statistics():
  net = _cnn()
  x, _ = _batch((8, 8, 1), 10)
  plain, apply = jax.jit(net.plain), jax.jit(net.apply)
  alone = jnp.concatenate([plain(net.params, x[i : i + 1]) for i in range(2)])
  np.testing.assert_allclose(plain(net.params, x)[:2], alone, rtol=1e-5, atol=1e-5)
  assert not np.allclose(apply(net.params, x)[:2], apply(net.params, x[:2]), atol=1e-3)


# Default: one measure per way of reading the network (weight gradients, taps, input gradients,
# ReLU codes) on the small CNN; the second-order grasp and every measure on FIG1B are slow.
CNN_FAST = [measures.snip, measures.fisher, measures.jacob_cov, measures.naswot]


@pytest.mark.parametrize(
  "spec, shape, classes, scored",
  [
    pytest.param(SMALL_CNN, (8, 8, 1), 10, CNN_FAST, id="small_cnn"),
    pytest.param(
      SMALL_CNN, (8, 8, 1), 10, [measures.grad_norm, measures.grasp], id="small_cnn_2", marks=pytest.mark.slow
    ),
    pytest.param(FIG1B, (8, 8, 1), 10, ALL, id="fig1b_cnn", marks=pytest.mark.slow),
    pytest.param(RELU_MLP, (64,), 10, ALL, id="relu_mlp"),
    pytest.param(FIG16, (10,), 0, ALL, id="fig16_regression_mlp"),
  ],
)
def test_proxies_are_finite_and_independent_of_the_batch_order(spec, shape, classes, scored):
  net = arch_nets.arch_proxy_net(json_io.from_json(spec), shape, max(classes, 1), jax.random.key(0))
  x, y = _batch(shape, classes)
  perm = np.random.default_rng(2).permutation(B)
  for measure in scored:
    # One compiled program per measure, for both orders.
    scored_on = jax.jit(lambda x, y: measure(net, (x, y)))
    score, permuted = float(scored_on(x, y)), float(scored_on(x[perm], y[perm]))
    if spec is FIG16 and measure is measures.naswot:
      assert score == -np.inf  # softplus only: no ReLU codes, K_H = 0
      continue
    assert np.isfinite(score), measure.__name__
    np.testing.assert_allclose(permuted, score, rtol=2e-4, err_msg=measure.__name__)


def test_vmap_over_initialisations_equals_one_network_at_a_time():
  arch = json_io.from_json(RELU_MLP)
  nets = [arch_nets.arch_proxy_net(arch, (64,), 10, jax.random.key(k)) for k in range(2)]
  stacked = jax.tree.map(lambda *a: jnp.stack(a), *(n.params for n in nets))
  batch = _batch((64,), 10)
  for measure in (measures.fisher, measures.naswot):
    one = lambda p: measure(nets[0]._replace(params=p), batch)
    batched = jax.vmap(one)(stacked)
    alone = [jax.jit(one)(n.params) for n in nets]
    np.testing.assert_allclose(batched, alone, rtol=1e-5, err_msg=measure.__name__)


@pytest.mark.parametrize(
  "spec, shape, match",
  [(FIG1B, (64,), r"input_shape \(64,\) does not fit a cnn; expected \(H, W, C\)"), (FIG16, (0,), "positive sizes")],
)
def test_bad_input_shapes_get_one_line(spec, shape, match):
  with pytest.raises(ValueError, match=match):
    arch_nets.arch_proxy_net(json_io.from_json(spec), shape, 10, jax.random.key(0))
