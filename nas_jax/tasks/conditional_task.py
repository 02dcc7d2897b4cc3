"""The conditional space's training as a search Task: a point, given as its JSON, trained by
`training.conditional` and scored by its best validation error."""

from __future__ import annotations

import functools

import jax
import numpy as np

from nas_jax.arch import conditional_point as cond_point
from nas_jax.search.task import Task, TaskResult
from nas_jax.tasks import train_task
from nas_jax.training import conditional

__all__ = ["conditional_task"]


def _evaluate(dataset: str, epochs: int, data_seed: int, max_depth: int, point_json: dict, seed: int) -> TaskResult:
  """Task.evaluate of `conditional_task` (top level, so it pickles)."""
  spec = cond_point.conditional_spec(max_depth)
  point = cond_point.point_from_json(point_json, spec)
  data = train_task.load_dataset(dataset, "mlp", data_seed, "", "regression")
  r = conditional.evaluate_point(point, spec, data, epochs=epochs, key=jax.random.key(seed))
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
