"""The padded MLP computes ArchNet's function: the same outputs and gradients with a specialised
network's variables copied in (pools and random DAGs, linear and softmax, crelu, concatenation,
several decision layers); whatever sits in the padding changes nothing; it initialises with the
same draws; and padded training follows specialised training, alone or in a population."""

import functools

import hypothesis
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

from nas_jax.arch import morphism
from nas_jax.arch.architecture import Architecture
from nas_jax.spaces import pools, random_arch
from nas_jax.models import arch_net, padded_mlp, padded_model
from nas_jax.training import datasets, population, specialised, train_loop, train_steps, trainer_choice
from nas_jax.training.train_config import TrainConfig

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
    ("softmax", 5, "small"),
    # Every pool network, in the pool's padding: 32 unrolled slots take ~10 s to compile, and
    # the eight pool networks outside SMALL ~25 s more.
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


DIABETES = datasets.get_dataset("diabetes", kind="mlp", seed=0)
SHORT = TrainConfig(epochs=3, batch_size=32)


def test_padded_training_follows_specialised_training():
  for i in (0, 3):
    arch = pools.initial_pool("mlp")[i]
    spec = specialised.evaluate(arch, DIABETES, SHORT, jax.random.key(i))
    padded = population.evaluate(arch, DIABETES, SHORT, jax.random.key(i))
    np.testing.assert_allclose(padded.val_errors, spec.val_errors, rtol=1e-4)
    assert padded.test_error == pytest.approx(spec.test_error, rel=1e-4)


def test_a_population_draws_each_networks_data_order_as_alone():
  keys = jnp.stack([jax.random.split(jax.random.key(i))[1] for i in range(5)])
  for epoch in (1, 7):
    together = np.asarray(population._epoch_orders(keys, epoch, 300))
    alone = np.stack([np.asarray(train_steps.epoch_order(k, epoch, 300)) for k in keys])
    np.testing.assert_array_equal(together, alone)
    assert together.dtype == np.int32 and len(set(map(tuple, together))) == 5


def test_a_population_trains_each_network_as_alone_with_its_own_stopping():
  archs = [pools.initial_pool("mlp")[0], RANDOM[1], DAG]
  config = SHORT._replace(epochs=6, patience=1, min_delta=0.05)
  keys = [jax.random.key(10 + i) for i in range(3)]
  padding = padded_mlp.padding_for(archs)
  together = population.train_population(archs, DIABETES, config, keys, keep_variables=True)
  alone = [population.evaluate(a, DIABETES, config, k, padding=padding) for a, k in zip(archs, keys)]
  assert len({r.epochs for r in together}) > 1  # early stopping differed between the networks
  for t, a in zip(together, alone):
    assert (t.epochs, t.best_epoch) == (a.epochs, a.best_epoch)
    np.testing.assert_allclose(t.val_errors, a.val_errors, rtol=1e-5)
  # The kept variables are the best epoch's: ArchNet with them scores the recorded validation loss.
  for arch, r in zip(archs, together):
    out = arch_net.build_model(arch).apply(r.variables, DIABETES.x_val, train=False)
    assert float(jnp.mean((out - DIABETES.y_val) ** 2)) == pytest.approx(r.val_loss, rel=1e-4)


def test_trainer_choice():
  arch = pools.initial_pool("mlp")[0]
  own = trainer_choice.padding_of(arch, DIABETES)
  assert trainer_choice.choose("padded", arch, DIABETES, SHORT) == ("padded", own)
  autokeras = morphism.initial_architectures()[0]
  assert trainer_choice.choose("auto", autokeras, DIABETES, SHORT) == ("specialised", None)
  with pytest.raises(ValueError, match=r"trainer: 'padded' trains mlp and cnn networks, not autokeras ones"):
    trainer_choice.choose("padded", autokeras, DIABETES, SHORT)
  with pytest.raises(ValueError, match=r"trainer: 'fast' is unknown; choose one of: specialised, padded, auto"):
    trainer_choice.choose("fast", arch, DIABETES, SHORT)
  # auto takes the padded program for a network whose padding an earlier network used, while its
  # extra arithmetic costs less than a compile.
  one = SHORT._replace(epochs=1)
  assert trainer_choice.choose("auto", arch, DIABETES, one, seen=[own]) == ("padded", own)
  assert trainer_choice.choose("auto", arch, DIABETES, one) == ("specialised", None)
  big = trainer_choice.padding_of(POOL[9], DIABETES)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, SHORT._replace(epochs=500), seen=[big]) == (
    "specialised",
    None,
  )
  # A network also reuses a bigger padding it fits, the cheapest of those seen, while the extra
  # arithmetic costs less than a compile; paddings it does not fit are passed over.
  pair = padded_mlp.padding_for([arch, POOL[1]])
  assert pair != own
  assert trainer_choice.choose("auto", arch, DIABETES, one, seen=[own, pair]) == ("padded", own)
  assert trainer_choice.choose("auto", arch, DIABETES, one, seen=[pair]) == ("padded", pair)
  assert trainer_choice.choose("padded", arch, DIABETES, one, seen=[pair]) == ("padded", pair)
  assert trainer_choice.choose("padded", arch, DIABETES, SHORT._replace(epochs=5000), seen=[pair]) == ("padded", own)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, one, seen=[own]) == ("specialised", None)
  picks = [trainer_choice.evaluate("auto", arch, DIABETES, one, jax.random.key(0))[1] for _ in range(2)]
  assert picks == ["specialised", "padded"] or picks == ["padded", "padded"]  # padded once seen


