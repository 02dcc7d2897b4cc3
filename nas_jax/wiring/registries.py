"""`TASKS` and `EXECUTORS`: what a config's `task.name` and `executor` strings build."""

from __future__ import annotations

from typing import Any, Callable

from nas_jax.search.executors import Executor, InlineExecutor, ProcessExecutor
from nas_jax.search.population_executor import PopulationExecutor
from nas_jax.search.ray_executor import RayExecutor
from nas_jax.search.task import Task
from nas_jax.tasks import conditional_training, morph_task, synthetic, tabular, train_task, training

__all__ = ["TASKS", "EXECUTORS", "train_config_of"]


def _synthetic_task(c: Any, kind: str) -> Task:
  return synthetic.synthetic_task(c.function, delay_s=float(c.delay_s))


def train_config_of(c: Any) -> training.TrainConfig:
  """The `TrainConfig` of a config section with the task.train fields (patience optional)."""
  return training.TrainConfig(
    epochs=c.epochs,
    batch_size=c.batch_size,
    learning_rate=float(c.learning_rate),
    optimizer=c.optimizer,
    schedule=c.schedule,
    weight_decay=float(c.weight_decay),
    patience=c.get("patience", 0),
  )


def _train_task(c: Any, kind: str) -> Task:
  train_config = train_config_of(c)
  return train_task.train_task(
    c.dataset,
    kind,
    train_config,
    data_seed=c.data_seed,
    target=c.target,
    task=c.task_type,
    trainer=c.get("trainer", "specialised"),
  )


def _morph_train_task(c: Any, kind: str) -> Task:
  """Warm-started training; `task.weights_dir` is set from the workdir by `build_search` when empty."""
  return morph_task.morph_train_task(
    c.dataset, train_config_of(c), c.weights_dir, data_seed=c.data_seed, noise=c.morph_noise
  )


def _conditional_task(c: Any, kind: str) -> Task:
  return conditional_training.conditional_task(c.dataset, epochs=c.epochs, data_seed=c.data_seed, max_depth=c.max_depth)


def _nb201_task(c: Any, kind: str) -> Task:
  return tabular.nb201_task(c.path, c.dataset, c.report_metric)


# config.task.name -> builder(task section, space kind) -> Task
TASKS: dict[str, Callable[[Any, str], Task]] = {
  "synthetic": _synthetic_task,
  "train": _train_task,
  "nb201": _nb201_task,
  "morph_train": _morph_train_task,
  "conditional": _conditional_task,
}


# config.executor -> builder(config) -> Executor
EXECUTORS: dict[str, Callable[[Any], Executor]] = {
  "inline": lambda c: InlineExecutor(c.num_workers),
  "local": lambda c: ProcessExecutor(c.num_workers, timeout_s=c.eval_timeout_s or None),
  "ray": lambda c: RayExecutor(c.num_workers, address=c.ray_address, timeout_s=c.eval_timeout_s or None),
  # num_workers proposals at a time, trained together in this process (the padded mlp trainer)
  "population": lambda c: PopulationExecutor(c.num_workers),
}
