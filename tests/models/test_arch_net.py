"""ArchNet: output shapes for every pool network, the ceil shape arithmetic of strides and pools,
concatenation, op averaging (known values), the res block's identity path, patches == lax.conv."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.arch.architecture import Architecture, stack
from nas_jax.spaces import pools
from nas_jax.models import arch_net, convolution

DIGIT_IMAGES = jax.ShapeDtypeStruct((3, 8, 8, 1), jnp.float32)
DIGIT_VECTORS = jax.ShapeDtypeStruct((3, 64), jnp.float32)

# ip -> conv3 (slot 1) and conv5 (slot 2); slot 3 (stride 2) concatenates ip (a skip), 1 and 2
# (1 + 16 + 8 = 25 channels); two softmax decision layers: slot 5 after fc, slot 6 straight on the
# 4x4x8 image of slot 3.
DAG = {
  "kind": "cnn",
  "layers": [
    {"label": "ip"},
    {"label": "conv3", "units": 16, "stride": 1},
    {"label": "conv5", "units": 8, "stride": 1},
    {"label": "conv3", "units": 8, "stride": 2},
    {"label": "fc", "units": 16},
    {"label": "softmax"},
    {"label": "softmax"},
    {"label": "op"},
  ],
  "edges": [[0, 1], [0, 2], [1, 2], [2, 3], [1, 3], [0, 3], [3, 4], [4, 5], [3, 6], [5, 7], [6, 7]],
}


def _shapes(model, x):
  """Output shape and the variables' shapes, without compiling anything."""
  variables = jax.eval_shape(functools.partial(model.init, train=False), jax.random.key(0), x)
  out = jax.eval_shape(functools.partial(model.apply, train=False), variables, x)
  return out, variables


@pytest.mark.parametrize("i", range(10))
def test_every_pool_cnn_maps_digit_images_to_ten_float32_outputs(i):
  out, _ = _shapes(arch_net.build_model(pools.initial_pool("cnn")[i], 10), DIGIT_IMAGES)
  assert (out.shape, out.dtype) == ((3, 10), jnp.float32)


@pytest.mark.parametrize("i", range(10))
def test_every_pool_mlp_fits_digits_and_diabetes(i):
  cls, _ = _shapes(arch_net.build_model(pools.initial_pool("mlp", decision="softmax")[i], 10), DIGIT_VECTORS)
  reg, _ = _shapes(arch_net.build_model(pools.initial_pool("mlp")[i]), jax.ShapeDtypeStruct((3, 10), jnp.float32))
  assert cls.shape == (3, 10) and reg.shape == (3,)
  assert cls.dtype == reg.dtype == jnp.float32


def test_conv_output_sizes_follow_ceil_division_down_to_one_pixel():
  # C4: conv7 (8), max-pool (4), then conv3/2, conv3 four times: 2, 2, 1, 1, 1, 1, 1, 1.
  model = arch_net.build_model(pools.initial_pool("cnn")[3], 10)
  x = jnp.zeros((2, 8, 8, 1), jnp.float32)
  variables = jax.eval_shape(functools.partial(model.init, train=False), jax.random.key(0), x)
  apply = functools.partial(model.apply, train=False, capture_intermediates=True, mutable=["intermediates"])
  _, state = jax.eval_shape(apply, variables, x)
  convs = [n for n in model.nodes if n.label == "conv3" or n.label == "conv7"]
  sizes = [state["intermediates"][f"{n.slot}_{n.label}"]["__call__"][0].shape[1] for n in convs]
  assert sizes == [8, 2, 2, 1, 1, 1, 1, 1, 1]


@pytest.mark.parametrize("label", ["max-pool", "avg-pool"])
@pytest.mark.parametrize("side, expected", [(8, 4), (7, 4), (2, 1), (1, 1)])
def test_pools_halve_with_ceil_and_average_only_real_pixels(label, side, expected):
  out = arch_net._pool(label, jnp.ones((2, side, side, 3)), 2)
  assert out.shape == (2, expected, expected, 3)
  np.testing.assert_allclose(out, 1.0, rtol=1e-6)  # with padding counted, avg-pool corners would be 4/9


