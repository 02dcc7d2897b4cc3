"""The batched trainer of conditional points: finite errors, a point trains the same inside a batch
as alone (and whatever its inactive values), masked units stay zero (padded == unpadded), the
micro-step counts of each batch size, regression, and argument checks."""

import jax
import numpy as np
import pytest

from nas_jax.arch import conditional_point as cond_point
from nas_jax.spaces import conditional as C
from nas_jax.models import chain_mlp
from nas_jax.training import conditional as T
from nas_jax.training import datasets, saved_model

SPEC = cond_point.conditional_spec()
SPACE = C.conditional_space()
KEY = jax.random.key(7)


def point(depth, **over):
  params = {"depth": depth, "log10_lr": -2.5, "log2_batch": 5}
  for i in range(1, depth + 1):
    params.update(
      {f"layer{i}.log2_units": 5, f"layer{i}.activation": 0, f"layer{i}.dropout": 0.1, f"layer{i}.log10_l2": -5.0}
    )
  return SPACE.from_json({"kind": "conditional", "params": {**params, **over}})


def junk_inactive(p):
  """p with other values where it is inactive."""
  return cond_point.ConditionalPoint(np.where(p.active, p.values, SPEC.upper).astype(np.float32), p.active)


@pytest.fixture(scope="module")
def digits():
  """Digits with half its training split: the same checks at half the training time."""
  d = datasets.digits("mlp")
  return d._replace(x_train=d.x_train[:540], y_train=d.y_train[:540])


@pytest.fixture(scope="module")
def batch(digits):
  """Depth 1 and 3 (same first layer), a depth-1 copy with other inactive values, a random point."""
  points = [
    point(1),
    point(3, **{"layer2.activation": 1, "layer3.activation": 3}),
    junk_inactive(point(1)),
    SPACE.sample(jax.random.key(0), 1)[0],
  ]
  return points, T.train_points(cond_point.stack_points(points), SPEC, digits, epochs=2, key=KEY)


def test_a_batch_trains_with_finite_errors(batch):
  _, r = batch
  assert r.val_error.shape == r.test_error.shape == (4,) and r.val_errors.shape == (4, 2)
  assert r.val_error.dtype == np.float64 and r.seconds > 0
  assert np.isfinite(r.val_errors).all() and (r.val_errors >= 0).all() and (r.val_errors <= 1).all()
  np.testing.assert_array_equal(r.val_error, r.val_errors.min(axis=1))
  assert (r.val_error < 0.5).sum() >= 2  # 2 epochs of a small relu net on digits: well below chance (0.9)


def test_a_point_trains_the_same_alone_in_any_order_and_with_any_inactive_values(batch, digits):
  points, r = batch
  alone = T.evaluate_point(points[1], SPEC, digits, epochs=2, key=KEY)
  n_val = len(digits.y_val)
  # A different batch shape may round differently; allow one validation example to flip.
  np.testing.assert_allclose(alone.val_errors[0], r.val_errors[1], atol=1.01 / n_val)
  flipped = T.train_points(cond_point.stack_points(points[::-1]), SPEC, digits, epochs=2, key=KEY)
  np.testing.assert_allclose(flipped.val_errors[::-1], r.val_errors, atol=1e-12)
  np.testing.assert_array_equal(r.val_errors[2], r.val_errors[0])
  assert not np.array_equal(r.val_errors[1], r.val_errors[0])  # depth 3 is not depth 1
  other_key = T.train_points(cond_point.stack_points(points), SPEC, digits, epochs=2, key=jax.random.key(8))
  assert not np.array_equal(other_key.val_errors, r.val_errors)


def test_masked_weights_stay_zero_so_the_padded_net_is_the_small_one(digits):
  p = point(2, **{"layer1.log2_units": 3, "layer2.log2_units": 4, "layer2.activation": 2, "layer1.dropout": 0.3})
  points = cond_point.stack_points([p, point(1), point(3), point(2)])  # the chunk size of `batch`: compiled once
  s = chain_mlp.settings(points, SPEC, len(digits.y_train), digits.x_train.shape[1])
  keys = T._point_keys(points, SPEC, KEY)
  state = T._init_chunk(s, keys[:, 0], 64, 10)
  state, _ = T._epoch_chunk(s, state, keys[:, 1:], np.int32(0), tuple(digits[:6]), True, 16)
  kernels, biases = ([np.asarray(a[0]) for a in state[0][k]] for k in ("kernels", "biases"))
  for k, (rows, cols) in zip(kernels, [(64, 8), (8, 16), (0, 0), (16, 10)]):
    inside = k[:rows, :cols]
    assert np.count_nonzero(k) == np.count_nonzero(inside) >= 0.9 * inside.size  # layer 3 inactive: all 0
  assert not np.any(biases[0][8:]) and not np.any(biases[1][16:]) and not np.any(biases[2])
  sigmoid = lambda z: 1 / (1 + np.exp(-z))
  x = digits.x_val[:50].astype(np.float64)
  h = sigmoid(np.maximum(x @ kernels[0][:, :8] + biases[0][:8], 0) @ kernels[1][:8, :16] + biases[1][:16])
  small = h @ kernels[3][:16] + biases[3]
  padded = chain_mlp.forward(
    jax.tree.map(lambda a: a[0], state[0]), jax.tree.map(lambda a: a[0], s), digits.x_val[:50], None
  )
  np.testing.assert_allclose(padded, small, rtol=1e-4, atol=1e-4)


