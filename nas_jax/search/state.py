"""Search records: the Status of an evaluation, the Observation of one finished trial, and
`to_score`, the one place where a task's goal turns raw metrics into scores (nas_jax maximises).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any, Sequence

import numpy as np

from nas_jax.arch.json_io import show

__all__ = ["GOALS", "MAX_TRIAL_ID", "Status", "Observation", "to_score", "objective_matrix", "observation_scores"]

GOALS = ("max", "min")
MAX_TRIAL_ID = 2**31 - 1  # trial ids count evaluations from 0; a larger one is a damaged record


class Status(enum.IntEnum):
  """How an evaluation ended. Only OK observations carry a value."""

  OK = 0
  FAILED = 1  # the evaluation raised, or its worker died
  NAN = 2  # it returned a non-finite value (NaN or inf)
  TIMEOUT = 3  # it ran past the executor's per-evaluation limit and was stopped


def _finite_or_none(name: str, x: Any) -> float | None:
  """`x` as a float (None stays None); TypeError for a non-number, ValueError for an integer too
  large for a float (a 400-digit JSON number)."""
  if x is None:
    return None
  if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
    raise TypeError(f"observation.{name}: {show(x)} is a {type(x).__name__}; expected a float or None")
  try:
    return float(x)
  except OverflowError:
    raise ValueError(f"observation.{name}: {show(x)} is too large for a float") from None


def _check_fields(o: "Observation") -> None:
  """The checks of every field that `__post_init__` does not convert (types, ranges, a status
  consistent with the value): a journal row that fails one is refused, never half-used."""
  if isinstance(o.trial_id, bool) or not isinstance(o.trial_id, (int, np.integer)):
    raise TypeError(f"observation.trial_id: {show(o.trial_id)} is a {type(o.trial_id).__name__}; expected an integer")
  if not 0 <= o.trial_id <= MAX_TRIAL_ID:
    raise ValueError(f"observation.trial_id: {show(o.trial_id)}; expected an integer in [0, {MAX_TRIAL_ID}]")
  for name, kind, what in (
    ("arch_json", dict, "an object"),
    ("info", dict, "an object"),
    ("error", str, "a string"),
    ("worker", str, "a string"),
  ):
    if not isinstance(getattr(o, name), kind):
      raise TypeError(
        f"observation.{name}: {show(getattr(o, name))} is a {type(getattr(o, name)).__name__}; expected {what}"
      )
  for name in ("seconds", "finished_at", "sim_started_at", "sim_finished_at"):
    x = getattr(o, name)
    if not (x is None and name != "seconds" or isinstance(x, float) and math.isfinite(x) and x >= 0):
      raise ValueError(f"observation.{name}: {show(x)}; expected a finite number >= 0")
  start, end = o.sim_started_at, o.sim_finished_at
  if (start is None) != (end is None) or start is not None and start > end:
    raise ValueError(
      f"observation.sim_started_at, sim_finished_at: {start!r}, {end!r}; expected both None or start <= end"
    )
  for name in ("test_value", "fidelity"):
    if getattr(o, name) is not None and not math.isfinite(getattr(o, name)):
      raise ValueError(f"observation.{name}: {getattr(o, name)!r}; expected a finite float or None")
  if o.status != Status.OK and o.value is not None:
    raise ValueError(f"observation.value: {o.value!r} with status {o.status.name}; only an OK observation has a value")


def _curve(curve: Any) -> list:
  """A learning curve as [[fidelity, value], ...] of floats, a non-finite value (a diverged
  epoch) as None (journal lines are strict JSON); TypeError otherwise."""
  if not isinstance(curve, (list, tuple)):
    raise TypeError(f"observation.curve: {show(curve)}; expected a list of [fidelity, value] pairs")
  out = []
  for pair in curve:
    if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
      raise TypeError(f"observation.curve: {show(pair)} in it; expected [fidelity, value] pairs")
    value = _finite_or_none("curve value", pair[1])
    out.append([_finite_or_none("curve fidelity", pair[0]), value if value is None or math.isfinite(value) else None])
  return out


@dataclasses.dataclass(frozen=True)
class Observation:
  """One finished evaluation, as recorded in the journal (host side, never traced).

  Attributes:
    trial_id: unique, increasing id within one search (its workdir).
    arch_json: the architecture in interchange JSON (`space.to_json(point)`).
    value: the raw metric in the task's own sign (e.g. an MSE for goal "min"); None unless OK.
    status: a `Status`.
    error: what went wrong ("" when OK): a traceback, "timed out after 30s", ...
    seconds: wall time of the evaluation.
    worker: id of the worker that ran it, e.g. "process-1/pid4242".
    test_value: the task's test metric of this architecture, when the task has one.
    info: JSON-able extras: "seed" (the evaluation seed), "task" (the task's own info) and
      "strategy" (what the strategy noted when it proposed the point, e.g. a parent id).
    finished_at: Unix time at which the search recorded it (None in journals written before
      the field existed); with `seconds`, it places evaluations on a wall-clock axis.
    objectives: the task's other objectives (`Task.objectives`) by name, raw values in their own
      sign; {} for a single-objective task (and in journals written before the field existed).
    fidelity: the fidelity it was evaluated at (`Task.fidelities`, e.g. epochs); None for a task
      with one fidelity.
    curve: its learning curve, [[fidelity, value], ...] (`TaskResult.curve`); [] when none.
    sim_started_at: when it started on the clock of simulated workers (`search.simulated_executor`),
      in simulated seconds since the search began; None on real workers (and in journals written
      before the field existed).
    sim_finished_at: when it ended on that clock; None with `sim_started_at`.
  """

  trial_id: int
  arch_json: dict
  value: float | None
  status: Status
  error: str
  seconds: float
  worker: str
  test_value: float | None = None
  info: dict = dataclasses.field(default_factory=dict)
  finished_at: float | None = None
  objectives: dict = dataclasses.field(default_factory=dict)
  fidelity: float | None = None
  curve: list = dataclasses.field(default_factory=list)
  sim_started_at: float | None = None
  sim_finished_at: float | None = None

  def __post_init__(self):
    object.__setattr__(self, "status", Status(self.status))
    object.__setattr__(self, "value", _finite_or_none("value", self.value))
    object.__setattr__(self, "seconds", _finite_or_none("seconds", self.seconds))
    object.__setattr__(self, "finished_at", _finite_or_none("finished_at", self.finished_at))
    for name in ("sim_started_at", "sim_finished_at"):
      object.__setattr__(self, name, _finite_or_none(name, getattr(self, name)))
    object.__setattr__(self, "test_value", _finite_or_none("test_value", self.test_value))
    if not isinstance(self.objectives, dict):
      raise TypeError(f"observation.objectives: {show(self.objectives)}; expected a dict of name -> float")
    objectives = {str(k): _finite_or_none(f"objectives[{show(k)}]", v) for k, v in self.objectives.items()}
    object.__setattr__(self, "objectives", objectives)
    object.__setattr__(self, "fidelity", _finite_or_none("fidelity", self.fidelity))
    object.__setattr__(self, "curve", _curve(self.curve))
    if self.status == Status.OK and (self.value is None or not math.isfinite(self.value)):
      raise ValueError(f"observation.value: {self.value!r} with status OK; an OK value is a finite float")
    if self.status == Status.OK and not all(v is not None and math.isfinite(v) for v in objectives.values()):
      raise ValueError(f"observation.objectives: {show(objectives)} with status OK; OK objectives are finite floats")
    _check_fields(self)

  @property
  def ok(self) -> bool:
    return self.status == Status.OK

  def to_json(self) -> dict:
    """A JSON object; the status is written by name so that files stay readable."""
    d = dataclasses.asdict(self)
    d["status"] = self.status.name
    return d

  @classmethod
  def from_json(cls, obj: Any) -> Observation:
    """Inverse of `to_json`. Raises ValueError naming the missing or bad field."""
    if not isinstance(obj, dict):
      raise ValueError(f"observation: {type(obj).__name__} given; expected a JSON object")
    fields = {f.name for f in dataclasses.fields(cls)}
    missing = {"trial_id", "arch_json", "value", "status", "error", "seconds", "worker"} - set(obj)
    if missing:
      raise ValueError(f"observation: missing fields {sorted(missing)}")
    status = obj["status"]
    if not isinstance(status, str) or status not in Status.__members__:
      raise ValueError(f"observation.status: {show(status)} is unknown; allowed: {', '.join(Status.__members__)}")
    if isinstance(obj["trial_id"], bool) or not isinstance(obj["trial_id"], int):
      raise ValueError(f"observation.trial_id: {show(obj['trial_id'])}; expected an integer")
    return cls(**{**{k: v for k, v in obj.items() if k in fields}, "status": Status[status]})


def to_score(values: float | None | Sequence[float | None] | np.ndarray, goal: str) -> np.ndarray:
  """Scores that nas_jax maximises: the values for goal "max", their negatives for "min".

  Args:
    values: a raw metric or a sequence of them, [n]; None (a failed evaluation) becomes NaN.
    goal: "max" or "min".

  Returns:
    float64 array of the same shape as `values`.
  """
  if goal not in GOALS:
    raise ValueError(f"goal: {goal!r} is unknown; allowed: {', '.join(GOALS)}")
  if isinstance(values, np.ndarray):
    v = values.astype(np.float64)
  elif values is None or np.ndim(values) == 0:
    v = np.asarray(np.nan if values is None else values, np.float64)
  else:
    v = np.asarray([np.nan if x is None else x for x in values], np.float64)
  return v if goal == "max" else -v


def objective_matrix(scores: Any, others: Sequence[dict], objectives: Sequence) -> np.ndarray:
  """[n, 1 + m] scores of every objective (higher is better): the value scores [n] (`to_score`),
  then `to_score` of each of the m other `objectives` ((name, goal) pairs), read from the dict
  of each observation in `others`; NaN where one is missing (a failed evaluation)."""
  columns = [np.asarray(scores, np.float64).reshape(-1)]
  for name, goal in objectives:
    columns.append(to_score([o.get(name) if o else None for o in others], goal).reshape(-1))
  return np.stack(columns, axis=1)


def observation_scores(observations: Sequence[Observation], goal: str, objectives: Sequence) -> np.ndarray:
  """[n, 1 + m] `objective_matrix` of observations: the scores of their values (task goal `goal`)
  and of their other `objectives` ((name, goal) pairs); NaN rows for failures."""
  values = to_score([o.value for o in observations], goal)
  return objective_matrix(values, [o.objectives for o in observations], objectives)
