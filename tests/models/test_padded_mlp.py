"""The padded MLP computes ArchNet's function: the same outputs and gradients with a specialised
network's variables copied in (pools and random DAGs, linear and softmax, crelu, concatenation,
several decision layers); whatever sits in the padding changes nothing; and it initialises with
the same draws."""

import functools

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

from nas_jax.arch.architecture import Architecture
from nas_jax.spaces import pools, random_arch
from nas_jax.models import arch_net, padded_mlp

D = 12
RANDOM = [
  random_arch.random_architecture("mlp", np.random.default_rng(s), max_layers=10, max_skips=6) for s in range(8)
]
# Two decision layers fed by different layers, a crelu feeding a concatenation with the input.
DAG = Architecture.from_json(
  {
    "kind": "mlp",
    "layers": [
      {"label": "ip"},
      {"label": "crelu", "units": 8},
      {"label": "tanh", "units": 16},
      {"label": "elu", "units": 8},
      {"label": "linear"},
      {"label": "linear"},
      {"label": "op"},
    ],
    "edges": [[0, 1], [1, 2], [0, 2], [2, 3], [1, 3], [3, 4], [2, 5], [4, 6], [5, 6]],
  }
)
POOL = list(pools.initial_pool("mlp"))
SMALL = [*RANDOM, DAG, POOL[0], POOL[3]]  # one padding of 8 MB: cheap enough for many examples
NETWORKS = [*POOL, *RANDOM, DAG]
PADDINGS = {"pool": padded_mlp.padding_for(POOL), "small": padded_mlp.padding_for(SMALL)}


def _value_and_grad(fn):
  """(outputs, gradient of a nonlinear scalar of them) of fn(params, *args), jitted."""

  def both(params, *args):
    return fn(params, *args), jax.grad(lambda p: jnp.sum(jnp.sin(fn(p, *args))))(params)

  return jax.jit(both)


@functools.lru_cache(maxsize=2)
def _padded(decision):
  return _value_and_grad(functools.partial(padded_mlp.apply, decision=decision))


def _with_decision(arch, decision):
  obj = arch.to_json()
  layers = [{**layer, "label": decision} if layer["label"] == "linear" else layer for layer in obj["layers"]]
  return Architecture.from_json({**obj, "layers": layers})


@pytest.mark.parametrize(
  "decision, num_outputs, networks",
  [
    ("linear", 1, "small"),
    pytest.param("softmax", 5, "small", marks=pytest.mark.slow),
    # Every pool network, in the pool's padding: 32 unrolled slots are slow to compile, and the
    # eight pool networks outside SMALL slower still.
    pytest.param("linear", 1, "all", marks=pytest.mark.slow),
  ],
)
def test_outputs_and_gradients_match_archnet(decision, num_outputs, networks):
  assert sum(len(n.parents) > 1 for n in arch_net.network_nodes(DAG)) == 3  # tanh, elu and op concatenate
  assert PADDINGS["small"].crelu and PADDINGS["small"].fan_in == 4 and PADDINGS["small"].decisions == 2
  x = jax.random.normal(jax.random.key(0), (7, D))
  networks = NETWORKS if networks == "all" else SMALL
  for i, arch in enumerate(networks):
    padding = PADDINGS["pool" if networks is NETWORKS and i < len(POOL) else "small"]
    arch = _with_decision(arch, decision)
    model = arch_net.build_model(arch, num_outputs)
    spec_params = arch_net.init_variables(model, jax.random.key(i), x[:1])["params"]
    out, want = _value_and_grad(lambda p, x: model.apply({"params": p}, x, train=False))(spec_params, x)
    net, layout = padded_mlp.encode(arch, padding, D, num_outputs)
    params = padded_mlp.to_padded(spec_params, layout, padding, D)
    padded_out, grads = _padded(decision)(params, net, x)
    np.testing.assert_allclose(padded_out, out, rtol=1e-5, atol=1e-5)
    got = padded_mlp.to_specialised(grads, layout)
    for name in layout.names:
      for leaf in ("kernel", "bias"):
        np.testing.assert_allclose(got[name][leaf], want[name][leaf], rtol=1e-5, atol=1e-5, err_msg=f"{i} {name}")
    # Padding gets exactly zero gradient: the round trip through the layout keeps every nonzero.
    again = padded_mlp.to_padded(got, layout, padding, D)
    jax.tree.map(lambda g, a: np.testing.assert_array_equal(np.asarray(g), a), grads, again)


@hypothesis.settings(max_examples=15, deadline=None)
@hypothesis.given(i=st.integers(0, len(SMALL) - 1), seed=st.integers(0, 2**31 - 1))
def test_whatever_fills_the_padding_changes_nothing(i, seed):
  """Noise in every padded parameter, slot and parent: a wrong mask would let it into the outputs."""
  padding, x = PADDINGS["small"], jax.random.normal(jax.random.key(1), (5, D))
  net, layout = padded_mlp.encode(SMALL[i], padding, D, 1)
  clean = padded_mlp.init_params(jax.random.key(seed), layout, padding, D)
  rng = np.random.default_rng(seed)
  real = padded_mlp.to_padded(jax.tree.map(np.ones_like, padded_mlp.to_specialised(clean, layout)), layout, padding, D)
  noisy = jax.tree.map(lambda v, r: v + (1 - r) * rng.normal(0, 3, v.shape).astype(np.float32), clean, real)
  np.testing.assert_allclose(_padded("linear")(noisy, net, x)[0], _padded("linear")(clean, net, x)[0], rtol=1e-6)


def test_init_draws_archnet_kernels_and_layouts_round_trip():
  x = jnp.zeros((1, D))
  for i, arch in enumerate(SMALL):
    _, layout = padded_mlp.encode(arch, PADDINGS["small"], D, 1)
    want = arch_net.init_variables(arch_net.build_model(arch, 1), jax.random.key(i), x)["params"]
    got = padded_mlp.to_specialised(padded_mlp.init_params(jax.random.key(i), layout, PADDINGS["small"], D), layout)
    assert set(got) == set(want)
    for name in got:
      for leaf in ("kernel", "bias"):
        np.testing.assert_array_equal(got[name][leaf], np.asarray(want[name][leaf]))


def test_padding_rounds_up_and_rejects_what_does_not_fit():
  padding = padded_mlp.padding_for([DAG])
  assert padding == padded_mlp.Padding(layers=8, width=16, fan_in=2, decisions=2, crelu=True)
  with pytest.raises(ValueError, match=r"padding.width: the network needs 16, the padding has 8"):
    padded_mlp.encode(DAG, padding._replace(width=8), D, 1)
  with pytest.raises(ValueError, match=r"padding.crelu"):
    padded_mlp.encode(DAG, padding._replace(crelu=False), D, 1)
  with pytest.raises(ValueError, match=r"a 'cnn' network; it runs mlp networks"):
    padded_mlp.padding_for([pools.initial_pool("cnn")[0]])