def test_each_batch_size_takes_n_over_b_steps_of_b_over_16_micro_batches():
  points = cond_point.stack_points([point(1, log2_batch=b) for b in (4, 5, 6, 7)])
  s = chain_mlp.settings(points, SPEC, 1078, 64)
  np.testing.assert_array_equal(s.accum, [1, 2, 4, 8])
  np.testing.assert_array_equal(s.micro_steps, [67 * 1, 33 * 2, 16 * 4, 8 * 8])  # 1078 // 16 = 67 in the scan
  np.testing.assert_allclose(s.lr, 10**-2.5, rtol=1e-6)
  np.testing.assert_array_equal(s.fan_in[0], [64, 32, 8, 32])  # layers 2-3 inactive: the output reads layer 1


def test_regression_on_diabetes():
  data = datasets.diabetes()
  r = T.train_points(cond_point.stack_points([point(1, log10_lr=-2.0), point(2)]), SPEC, data, epochs=3, key=KEY)
  assert np.isfinite(r.val_errors).all() and (r.val_errors > 0).all()
  assert r.val_error[0] < 0.9  # standardised targets: predicting the mean scores about 1
  assert r.test_error[0] < 1.0


def test_arguments_are_checked_before_training(digits):
  one = cond_point.stack_points([point(1)])
  with pytest.raises(ValueError, match="epochs: 0; expected an integer >= 1"):
    T.train_points(one, SPEC, digits, epochs=0, key=KEY)
  with pytest.raises(ValueError, match="chunk: 2.0; expected an integer >= 1"):
    T.train_points(one, SPEC, digits, epochs=1, key=KEY, chunk=2.0)
  with pytest.raises(ValueError, match=r"points: values \(15,\); expected a batch \[B, P\]"):
    T.train_points(point(1), SPEC, digits, epochs=1, key=KEY)
  with pytest.raises(ValueError, match="expected classification or regression on flat features"):
    T.train_points(one, SPEC, datasets.digits("cnn"), epochs=1, key=KEY)
  small = digits._replace(x_train=digits.x_train[:100], y_train=digits.y_train[:100])
  with pytest.raises(ValueError, match="has 100 training examples; the largest batch, 128, needs at least"):
    T.train_points(one, SPEC, small, epochs=1, key=KEY)
  with pytest.raises(ValueError, match="key: 7; expected one jax.random key"):
    T.train_points(one, SPEC, digits, epochs=1, key=7)
  narrow = SPEC._replace(upper=np.where(np.arange(15) == 1, -2.0, SPEC.upper))
  with pytest.raises(ValueError, match=r"spec: differs from conditional_spec\(max_depth=3\)"):
    T.train_points(one, narrow, digits, epochs=1, key=KEY)


def test_final_fit_keeps_the_last_epochs_params_and_its_saved_model_scores_them(batch, digits, tmp_path):
  points, _ = batch
  r = T.evaluate_point(points[1], SPEC, digits, epochs=2, key=KEY, keep_params=True)
  assert r.test_errors.shape == (1, 2) and r.test_error[0] in r.test_errors[0]
  s = jax.tree.map(lambda a: a[0], chain_mlp.settings(cond_point.stack_points([points[1]]), SPEC, 0, 64))
  params = jax.tree.map(lambda a: a[0], r.params)
  wrong = np.asarray(chain_mlp.forward(params, s, digits.x_test, None)).argmax(axis=1) != digits.y_test
  assert np.mean(wrong) == pytest.approx(r.test_errors[0, -1], abs=1e-6)  # the params of the last epoch

  fit = T.final_fit_conditional(SPACE.to_json(points[1]), digits, 2, KEY)
  assert fit.test_metric == pytest.approx(1 - r.test_errors[0, -1], abs=1e-12)
  assert fit.params == (64 + 1) * 32 + 2 * (32 + 1) * 32 + (32 + 1) * 10  # 64 -> 32 -> 32 -> 32 -> 10
  assert fit.spec.options == {"max_depth": 3} and fit.spec.input_shape == (64,)
  model = saved_model.load_model(saved_model.save_model(str(tmp_path / "m"), fit.spec, fit.variables))
  accuracy = np.mean(model.predict(digits.x_test).argmax(axis=1) == digits.y_test)
  assert accuracy == pytest.approx(fit.test_metric, abs=1e-6)
  with pytest.raises(ValueError, match="init_variables: conditional points train from scratch"):
    T.final_fit_conditional(SPACE.to_json(points[1]), digits, 2, KEY, init_variables={"params": {}})
