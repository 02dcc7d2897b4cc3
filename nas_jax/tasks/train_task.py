"""Training as a search Task: `training.specialised.evaluate` scores an architecture by its best
validation metric (accuracy, maximised, for classification; MSE, minimised, for regression).

With fidelities (epochs), a checkpoint of a network's training state lets a later call with the
same seed and more epochs train only the epochs missing (`specialised.train_until`).
"""

from __future__ import annotations

import functools
import json
import math
import os
from typing import NamedTuple

import jax
import numpy as np

from nas_jax.arch import kinds
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.morph_point import weights_id
from nas_jax.search.task import Task, TaskResult
from nas_jax.tasks.synthetic import PERMISSIVE_LIMITS
from nas_jax.training import checkpoints, datasets, specialised, trainer_choice
from nas_jax.training.train_config import TrainConfig, check_config
from nas_jax.training.train_loop import EvalResult

__all__ = ["train_task", "TrainEvaluate", "task_result", "load_dataset"]


@functools.lru_cache(maxsize=4)
def load_dataset(name: str, kind: str, data_seed: int, target: str, task: str) -> datasets.Dataset:
  """Loads a dataset once per worker process (workers evaluate many architectures)."""
  return datasets.get_dataset(name, kind=kind, seed=data_seed, target=target, task=task)


class TrainEvaluate(NamedTuple):
  """Task.evaluate of `train_task`: `(arch_json, seed[, fidelity]) -> TaskResult` (a NamedTuple
  of plain values, so it pickles into workers). `seed` seeds initialisation and shuffling; the data
  split depends on `data_seed` only, so every trial sees the same split. `many` evaluates a batch
  (for `PopulationExecutor`): with the padded trainer, networks of one padding train together.
  `memory` is what its trainer choice remembers (`trainer_choice.TrainerMemory`); `fidelities` and
  `checkpoint_dir` are `train_task`'s."""

  name: str
  kind: str
  train_config: TrainConfig
  data_seed: int
  target: str
  task: str
  trainer: str
  memory: trainer_choice.TrainerMemory
  fidelities: tuple[float, ...] = ()
  checkpoint_dir: str = ""

  def _read(self, arch_json: dict) -> tuple[Architecture, datasets.Dataset]:
    arch = Architecture.from_json(arch_json, limits=PERMISSIVE_LIMITS)
    if kinds.of(arch) != kinds.get(self.kind):
      raise ValueError(f"train task: a {arch.kind} architecture; this task trains {self.kind} networks")
    return arch, load_dataset(self.name, self.kind, self.data_seed, self.target, self.task)

  def __call__(self, arch_json: dict, seed: int, fidelity: float | None = None) -> TaskResult:
    """Trains the network of `arch_json` with `seed`: all `train_config.epochs`, or with a
    `fidelity` (a whole number of epochs in [1, epochs]) the first `fidelity` epochs of that run,
    continued from its checkpoint when `checkpoint_dir` holds one. A call with a fidelity, or on
    a task with fidelities, trains with the specialised program whatever the trainer, and its info
    adds "continued_from" (the epochs taken from a checkpoint; 0 from scratch)."""
    if fidelity is not None and not _is_epochs(fidelity, self.train_config.epochs):
      epochs = self.train_config.epochs
      raise ValueError(
        f"fidelity: {fidelity!r}; expected a whole number of epochs in [1, train_config.epochs={epochs}]"
      )
    arch, data = self._read(arch_json)
    if fidelity is None and not self.fidelities:
      key = jax.random.key(seed)
      result, chosen = trainer_choice.evaluate(self.trainer, arch, data, self.train_config, key, self.memory)
      return task_result(result, data, trainer=chosen)
    epochs = self.train_config.epochs if fidelity is None else int(fidelity)
    path, meta = self._checkpoint_path(arch, seed), self._run_meta(arch, seed)
    resume = checkpoints.load(path, meta) if path else None
    result, checkpoint, continued = specialised.train_until(
      arch, data, self.train_config, jax.random.key(seed), epochs, resume=resume
    )
    # The full fidelity has no continuation; a checkpoint that was just returned is already stored.
    if path and epochs < self.train_config.epochs and result.epochs > continued:
      checkpoints.save(path, checkpoint, meta)
    return task_result(result, data, trainer="specialised", continued_from=continued)

  def _checkpoint_path(self, arch: Architecture, seed: int) -> str:
    """Where the checkpoint of (arch, seed) lives; "" without a checkpoint_dir."""
    if not self.checkpoint_dir:
      return ""
    return os.path.join(self.checkpoint_dir, f"{weights_id(arch.to_json())}-{int(seed)}.msgpack")

  def _run_meta(self, arch: Architecture, seed: int) -> str:
    """What makes a checkpoint this run's: the network, seed, data and training config, as JSON."""
    data = [self.name, self.kind, self.data_seed, self.target, self.task]
    run = {"arch": arch.to_json(), "seed": int(seed), "data": data, "train_config": self.train_config._asdict()}
    return json.dumps(run, sort_keys=True)

  def many(self, calls: list[tuple]) -> list[TaskResult]:
    """The results of [(arch_json, seed) or (arch_json, seed, fidelity), ...], in order: with
    trainer "padded", the networks of each group (`trainer_choice.groups`, by the costs `memory`
    measured) train as one population in the padding of them all, each as if alone
    (`trainer_choice.train_group`);
    with another trainer, or fidelities, each trains as `__call__` trains it."""
    if self.trainer != "padded" or self.fidelities or any(len(c) > 2 and c[2] is not None for c in calls):
      return [self(*c) for c in calls]
    read = [self._read(c[0]) for c in calls]
    results: list[TaskResult | None] = [None] * len(calls)
    data = read[0][1]
    costs = self.memory.costs(self.kind)
    for members in trainer_choice.groups([arch for arch, _ in read], data, self.train_config, costs):
      archs, keys = [read[i][0] for i in members], [jax.random.key(calls[i][1]) for i in members]
      trained = trainer_choice.train_group(archs, data, self.train_config, keys, self.memory)
      for i, r in zip(members, trained):
        results[i] = task_result(r, data, trainer="padded", population=len(members))
    return results


