"""Trains many points of the conditional space at once: the padded chain MLP (`chain_mlp`),
vmapped over points, through the one epoch loop (`train_loop`).

Optimiser: Adam (optax defaults) with each point's step size. Batch size b: b/16 micro-batches of
16 (the smallest batch) are accumulated into one Adam step of b examples, the same gradient as one
batch of b. An epoch is a fresh permutation, cut into n_train // b steps (the remainder dropped),
so each point does (n_train // b) * (b / 16) micro-steps; the scan runs n_train // 16 of them for
every point and the ones past a point's count do nothing. After every epoch each point's
validation and test error are measured (error rate, or MSE on standardised targets); a point
scores its best validation epoch's. Its randomness (initialisation, shuffles, dropout) derives
from the key and its canonical key, so a point trains the same whichever batch it is in.
`final_fit_conditional` trains one point so for its final training and keeps its parameters.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from nas_jax.arch import conditional_point as cond_point
from nas_jax.models import chain_mlp, network_costs
from nas_jax.training import train_loop, train_steps
from nas_jax.training.datasets import TASKS, Dataset, input_spec
from nas_jax.training.final_fit import FinalFit
from nas_jax.training.saved_model import ModelSpec

__all__ = ["PointResults", "train_points", "evaluate_point", "final_fit_conditional"]

_F32 = jnp.float32
_ADAM = optax.scale_by_adam()


class PointResults(NamedTuple):
  """What `train_points` returns; errors are NaN where training diverged.

  Attributes:
    val_error: [B] float64, the smallest validation error over epochs (error rate or MSE).
    test_error: [B] float64, the test error after that epoch.
    val_errors: [B, epochs] float64, the validation error after each epoch.
    seconds: wall time of the call, compilation included.
    test_errors: [B, epochs] float64, the test error after each epoch.
    params: with `keep_params`, each point's `chain_mlp` parameters after the last epoch (host
      numpy, leading axis B); else None.
  """

  val_error: np.ndarray
  test_error: np.ndarray
  val_errors: np.ndarray
  seconds: float
  test_errors: np.ndarray
  params: Any = None


def _losses(params, s: chain_mlp.Settings, x, y, key, classification: bool) -> tuple[jax.Array, jax.Array]:
  """One point's per-example (loss, error) on inputs x [m, d] and targets y [m]; dropout when a key
  is given."""
  out = chain_mlp.forward(params, s, x, key)
  return train_steps.example_losses(jax.nn.log_softmax(out) if classification else out[:, 0], y, classification)


def _loss(params, s: chain_mlp.Settings, x, y, key, classification: bool) -> jax.Array:
  """Mean loss of a micro-batch plus each active layer's L2 term."""
  data = _losses(params, s, x, y, key, classification)[0].mean()
  l2 = sum(s.l2[i] * s.layer_on[i] * jnp.sum(jnp.square(w)) for i, w in enumerate(params["kernels"][:-1]))
  return data + l2


def _epoch(s: chain_mlp.Settings, state, keys, epoch, data, classification: bool, micro: int):
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
  error = lambda xs, ys: _losses(params, s, xs, ys, None, classification)[1].mean()
  return (params, opt), (error(x_val, y_val), error(x_test, y_test))


@functools.partial(jax.jit, static_argnames=("d_in", "n_out"))
def _init_chunk(s: chain_mlp.Settings, keys: jax.Array, d_in: int, n_out: int):
  """The points' (params, Adam state), leading axis B."""
  params = jax.vmap(chain_mlp.init_params, in_axes=(0, 0, None, None))(s, keys, d_in, n_out)
  return params, jax.vmap(_ADAM.init)(params)


# Compiled once per (chunk size, data shapes, task): the epoch index is an argument.
@functools.partial(jax.jit, static_argnames=("classification", "micro"), donate_argnums=1)
def _epoch_chunk(s: chain_mlp.Settings, state, keys, epoch, data, classification: bool, micro: int):
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


