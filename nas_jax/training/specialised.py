"""Trains one architecture on a dataset and scores it by its best validation error (NASBOT Sec. 5; App. C.2).

The epoch and evaluation passes (`train_steps`) are compiled ahead of time, so compile time is
measured apart from training.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import kinds
from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture
from nas_jax.models import arch_net
from nas_jax.training import checkpoints, train_loop, train_steps, warm_start
from nas_jax.training.datasets import Dataset, input_spec
from nas_jax.training.train_config import TrainConfig, check_config, make_optimizer
from nas_jax.training.train_loop import EvalResult, result_of, stops

__all__ = ["check_match", "evaluate", "train_until"]

_MALLOC_TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None) if sys.platform.startswith("linux") else None  # glibc


def check_match(arch: Architecture, data: Dataset, config: TrainConfig) -> tuple[arch_net.Node, ...]:
  """The architecture must fit the data: its kind the input rank, its decision layer the task.

  Returns the architecture's layers (`arch_net.network_nodes`)."""
  if not isinstance(data, Dataset):
    raise TypeError(f"dataset: got {type(data).__name__}; expected a Dataset")
  nodes = arch_net.network_nodes(arch)
  shape = data.x_train.shape
  rank = kinds.of(arch).input_rank  # of one example
  if rank == 3 and len(shape) != 4:
    raise ValueError(
      f"dataset: {data.name!r} has inputs of shape {shape} (flat); a {arch.kind} architecture needs"
      " images [n, H, W, C] (load digits with kind='cnn', or use an mlp)"
    )
  if rank == 1 and len(shape) != 2:
    raise ValueError(
      f"dataset: {data.name!r} has inputs of shape {shape} (images); an mlp architecture needs"
      " flat features [n, D] (load digits with kind='mlp', or use a cnn)"
    )
  decisions = {n.label for n in nodes if n.role == labels_lib.Role.DECISION}
  want = "softmax" if data.task == "classification" else "linear"
  if decisions != {want}:
    raise ValueError(
      f"arch: decision layers {sorted(decisions)} do not fit dataset {data.name!r}, a {data.task}"
      f" task; it needs '{want}' decision layers"
    )
  if config.batch_size > shape[0]:
    raise ValueError(f"train_config.batch_size: {config.batch_size} exceeds the {shape[0]} training examples")
  return nodes


def _release_freed_memory() -> None:
  """Hands memory that glibc keeps after frees back to the OS (a no-op elsewhere): XLA frees much
  after compiling a pool CNN, which would otherwise stay in the worker's peak RSS."""
  if _MALLOC_TRIM is not None:
    _MALLOC_TRIM(0)


def evaluate(
  arch: Architecture,
  dataset: Dataset,
  train_config: TrainConfig,
  key: jax.Array,
  *,
  init_variables: Mapping[str, Any] | None = None,
  keep_variables: bool = False,
) -> EvalResult:
  """Trains `arch` on `dataset` and scores it by its minimum validation error over epochs.

  After every epoch the validation and test splits are evaluated together; the test error
  reported is the one of the best validation epoch (NASBOT App. C.2). Training stops early when
  `train_config.patience` epochs in a row fail to improve the validation loss. Deterministic for a
  given key (initialisation and every epoch's shuffle derive from it).

  Args:
    arch: one unbatched Architecture whose kind fits the data (cnn: images, mlp: vectors) and
      whose decision layers fit the task (softmax: classification, linear: regression).
    dataset: the data, from `datasets`.
    train_config: a TrainConfig.
    key: a jax PRNG key.
    init_variables: Flax variables {"params": ..., "batch_stats": ...} of exactly this network's
      shapes (e.g. morphed from a parent's `EvalResult.variables`) to start from instead of a
      random initialisation (warm start); the optimizer state starts fresh either way.
    keep_variables: return the variables of the best epoch in `EvalResult.variables`.

  Returns:
    An EvalResult; NaN errors (not an exception) when training diverges.

  Raises:
    ValueError / TypeError: a bad config, an architecture that does not fit the data, or
      `init_variables` that do not fit the network.
  """
  check_config(train_config)
  nodes = check_match(arch, dataset, train_config)
  result, _, _ = _train(
    arch.kind, nodes, dataset, train_config, key, train_config.epochs, init_variables, keep_variables
  )
  _release_freed_memory()  # a worker that evaluates many networks starts each one lean
  return result


