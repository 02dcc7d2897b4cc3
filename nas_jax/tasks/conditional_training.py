"""Trains many points of the conditional space at once: one padded MLP, vmapped over points.

Every point becomes the same padded network: `max_depth` dense layers of `width` = 2**9 = 512
units, then a dense output layer. Per point, arrays (never shapes) carry the settings:
- units: layer i's outputs beyond its 2**log2_units are multiplied by 0, and its kernel starts as
  N(0, 1/fan_in) with the real fan-in, zero outside the real block. Masked weights get zero
  gradients, so they stay 0 and the network computes exactly what an unpadded one would.
- depth: layers past the depth are the identity, so depth D uses exactly D layers.
- activation: all four are computed and the point's one selected.
- dropout: inverted dropout on each layer's outputs, in training only.
- L2: log10_l2 gives c in `c * sum(kernel**2)`, added to the loss for each active layer's kernel
  (not the output layer's).
- learning rate: Adam (optax defaults) with the point's step size.
- batch size b: b/16 micro-batches of 16 (the smallest batch) are accumulated into one Adam step
  of b examples, the same gradient as one batch of b. An epoch is a fresh permutation, cut into
  n_train // b steps (the remainder dropped, as `training.evaluate` does), so each point does
  (n_train // b) * (b / 16) micro-steps; the scan runs n_train // 16 of them for every point and
  the ones past a point's count do nothing. Every point thus does one epoch's work, not a padded
  128-example step per micro-step.

After every epoch each point's validation and test error are measured (error rate, or MSE on
standardised targets); a point scores its best validation epoch's errors, as `training.evaluate`.
A point's randomness (initialisation, shuffles, dropout) derives from the key and the point's
canonical key, so a point trains the same whichever batch it is in.
"""

from __future__ import annotations

import functools
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nas_jax.arch import conditional_point as cond_point
from nas_jax.search.task import Task, TaskResult
from nas_jax.tasks import train_steps, train_task
from nas_jax.tasks.datasets import TASKS, Dataset

__all__ = ["PointResults", "train_points", "evaluate_point", "conditional_task"]

_F32 = jnp.float32
_ADAM = optax.scale_by_adam()


class PointResults(NamedTuple):
  """What `train_points` returns; errors are NaN where training diverged.

  Attributes:
    val_error: [B] float64, the smallest validation error over epochs (error rate or MSE).
    test_error: [B] float64, the test error after that epoch.
    val_errors: [B, epochs] float64, the validation error after each epoch.
    seconds: wall time of the call, compilation included.
  """

  val_error: np.ndarray
  test_error: np.ndarray
  val_errors: np.ndarray
  seconds: float


class _Settings(NamedTuple):
  """Per-point training settings as arrays, leading axis B; L = max_depth, W = width."""

  lr: np.ndarray  # [B] float32
  accum: np.ndarray  # [B] int32, micro-batches per Adam step (b / 16)
  micro_steps: np.ndarray  # [B] int32, micro-steps per epoch that do something
  layer_on: np.ndarray  # [B, L] bool
  unit_mask: np.ndarray  # [B, L, W] float32, 1 for the layer's real units (none when inactive)
  out_mask: np.ndarray  # [B, W] float32, the real units of the last active layer: the output's inputs
  fan_in: np.ndarray  # [B, L + 1] float32, real inputs of each layer and of the output layer
  activation: np.ndarray  # [B, L] int32, index into ACTIVATIONS
  dropout: np.ndarray  # [B, L] float32
  l2: np.ndarray  # [B, L] float32


