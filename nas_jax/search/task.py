"""What a search optimises: a `Task` names its goal and a picklable `evaluate(arch_json, seed)`,
which returns a `TaskResult`. Tasks run in worker processes, so they carry no open resources.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from nas_jax.search.state import GOALS

__all__ = ["TaskResult", "Task", "check_task", "full_fidelity"]


class TaskResult(NamedTuple):
  """What one evaluation returns.

  Attributes:
    value: the raw metric in the task's sign (validation accuracy, MSE, ...); NaN if it diverged.
    test_value: the test metric of the same trained model, or None.
    info: JSON-able extras recorded in the journal; never mutated.
    objectives: the task's other objectives by name (`Task.objectives`), raw values in their own
      sign, e.g. {"params": 1.2e5}; empty for a single-objective task.
    curve: the learning curve, ((fidelity, value), ...) in increasing fidelity up to the one
      evaluated (e.g. the validation accuracy after each epoch); () when the task has none.
  """

  value: float
  test_value: float | None = None
  info: dict = {}
  objectives: dict = {}
  curve: tuple = ()


class Task(NamedTuple):
  """An objective over architectures.

  Attributes:
    name: for messages and summaries, e.g. "synthetic-f1".
    goal: "max" or "min"; `state.to_score` applies it.
    evaluate: `evaluate(arch_json: dict, seed: int) -> TaskResult`, and for a task with
      `fidelities` also `evaluate(arch_json, seed, fidelity)`; a top-level function or a
      `functools.partial` of one, so that it pickles into worker processes.
    objectives: ((name, goal), ...) of the objectives besides `value` that every result reports
      in `TaskResult.objectives` (e.g. (("params", "min"),)); () for a single-objective task.
    fidelities: the fidelities `evaluate` accepts, increasing (epochs for a training task, the
      tables' epochs for NAS-Bench-201); the last is the full fidelity, what a call without one
      evaluates. () for a task evaluated at one fidelity only.
  """

  name: str
  goal: str
  evaluate: Callable[..., TaskResult]
  objectives: tuple[tuple[str, str], ...] = ()
  fidelities: tuple[float, ...] = ()


def check_task(task: Any) -> None:
  """Raises TypeError / ValueError unless `task` is a Task with a known goal."""
  if not isinstance(task, Task):
    raise TypeError(f"task: {type(task).__name__} given; expected a nas_jax Task")
  if task.goal not in GOALS:
    raise ValueError(f"task.goal: {task.goal!r} is unknown; allowed: {', '.join(GOALS)}")
  if not callable(task.evaluate):
    raise TypeError(f"task.evaluate: {task.evaluate!r} is not callable")
  names = [o[0] if isinstance(o, tuple) and len(o) == 2 else o for o in task.objectives]
  for objective in task.objectives:
    if not (isinstance(objective, tuple) and len(objective) == 2 and isinstance(objective[0], str)):
      raise ValueError(f"task.objectives: {objective!r}; expected (name, goal) pairs")
    if objective[1] not in GOALS:
      raise ValueError(f"task.objectives: {objective!r} has goal {objective[1]!r}; allowed: {', '.join(GOALS)}")
    if objective[0] == "value" or names.count(objective[0]) > 1:
      raise ValueError(f"task.objectives: {objective[0]!r} is repeated or reserved; names must be unique, not 'value'")
  fidelities = task.fidelities
  if not isinstance(fidelities, tuple) or not all(_is_positive(f) for f in fidelities):
    raise ValueError(f"task.fidelities: {fidelities!r}; expected a tuple of numbers > 0")
  if any(a >= b for a, b in zip(fidelities, fidelities[1:])):
    raise ValueError(f"task.fidelities: {fidelities!r}; expected them strictly increasing")


def _is_positive(x: Any) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def full_fidelity(task: Task) -> float | None:
  """The fidelity a full evaluation of `task` runs at: its last fidelity, None without any."""
  return task.fidelities[-1] if task.fidelities else None
