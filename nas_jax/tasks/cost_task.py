"""Costs in a search: what an architecture costs before it is evaluated, as other objectives of
its task and as limits no evaluated architecture may exceed.

`with_costs(task, costs, objectives, check)` is the task whose every result carries the
architecture's costs (`info["costs"]`) and the chosen cost metrics as `TaskResult.objectives`
(each minimised), and which refuses, before any training, an architecture that `check` finds
beyond its limits: a second guard behind the constrained space (`spaces.constrained`, whose
`violation` the wiring passes as `check`), so that an infeasible network is never trained
whatever proposed it. Cost functions map interchange JSON to {metric: value}:
`layer_graph_costs` (`models.network_costs`) and `tabular.nb201_costs` (the table's parameter counts).
"""

from __future__ import annotations

from typing import Callable, Mapping, NamedTuple

from nas_jax.arch.architecture import Architecture
from nas_jax.search.task import Task, TaskResult
from nas_jax.models import network_costs
from nas_jax.tasks.synthetic import PERMISSIVE_LIMITS

__all__ = ["CostEvaluate", "with_costs", "layer_graph_costs"]

_CHEAP = ("params", "flops", "memory_mb")  # computed from the layer list; latency_ms is timed


def layer_graph_costs(
  arch_json: dict, *, input_shape: tuple[int, ...], num_outputs: int, metrics: tuple[str, ...] = _CHEAP
) -> dict[str, float]:
  """{metric: value} of a layer graph given as interchange JSON (a picklable cost function through
  `functools.partial`): params, flops and memory_mb always (cheap, `network_costs.network_costs`),
  latency_ms when `metrics` asks for it (a compile and timed runs)."""
  arch = Architecture.from_json(arch_json, limits=PERMISSIVE_LIMITS)
  c = network_costs.network_costs(arch, tuple(input_shape), int(num_outputs))
  out = {"params": float(c.params), "flops": float(c.flops), "memory_mb": float(c.memory_mb)}
  if "latency_ms" in metrics:
    out["latency_ms"] = float(network_costs.latency_ms(arch, tuple(input_shape), int(num_outputs)))
  return out


class CostEvaluate(NamedTuple):
  """Task.evaluate of `with_costs` (picklable when `evaluate` and `costs` are)."""

  evaluate: Callable[[dict, int], TaskResult]
  costs: Callable[[dict], Mapping[str, float]]
  objectives: tuple[str, ...]
  check: Callable[[Mapping[str, float]], str] | None

  def _costs(self, arch_json: dict) -> dict[str, float]:
    c = dict(self.costs(arch_json))
    missing = [m for m in self.objectives if m not in c]
    if missing:
      raise ValueError(f"costs: {sorted(c)} lack the objectives {missing}")
    broken = self.check(c) if self.check is not None else ""
    if broken:
      raise ValueError(f"infeasible architecture: {broken}; it was not evaluated")
    return c

  def _result(self, r: TaskResult, c: dict[str, float]) -> TaskResult:
    if not isinstance(r, TaskResult):  # the loop records why
      return r
    mine = {m: c[m] for m in self.objectives}
    return r._replace(objectives={**r.objectives, **mine}, info={**r.info, "costs": c})

  def __call__(self, arch_json: dict, seed: int, *fidelity: float) -> TaskResult:
    """The wrapped evaluation (at `fidelity`, for a multi-fidelity task) with the costs."""
    c = self._costs(arch_json)
    return self._result(self.evaluate(arch_json, seed, *fidelity), c)

  def many(self, calls: list[tuple]) -> list[TaskResult]:
    """A batch (`PopulationExecutor`) of (arch_json, seed[, fidelity]) calls: every call is
    checked before any trains; an infeasible one raises, and the executor then runs the calls one
    by one, so that it fails alone."""
    found = [self._costs(call[0]) for call in calls]
    many = getattr(self.evaluate, "many", None)
    results = many(calls) if many is not None else [self.evaluate(*call) for call in calls]
    return [self._result(r, c) for r, c in zip(results, found)]


def with_costs(
  task: Task,
  costs: Callable[[dict], Mapping[str, float]],
  objectives: tuple[str, ...] = (),
  check: Callable[[Mapping[str, float]], str] | None = None,
) -> Task:
  """`task` with cost objectives and a feasibility guard (module docstring).

  Args:
    task: a Task; its objectives are kept, the cost objectives appended.
    costs: `costs(arch_json) -> {metric: value}`, holding every metric of `objectives`; a
      picklable function (a `functools.partial` of a top-level one) for worker processes.
    objectives: cost metrics to minimise besides the value, each named once.
    check: `check(costs) -> ""` when feasible, else the reason (e.g. a `functools.partial` of
      `spaces.constrained.violation` with the limits); None accepts everything.
  """
  objectives = tuple(objectives)
  if not all(isinstance(m, str) and m for m in objectives) or len(set(objectives)) != len(objectives):
    raise ValueError(f"objectives: {objectives!r}; expected distinct metric names")
  taken = {name for name, _ in task.objectives}
  if taken & set(objectives):
    raise ValueError(f"objectives: {sorted(taken & set(objectives))} are objectives of task {task.name!r} already")
  evaluate = CostEvaluate(task.evaluate, costs, objectives, check)
  return task._replace(evaluate=evaluate, objectives=task.objectives + tuple((m, "min") for m in objectives))