def _layout(spec: cond_point.ConditionalSpec) -> tuple[int, int]:
  """(width, micro-batch) of `spec`, which must be a `conditional_spec` (its layout is read here)."""
  if not isinstance(spec, cond_point.ConditionalSpec):
    raise TypeError(f"spec: {type(spec).__name__} given; expected a ConditionalSpec")
  ref = cond_point.conditional_spec(spec.max_depth)
  if spec.names != ref.names or not all(np.array_equal(a, b) for a, b in zip(spec[1:5], ref[1:5])):
    raise ValueError(
      f"spec: differs from conditional_spec(max_depth={spec.max_depth}); the trainer reads"
      " parameters by that layout and those bounds"
    )
  units = len(cond_point.SHARED) + cond_point.LAYER_FIELDS.index("log2_units")
  return 2 ** int(spec.upper[units]), 2 ** int(spec.lower[cond_point.SHARED.index("log2_batch")])


def _settings(
  points: cond_point.ConditionalPoint, spec: cond_point.ConditionalSpec, n_train: int, d_in: int
) -> _Settings:
  """The settings of a batch of points (values [B, P]) on `n_train` examples of `d_in` features."""
  width, micro = _layout(spec)
  v = np.asarray(points.values, np.float64)
  layers = v[:, len(cond_point.SHARED) :].reshape(len(v), spec.max_depth, len(cond_point.LAYER_FIELDS))
  field = lambda name: layers[..., cond_point.LAYER_FIELDS.index(name)]
  shared = lambda name: v[:, cond_point.SHARED.index(name)]
  depth = shared("depth").astype(np.int64)
  layer_on = np.arange(1, spec.max_depth + 1) <= depth[:, None]
  units = (2 ** field("log2_units")).astype(np.int64)
  batch = (2 ** shared("log2_batch")).astype(np.int64)
  last = units[np.arange(len(v)), depth - 1]
  fan_in = np.concatenate([np.full((len(v), 1), d_in), units[:, :-1], last[:, None]], axis=1)
  width_range = np.arange(width)
  return _Settings(
    lr=(10 ** shared("log10_lr")).astype(np.float32),
    accum=(batch // micro).astype(np.int32),
    micro_steps=((n_train // batch) * (batch // micro)).astype(np.int32),
    layer_on=layer_on,
    unit_mask=((width_range < units[..., None]) & layer_on[..., None]).astype(np.float32),
    out_mask=(width_range < last[:, None]).astype(np.float32),
    fan_in=fan_in.astype(np.float32),
    activation=field("activation").astype(np.int32),
    dropout=field("dropout").astype(np.float32),
    l2=(10 ** field("log10_l2")).astype(np.float32),
  )


def _init(s: _Settings, key: jax.Array, d_in: int, n_out: int) -> tuple[Any, Any]:
  """One point's (params, Adam state): LeCun-normal kernels on the real block, zero biases."""
  n_layers, width = s.unit_mask.shape
  keys = jax.random.split(key, n_layers + 1)
  rows = [jnp.ones(d_in, _F32)] + [s.unit_mask[i] for i in range(n_layers - 1)] + [s.out_mask]
  cols = [s.unit_mask[i] for i in range(n_layers)] + [jnp.ones(n_out, _F32)]
  kernel = lambda i: (
    jax.random.normal(keys[i], (rows[i].size, cols[i].size), _F32)
    * rows[i][:, None]
    * cols[i][None, :]
    / jnp.sqrt(s.fan_in[i])
  )
  params = {
    "kernels": [kernel(i) for i in range(n_layers + 1)],
    "biases": [jnp.zeros(width, _F32)] * n_layers + [jnp.zeros(n_out, _F32)],
  }
  return params, _ADAM.init(params)


def _activate(z: jax.Array, index: jax.Array) -> jax.Array:
  """ACTIVATIONS[index](z); the branches are element-wise, so computing all four is cheap."""
  branches = {"relu": jax.nn.relu, "tanh": jnp.tanh, "logistic": jax.nn.sigmoid, "elu": jax.nn.elu}
  return jnp.select(
    [index == i for i in range(len(cond_point.ACTIVATIONS) - 1)],
    [branches[a](z) for a in cond_point.ACTIVATIONS[:-1]],
    branches[cond_point.ACTIVATIONS[-1]](z),
  )


def _forward(params, s: _Settings, x: jax.Array, key: jax.Array | None) -> jax.Array:
  """One point's outputs [m, n_out] for inputs x [m, d]; dropout when a key is given."""
  h = x
  for i in range(s.unit_mask.shape[0]):
    a = _activate(h @ params["kernels"][i] + params["biases"][i], s.activation[i]) * s.unit_mask[i]
    if key is not None:
      keep = jax.random.bernoulli(jax.random.fold_in(key, i), 1.0 - s.dropout[i], a.shape)
      a = jnp.where(keep, a / (1.0 - s.dropout[i]), 0.0)
    h = a if i == 0 else jnp.where(s.layer_on[i], a, h)
  return h @ params["kernels"][-1] + params["biases"][-1]


def _errors(out: jax.Array, y: jax.Array, classification: bool) -> tuple[jax.Array, jax.Array]:
  """Per-example (loss, error) of outputs [m, n_out] against targets [m]."""
  if classification:
    loss = -jnp.take_along_axis(jax.nn.log_softmax(out), y[:, None].astype(jnp.int32), axis=1)[:, 0]
    # argmax of NaN logits is a class like any other: keep divergence visible in the error.
    return loss, jnp.where(jnp.isnan(loss), jnp.nan, (out.argmax(-1) != y).astype(_F32))
  sq = jnp.square(out[:, 0] - y.astype(_F32))
  return sq, sq


def _loss(params, s: _Settings, x, y, key, classification: bool) -> jax.Array:
  """Mean loss of a micro-batch plus each active layer's L2 term."""
  data = _errors(_forward(params, s, x, key), y, classification)[0].mean()
  l2 = sum(s.l2[i] * s.layer_on[i] * jnp.sum(jnp.square(w)) for i, w in enumerate(params["kernels"][:-1]))
  return data + l2


def _epoch(s: _Settings, state, keys, epoch, data, classification: bool, micro: int):
  """One point's epoch: a scan of n_train // micro micro-steps, then its (val, test) error.

  Args:
    s: the point's settings; state: (params, Adam state); keys: [2] (shuffle, dropout) keys;
    epoch: [] int32; data: (x_train, y_train, x_val, y_val, x_test, y_test).
  """
  x, y, x_val, y_val, x_test, y_test = data
  perm = train_steps.epoch_order(keys[0], epoch, x.shape[0])
  dropout_key = jax.random.fold_in(keys[1], epoch)

  def step(carry, t):
    params, opt, acc = carry
    idx = jax.lax.dynamic_slice(perm, (t * micro,), (micro,))
    grads = jax.grad(_loss)(params, s, x[idx], y[idx], jax.random.fold_in(dropout_key, t), classification)
    on = t < s.micro_steps
    acc = jax.tree.map(lambda a, g: a + jnp.where(on, g / s.accum.astype(_F32), 0.0), acc, grads)
    updates, new_opt = _ADAM.update(acc, opt)
    new_params = jax.tree.map(lambda p, u: p - (s.lr * u).astype(p.dtype), params, updates)
    apply = on & ((t + 1) % s.accum == 0)
    pick = lambda new, old: jax.tree.map(lambda a, b: jnp.where(apply, a, b), new, old)
    return (pick(new_params, params), pick(new_opt, opt), pick(jax.tree.map(jnp.zeros_like, acc), acc)), None

  params, opt = state
  carry = (params, opt, jax.tree.map(jnp.zeros_like, params))
  (params, opt, _), _ = jax.lax.scan(step, carry, jnp.arange(x.shape[0] // micro, dtype=jnp.int32))
  error = lambda xs, ys: _errors(_forward(params, s, xs, None), ys, classification)[1].mean()
  return (params, opt), (error(x_val, y_val), error(x_test, y_test))


@functools.partial(jax.jit, static_argnames=("d_in", "n_out"))
def _init_chunk(s: _Settings, keys: jax.Array, d_in: int, n_out: int):
  return jax.vmap(_init, in_axes=(0, 0, None, None))(s, keys, d_in, n_out)


# Compiled once per (chunk size, data shapes, task): the epoch index is an argument.
@functools.partial(jax.jit, static_argnames=("classification", "micro"), donate_argnums=1)
def _epoch_chunk(s: _Settings, state, keys, epoch, data, classification: bool, micro: int):
  one = functools.partial(_epoch, classification=classification, micro=micro)
  return jax.vmap(one, in_axes=(0, 0, 0, None, None))(s, state, keys, epoch, data)


def _check_args(points, spec, dataset, epochs, key, chunk) -> None:
  cond_point.check_point(points, spec)
  if np.ndim(points.values) != 2:
    raise ValueError(f"points: values {np.shape(points.values)}; expected a batch [B, P] (see stack_points)")
  if not isinstance(dataset, Dataset):
    raise TypeError(f"dataset: {type(dataset).__name__} given; expected a Dataset")
  if dataset.task not in TASKS or dataset.x_train.ndim != 2:
    raise ValueError(
      f"dataset: {dataset.name!r} is a {dataset.task} task with inputs {dataset.x_train.shape};"
      " expected classification or regression on flat features [n, D] (digits: kind='mlp')"
    )
  most = 2 ** int(spec.upper[cond_point.SHARED.index("log2_batch")])
  if dataset.x_train.shape[0] < most:
    raise ValueError(
      f"dataset: {dataset.name!r} has {dataset.x_train.shape[0]} training examples; the largest"
      f" batch, {most}, needs at least as many"
    )
  for name, v in (("epochs", epochs), ("chunk", chunk)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
      raise ValueError(f"{name}: {v!r}; expected an integer >= 1")
  typed = isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)
  if not (typed and key.shape == ()) and not (np.shape(key) == (2,) and np.asarray(key).dtype == np.uint32):
    raise ValueError(f"key: {key!r}; expected one jax.random key (typed, or raw uint32 [2])")


def _point_keys(points: cond_point.ConditionalPoint, spec: cond_point.ConditionalSpec, key) -> jax.Array:
  """[B, 3] keys (init, shuffle, dropout) per point, from `key` and the point's canonical key."""
  rows = [jax.tree.map(lambda a, b=b: a[b], points) for b in range(len(points.values))]
  digests = jnp.array([cond_point.key_digest(p, spec) for p in rows], jnp.uint32)
  return jax.vmap(lambda d: jax.random.split(jax.random.fold_in(key, d), 3))(digests)


def _best(val: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Errors [B] of each row's smallest finite validation error (earliest on ties), NaN if none."""
  finite = ~np.isnan(val)
  best = np.argmin(np.where(finite, val, np.inf), axis=1)
  rows = np.arange(len(val))
  ok = finite.any(axis=1)
  return np.where(ok, val[rows, best], np.nan), np.where(ok, test[rows, best], np.nan)


def train_points(
  points: cond_point.ConditionalPoint,
  spec: cond_point.ConditionalSpec,
  dataset: Dataset,
  *,
  epochs: int,
  key: jax.Array,
  chunk: int = 32,
) -> PointResults:
  """Trains every point of a batch (see the module docstring) and scores it by its best epoch.

  Points are trained `chunk` at a time (vmapped; the last chunk padded with copies of the last
  point), one epoch per call of a function compiled once per chunk size and data shapes.

  Args:
    points: a batch of points of `spec` (values, active [B, P]; `conditional.stack_points`).
    spec: `conditional_spec(max_depth)`.
    dataset: classification or regression on flat features, at least 128 training examples.
    epochs: passes over the training split.
    key: a jax random key; each point's randomness derives from it and the point's canonical key.
    chunk: the most points trained at once (memory: about 9 MB of parameters, Adam moments and
      gradient sums per point at max_depth 3).

  Returns:
    PointResults with [B] errors.
  """
  t0 = time.perf_counter()
  _check_args(points, spec, dataset, epochs, key, chunk)
  _, micro = _layout(spec)
  n_points, d_in = len(points.values), dataset.x_train.shape[1]
  classification = dataset.task == "classification"
  settings = _settings(points, spec, dataset.x_train.shape[0], d_in)
  keys = _point_keys(points, spec, key)
  data = tuple(jnp.asarray(a) for a in dataset[:6])
  size = min(chunk, n_points)
  val, test = [], []
  for start in range(0, n_points, size):
    rows = np.minimum(np.arange(start, start + size), n_points - 1)
    s = jax.tree.map(lambda a: jnp.asarray(a[rows]), settings)
    state = _init_chunk(s, keys[rows, 0], d_in, max(dataset.num_classes, 1))
    errors = []
    for epoch in range(epochs):
      state, e = _epoch_chunk(s, state, keys[rows, 1:], jnp.int32(epoch), data, classification, micro)
      errors.append(e)
    val.append(np.stack([np.asarray(e[0]) for e in errors], axis=1))
    test.append(np.stack([np.asarray(e[1]) for e in errors], axis=1))
  val_errors = np.concatenate(val)[:n_points].astype(np.float64)
  val_error, test_error = _best(val_errors, np.concatenate(test)[:n_points].astype(np.float64))
  return PointResults(val_error, test_error, val_errors, time.perf_counter() - t0)


def evaluate_point(
  point: cond_point.ConditionalPoint, spec: cond_point.ConditionalSpec, dataset: Dataset, *, epochs: int, key: jax.Array
) -> PointResults:
  """`train_points` of one point (values [P]); the results have B = 1."""
  cond_point.check_point(point, spec)
  if np.ndim(point.values) != 1:
    raise ValueError(f"point: values {np.shape(point.values)}; expected one point [P]")
  return train_points(cond_point.stack_points([point]), spec, dataset, epochs=epochs, key=key, chunk=1)


def _evaluate(dataset: str, epochs: int, data_seed: int, max_depth: int, point_json: dict, seed: int) -> TaskResult:
  """Task.evaluate of `conditional_task` (top level, so it pickles)."""
  spec = cond_point.conditional_spec(max_depth)
  point = cond_point.point_from_json(point_json, spec)
  data = train_task.load_dataset(dataset, "mlp", data_seed, "", "regression")
  r = evaluate_point(point, spec, data, epochs=epochs, key=jax.random.key(seed))
  return TaskResult(
    value=float(r.val_error[0]),
    test_value=float(r.test_error[0]),
    info={"val_errors": r.val_errors[0].tolist(), "seconds": r.seconds},
  )


def conditional_task(dataset: str, *, epochs: int, data_seed: int = 0, max_depth: int = 3) -> Task:
  """A Task that trains points of `conditional_space(max_depth=...)` given as their JSON.

  value: the best validation error (error rate, or MSE on standardised targets), goal "min";
  test_value: the test error after the same epoch. `seed` seeds initialisation, shuffles and
  dropout; the split depends on `data_seed` only.

  Args:
    dataset: "digits" (classification) or "diabetes" (regression).
    epochs: passes over the training split.
    data_seed: seed of the train/validation/test split.
    max_depth: the space's largest depth.
  """
  cond_point.conditional_spec(max_depth)  # fails here on a bad max_depth, not per trial
  if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 1:
    raise ValueError(f"epochs: {epochs!r}; expected an integer >= 1")
  data = train_task.load_dataset(dataset, "mlp", data_seed, "", "regression")
  return Task(
    name=f"conditional-{data.name}",
    goal="min",
    evaluate=functools.partial(_evaluate, dataset, int(epochs), data_seed, max_depth),
  )
