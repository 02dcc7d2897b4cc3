"""Training as a search Task: `nas_jax.tasks.training.evaluate` scores an architecture by its best
validation metric (accuracy, maximised, for classification; MSE, minimised, for regression).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax

from nas_jax.arch.architecture import Architecture
from nas_jax.search.task import Task, TaskResult
from nas_jax.tasks import datasets, padded_mlp, padded_training, trainers, training
from nas_jax.tasks.synthetic import PERMISSIVE_LIMITS

__all__ = ["train_task", "TrainEvaluate", "task_result", "load_dataset"]


@functools.lru_cache(maxsize=4)
def load_dataset(name: str, kind: str, data_seed: int, target: str, task: str) -> datasets.Dataset:
  """Loads a dataset once per worker process (workers evaluate many architectures)."""
  return datasets.get_dataset(name, kind=kind, seed=data_seed, target=target, task=task)


class TrainEvaluate(NamedTuple):
  """Task.evaluate of `train_task`: `(arch_json, seed) -> TaskResult` (a NamedTuple of plain
  values, so it pickles into workers). `seed` seeds initialisation and shuffling; the data split
  depends on `data_seed` only, so every trial sees the same split. `many` evaluates a batch (for
  `PopulationExecutor`): with the padded trainer, mlp networks of one padding train together."""

  name: str
  kind: str
  train_config: training.TrainConfig
  data_seed: int
  target: str
  task: str
  trainer: str

  def _read(self, arch_json: dict) -> tuple[Architecture, datasets.Dataset]:
    arch = Architecture.from_json(arch_json, limits=PERMISSIVE_LIMITS)
    if arch.kind != self.kind:
      raise ValueError(f"train task: a {arch.kind} architecture; this task trains {self.kind} networks")
    return arch, load_dataset(self.name, self.kind, self.data_seed, self.target, self.task)

  def __call__(self, arch_json: dict, seed: int) -> TaskResult:
    arch, data = self._read(arch_json)
    result, chosen = trainers.evaluate(self.trainer, arch, data, self.train_config, jax.random.key(seed))
    return task_result(result, data, trainer=chosen)

  def many(self, calls: list[tuple[dict, int]]) -> list[TaskResult]:
    """The results of [(arch_json, seed), ...], in order: with trainer "padded", the mlp networks
    of each padding (`padded_mlp.padding_for`) train as one population, each as if alone
    (`padded_training.train_population`); with another trainer each trains as `__call__` trains it."""
    if self.trainer != "padded":
      return [self(*c) for c in calls]
    read = [self._read(arch_json) for arch_json, _ in calls]
    groups: dict[padded_mlp.Padding, list[int]] = {}
    for i, (arch, _) in enumerate(read):
      groups.setdefault(padded_mlp.padding_for([arch]), []).append(i)
    results: list[TaskResult | None] = [None] * len(calls)
    data = read[0][1]
    for padding, members in groups.items():
      archs, keys = [read[i][0] for i in members], [jax.random.key(calls[i][1]) for i in members]
      trained = padded_training.train_population(archs, data, self.train_config, keys, padding=padding)
      for i, r in zip(members, trained):
        results[i] = task_result(r, data, trainer="padded", population=len(members))
    return results


def task_result(r: training.EvalResult, data: datasets.Dataset, **extra) -> TaskResult:
  """The TaskResult of a training run: accuracies (classification) or MSEs (regression), with the
  run's epochs and timings (and `extra`) as info."""
  info = {
    "best_epoch": r.best_epoch,
    "epochs": r.epochs,
    "train_seconds": r.train_seconds,
    "eval_seconds": r.eval_seconds,
    "compile_seconds": r.compile_seconds,
    "val_errors": list(r.val_errors),
    **extra,
  }
  if data.task == "classification":
    return TaskResult(value=1.0 - r.val_error, test_value=1.0 - r.test_error, info=info)
  return TaskResult(value=r.val_error, test_value=r.test_error, info=info)


def train_task(
  dataset: str,
  kind: str,
  train_config: training.TrainConfig,
  *,
  data_seed: int = 0,
  target: str = "",
  task: str = "regression",
  trainer: str = "specialised",
) -> Task:
  """A Task that trains each architecture on `dataset` and returns its best validation metric.

  Classification: value = validation accuracy, test_value = test accuracy, goal "max".
  Regression: value = validation MSE (standardised targets), test_value = test MSE, goal "min".
  The test metric belongs to the parameters of the epoch with the best validation metric.

  Args:
    dataset: "digits", "diabetes", or a .csv/.npz table path (`datasets.get_dataset`).
    kind: "cnn" or "mlp"; the architectures' kind (and how digits are shaped).
    train_config: a `training.TrainConfig`.
    data_seed: seed of the train/validation/test split.
    target, task: for tables only: the target column and "regression" or "classification".
    trainer: "specialised" (a program compiled per network), "padded" (mlp networks through one
      program per padding, `padded_training`) or "auto" (`trainers.choose`); the info of each
      result names the trainer used.

  Raises:
    ValueError / TypeError for an unknown dataset, a bad kind or a bad train_config.
  """
  if kind not in ("cnn", "mlp"):
    raise ValueError(f"train_task: kind={kind!r}; allowed: cnn, mlp")
  if not isinstance(train_config, training.TrainConfig):
    raise TypeError(f"train_task: train_config is a {type(train_config).__name__}; expected a TrainConfig")
  if trainer not in trainers.allowed(kind):
    allowed = ", ".join(trainers.allowed(kind))
    raise ValueError(f"train_task: trainer={trainer!r}; for {kind} networks choose one of: {allowed}")
  data = load_dataset(dataset, kind, data_seed, target, task)  # fails here on a bad name, not per trial
  goal = "max" if data.task == "classification" else "min"
  return Task(
    name=f"train-{data.name}-{kind}",
    goal=goal,
    evaluate=TrainEvaluate(dataset, kind, train_config, data_seed, target, task, trainer),
  )