def _result(epochs, train_seconds, compile_seconds):
  return train_loop.EvalResult(
    "regression", 1.0, 1.0, 1.0, 1, epochs, train_seconds, 0.0, compile_seconds, (1.0,) * epochs
  )


def test_measured_costs_replace_the_defaults(monkeypatch):
  monkeypatch.setattr(trainer_choice, "macs_per_second", lambda: 1e9)
  default = trainer_choice.Costs(
    trainer_choice.SPECIALISED_COMPILE_SECONDS["mlp"], 1e9 * trainer_choice.TRAINING_EFFICIENCY["mlp"]
  )
  assert trainer_choice.default_costs("mlp") == trainer_choice.measured_costs("mlp") == default
  examples = (DIABETES.x_train.shape[0] // SHORT.batch_size) * SHORT.batch_size
  # A specialised program gives a compile only; a population of two in a padding of 1000 MACs an
  # example gives its compile (the members' shares) and its rate over the epochs it ran (its last
  # network's); a program compiled before (0 s) gives no compile.
  trainer_choice.record("mlp", [_result(3, 9.0, 5.0)], DIABETES, SHORT)
  assert trainer_choice.measured_costs("mlp") == trainer_choice.Costs(5.0, default.macs_per_second)
  trainer_choice.record("mlp", [_result(3, 1.0, 2.0), _result(2, 1.0, 2.0)], DIABETES, SHORT, padding_macs=1000)
  trainer_choice.record("mlp", [_result(4, 2.0, 0.0)], DIABETES, SHORT, padding_macs=1000)
  rates = [3 * 2 * 1000 * examples * 3 / 2.0, 3 * 1000 * examples * 4 / 2.0]
  assert trainer_choice.measured_costs("mlp") == pytest.approx(trainer_choice.Costs(4.5, sum(rates) / 2))
  assert trainer_choice.measured_costs("cnn").compile_seconds == trainer_choice.SPECIALISED_COMPILE_SECONDS["cnn"]
  # The choice follows the costs: a padding that adds a long training's arithmetic is taken where a
  # compile costs more, and networks that the defaults keep apart train together.
  big, long = trainer_choice.padding_of(POOL[9], DIABETES), SHORT._replace(epochs=500)
  slow_compile = default._replace(compile_seconds=1e6)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, long, seen=[big]) == ("specialised", None)
  assert trainer_choice.choose("auto", POOL[9], DIABETES, long, seen=[big], costs=slow_compile) == ("padded", big)
  assert trainer_choice.groups(POOL[8:], DIABETES, long) == [[0], [1]]
  assert trainer_choice.groups(POOL[8:], DIABETES, long, slow_compile) == [[0, 1]]


def test_trainings_record_what_they_measured():
  one = SHORT._replace(epochs=1)
  result, chosen = trainer_choice.evaluate("specialised", POOL[0], DIABETES, one, jax.random.key(0))
  assert chosen == "specialised" and trainer_choice.measured_costs("mlp").compile_seconds == result.compile_seconds
  together = trainer_choice.train_group(POOL[:2], DIABETES, one, [jax.random.key(1), jax.random.key(2)])
  padding = padded_mlp.padding_for(POOL[:2])
  examples = (DIABETES.x_train.shape[0] // one.batch_size) * one.batch_size
  macs = padded_model.model_for("mlp").macs(padding, *datasets.input_spec(DIABETES))
  rate = 3 * 2 * macs * examples / sum(r.train_seconds for r in together)
  assert trainer_choice.measured_costs("mlp").macs_per_second == pytest.approx(rate)
