"""Host-side bookkeeping that strategies share: the History of observed points with their scores,
de-duplication by canonical key, and keys derived from what has been seen.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Sequence

import jax
import numpy as np

from nas_jax.acquisition import pareto
from nas_jax.spaces.graph_edit import host_rng  # re-exported: strategies draw host randomness here

from nas_jax.search.state import GOALS, Observation, Status, objective_matrix, to_score

__all__ = [
  "History",
  "empty_history",
  "add_observations",
  "objective_scores",
  "check_objectives",
  "fitness",
  "observe",
  "notes_reader",
  "fresh",
  "step_key",
  "host_rng",
]


@dataclasses.dataclass(frozen=True)
class History:
  """Every observed point, in observation order (a value; `add_observations` returns a new one).

  Attributes:
    points: the observed points.
    trial_ids: [n] their trial ids.
    scores: [n] float64 scores (`to_score`, so higher is better); NaN unless OK.
    keys: canonical keys of all observed points.
    task_infos: [n] what each evaluation's task reported (`info["task"]`, {} if nothing), e.g.
      the name under which a trained network's weights are stored.
    objectives: [n] each observation's other objectives (`Observation.objectives`, raw values).
  """

  points: tuple = ()
  trial_ids: tuple[int, ...] = ()
  scores: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
  keys: frozenset = frozenset()
  task_infos: tuple[dict, ...] = ()
  objectives: tuple[dict, ...] = ()

  def __len__(self) -> int:
    return len(self.points)

  @property
  def ok(self) -> np.ndarray:
    """[n] bool, which observations have a score."""
    return ~np.isnan(self.scores)


def empty_history() -> History:
  return History()


def add_observations(history: History, space: Any, goal: str, observations: Sequence[Observation]) -> History:
  """The history with `observations` appended; each arch_json is parsed by `space.from_json`."""
  if not observations:
    return history
  points = tuple(space.from_json(o.arch_json) for o in observations)
  values = [o.value if o.status == Status.OK else None for o in observations]
  return History(
    points=history.points + points,
    trial_ids=history.trial_ids + tuple(o.trial_id for o in observations),
    scores=np.concatenate([history.scores, to_score(values, goal)]),
    keys=history.keys | {space.canonical_key(p) for p in points},
    task_infos=history.task_infos + tuple(o.info.get("task") or {} for o in observations),
    objectives=history.objectives + tuple(o.objectives for o in observations),
  )


def check_objectives(where: str, objectives) -> tuple:
  """`objectives` as a tuple of (name, goal) pairs (`Task.objectives`); ValueError otherwise."""
  out = tuple(tuple(o) if isinstance(o, (tuple, list)) else o for o in objectives)
  for o in out:
    if not (isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str) and o[1] in GOALS):
      raise ValueError(f"{where}: objectives has {o!r}; expected (name, goal) pairs, goal in {', '.join(GOALS)}")
  return out


def objective_scores(history: History, objectives: Sequence) -> np.ndarray:
  """[n, 1 + m] scores of the value and of the m other `objectives` ((name, goal) pairs, the
  task's `Task.objectives`) of every observation, higher is better; NaN rows for failures."""
  return objective_matrix(history.scores, history.objectives, objectives)


def observe(state: Any, space: Any, goal: str, observations: Sequence[Observation]) -> Any:
  """A strategy state (a dataclass with `history` and `notes`) after `observations`: the history
  grows, and the notes of points now observed are dropped (they are in the journal)."""
  history = add_observations(state.history, space, goal, observations)
  notes = {k: v for k, v in state.notes.items() if k not in history.keys}
  return dataclasses.replace(state, history=history, notes=notes)


def notes_reader(space: Any):
  """`Strategy.notes` for states keeping `notes` by canonical key."""
  return lambda state, point: state.notes.get(space.canonical_key(point), {})


def fresh(space: Any, candidates: Iterable, exclude: set) -> list:
  """The candidates whose canonical key is not in `exclude` nor repeated, in order.

  `exclude` is updated in place with the keys taken (it is the caller's scratch set).
  """
  out = []
  for p in candidates:
    k = space.canonical_key(p)
    if k not in exclude:
      exclude.add(k)
      out.append(p)
  return out


def step_key(key: jax.Array, history: History, pending: Sequence) -> jax.Array:
  """The key of one propose call, folded with how many points are observed or pending, so a
  resumed search that has replayed the same observations draws the same proposals."""
  return jax.random.fold_in(key, len(history) + len(pending))


def fitness(scores: np.ndarray) -> np.ndarray:
  """[n] what evolution and local search select by, higher is better, NaN for failures, from
  the [n, 1 + m] scores of every objective (`objective_scores`): the value's scores with one
  objective; with several, NSGA-II's order as a number, minus the non-domination rank plus a
  crowding term in [0, 1) (Deb et al. 2002), over the rows without NaN."""
  if scores.shape[1] == 1:
    return scores[:, 0]
  out = np.full(len(scores), np.nan)
  ok = ~np.isnan(scores).any(axis=1)
  if ok.any():
    crowd = pareto.crowding_distance(scores[ok])
    finite = np.where(np.isinf(crowd), 0.0, crowd)
    out[ok] = -pareto.pareto_ranks(scores[ok]) + np.where(np.isinf(crowd), 1.0, finite / (1.0 + finite)) * (1 - 1e-9)
  return out
