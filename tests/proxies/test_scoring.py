"""The batched scorer: equal to scoring each cell's network on its own, independent of batching
and order, one compile for several batches, and a data proxy reading the batch it is given."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.models.nb201_net import Nb201Spec, nb201_params
from nas_jax.proxies.data_free import synflow
from nas_jax.proxies.nb201_nets import nb201_proxy_net
from nas_jax.proxies.proxy import Proxy, Reads
from nas_jax.proxies.scoring import Scorer, cell_codes

TINY = Nb201Spec(channels=2, cells_per_stage=1, num_classes=3, image_size=8)
OPS = np.array([[3, 2, 4, 1, 3, 3], [0, 0, 1, 0, 0, 0], [2, 0, 0, 0, 0, 1], [4, 4, 4, 4, 4, 4], [1, 3, 0, 2, 2, 1]])


def _loss(net, batch):
  """Cross-entropy at initialisation: a stand-in data proxy (seeded synthetic batch)."""
  x, y = batch
  logits = net.apply(net.params, x)
  return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


PROXIES = {
  "synflow": Proxy(synflow, Reads.NET),
  "params": Proxy(nb201_params, Reads.CELL),
  "loss": Proxy(_loss, Reads.BATCH),
}


@pytest.fixture(scope="module")
def batch():
  k1, k2 = jax.random.split(jax.random.key(7))
  return jax.random.normal(k1, (4, 8, 8, 3)), jax.random.randint(k2, (4,), 0, 3)


def test_batches_equal_one_cell_at_a_time_with_one_compile(batch):
  key = jax.random.key(0)
  scorer = Scorer(PROXIES, TINY, batch_size=2)
  scores = scorer(OPS, key, batch)  # three calls, the last padded
  assert scorer.compiles == 1
  again = scorer(OPS[::-1], key, batch)
  assert scorer.compiles == 1
  for name in PROXIES:
    np.testing.assert_allclose(again[name][::-1], scores[name], rtol=1e-12)
  with jax.enable_x64(True):

    @jax.jit  # one network at a time, outside the scorer (one compile: the ops are data)
    def alone(ops, code):
      net = nb201_proxy_net(ops, jax.random.fold_in(key, code), TINY)
      return synflow(net), _loss(net, batch)

    for i, (ops, code) in enumerate(zip(OPS, cell_codes(OPS))):
      flow, loss = alone(jnp.array(ops), code)
      np.testing.assert_allclose(scores["synflow"][i], flow, rtol=1e-9)
      np.testing.assert_allclose(scores["loss"][i], loss, rtol=1e-5)
      assert scores["params"][i] == int(nb201_params(ops, TINY))


def test_bad_inputs_are_one_clear_error(batch):
  scorer = Scorer(PROXIES, TINY, batch_size=2)
  with pytest.raises(ValueError, match="ops: codes in 0..5"):
    scorer(np.array([[0, 1, 2, 3, 4, 5]]), jax.random.key(0), batch)
  with pytest.raises(ValueError, match=r"batch: None, but proxies \['loss'\] need data"):
    scorer(OPS, jax.random.key(0))
  with pytest.raises(ValueError, match="width: 3; expected a positive divisor of batch_size=2"):
    Scorer(PROXIES, TINY, batch_size=2, width=3)


def test_cell_codes_number_every_cell_once():
  ops = np.stack(np.meshgrid(*[range(5)] * 6, indexing="ij"), -1).reshape(-1, 6)
  assert sorted(cell_codes(ops)) == list(range(5**6))
