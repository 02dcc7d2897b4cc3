"""The padded CNN computes ArchNet's function: the same outputs, gradients and batch statistics with
a specialised network's variables copied in (random DAGs and a network with every layer kind:
identity and projection res blocks, strides at odd and even sizes, both pools, concatenations with
the image, fc after fc, decisions on an image and on an fc), in the padding of them all and in a
coarse one; whatever sits in the padding changes nothing; and it initialises with the same draws."""

import functools

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

from nas_jax.arch.architecture import Architecture
from nas_jax.spaces import pools, random_arch
from nas_jax.models import arch_net, cnn_padding, network_costs, padded_cnn, padded_cnn_variables
from nas_jax.training import train_steps

IMAGE = (7, 6, 2)  # odd and unequal sides: strided layers meet both parities
K = 5


_SMALLER = {"conv7": "conv5", "res7": "res5"}


def _narrow(obj):
  """A random CNN with 8 units a layer and kernels of at most 5, so that its padding compiles
  quickly (a conv's stride-1 patches grow with the square of the padding's kernel)."""
  layers = [
    {**layer, "label": _SMALLER.get(layer["label"], layer["label"]), **({"units": 8} if "units" in layer else {})}
    for layer in obj["layers"]
  ]
  return Architecture.from_json({**obj, "layers": layers})


RANDOM = [
  _narrow(random_arch.random_json("cnn", np.random.default_rng(s), max_layers=10, max_skips=4)) for s in range(4)
]
_LAYERS = [
  ("ip", None, None),
  ("conv5", 8, 1),  # 1
  ("res3", 8, 1),  # 2: identity shortcut
  ("res3", 16, 2),  # 3: projection (channels and stride), on the image concatenated with 1
  ("max-pool", None, None),  # 4
  ("avg-pool", None, None),  # 5
  ("conv5", 8, 2),  # 6: on 4 and 5 concatenated
  ("fc", 8, None),  # 7
  ("fc", 16, None),  # 8: fc after fc
  ("softmax", None, None),  # 9: on an fc
  ("softmax", None, None),  # 10: on the image of 5
  ("op", None, None),
]
ALL_KINDS = Architecture.from_json(
  {
    "kind": "cnn",
    "layers": [
      {"label": label, **({"units": u} if u else {}), **({"stride": s} if s else {})} for label, u, s in _LAYERS
    ],
    "edges": [
      [0, 1],
      [1, 2],
      [0, 3],
      [2, 3],
      [3, 4],
      [3, 5],
      [4, 6],
      [5, 6],
      [6, 7],
      [7, 8],
      [8, 9],
      [5, 10],
      [9, 11],
      [10, 11],
    ],
  }
)
NETWORKS = [ALL_KINDS, *RANDOM]
PADDING = cnn_padding.padding_for(NETWORKS, IMAGE)


def _with_noise(variables, seed):
  """Every batch-norm scale, shift and running statistic drawn away from its initial value, so
  that a wrong mapping of any of them shows."""
  rng = np.random.default_rng(seed)

  def draw(path, leaf):
    name = path[-1].key
    if name == "kernel":
      return np.asarray(leaf)
    if name in ("scale", "var"):
      return np.abs(rng.normal(1.0, 0.3, leaf.shape)).astype(np.float32)
    return rng.normal(0.0, 0.3, leaf.shape).astype(np.float32)

  return jax.tree_util.tree_map_with_path(draw, variables)


@functools.lru_cache(maxsize=3)
def _padded(train, padding):
  """(outputs, batch statistics, gradient of a nonlinear scalar of the outputs), jitted once for
  all networks of a padding (the net is an argument)."""

  def run(params, stats, net, x):
    return padded_cnn.apply(params, stats, net, x, "softmax", train, padding)

  def both(params, stats, net, x):
    grads = jax.grad(lambda p: jnp.sum(jnp.sin(run(p, stats, net, x)[0])))(params)
    return *run(params, stats, net, x), grads

  return jax.jit(both)


def _specialised(model, variables, x, train):
  apply = train_steps.flax_apply(model)

  def both(params):
    grads = jax.grad(lambda p: jnp.sum(jnp.sin(apply(p, variables["batch_stats"], x, train)[0])))(params)
    return *apply(params, variables["batch_stats"], x, train), grads

  return jax.jit(both)(variables["params"])


def _close(got, want, what):
  """Each leaf within 1e-5 of the other, relative to the leaf's largest magnitude."""
  assert jax.tree.structure(got) == jax.tree.structure(jax.tree.map(np.asarray, want)), what
  for (path, g), w in zip(jax.tree_util.tree_flatten_with_path(got)[0], jax.tree.leaves(want)):
    w = np.asarray(w)
    np.testing.assert_allclose(g, w, rtol=0, atol=1e-5 * max(1.0, np.abs(w).max()), err_msg=f"{what} {path}")