def train_until(
  arch: Architecture,
  dataset: Dataset,
  train_config: TrainConfig,
  key: jax.Array,
  epochs: int,
  *,
  resume: checkpoints.Checkpoint | None = None,
  init_variables: Mapping[str, Any] | None = None,
) -> tuple[EvalResult, checkpoints.Checkpoint, int]:
  """The first `epochs` epochs of the run `evaluate(arch, dataset, train_config, key)` does, from
  scratch or continued from a checkpoint of the same run (multi-fidelity training).

  The schedule spans all `train_config.epochs`, and epoch k's shuffle derives from the key and k,
  so training to `epochs` is exactly the beginning of the full run, and a run continued from its
  checkpoint after e epochs gives what an uninterrupted one gives. The result scores the epochs
  1..`epochs` as `evaluate` does (`result_of`); its timings cover this call only.

  Args:
    arch, dataset, train_config, key: as for `evaluate`.
    epochs: an integer in [1, train_config.epochs]: the epochs the run has after this call.
    resume: a Checkpoint of this very run (same arch, data, config and key: the caller's to
      ensure). It is used when it has fewer than `epochs` epochs and its state fits the network;
      otherwise training starts from scratch. A run that early stopping ended (`stops`) is returned
      as it is, without training.
    init_variables: as for `evaluate`: the variables a run from scratch starts from (a continued
      run takes its state from `resume`).

  Returns:
    (result, checkpoint after the last epoch, epochs taken from `resume`: 0 from scratch).

  Raises:
    ValueError / TypeError: as `evaluate`, or `epochs` outside [1, train_config.epochs].
  """
  check_config(train_config)
  if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or not 1 <= epochs <= train_config.epochs:
    raise ValueError(f"epochs: {epochs!r}; expected an integer in [1, train_config.epochs={train_config.epochs}]")
  nodes = check_match(arch, dataset, train_config)
  if resume is not None and not 0 < resume.epochs < epochs:
    resume = None  # nothing to continue, or it went as far or further: its state cannot be rewound
  if resume is not None and stops(list(resume.records), train_config):
    return result_of(dataset.task, list(resume.records), 0.0, 0.0, 0.0), resume, resume.epochs
  result, trained, continued = _train(
    arch.kind, nodes, dataset, train_config, key, int(epochs), init_variables, resume=resume
  )
  checkpoint = checkpoints.capture(trained.state, trained.records[0])
  _release_freed_memory()
  return result, checkpoint, continued


def _train(
  kind: str,
  nodes: tuple[arch_net.Node, ...],
  dataset: Dataset,
  train_config: TrainConfig,
  key: jax.Array,
  epochs: int,
  init_variables: Mapping[str, Any] | None = None,
  keep_variables: bool = False,
  *,
  resume: checkpoints.Checkpoint | None = None,
) -> tuple[EvalResult, train_loop.Trained, int]:
  """`evaluate` (and `train_until`) after their checks: trains to `epochs`, continuing `resume`
  when its state fits. Returns the result, what `train_loop.train_epochs` returned and the epochs
  taken from `resume`."""
  model = arch_net.ArchNet(nodes=nodes, kind=kind, num_outputs=input_spec(dataset)[1])
  classification = dataset.task == "classification"
  steps = dataset.x_train.shape[0] // train_config.batch_size
  tx = make_optimizer(train_config, steps * train_config.epochs)
  init_key, shuffle_key = jax.random.split(key)
  x_train, y_train = jnp.asarray(dataset.x_train), jnp.asarray(dataset.y_train)
  splits = train_loop.eval_splits(dataset, train_config)

  t0 = time.perf_counter()
  x_one = x_train[:1]
  shapes = jax.eval_shape(functools.partial(model.init, train=False), init_key, x_one)
  warm = None if init_variables is None else warm_start.match_variables(init_variables, shapes)
  # Compiled from shapes before any parameter exists, so that XLA's compile-time memory is reused
  # for the parameters and optimizer moments instead of adding to them (peak RSS).
  abstract = jax.eval_shape(functools.partial(train_steps.initial_state, tx), shapes)
  apply = train_steps.flax_apply(model)
  epoch_fn = functools.partial(train_steps.train_epoch, apply, tx, classification, steps, train_config.batch_size)
  perm = lambda epoch: train_steps.epoch_order(shuffle_key, epoch, x_train.shape[0])
  # Donating the state lets XLA update parameters and optimizer moments in place.
  run_epoch = jax.jit(epoch_fn, donate_argnums=0).lower(abstract, x_train, y_train, perm(0)).compile()
  eval_fn = functools.partial(train_steps.eval_sums, apply, classification)
  run_eval = jax.jit(eval_fn).lower(abstract, splits.x, splits.y, splits.valid).compile()
  _release_freed_memory()
  state = None if resume is None else checkpoints.restore_state(abstract, resume.state)
  records = [] if state is None else list(resume.records)  # per epoch: (val error, val loss, test error)
  continued = len(records)  # 0 from scratch, also when `resume`'s state does not fit the network
  if state is None and warm is None:
    state = train_steps.initial_state(tx, arch_net.init_variables(model, init_key, x_one))
  elif state is None:  # jnp.array copies: the donated state must not alias the caller's arrays
    state = train_steps.initial_state(tx, jax.tree.map(lambda a: jnp.array(a, jnp.float32), warm))
  compile_seconds = time.perf_counter() - t0

  # Copies, not views: the state's buffers are donated to (and overwritten by) the next epoch.
  keep = lambda state, _: jax.tree.map(np.array, {"params": state.params, "batch_stats": state.batch_stats})
  trained = train_loop.train_epochs(
    lambda state, epoch: run_epoch(state, x_train, y_train, perm(epoch))[0],
    lambda state: [splits.record(*run_eval(state, splits.x, splits.y, splits.valid))],
    state,
    range(continued + 1, epochs + 1),
    [records],
    stop=lambda records: stops(records, train_config),
    keep=keep if keep_variables else None,
  )
  result = result_of(
    dataset.task, records, trained.train_seconds, trained.eval_seconds, compile_seconds, trained.kept[0]
  )
  return result, trained, continued