def train_points(
  points: cond_point.ConditionalPoint,
  spec: cond_point.ConditionalSpec,
  dataset: Dataset,
  *,
  epochs: int,
  key: jax.Array,
  chunk: int = 32,
  keep_params: bool = False,
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
    chunk: the most points trained at once (memory: each point holds its parameters, Adam
      moments and gradient sums).
    keep_params: return each point's parameters after the last epoch (`PointResults.params`).

  Returns:
    PointResults with [B] errors.
  """
  t0 = time.perf_counter()
  _check_args(points, spec, dataset, epochs, key, chunk)
  _, micro = chain_mlp.layout(spec)
  n_points, d_in = len(points.values), dataset.x_train.shape[1]
  classification = dataset.task == "classification"
  settings = chain_mlp.settings(points, spec, dataset.x_train.shape[0], d_in)
  keys = _point_keys(points, spec, key)
  data = tuple(jnp.asarray(a) for a in dataset[:6])
  size = min(chunk, n_points)
  records: list[list[train_loop.Record]] = []
  kept = []  # with keep_params, each chunk's params after its last epoch
  for start in range(0, n_points, size):
    rows = np.minimum(np.arange(start, start + size), n_points - 1)
    s = jax.tree.map(lambda a: jnp.asarray(a[rows]), settings)
    state = _init_chunk(s, keys[rows, 0], d_in, input_spec(dataset)[1])
    # The state carries the errors of the epoch just trained, which its jitted epoch measured.
    run_epoch = lambda state, epoch, s=s, rows=rows: _epoch_chunk(
      s, state[0], keys[rows, 1:], jnp.int32(epoch), data, classification, micro
    )
    evaluate = lambda state: [(float(v), math.nan, float(t)) for v, t in zip(*map(np.asarray, state[1]))]
    trained = train_loop.train_epochs(run_epoch, evaluate, (state, None), range(epochs), [[] for _ in rows])
    records += trained.records
    if keep_params:  # the state is ((params, Adam state), errors)
      kept.append(jax.device_get(trained.state[0][0]))
  results = [train_loop.result_of(dataset.task, r, 0.0, 0.0, 0.0) for r in records[:n_points]]
  params = jax.tree.map(lambda *a: np.concatenate(a)[:n_points], *kept) if keep_params else None
  return PointResults(
    np.array([r.val_error for r in results]),
    np.array([r.test_error for r in results]),
    np.array([r.val_errors for r in results]),
    time.perf_counter() - t0,
    np.array([[r[2] for r in rec] for rec in records[:n_points]], np.float64),
    params,
  )


def evaluate_point(
  point: cond_point.ConditionalPoint,
  spec: cond_point.ConditionalSpec,
  dataset: Dataset,
  *,
  epochs: int,
  key: jax.Array,
  keep_params: bool = False,
) -> PointResults:
  """`train_points` of one point (values [P]; `stack_points` refuses a batch); the results have B = 1."""
  return train_points(
    cond_point.stack_points([point]), spec, dataset, epochs=epochs, key=key, chunk=1, keep_params=keep_params
  )


def final_fit_conditional(
  point_json: dict,
  data: Dataset,
  epochs: int,
  key: jax.Array,
  *,
  checkpoint_path: str = "",
  init_variables: Any = None,
  max_depth: int = 3,
) -> FinalFit:
  """Trains one conditional point (its own learning rate, batch size, dropout and L2) for all
  `epochs` on `data`'s training split, as `train_points` trains it, and scores it on the test
  split after the last epoch. Deterministic for `key`.

  Args:
    point_json: the point as the search journal holds it (`point_to_json`).
    data: the final split (`final_fit.merge_train_val`), flat features [n, D].
    epochs: training epochs, >= 1.
    key: a jax PRNG key.
    checkpoint_path: accepted for the common signature; a chain MLP trains in seconds to minutes,
      so a killed run is rerun from the start (the same key gives the same result).
    init_variables: must be None: conditional points train from scratch.
    max_depth: the search space's `conditional_spec(max_depth)`.

  Returns:
    A FinalFit: test accuracy (classification) or MSE (regression); NaN when training diverged.
  """
  del checkpoint_path  # a rerun with the same key repeats the run exactly
  t0 = time.perf_counter()
  if init_variables is not None:
    raise ValueError("init_variables: conditional points train from scratch; pass None")
  spec = cond_point.conditional_spec(max_depth)
  point = cond_point.point_from_json(point_json, spec)
  result = evaluate_point(point, spec, data, epochs=epochs, key=key, keep_params=True)
  error = float(result.test_errors[0, -1])
  input_shape, num_outputs = input_spec(data)
  classification = data.task == "classification"
  arch = cond_point.to_architecture(point, spec, "softmax" if classification else "linear")
  return FinalFit(
    (1.0 - error if classification else error) if math.isfinite(error) else math.nan,
    {"params": jax.tree.map(lambda a: np.asarray(a[0]), result.params)},
    ModelSpec("conditional", point_json, input_shape, data.task, num_outputs, {"max_depth": max_depth}),
    network_costs.network_costs(arch, input_shape, num_outputs).params,
    time.perf_counter() - t0,
  )