def _match_archnet(arch, padding, x, train, seed):
  """Outputs, gradients and batch statistics of `arch` in `padding` against `ArchNet`'s, with the
  specialised variables (noisy statistics included) copied in; padding gets exactly zero gradient."""
  model = arch_net.build_model(arch, K)
  variables = _with_noise(arch_net.init_variables(model, jax.random.key(seed), x[:1]), seed)
  want_out, want_stats, want_grads = _specialised(model, variables, x, train)
  net, places = padded_cnn.encode(arch, padding, IMAGE, K)
  params, stats = padded_cnn_variables.to_padded(variables, places, padding, IMAGE, K)
  out, new_stats, grads = _padded(train, padding)(params, stats, net, x)
  np.testing.assert_allclose(out, want_out, rtol=1e-5, atol=1e-5, err_msg=f"network {seed}")
  got = padded_cnn_variables.to_specialised(grads, new_stats, places)
  _close(got["params"], want_grads, f"network {seed} gradients")
  _close(got["batch_stats"], want_stats, f"network {seed} batch statistics")
  # The round trip through the places keeps every nonzero gradient.
  again, _ = padded_cnn_variables.to_padded(got, places, padding, IMAGE, K)
  jax.tree.map(lambda g, a: np.testing.assert_array_equal(np.asarray(g), a), grads, again)


