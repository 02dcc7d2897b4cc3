"""ReLU codes read from the traced program: every `jax.nn.relu` call, nested calls included, in
program order; other uses of `max(x, 0)` (flax's batch-norm variance clamp) are not ReLUs."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.proxies.relu_codes import relu_codes

X = jnp.asarray(np.random.default_rng(0).standard_normal((4, 3)))


def test_codes_are_the_signs_of_each_relu_input_in_program_order_through_nested_calls():
  inner = jax.checkpoint(jax.jit(lambda h: jax.nn.relu(-h)))

  def apply(params, x):
    h = jax.nn.relu(x * params)
    return inner(h + 1.0).sum(1) + jnp.maximum(x, 0.0).sum(1)  # the bare maximum is not a ReLU call

  codes = relu_codes(apply, 2.0, X)
  assert len(codes) == 2
  np.testing.assert_array_equal(codes[0], X > 0)
  np.testing.assert_array_equal(codes[1], -(jax.nn.relu(2.0 * X) + 1.0) > 0)


def test_batch_norm_variance_clamp_contributes_no_codes():
  model = nn.Sequential([nn.Dense(5), nn.BatchNorm(use_running_average=False), nn.relu])
  variables = model.init(jax.random.key(0), X)
  apply = lambda p, x: model.apply({**variables, "params": p}, x, mutable=["batch_stats"])[0]
  codes = relu_codes(apply, variables["params"], X)
  assert [c.shape for c in codes] == [(4, 5)]
  np.testing.assert_array_equal(codes[0], apply(variables["params"], X) > 0)