def _is_epochs(f, epochs: int) -> bool:
  """Whether `f` is a whole number (int or float) of epochs in [1, epochs]."""
  number = isinstance(f, (int, float, np.integer, np.floating)) and not isinstance(f, (bool, np.bool_))
  return number and math.isfinite(f) and f == int(f) and 1 <= f <= epochs


def _check_fidelities(fidelities, epochs: int) -> None:
  """ValueError naming `fidelities` unless they are whole numbers of epochs >= 1, strictly
  increasing, ending at `epochs` (or empty)."""
  if not isinstance(fidelities, (tuple, list)) or not all(_is_epochs(f, epochs) for f in fidelities):
    raise ValueError(
      f"fidelities: {fidelities!r}; expected whole numbers of epochs in [1, train_config.epochs={epochs}]"
    )
  if any(a >= b for a, b in zip(fidelities, fidelities[1:])):
    raise ValueError(f"fidelities: {fidelities!r}; expected them strictly increasing")
  if fidelities and fidelities[-1] != epochs:
    raise ValueError(f"fidelities: {fidelities!r}; the last must be the full fidelity, train_config.epochs={epochs}")


def task_result(r: EvalResult, data: datasets.Dataset, **extra) -> TaskResult:
  """The TaskResult of a training run: accuracies (classification) or MSEs (regression), with the
  run's epochs and timings (and `extra`) as info, and its learning curve ((1.0, metric after
  epoch 1), ..., (epochs trained, ...)) in the same units (NaN where an epoch diverged)."""
  classification = data.task == "classification"
  metric = (lambda e: 1.0 - e) if classification else (lambda e: e)
  info = {
    "best_epoch": r.best_epoch,
    "epochs": r.epochs,
    "train_seconds": r.train_seconds,
    "eval_seconds": r.eval_seconds,
    "compile_seconds": r.compile_seconds,
    "val_errors": list(r.val_errors),
    **extra,
  }
  curve = tuple((float(epoch), metric(e)) for epoch, e in enumerate(r.val_errors, start=1))
  return TaskResult(value=metric(r.val_error), test_value=metric(r.test_error), info=info, curve=curve)


def train_task(
  dataset: str,
  kind: str,
  train_config: TrainConfig,
  *,
  data_seed: int = 0,
  target: str = "",
  task: str = "regression",
  trainer: str = "specialised",
  fidelities: tuple[float, ...] = (),
  checkpoint_dir: str = "",
) -> Task:
  """A Task that trains each architecture on `dataset` and returns its best validation metric.

  Classification: value = validation accuracy, test_value = test accuracy, goal "max".
  Regression: value = validation MSE (standardised targets), test_value = test MSE, goal "min".
  The test metric belongs to the parameters of the epoch with the best validation metric.

  Args:
    dataset: "digits", "diabetes", or a .csv/.npz table path (`datasets.get_dataset`).
    kind: "cnn" or "mlp"; the architectures' kind (and how digits are shaped).
    train_config: a `TrainConfig`.
    data_seed: seed of the train/validation/test split.
    target, task: for tables only: the target column and "regression" or "classification".
    trainer: "specialised" (a program compiled per network), "padded" (networks through one
      program per padding, `population`) or "auto" (`trainer_choice.choose`); the info of each
      result names the trainer used.
    fidelities: epochs a network may be evaluated at, e.g. (1, 3, 9): whole numbers >= 1,
      strictly increasing, the last `train_config.epochs`; () for full runs only. Training to f
      epochs is the first f epochs of the full run (the schedule spans all epochs); the value at
      f is the best over epochs 1..f. Trained with the specialised program ("auto" too; not "padded").
    checkpoint_dir: with fidelities, where a network trained below the full fidelity leaves its
      training state, so that the same (architecture, seed) at a higher fidelity trains only the
      epochs missing; "" keeps none (each fidelity trains from scratch).

  Raises:
    ValueError / TypeError for an unknown dataset, a bad kind, a bad train_config, bad fidelities
    or a bad checkpoint_dir.
  """
  if kind not in ("cnn", "mlp"):
    raise ValueError(f"train_task: kind={kind!r}; allowed: cnn, mlp")
  check_config(train_config)
  if trainer not in trainer_choice.allowed(kind):
    allowed = ", ".join(trainer_choice.allowed(kind))
    raise ValueError(f"train_task: trainer={trainer!r}; for {kind} networks choose one of: {allowed}")
  _check_fidelities(fidelities, train_config.epochs)
  if fidelities and trainer == "padded":
    raise ValueError(f"fidelities: {fidelities!r} need the specialised trainer; trainer='padded' trains full runs only")
  if not isinstance(checkpoint_dir, str):
    raise TypeError(f"checkpoint_dir: {checkpoint_dir!r} is a {type(checkpoint_dir).__name__}; expected a path or ''")
  data = load_dataset(dataset, kind, data_seed, target, task)  # fails here on a bad name, not per trial
  goal = "max" if data.task == "classification" else "min"
  fidelities, memory = tuple(float(f) for f in fidelities), trainer_choice.TrainerMemory()
  return Task(
    name=f"train-{data.name}-{kind}",
    goal=goal,
    evaluate=TrainEvaluate(
      dataset, kind, train_config, data_seed, target, task, trainer, memory, fidelities, checkpoint_dir
    ),
    fidelities=fidelities,
  )