# Inference mode differs only in reading the running statistics, which the training test's
# evaluations also exercise; its own comparison is slow (an ArchNet compile per network).
@pytest.mark.parametrize("train", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_outputs_gradients_and_statistics_match_archnet(train):
  nodes = arch_net.network_nodes(ALL_KINDS)
  assert sum(len(n.parents) > 1 for n in nodes) == 3 and PADDING.fan_in == 2 and PADDING.decisions == 2
  x = jax.random.normal(jax.random.key(0), (6, *IMAGE))
  for i, arch in enumerate(NETWORKS):
    _match_archnet(arch, PADDING, x, train, i)


@hypothesis.settings(max_examples=6, deadline=None)
@hypothesis.given(i=st.integers(0, len(NETWORKS) - 1), seed=st.integers(0, 2**31 - 1))
def test_whatever_fills_the_padding_changes_nothing(i, seed):
  """Noise in every padded parameter and statistic: a wrong mask would let it into the outputs."""
  x = jax.random.normal(jax.random.key(1), (4, *IMAGE))
  net, places = padded_cnn.encode(NETWORKS[i], PADDING, IMAGE, K)
  clean = padded_cnn_variables.init_variables(jax.random.key(seed), places, PADDING, IMAGE, K)
  ones = jax.tree.map(np.ones_like, padded_cnn_variables.to_specialised(*clean, places))
  real = padded_cnn_variables.to_padded(ones, places, PADDING, IMAGE, K)
  rng = np.random.default_rng(seed)
  noise = lambda v, r: v + (1 - r) * np.abs(rng.normal(0, 3, v.shape)).astype(np.float32)
  noisy = jax.tree.map(noise, clean, real)
  want, want_stats, _ = _padded(True, PADDING)(*clean, net, x)
  got, got_stats, _ = _padded(True, PADDING)(*noisy, net, x)
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
  _close(
    padded_cnn_variables.to_specialised(noisy[0], got_stats, places),
    padded_cnn_variables.to_specialised(clean[0], want_stats, places),
    "stats",
  )


def test_init_draws_archnet_variables_and_places_round_trip():
  x = jnp.zeros((1, *IMAGE))
  for i, arch in enumerate(NETWORKS[:3]):
    want = arch_net.init_variables(arch_net.build_model(arch, K), jax.random.key(i), x)
    _, places = padded_cnn.encode(arch, PADDING, IMAGE, K)
    params, stats = padded_cnn_variables.init_variables(jax.random.key(i), places, PADDING, IMAGE, K)
    got = padded_cnn_variables.to_specialised(params, stats, places)
    jax.tree.map(np.testing.assert_array_equal, got, jax.tree.map(np.asarray, want))


def test_padding_rounds_up_and_rejects_what_does_not_fit():
  conv, res, top, mean, fc = (cnn_padding.BITS[k] for k in cnn_padding.KINDS)
  # One slot per layer, each computing its layer's kind at its kernel, its channels (in or out,
  # rounded up to 16 or 32) and its grid (the pixels it reads and writes; strides 2 on 7 x 6).
  kinds, kernels = (conv, res, res, top, mean, conv, fc, fc), (5, 3, 3, 0, 0, 5, 0, 0)
  widths = (16, 16, 16, 16, 16, 32, 16, 16)  # slot 5 reads both pools' 16 channels
  grids = ((7, 6, 7, 6),) * 2 + ((7, 6, 4, 3), (4, 3, 2, 2), (4, 3, 2, 2), (2, 2, 1, 1)) + ((1, 1, 1, 1),) * 2
  # The decisions read an fc's 16 units and the avg-pool's 2 x 2 x 16.
  # Each slot stacks only the outputs its layer reads (row 0 the image, row 1 + j slot j's).
  sources = ((0,), (1,), (0, 2), (3,), (3,), (4, 5), (6,), (7,))
  tight = cnn_padding.Padding(8, 32, 2, 2, 5, kinds, kernels, widths, grids, (2, 2, 16), sources, (5, 8))
  assert cnn_padding.padding_for([ALL_KINDS], IMAGE) == tight
  coarse = cnn_padding.coarse(tight, IMAGE)
  assert cnn_padding.padding_for([ALL_KINDS], IMAGE, uniform=True) == coarse
  every = dict(kinds=(cnn_padding.EVERY,) * 8, kernels=(5,) * 8, widths=(32,) * 8, grids=((7, 6, 7, 6),) * 8)
  every.update(sources=tuple(tuple(range(j + 1)) for j in range(8)), decision_sources=tuple(range(9)))
  assert coarse == tight._replace(**every, decision_input=(7, 6, 32))
  # The widest concatenation counts: the strided conv5 takes both pools' 16 channels.
  # On a 40-channel image, RANDOM[0] concatenates the image with 8 units: 48 channels, rounded to 64.
  assert cnn_padding.padding_for([RANDOM[0]], (8, 8, 40)).width == 64
  slot = r"no slot from {0} on holds the network's layer {0}, a {1} channels, grid \({2}\); slot {0} computes \['conv'\] with {3}"
  for padding, message in [
    (tight._replace(width=16), r"padding\.width: the network needs 32, the padding has 16; use padding_for"),
    (tight._replace(kinds=(conv,) * 8), slot.format(1, "res3 with kernel 3, 8", "7, 6, 7, 6", "kernel 3, 16 channels")),
    (tight._replace(kernels=(3, *kernels[1:])), slot.format(0, "conv5 with kernel 5, 8", "7, 6, 7, 6", "kernel 3, 16")),
    (
      tight._replace(widths=(16,) * 8),
      slot.format(5, "conv5 with kernel 5, 32", "2, 2, 1, 1", "kernel 5, 16 channels"),
    ),
    (
      tight._replace(grids=(*grids[:5], (2, 2, 1, 0), *grids[6:])),
      slot.format(5, "conv5 with kernel 5, 32", "2, 2, 1, 1", r"kernel 5, 32 channels, grid \(2, 2, 1, 0\)"),
    ),
    (
      tight._replace(kinds=(conv,)),
      r"padding\.kinds, padding\.kernels, padding\.widths, padding\.grids, padding\.sources: 1, 8, 8, 8, 8 slots;"
      r" expected padding\.layers = 8",
    ),
    (tight._replace(kernels=(4,) * 8), r"expected odd kernels .* up to padding\.kernel = 5.*; got \(4, 4"),
    (
      tight._replace(sources=((0,), (1,), (0, 2), (3,), (3,), (4, 5), (6,), (8,))),
      r"padding\.sources, \.decision_sources: slot j reads outputs 0 \(the image\) to j",
    ),
    (
      tight._replace(sources=((0,), (1,), (2,), (3,), (3,), (4, 5), (6,), (7,))),
      r"padding\.sources\[2\]: slot 2's layer, a res3, read outputs \[0, 2\] .*, the padding has \[2\]",
    ),
    (tight._replace(decision_sources=(8,)), r"padding\.decision_sources: the decision layers read outputs \[5, 8\]"),
    (tight._replace(decision_input=(8, 6, 16)), r"grids within the 7 x 6 image; got .*\(8, 6, 16\)"),
    (tight._replace(widths=(64,) * 8), r"widths up to padding\.width = 32, grids within the 7 x 6 image; got"),
    (tight._replace(grids=((8, 6, 7, 6),) * 8), r"grids within the 7 x 6 image; got"),
    (
      tight._replace(decision_input=(1, 1, 16)),
      r"padding\.decision_input: the network's decision layers read \(2, 2, 16\) \(rows, cols, channels\), the"
      r" padding has \(1, 1, 16\)",
    ),
  ]:
    with pytest.raises(ValueError, match=message):
      padded_cnn.encode(ALL_KINDS, padding, IMAGE, K)
  with pytest.raises(ValueError, match=r"image_shape: got \(8, 8\); expected \(H, W, C\)"):
    cnn_padding.padding_for([ALL_KINDS], (8, 8))
  with pytest.raises(ValueError, match=r"padded_cnn: a 'mlp' network; it runs cnn networks"):
    cnn_padding.padding_for([pools.initial_pool("mlp")[0]], IMAGE)
  # Arithmetic: the padded program does more than the network, and counts it; a coarse padding more.
  own = network_costs.network_costs(ALL_KINDS, IMAGE, K).flops // 2
  assert 0 < own < cnn_padding.macs(tight, IMAGE, K) < cnn_padding.macs(coarse, IMAGE, K)


def _chain(*layers):
  """A chain CNN: the image, these (label, units) layers, a softmax and the output."""
  body = [{"label": "ip"}, *({"label": a, **({"units": u} if u else {})} for a, u in layers)]
  body += [{"label": "softmax"}, {"label": "op"}]
  return Architecture.from_json({"kind": "cnn", "layers": body, "edges": [[i, i + 1] for i in range(len(body) - 1)]})


def test_padding_aligns_networks_to_slots():
  """A network's layers take increasing slots, not slot i for layer i: a conv that another network
  has after a pool joins that network's later conv, rather than making the pool's slot a conv too."""
  conv, top, fc = (cnn_padding.BITS[k] for k in ("conv", "max-pool", "fc"))
  pooled = _chain(("conv3", 8), ("max-pool", None), ("conv3", 8), ("fc", 8))
  plain = _chain(("conv3", 8), ("conv3", 8), ("fc", 8))
  padding = cnn_padding.padding_for([pooled, plain], IMAGE)
  grids = ((7, 6, 7, 6), (7, 6, 4, 3), (7, 6, 7, 6), (7, 6, 1, 1)) + ((0, 0, 0, 0),) * 4
  sources = ((0,), (1,), (1, 2), (3,)) + ((),) * 4  # plain's second conv reads its first, in slot 0
  want = cnn_padding.Padding(8, 16, 1, 1, 3, (conv, top, conv, fc, 0, 0, 0, 0), (3, 0, 3) + (0,) * 5,
                             (16,) * 4 + (0,) * 4, grids, (1, 1, 16), sources, (4,))  # fmt: skip
  assert padding == want
  assert cnn_padding.check_fits(padding, pooled, IMAGE)[1] == (0, 1, 2, 3)
  assert cnn_padding.check_fits(padding, plain, IMAGE)[1] == (0, 2, 3)
  # Slot i for layer i would make slot 1 compute a pool and a conv, and slot 2 a conv and an fc.
  by_index = want._replace(
    kinds=(conv, top | conv, conv | fc, fc, 0, 0, 0, 0),
    kernels=(3, 3, 3) + (0,) * 5,
    grids=((7, 6, 7, 6), (7, 6, 7, 6), (7, 6, 4, 3), (4, 3, 1, 1)) + ((0, 0, 0, 0),) * 4,
  )
  assert cnn_padding.macs(padding, IMAGE, K) < cnn_padding.macs(by_index, IMAGE, K)
  # The same function, with slot 1 left out of `plain`'s.
  variables = _with_noise(
    arch_net.init_variables(arch_net.build_model(plain, K), jax.random.key(3), jnp.zeros((1, *IMAGE))), 3
  )
  net, places = padded_cnn.encode(plain, padding, IMAGE, K)
  params, stats = padded_cnn_variables.to_padded(variables, places, padding, IMAGE, K)
  x = jax.random.normal(jax.random.key(4), (3, *IMAGE))
  # Both compiled: eagerly, each of their operations compiles on its own.
  got, _ = jax.jit(padded_cnn.apply, static_argnums=(4, 5, 6))(params, stats, net, x, "softmax", False, padding)
  want_out = jax.jit(functools.partial(arch_net.build_model(plain, K).apply, train=False))(variables, x)
  np.testing.assert_allclose(got, want_out, atol=1e-5)


# Two programs with every kind in every slot are slow to compile; the per-network paddings above
# check the same masks in the default run.
@pytest.mark.slow
def test_a_coarse_padding_computes_archnets_function():
  """Every slot computing every kind at the largest kernel, the padding's width and the whole image
  (one program for any network up to the padding): outputs, statistics and gradients are still
  ArchNet's. The coarse padding of the network with every kind and a random one (8 slots) compiles
  in less than half the time of the 16 slots of all five."""
  x = jax.random.normal(jax.random.key(2), (4, *IMAGE))
  pair = (ALL_KINDS, NETWORKS[3])
  coarse = cnn_padding.coarse(cnn_padding.padding_for(pair, IMAGE), IMAGE)
  assert set(coarse.kinds) == {cnn_padding.EVERY} and coarse.layers == 8
  for seed, arch in enumerate(pair):
    _match_archnet(arch, coarse, x, True, seed)
