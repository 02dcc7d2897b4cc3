"""Padded training (`population`): a padded network trains as its specialised program does, a
population draws each network's data order and trains each with its own early stopping as if it
trained alone, and a padding beyond the device's memory fails in one line."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.models import arch_net, cnn_padding, padded_cnn_variables, padded_mlp
from nas_jax.spaces import pools, random_arch
from nas_jax.training import datasets, population, specialised, train_steps
from nas_jax.training.train_config import TrainConfig
from tests.models.test_padded_cnn import _narrow
from tests.models.test_padded_mlp import DAG, RANDOM

DIABETES = datasets.get_dataset("diabetes", kind="mlp", seed=0)
SHORT = TrainConfig(epochs=3, batch_size=32)
DIGITS = datasets.get_dataset("digits", kind="cnn", seed=0)
SHORT_CNN = TrainConfig(epochs=2, batch_size=32)
TINY = [
  _narrow(random_arch.random_json("cnn", np.random.default_rng(s), min_layers=5, max_layers=7, max_skips=1))
  for s in (6, 11)  # conv5 -> res5 on a concatenation -> fc; a strided res5 -> avg-pool -> fc, two softmax
]


def test_padded_mlp_training_follows_specialised_training():
  for i in (0, 3):
    arch = pools.initial_pool("mlp")[i]
    spec = specialised.evaluate(arch, DIABETES, SHORT, jax.random.key(i))
    (padded,) = population.train_population([arch], DIABETES, SHORT, [jax.random.key(i)])
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
  # Narrow networks (a padding 64 wide, not the pool's 256): the same logic at a tenth of the cost.
  archs = [RANDOM[0], RANDOM[2], DAG]
  config = SHORT._replace(epochs=6, patience=1, min_delta=0.05)
  keys = [jax.random.key(10 + i) for i in range(3)]
  padding = padded_mlp.padding_for(archs)
  together = population.train_population(archs, DIABETES, config, keys, keep_variables=True)
  alone = [population.train_population([a], DIABETES, config, [k], padding=padding)[0] for a, k in zip(archs, keys)]
  assert len({r.epochs for r in together}) > 1  # early stopping differed between the networks
  for t, a in zip(together, alone):
    assert (t.epochs, t.best_epoch) == (a.epochs, a.best_epoch)
    np.testing.assert_allclose(t.val_errors, a.val_errors, rtol=1e-5)
  # The kept variables are the best epoch's: ArchNet with them scores the recorded validation loss.
  for arch, r in zip(archs, together):
    out = arch_net.build_model(arch).apply(r.variables, DIABETES.x_val, train=False)
    assert float(jnp.mean((out - DIABETES.y_val) ** 2)) == pytest.approx(r.val_loss, rel=1e-4)


@pytest.mark.slow  # CNN programs compile slowly; the MLP test above runs the same trainer by default
def test_padded_cnn_training_follows_specialised_training():
  """Two epochs of Adam as a population of two: the scores of `specialised.evaluate` to float
  tolerance (a validation error may move by one example of 360), and the best epoch's variables
  in `ArchNet`'s layout. (That a network trains in a population as alone is the padded trainer's
  own logic, tested on MLPs above.)"""
  keys = [jax.random.key(7), jax.random.key(8)]
  want = [specialised.evaluate(a, DIGITS, SHORT_CNN, k) for a, k in zip(TINY, keys)]
  got = population.train_population(TINY, DIGITS, SHORT_CNN, keys, keep_variables=True)
  for w, g in zip(want, got):
    np.testing.assert_allclose(g.val_errors, w.val_errors, atol=1.5 / DIGITS.x_val.shape[0])
    assert g.val_loss == pytest.approx(w.val_loss, rel=1e-3)
  model = arch_net.build_model(TINY[0], DIGITS.num_classes)
  shapes = jax.eval_shape(functools.partial(model.init, train=False), keys[0], DIGITS.x_train[:1])
  for group in ("params", "batch_stats"):
    assert jax.tree.structure(got[0].variables[group]) == jax.tree.structure(shapes[group])


def test_a_padding_beyond_the_devices_memory_fails_in_one_line(monkeypatch):
  """A pool CNN's coarse padding (32 slots of 1024 channels at 8x8, each computing every kind) needs
  more than a 24 GiB machine has: the trainer says so before allocating anything, rather than the
  worker being killed. Its own padding (each slot its layer's kind, channels and grid) fits."""
  assert population.memory_limit() > 2**30
  monkeypatch.setattr(population, "memory_limit", lambda: 24 * 2**30)
  arch = pools.initial_pool("cnn")[6]  # C7: 20.4 GiB of coarsely padded parameters, 81.5 GiB with Adam
  own = cnn_padding.padding_for([arch], DIGITS.x_train.shape[1:])
  params = jax.tree.leaves(padded_cnn_variables.param_shapes(own, DIGITS.x_train.shape[1:], 10)[0])
  assert sum(np.prod(a.shape) for a in params) * 4 / 2**30 < 0.1
  with pytest.raises(
    ValueError, match=r"trainer 'padded': 1 network\(s\) in padding .* need 81\.5 GiB .* this device has 24\.0"
  ):
    population.train_population(
      [arch], DIGITS, SHORT_CNN, [jax.random.key(0)], padding=cnn_padding.coarse(own, DIGITS.x_train.shape[1:])
    )