@pytest.mark.parametrize(
  "h, w, k, s",
  [
    (1, 1, 3, 1),
    (1, 1, 3, 2),
    (2, 2, 3, 1),
    (2, 2, 3, 2),
    (2, 3, 5, 2),
    (3, 5, 3, 2),
    (4, 4, 5, 1),
    (5, 2, 5, 1),
    (6, 6, 1, 2),
  ],
)
def test_conv_by_patches_equals_lax_same_conv(h, w, k, s):
  rng = np.random.default_rng(h * 100 + w * 10 + k)
  x, kernel = rng.normal(size=(2, h, w, 3)).astype(np.float32), rng.normal(size=(k, k, 3, 4)).astype(np.float32)
  ref = jax.lax.conv_general_dilated(x, kernel, (s, s), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  out = jax.jit(convolution.conv_by_patches, static_argnums=2)(x, kernel, s)
  np.testing.assert_allclose(out, ref, atol=1e-4, rtol=1e-4)


def test_dag_concatenates_parents_and_averages_two_decision_probabilities():
  arch = Architecture.from_json(DAG)
  model = arch_net.build_model(arch, 10)
  x = np.random.default_rng(1).normal(size=(4, 8, 8, 1)).astype(np.float32)
  variables = arch_net.init_variables(model, jax.random.key(0), x)
  params = variables["params"]
  assert params["3_conv3"]["conv"]["kernel"].shape == (3, 3, 25, 8)  # 1 + 16 + 8 channels
  assert params["6_softmax"]["kernel"].shape == (4 * 4 * 8, 10)  # the 4x4x8 image, flattened
  b5, b6 = np.random.default_rng(2).normal(size=(2, 10)).astype(np.float32)
  forced = {
    **params,
    "5_softmax": {"kernel": jnp.zeros((16, 10)), "bias": b5},
    "6_softmax": {"kernel": jnp.zeros((128, 10)), "bias": b6},
  }
  out = jax.jit(functools.partial(model.apply, train=False))({**variables, "params": forced}, x)
  expected = np.log(0.5 * jax.nn.softmax(b5) + 0.5 * jax.nn.softmax(b6))
  assert out.shape == (4, 10)
  np.testing.assert_allclose(out, np.broadcast_to(expected, (4, 10)), rtol=1e-5, atol=1e-6)


def test_mlp_op_averages_linear_outputs_and_crelu_doubles_the_width():
  arch = Architecture.from_json(
    {
      "kind": "mlp",
      "layers": [
        {"label": "ip"},
        {"label": "crelu", "units": 16},
        {"label": "tanh", "units": 8},
        {"label": "linear"},
        {"label": "linear"},
        {"label": "op"},
      ],
      "edges": [[0, 1], [1, 2], [2, 3], [1, 4], [3, 5], [4, 5]],
    }
  )
  model = arch_net.build_model(arch)
  x = jnp.ones((5, 64), jnp.float32)
  variables = arch_net.init_variables(model, jax.random.key(0), x)
  params = variables["params"]
  assert params["2_tanh"]["kernel"].shape == (32, 8) and params["4_linear"]["kernel"].shape == (32, 1)
  forced = {
    **params,
    "3_linear": {"kernel": jnp.zeros((8, 1)), "bias": jnp.array([1.0])},
    "4_linear": {"kernel": jnp.zeros((32, 1)), "bias": jnp.array([3.0])},
  }
  out = jax.jit(functools.partial(model.apply, train=False))({"params": forced}, x)
  np.testing.assert_allclose(out, np.full(5, 2.0))


def test_activations_by_label_known_values():
  x = jnp.array([-2.0, 0.5])
  np.testing.assert_allclose(arch_net.ACTIVATIONS["crelu"](x), [0.0, 0.5, 2.0, 0.0])
  np.testing.assert_allclose(arch_net.ACTIVATIONS["leaky-relu"](x), [-0.02, 0.5], rtol=1e-6)
  np.testing.assert_allclose(arch_net.ACTIVATIONS["logistic"](jnp.zeros(1)), [0.5])
  np.testing.assert_allclose(arch_net.ACTIVATIONS["softplus"](jnp.zeros(1)), [np.log(2.0)], rtol=1e-6)
  np.testing.assert_allclose(arch_net.ACTIVATIONS["elu"](x), [np.expm1(-2.0), 0.5], rtol=1e-6)


def _silenced(block, x):
  """The block's variables with conv_b's batch-norm scale zeroed, so the residual branch adds 0."""
  variables = arch_net.init_variables(block, jax.random.key(0), x)
  params = jax.tree_util.tree_map_with_path(
    lambda p, v: jnp.zeros_like(v) if "conv_b" in str(p) and p[-1].key == "scale" else v, variables["params"]
  )
  return {**variables, "params": params}


def test_res_block_is_relu_of_its_input_when_the_residual_branch_is_silenced():
  block = arch_net._ResBlock(units=6, kernel=3, stride=1)
  x = np.random.default_rng(3).normal(size=(2, 4, 4, 6)).astype(np.float32)
  variables = _silenced(block, x)
  assert "projection" not in variables["params"]  # same channels and stride: identity shortcut
  out = jax.jit(functools.partial(block.apply, train=False))(variables, x)
  np.testing.assert_allclose(out, jax.nn.relu(x), atol=1e-6)


def test_res_block_projects_when_channels_or_stride_change():
  block = arch_net._ResBlock(units=8, kernel=3, stride=2)
  x = np.random.default_rng(4).normal(size=(2, 5, 5, 3)).astype(np.float32)
  variables = _silenced(block, x)
  projection = {name: tree["projection"] for name, tree in variables.items()}

  @jax.jit
  def outputs(variables, projection, x):
    return block.apply(variables, x, train=False), arch_net._ConvBN(8, 1, 2).apply(projection, x, train=False)

  out, projected = outputs(variables, projection, x)
  assert projection["params"]["conv"]["kernel"].shape == (1, 1, 3, 8) and out.shape == (2, 3, 3, 8)
  np.testing.assert_allclose(out, jax.nn.relu(projected), atol=1e-6)


def test_init_variables_matches_the_flax_tree_and_the_kernel_scale():
  model = arch_net.build_model(pools.initial_pool("cnn")[7], 10)
  x = jnp.zeros((1, 8, 8, 1), jnp.float32)
  fast = arch_net.init_variables(model, jax.random.key(0), x)
  _, ref = _shapes(model, x)
  assert jax.tree.map(lambda a: (a.shape, a.dtype), fast) == jax.tree.map(lambda a: (a.shape, a.dtype), ref)
  kernel = fast["params"]["8_fc"]["kernel"]  # [512, 1024]
  assert float(jnp.std(kernel)) == pytest.approx(1 / np.sqrt(512), rel=0.02)
  assert float(jnp.abs(fast["params"]["8_fc"]["bias"]).max()) == 0.0
  assert not np.array_equal(kernel, arch_net.init_variables(model, jax.random.key(1), x)["params"]["8_fc"]["kernel"])


def test_build_model_rejects_batches_and_bad_output_counts():
  arch = pools.initial_pool("cnn")[7]
  with pytest.raises(ValueError, match="expected one architecture"):
    arch_net.build_model(stack([arch, arch]), 10)
  with pytest.raises(ValueError, match="num_outputs=0"):
    arch_net.build_model(arch, 0)
  with pytest.raises(ValueError, match=r"a cnn takes \[B, H, W, C\]"):
    _shapes(arch_net.build_model(arch, 10), DIGIT_VECTORS)


def test_padded_architecture_builds_the_same_network():
  arch = Architecture.from_json(DAG)
  padded = Architecture.from_json(DAG, pad_to=12)
  assert arch_net.network_nodes(arch) == arch_net.network_nodes(padded)
  assert [n.label for n in arch_net.network_nodes(arch)][0] == "ip" and arch_net.network_nodes(arch)[-1].label == "op"
