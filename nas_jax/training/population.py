"""Trains populations of networks through one compiled program (a padded model under `jax.vmap`).

`specialised.evaluate` compiles a program per network. Here the networks are data (`padded_mlp`,
`padded_cnn`): P networks of one kind and padding train together, each with its own key, data
order and early stopping, through programs compiled once per (kind, padding, data shapes,
TrainConfig, P) in a process and reused by every later population of that shape. Each network's
result equals training it alone with the same key (the same initial kernels and shuffles as
`specialised.evaluate`, to float tolerance).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch.architecture import Architecture
from nas_jax.models import padded_model
from nas_jax.training import specialised, train_loop, train_steps
from nas_jax.training.datasets import Dataset, input_spec
from nas_jax.training.train_config import TrainConfig, check_config, make_optimizer

__all__ = ["train_population", "memory_limit"]


@functools.lru_cache(maxsize=16)
def _programs(kind, padding, num_outputs, classification, train_config, steps, population, data):
  """(run_epoch, run_eval, tx): the population's compiled epoch and evaluation, and its optimizer.

  data: the ShapeDtypeStructs of x_train [n, ...], y_train [n] and the evaluation batches x, y,
  valid [nb, b, ...]; the compiled programs take stacked states, nets and permutations (leading
  axis `population`).
  """
  model = padded_model.model_for(kind)
  tx = make_optimizer(train_config, steps * train_config.epochs)
  decision = "softmax" if classification else "linear"
  x_train, y_train, *evaluation = data
  input_shape, n = x_train.shape[1:], x_train.shape[0]

  def forward(net):
    return lambda params, batch_stats, x, train: model.apply(params, batch_stats, net, x, decision, train, padding)

  def epoch(state, net, x, y, perm):
    return train_steps.train_epoch(forward(net), tx, classification, steps, train_config.batch_size, state, x, y, perm)

  def evaluate(state, net, x, y, valid):
    return train_steps.eval_sums(forward(net), classification, state, x, y, valid)

  spec = lambda shape, dtype=jnp.float32: jax.ShapeDtypeStruct((population, *shape), dtype)
  stacked = lambda tree: jax.tree.map(lambda a: spec(a.shape, a.dtype), tree)
  params, stats = stacked(model.variable_shapes(padding, input_shape, num_outputs))
  initial = lambda p, s: train_steps.initial_state(tx, {"params": p, "batch_stats": s})
  state = jax.eval_shape(jax.vmap(initial), params, stats)
  net = stacked(model.net_shapes(padding, input_shape))
  # Donating the stacked state lets XLA update parameters and optimizer moments in place.
  run_epoch = jax.jit(jax.vmap(epoch, (0, 0, None, None, 0)), donate_argnums=0)
  run_epoch = run_epoch.lower(state, net, x_train, y_train, spec((n,), jnp.int32)).compile()
  run_eval = jax.jit(jax.vmap(evaluate, (0, 0, None, None, None))).lower(state, net, *evaluation).compile()
  return run_epoch, run_eval, tx


@functools.partial(jax.jit, static_argnames="n")
def _epoch_orders(shuffle_keys: jax.Array, epoch: int, n: int) -> jax.Array:
  """[P, n] int32: each network's `train_steps.epoch_order`, in one call: drawn eagerly one network
  at a time, they would add a dispatch per network to every epoch."""
  return jax.vmap(lambda k: train_steps.epoch_order(k, epoch, n))(shuffle_keys).astype(jnp.int32)


def memory_limit() -> int:
  """Bytes the default device can hold: its allocator's limit where it reports one (GPUs), else
  the host's physical memory (CPU)."""
  stats = jax.devices()[0].memory_stats() or {}
  return int(stats.get("bytes_limit") or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _check_memory(model, padding, input_shape, num_outputs: int, population: int) -> None:
  """ValueError, before anything is allocated, when the population's parameters, gradients and
  two optimizer moments (4 float32 copies) exceed `memory_limit()`: a pool CNN's padding alone
  takes gigabytes, and running out would kill the worker instead of failing the trial."""
  params = jax.tree.leaves(model.variable_shapes(padding, input_shape, num_outputs)[0])
  need = 4 * 4 * population * sum(int(np.prod(a.shape)) for a in params)
  have = memory_limit()
  if need > have:
    raise ValueError(
      f"trainer 'padded': {population} network(s) in padding {_brief(padding)} need {need / 2**30:.1f} GiB for"
      f" parameters, gradients and optimizer moments; this device has {have / 2**30:.1f} GiB (use trainer"
      " 'specialised' or 'auto')"
    )


def _brief(padding) -> dict[str, int]:
  """A padding's scalar fields, for messages (a CNN's per-slot ones are long)."""
  return {k: v for k, v in padding._asdict().items() if not isinstance(v, tuple)}


def _stack(trees: Sequence[Any]) -> Any:
  return jax.tree.map(lambda *leaves: jnp.stack([jnp.asarray(a) for a in leaves]), *trees)


def train_population(
  archs: Sequence[Architecture],
  dataset: Dataset,
  train_config: TrainConfig,
  keys: Sequence[jax.Array],
  *,
  padding: Any = None,
  keep_variables: bool = False,
) -> list[train_loop.EvalResult]:
  """Trains networks together and scores each by its best validation error, as `specialised.evaluate`.

  Args:
    archs: P unbatched Architectures of one kind with a padded model (`padded_model.KINDS`)
      that fit the dataset (`specialised.check_match`).
    dataset: the data.
    train_config: a TrainConfig, shared by the population.
    keys: P jax PRNG keys; network i's initialisation and shuffles derive from keys[i] exactly as
      in `specialised.evaluate(archs[i], ..., keys[i])`.
    padding: the padding to run them in (`padded_mlp.Padding` or `cnn_padding.Padding`); the
      model's `padding_for(archs)` when None.
    keep_variables: return each network's best-epoch `ArchNet` variables in `EvalResult.variables`.

  Returns:
    P EvalResults. Their train, eval and compile seconds are each network's share (1/P) of the
    population's; compile seconds are 0 when this process already compiled the programs.

  Raises:
    ValueError / TypeError: a bad config, networks of mixed kinds or of a kind with no padded
      model, a network that does not fit the data or the padding, or keys that do not match the
      networks.
  """
  check_config(train_config)
  archs = list(archs)
  if not archs or len(keys) != len(archs):
    raise ValueError(
      f"train_population: {len(archs)} networks and {len(keys)} keys; expected one key per network (>= 1)"
    )
  kinds = sorted({getattr(a, "kind", type(a).__name__) for a in archs})
  if len(kinds) != 1:
    raise ValueError(f"train_population: networks of kinds {kinds}; a population is of one kind")
  model = padded_model.model_for(kinds[0])
  for arch in archs:
    specialised.check_match(arch, dataset, train_config)
  input_shape, num_outputs = input_spec(dataset)
  padding = model.padding_for(archs, input_shape) if padding is None else padding
  _check_memory(model, padding, input_shape, num_outputs, len(archs))
  classification = dataset.task == "classification"
  encoded = [model.encode(a, padding, input_shape, num_outputs) for a in archs]
  nets, layouts = _stack([e[0] for e in encoded]), [e[1] for e in encoded]
  steps = dataset.x_train.shape[0] // train_config.batch_size
  splits = train_loop.eval_splits(dataset, train_config)
  # The dtypes the programs were compiled for, whatever the data's (and jax_enable_x64).
  y_dtype = jnp.int32 if classification else jnp.float32
  x_train, y_train = jnp.asarray(dataset.x_train, jnp.float32), jnp.asarray(dataset.y_train, y_dtype)
  x_eval, y_eval, valid = (jnp.asarray(a, t) for a, t in zip(splits[:3], (jnp.float32, y_dtype, jnp.float32)))

  t0 = time.perf_counter()
  data = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in (x_train, y_train, x_eval, y_eval, valid))
  run_epoch, run_eval, tx = _programs(
    kinds[0], padding, num_outputs, classification, train_config, steps, len(archs), data
  )
  compile_s = time.perf_counter() - t0
  split = [jax.random.split(k) for k in keys]
  variables = [model.init(k[0], lay, padding, input_shape, num_outputs) for k, lay in zip(split, layouts)]
  state = _stack([train_steps.initial_state(tx, {"params": p, "batch_stats": s}) for p, s in variables])
  n = x_train.shape[0]
  shuffle_keys = jnp.stack([k[1] for k in split])

  def evaluate(state):
    loss, err = (np.asarray(v) for v in run_eval(state, nets, x_eval, y_eval, valid))
    return [splits.record(loss[i], err[i]) for i in range(len(archs))]

  def keep(state, i):
    return model.to_specialised(*jax.tree.map(lambda a: np.array(a[i]), (state.params, state.batch_stats)), layouts[i])

  trained = train_loop.train_epochs(
    lambda state, epoch: run_epoch(state, nets, x_train, y_train, _epoch_orders(shuffle_keys, epoch, n))[0],
    evaluate,
    state,
    range(1, train_config.epochs + 1),
    [[] for _ in archs],
    stop=lambda records: train_loop.stops(records, train_config),
    keep=keep if keep_variables else None,
  )
  share = 1.0 / len(archs)
  return [
    train_loop.result_of(
      dataset.task, r, trained.train_seconds * share, trained.eval_seconds * share, compile_s * share, v
    )
    for r, v in zip(trained.records, trained.kept)
  ]
