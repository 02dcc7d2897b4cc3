"""Final training of an NB201 cell: the benchmark's recipe, a run continued from its checkpoint
ends exactly as an uninterrupted one, the saved model scores the reported test accuracy, running
batch-norm averages leave the proxies' default untouched, and bad input gets one line."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.models import nb201_init, nb201_net
from nas_jax.training import checkpoints, datasets, final_fit, saved_model
from nas_jax.training.nb201_training import NB201_TRAIN_CONFIG, final_fit_nb201, nb201_model_spec

CELL = {
  "kind": "nb201",
  "arch_str": "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
}
TINY = dict(channels=4, cells_per_stage=1)
CONFIG = NB201_TRAIN_CONFIG._replace(batch_size=32, eval_batch_size=64)


def _images(n, seed, size=8):
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(n, size, size, 3)).astype(np.float32)
  return x, (x[..., 0].mean(axis=(1, 2)) > 0).astype(np.int32)  # the class is the first channel's sign


@pytest.fixture(scope="module")
def data():
  (a, b), (c, d), (e, f) = _images(96, 0), _images(32, 1), _images(40, 2)
  return final_fit.merge_train_val(datasets.Dataset(a, b, c, d, e, f, "classification", 2, "signs"))


def test_the_recipe_is_nas_bench_201s():
  c = NB201_TRAIN_CONFIG
  assert (c.epochs, c.batch_size, c.learning_rate, c.optimizer, c.schedule, c.weight_decay, c.patience) == (
    200,
    256,
    0.1,
    "nesterov",
    "cosine",
    5e-4,
    0,
  )


def test_the_model_spec_is_the_benchmarks_network_sized_to_the_data(data):
  spec = nb201_model_spec(CELL, data, **TINY)
  assert spec.family == "nb201" and spec.point == CELL and spec.input_shape == (8, 8, 3)
  assert spec.num_outputs == 2 and spec.task == "classification"
  assert nb201_net.Nb201Spec(**spec.options) == nb201_net.Nb201Spec(4, 1, 2, 8, bn=True, affine=True)


@pytest.mark.slow
def test_a_resumed_run_ends_as_an_uninterrupted_one_and_its_saved_model_scores_it(data, tmp_path, monkeypatch):
  whole = final_fit_nb201(CELL, data, 3, jax.random.key(0), train_config=CONFIG, **TINY)
  assert 0.0 <= whole.test_metric <= 1.0 and whole.spec == nb201_model_spec(CELL, data, **TINY)
  assert whole.params == sum(np.size(a) for a in jax.tree.leaves(whole.variables["params"]))

  path = str(tmp_path / "nb201.msgpack")
  save = checkpoints.save

  def killed_after_saving(*args):  # the run dies right after its first checkpoint
    save(*args)
    raise KeyboardInterrupt

  monkeypatch.setattr(checkpoints, "save", killed_after_saving)
  with pytest.raises(KeyboardInterrupt):
    final_fit_nb201(CELL, data, 3, jax.random.key(0), train_config=CONFIG, checkpoint_path=path, **TINY)
  monkeypatch.setattr(checkpoints, "save", save)
  assert checkpoints.load(path, "another run") is None
  resumed = final_fit_nb201(CELL, data, 3, jax.random.key(0), train_config=CONFIG, checkpoint_path=path, **TINY)
  assert resumed.test_metric == whole.test_metric
  jax.tree.map(np.testing.assert_array_equal, resumed.variables, whole.variables)

  model = saved_model.load_model(saved_model.save_model(str(tmp_path / "model"), whole.spec, whole.variables))
  accuracy = np.mean(model.predict(data.x_test).argmax(axis=1) == data.y_test)
  assert accuracy == pytest.approx(whole.test_metric, abs=1e-9)
  stats = jax.tree.leaves(whole.variables["batch_stats"])
  assert not all(np.allclose(a, 0) or np.allclose(a, 1) for a in stats)  # the running averages moved


def test_batch_statistics_stay_the_default_and_running_averages_are_opt_in():
  spec = nb201_net.Nb201Spec(channels=2, cells_per_stage=1, num_classes=3, image_size=8)
  x = jax.random.normal(jax.random.key(1), (4, 8, 8, 3), jnp.float32)
  cell = (3, 2, 4, 1, 0, 3)
  net = lambda mode: nb201_net.Nb201Net(spec, cell, batch_norm=mode)
  assert "batch_stats" not in jax.eval_shape(net("batch").init, jax.random.key(0), x)  # the proxies' network
  shapes = jax.eval_shape(net("train").init, jax.random.key(0), x)["batch_stats"]
  params = jax.jit(lambda k: nb201_net.specialise_params(nb201_init.init_params(k, spec), cell))(jax.random.key(0))
  initial = jax.tree_util.tree_map_with_path(
    lambda path, s: (jnp.ones if path[-1].key.endswith("var") else jnp.zeros)(s.shape, s.dtype), shapes
  )
  stats = {"params": params, "batch_stats": initial}

  @jax.jit
  def outputs(stats):
    default = net("batch").apply({"params": stats["params"]}, x)
    training, updated = net("train").apply(stats, x, mutable=["batch_stats"])
    return default, training, updated["batch_stats"], net("running").apply(stats, x)

  default, training, updated, running = outputs(stats)
  np.testing.assert_allclose(training, default, rtol=1e-5, atol=1e-6)  # trains on the batch's statistics
  kernel = params["stem"]["conv"]["kernel"].astype(jnp.float32)  # float64 under the tests' x64
  conv = jax.lax.conv_general_dilated(x, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  np.testing.assert_allclose(updated["stem"]["mean"], 0.1 * conv.mean(axis=(0, 1, 2)), rtol=1e-4, atol=1e-6)
  # running means 0 and variances 1 normalise nothing: inference is another function of x
  assert not np.allclose(running, default, atol=1e-3)
  with pytest.raises(ValueError, match="batch_norm: 'eval'; allowed: batch, train, running"):
    net("eval").apply(stats, x)


def test_bad_input_gets_one_line(data):
  regression = data._replace(task="regression", num_classes=0)
  with pytest.raises(ValueError, match="an NB201 network classifies square RGB images"):
    nb201_model_spec(CELL, regression)
  x = lambda a: a[..., :1]
  grey = data._replace(x_train=x(data.x_train), x_val=x(data.x_val), x_test=x(data.x_test))
  with pytest.raises(ValueError, match=r"inputs \(8, 8, 1\)"):
    final_fit_nb201(CELL, grey, 1, jax.random.key(0), **TINY)
  with pytest.raises(ValueError, match="nb201 from_json"):
    final_fit_nb201({"kind": "nb101"}, data, 1, jax.random.key(0), **TINY)
  with pytest.raises(ValueError, match="batch_size: 256 exceeds the 128 training examples"):
    final_fit_nb201(CELL, data, 1, jax.random.key(0), **TINY)
  with pytest.raises(ValueError, match="epochs: 0"):
    final_fit_nb201(CELL, data, 0, jax.random.key(0), train_config=CONFIG, **TINY)
  with pytest.raises(ValueError, match="checkpoint_every: 0"):
    final_fit_nb201(CELL, data, 1, jax.random.key(0), train_config=CONFIG, checkpoint_every=0, **TINY)
