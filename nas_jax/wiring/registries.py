"""`TASKS`, `COSTS` and `EXECUTORS`: what a config's `task.name` and `executor` strings build."""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Any, Callable

from nas_jax.search.executors import RETRIES, Executor, InlineExecutor
from nas_jax.search.population_executor import PopulationExecutor
from nas_jax.search.process_executor import ProcessExecutor
from nas_jax.search.ray_executor import RayExecutor
from nas_jax.search.simulated_executor import SimulatedExecutor
from nas_jax.search.task import Task
from nas_jax.spaces.constrained import METRICS
from nas_jax.tasks import conditional_task, cost_task, morph_task, synthetic, tabular, train_task
from nas_jax.training.datasets import input_spec
from nas_jax.training.train_config import TrainConfig

__all__ = ["TASKS", "COSTS", "EXECUTORS", "train_config_of", "fidelities_of"]

# Synthetic tasks train nothing; their networks are costed on the shapes of the bundled data
# they stand for: digits images (8x8x1, 10 classes) for cnns, diabetes' 10 features for mlps.
SYNTHETIC_SHAPES = MappingProxyType({"cnn": ((8, 8, 1), 10), "mlp": ((10,), 1)})


def fidelities_of(c: Any) -> tuple[float, ...]:
  """The fidelities of a task section: `task.fidelities`, numbers joined by commas ("12,200",
  "1,3,9"), as floats; () when unset or empty. ValueError naming the field for a non-number."""
  text = c.get("fidelities", "") if hasattr(c, "get") else ""
  if not isinstance(text, str):
    raise ValueError(f"config.task.fidelities: {text!r}; expected numbers joined by commas, e.g. '1,3,9'")
  try:
    return tuple(float(t) for t in text.split(",") if t.strip())
  except ValueError:
    raise ValueError(f"config.task.fidelities: {text!r}; expected numbers joined by commas, e.g. '1,3,9'") from None


def _synthetic_task(c: Any, kind: str) -> Task:
  return synthetic.synthetic_task(c.function, delay_s=float(c.delay_s), fidelities=fidelities_of(c))


def train_config_of(c: Any) -> TrainConfig:
  """The `TrainConfig` of a config section with the task.train fields (patience optional)."""
  return TrainConfig(
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
    fidelities=fidelities_of(c),
    checkpoint_dir=c.get("checkpoint_dir", ""),
  )


def _morph_train_task(c: Any, kind: str) -> Task:
  """Warm-started training; `task.weights_dir` is set from the workdir by `build_search` when empty."""
  return morph_task.morph_train_task(
    c.dataset, train_config_of(c), c.weights_dir, data_seed=c.data_seed, noise=c.morph_noise
  )


def _conditional_task(c: Any, kind: str) -> Task:
  return conditional_task.conditional_task(c.dataset, epochs=c.epochs, data_seed=c.data_seed, max_depth=c.max_depth)


def _nb201_task(c: Any, kind: str) -> Task:
  return tabular.nb201_task(c.path, c.dataset, c.report_metric, fidelities=fidelities_of(c))


# config.task.name -> builder(task section, space kind) -> Task
TASKS: dict[str, Callable[[Any, str], Task]] = {
  "synthetic": _synthetic_task,
  "train": _train_task,
  "nb201": _nb201_task,
  "morph_train": _morph_train_task,
  "conditional": _conditional_task,
}


def _layer_graph_costs(c: Any, kind: str, metrics: tuple[str, ...]) -> Callable[[dict], dict]:
  if c.name == "synthetic":
    input_shape, num_outputs = SYNTHETIC_SHAPES[kind]
  else:
    task_type = "classification" if c.name == "morph_train" else c.task_type
    input_shape, num_outputs = input_spec(train_task.load_dataset(c.dataset, kind, c.data_seed, c.target, task_type))
  return functools.partial(
    cost_task.layer_graph_costs, input_shape=input_shape, num_outputs=num_outputs, metrics=metrics
  )


def _nb201_costs(c: Any, kind: str, metrics: tuple[str, ...]) -> Callable[[dict], dict]:
  return functools.partial(tabular.nb201_costs, path=tabular.resolve(c.path), dataset=c.dataset)


# config.task.name -> (the cost metrics it knows, builder(task section, space kind, metrics
# wanted) -> costs(arch_json) -> {metric: value}); tasks absent here have no costs.
COSTS: MappingProxyType[str, tuple[tuple[str, ...], Callable[[Any, str, tuple[str, ...]], Callable[[dict], dict]]]] = (
  MappingProxyType(
    {
      "synthetic": (METRICS, _layer_graph_costs),
      "train": (METRICS, _layer_graph_costs),
      "morph_train": (METRICS, _layer_graph_costs),
      "nb201": (("params",), _nb201_costs),
    }
  )
)


# config.executor -> builder(config) -> Executor
EXECUTORS: dict[str, Callable[[Any], Executor]] = {
  "inline": lambda c: InlineExecutor(c.num_workers),
  "local": lambda c: ProcessExecutor(
    c.num_workers, timeout_s=c.eval_timeout_s or None, retries=c.get("worker_retries", RETRIES)
  ),
  "ray": lambda c: RayExecutor(
    c.num_workers,
    address=c.ray_address,
    timeout_s=c.eval_timeout_s or None,
    retries=c.get("worker_retries", RETRIES),
    connect_timeout_s=c.get("ray_connect_timeout_s", 30.0),
  ),
  # num_workers proposals at a time, trained together in this process (the padded mlp trainer)
  "population": lambda c: PopulationExecutor(c.num_workers),
  # num_workers workers on a simulated clock, each evaluation occupying one for its reported cost
  "simulated": lambda c: SimulatedExecutor(
    c.num_workers, sync=c.get("sim_sync", False), charge_model=c.get("sim_charge_model", False)
  ),
}
