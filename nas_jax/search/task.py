"""What a search optimises: a `Task` names its goal and a picklable `evaluate(arch_json, seed)`,
which returns a `TaskResult`. Tasks run in worker processes, so they carry no open resources.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from nas_jax.search.state import GOALS

__all__ = ["TaskResult", "Task", "check_task"]


class TaskResult(NamedTuple):
  """What one evaluation returns.

  Attributes:
    value: the raw metric in the task's sign (validation accuracy, MSE, ...); NaN if it diverged.
    test_value: the test metric of the same trained model, or None.
    info: JSON-able extras recorded in the journal; never mutated.
  """

  value: float
  test_value: float | None = None
  info: dict = {}


class Task(NamedTuple):
  """An objective over architectures.

  Attributes:
    name: for messages and summaries, e.g. "synthetic-f1".
    goal: "max" or "min"; `state.to_score` applies it.
    evaluate: `evaluate(arch_json: dict, seed: int) -> TaskResult`; a top-level function or a
      `functools.partial` of one, so that it pickles into worker processes.
  """

  name: str
  goal: str
  evaluate: Callable[[dict, int], TaskResult]


def check_task(task: Any) -> None:
  """Raises TypeError / ValueError unless `task` is a Task with a known goal."""
  if not isinstance(task, Task):
    raise TypeError(f"task: {type(task).__name__} given; expected a nas_jax Task")
  if task.goal not in GOALS:
    raise ValueError(f"task.goal: {task.goal!r} is unknown; allowed: {', '.join(GOALS)}")
  if not callable(task.evaluate):
    raise TypeError(f"task.evaluate: {task.evaluate!r} is not callable")
