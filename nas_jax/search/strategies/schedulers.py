"""Multi-fidelity schedulers over any strategy: successive halving and Hyperband (synchronous
brackets; Jamieson & Talwalkar 2016, Li et al. 2017) and ASHA (asynchronous promotion; Li et al.
2020), each built by its constructor (`successive_halving`, `hyperband`, `asha`). A scheduler is a
Strategy whose proposals are `AtFidelity`s: it decides which network
runs at which fidelity, and asks the wrapped strategy, the *sampler* (random, RE, BANANAS,
NASBOT, ...), for every new network, so "BOHB-like" is a config, not new code.

The sampler sees one fidelity, the *model fidelity* (BOHB's rule, Falkner et al. 2018): the
highest fidelity with at least `min_points` successful evaluations. Every network tried so far is
in its history: at the model fidelity with its value there, else as unscored (a failed
observation), so the sampler never proposes it again and its model never mixes fidelities. When
that view changes other than by growing (the model fidelity rises, or a network already seen
unscored gets a value there), the sampler's state is rebuilt by replaying the view, onto
`Strategy.restart` of its state where the sampler has one: NASBOT keeps its OTMANN distances,
so a promotion does not solve the whole history's LPs again.

Everything is a function of the observations and the points in flight: a bracket's members are
read from the notes journalled with their first evaluation, so a search killed mid-bracket
resumes with the brackets rebuilt from the journal, nothing lost or repeated (an evaluation in
flight when it died is proposed afresh).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from types import MappingProxyType
from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np

from nas_jax.search.state import Observation, Status, to_score
from nas_jax.search.strategy import AtFidelity, Strategy, split_proposal
from nas_jax.spaces.fidelity_space import FIDELITY_KIND, FidelityPoint

__all__ = [
  "MODELS",
  "PROMOTE",
  "OPTIONS",
  "SchedulerState",
  "sh_brackets",
  "hyperband_brackets",
  "successive_halving",
  "hyperband",
  "asha",
]

MODELS = ("fidelity", "joint")  # what the sampler sees: the model fidelity, or every fidelity
PROMOTE = ("value", "model")  # what ranks a rung: its observed values, or the joint model's predictions
#: Every option of a scheduler (`successive_halving`'s **options) with its default; the constructors check them.
OPTIONS = MappingProxyType({"eta": 3, "min_points": 10, "model": "fidelity", "promote": "value"})


@dataclasses.dataclass(frozen=True)
class _Network:
  """One network the scheduler has run: its point, its bracket (-1 for ASHA) and its finished
  evaluations by fidelity."""

  point: Any
  bracket: int
  done: dict  # fidelity -> Observation


@dataclasses.dataclass(frozen=True)
class SchedulerState:
  """key: the search key; sampler: the wrapped strategy's state; fed: (trial id, status, value)
  of the view the sampler has seen; networks: canonical key -> _Network; order: canonical keys
  by first evaluation; notes: (canonical key, fidelity) -> notes of a proposal not yet observed."""

  key: jax.Array
  sampler: Any
  fed: tuple = ()
  networks: dict = dataclasses.field(default_factory=dict)
  order: tuple = ()
  notes: dict = dataclasses.field(default_factory=dict)


def sh_brackets(rungs: int, eta: int) -> tuple[tuple[int, int], ...]:
  """Successive halving's one bracket, as (first rung, networks started there): eta^(R-1)
  networks at the lowest of R rungs."""
  return ((0, eta ** (rungs - 1)),)


def hyperband_brackets(rungs: int, eta: int) -> tuple[tuple[int, int], ...]:
  """Hyperband's brackets s = R-1 .. 0, ceil(R / (s + 1) * eta^s) networks starting at rung
  R-1-s (Li et al. 2017), as (first rung, networks started there)."""
  top = rungs - 1
  return tuple((top - s, math.ceil(rungs / (s + 1) * eta**s)) for s in range(top, -1, -1))


def _check(eta: Any, min_points: Any, fidelities: tuple, model: Any, promote: Any, sampler: Strategy) -> None:
  if model not in MODELS:
    raise ValueError(f"scheduler: model={model!r}; choose one of: {', '.join(MODELS)}")
  if isinstance(eta, bool) or not isinstance(eta, int) or eta < 2:
    raise ValueError(f"scheduler: eta={eta!r}; expected an integer >= 2 (keep the best 1/eta at each rung)")
  if isinstance(min_points, bool) or not isinstance(min_points, int) or min_points < 1:
    raise ValueError(f"scheduler: min_points={min_points!r}; expected an integer >= 1")
  if promote not in PROMOTE:
    raise ValueError(f"scheduler: promote={promote!r}; choose one of: {', '.join(PROMOTE)}")
  if promote == "model" and (model != "joint" or sampler.predict is None):
    raise ValueError(
      "scheduler: promote='model' ranks each rung by the sampler's predictions at the full fidelity: it"
      " needs model='joint' and a sampler with a model (Strategy.predict: bo and its presets, e.g."
      f" nasbot, bananas); got model={model!r} and a sampler {'with' if sampler.predict else 'without'} one"
    )
  if len(fidelities) < 2:
    raise ValueError(
      f"scheduler: the task has fidelities {fidelities!r}; a scheduler needs at least two (e.g."
      " --config.task.fidelities=1,3,9 for a training task, 12,200 for nb201)"
    )


class _Scheduler(NamedTuple):
  """One scheduler's settings (the constructors' arguments); brackets: (first rung, size) of the
  synchronous brackets it cycles through, () for ASHA's one growing rung 0."""

  sampler: Strategy
  space: Any
  goal: str
  fidelities: tuple
  eta: int
  min_points: int
  joint: bool
  promote: str
  brackets: tuple


def _scheduler(brackets_of: Callable, sampler, space, goal, fidelities, options: dict) -> Strategy:
  """The scheduler whose synchronous brackets are brackets_of(rungs, eta) (none: ASHA)."""
  unknown = sorted(set(options) - set(OPTIONS))
  if unknown:
    raise ValueError(f"scheduler: options {unknown} are unknown; allowed: {', '.join(OPTIONS)}")
  o = {**OPTIONS, **options}
  fidelities = tuple(float(f) for f in fidelities)
  _check(o["eta"], o["min_points"], fidelities, o["model"], o["promote"], sampler)
  brackets = brackets_of(len(fidelities), o["eta"])
  s = _Scheduler(
    sampler, space, goal, fidelities, o["eta"], o["min_points"], o["model"] == "joint", o["promote"], brackets
  )
  return Strategy(
    init=lambda key: SchedulerState(key=key, sampler=sampler.init(key)),
    propose=functools.partial(_propose, s),
    update=functools.partial(_update, s),
    notes=functools.partial(_notes, s),
  )


def successive_halving(sampler: Strategy, space: Any, goal: str, fidelities: Sequence[float], **options) -> Strategy:
  """Wraps `sampler` in successive halving: one bracket of eta^(R-1) networks over the R rungs.

  Args:
    sampler: the strategy that proposes new networks (any single-fidelity Strategy).
    space: the Space of its points.
    goal: the task's goal.
    fidelities: the task's fidelities, increasing (`Task.fidelities`): the rungs.
    **options: eta (3): each rung promotes its best 1/eta (at least one network in a synchronous
      bracket). min_points (10): successful evaluations a fidelity needs before the sampler models
      it. model ("fidelity"): the sampler sees the model fidelity; "joint": it sees every
      observation at its fidelity (`sampler` built on `fidelity_space(space, fidelities)`).
      promote ("value"): a rung's networks ranked by their values there; "model" (with
      model="joint"): by the sampler's predicted score at the full fidelity, which reads every
      network at every fidelity (by their values while the sampler has no model yet).
  """
  return _scheduler(sh_brackets, sampler, space, goal, fidelities, options)


def hyperband(sampler: Strategy, space: Any, goal: str, fidelities: Sequence[float], **options) -> Strategy:
  """Wraps `sampler` in Hyperband's brackets (`hyperband_brackets`); arguments of `successive_halving`."""
  return _scheduler(hyperband_brackets, sampler, space, goal, fidelities, options)


def asha(sampler: Strategy, space: Any, goal: str, fidelities: Sequence[float], **options) -> Strategy:
  """Wraps `sampler` in ASHA: a network is promoted as soon as it is in the best 1/eta of those
  finished at its rung; arguments of `successive_halving`."""
  return _scheduler(lambda rungs, eta: (), sampler, space, goal, fidelities, options)


def _fidelity(s: _Scheduler, fidelity: float | None) -> float:
  """The fidelity of an evaluation or proposal: the full fidelity where it names none."""
  return s.fidelities[-1] if fidelity is None else float(fidelity)


def _model_fidelity(s: _Scheduler, state: SchedulerState) -> float:
  for f in reversed(s.fidelities):
    if sum(1 for n in state.networks.values() if f in n.done and n.done[f].ok) >= s.min_points:
      return f
  return s.fidelities[0]


def _view(s: _Scheduler, state: SchedulerState) -> list[Observation]:
  """What the sampler sees (the module docstring): one observation per network, in order."""
  f, out = _model_fidelity(s, state), []
  for k in state.order:
    done = state.networks[k].done
    if f in done:
      out.append(done[f])
    else:
      first = done[min(done)]
      unscored = f"not evaluated at the model fidelity {f:g}"
      out.append(dataclasses.replace(first, value=None, status=Status.FAILED, error=unscored, test_value=None))
  return out


def _feed(s: _Scheduler, state: SchedulerState) -> SchedulerState:
  if s.joint:  # the sampler was fed every observation as it came (`_update`)
    return state
  seen, sampler = _view(s, state), s.sampler
  signature = tuple((o.trial_id, int(o.status), o.value) for o in seen)
  if signature[: len(state.fed)] == state.fed:
    inner = sampler.update(state.sampler, seen[len(state.fed) :]) if len(seen) > len(state.fed) else state.sampler
  else:
    start = sampler.restart(state.sampler) if sampler.restart else sampler.init(state.key)
    inner = sampler.update(start, seen)
  return dataclasses.replace(state, sampler=inner, fed=signature)


def _in_flight(s: _Scheduler, pending: Sequence) -> dict:
  """(canonical key, fidelity) -> point of every proposal in flight."""
  out = {}
  for p in pending:
    point, fidelity, _ = split_proposal(p)
    out[s.space.canonical_key(point), _fidelity(s, fidelity)] = point
  return out


def _predictions(s: _Scheduler, state: SchedulerState) -> dict:
  """canonical key -> the sampler's predicted full-fidelity score of every network with a
  success below the full fidelity (promote="model"); {} while the sampler has no model."""
  top = s.fidelities[-1]
  keys = [k for k in state.order if any(f < top and o.ok for f, o in state.networks[k].done.items())]
  points = [FidelityPoint(state.networks[k].point, top) for k in keys]
  mean = s.sampler.predict(state.sampler, points) if keys else None
  return {} if mean is None else dict(zip(keys, np.asarray(mean, np.float64)))


def _promotion(s: _Scheduler, state, keys: Sequence, rung: int, flying: dict, keep, predicted) -> tuple | None:
  """(proposal, notes) of the first of the best `keep(finished)` networks of `keys` at `rung` not
  yet run (or in flight) at the next rung; None when there is none. The successes at `rung` are
  ranked by their values there, or by `predicted()` (promote="model"); ties: the first run."""
  f, g = s.fidelities[rung], s.fidelities[rung + 1]
  finished = [k for k in keys if f in state.networks[k].done]
  ok = [k for k in finished if state.networks[k].done[f].ok]
  count = keep(len(finished))
  waiting = {k for k in ok if g not in state.networks[k].done and (k, g) not in flying}
  if not count or not waiting:
    return None
  scores, notes = to_score([state.networks[k].done[f].value for k in ok], s.goal), {}
  guess = predicted() if s.promote == "model" else {}
  if guess:
    scores = np.nan_to_num(np.array([guess[k] for k in ok]), nan=-np.inf)
  for i in np.argsort(-scores, kind="stable")[:count]:
    k = ok[i]
    if k in waiting:
      if guess:
        notes = {"ranked_by": "model", "predicted": round(float(scores[i]), 6) if np.isfinite(scores[i]) else None}
      return AtFidelity(state.networks[k].point, g, state.networks[k].done[f].trial_id), notes
  return None


def _asha_step(s: _Scheduler, state: SchedulerState, flying: dict, predicted):
  """ASHA: the highest rung with a promotable network promotes it; else a new network at rung 0."""
  for rung in range(len(s.fidelities) - 2, -1, -1):
    p = _promotion(s, state, state.order, rung, flying, lambda finished: finished // s.eta, predicted)
    if p is not None:
      return p, None
  return None, (0, -1)


def _bracket_step(s: _Scheduler, state: SchedulerState, flying: dict, predicted):
  """Synchronous brackets: a promotion in the oldest bracket whose rung has finished; else a new
  network in the newest bracket while it is not full; else a new bracket (so no worker idles)."""
  members: dict[int, list] = {}
  for k in state.order:
    members.setdefault(state.networks[k].bracket, []).append(k)
  starting: dict[int, int] = {}  # bracket -> new networks in flight
  for (k, f), _ in flying.items():
    if k not in state.networks:
      b = state.notes.get((k, f), {}).get("bracket", -1)
      starting[b] = starting.get(b, 0) + 1
  newest, fids = max([*members, *starting, -1]), s.fidelities
  for b in range(newest + 1):
    first, size = s.brackets[b % len(s.brackets)]
    keys = members.get(b, [])
    if len(keys) < size:
      continue  # still filling, or its new networks still run: its first rung is not complete
    for rung in range(first, len(fids) - 1):
      reached = [k for k in keys if fids[rung] in state.networks[k].done or (k, fids[rung]) in flying]
      if any((k, fids[rung]) in flying for k in reached):
        break  # this rung is still running: the bracket waits here
      p = _promotion(s, state, reached, rung, flying, lambda finished: max(1, finished // s.eta), predicted)
      if p is not None:
        return p, None
  for b in range(newest + 1):  # the oldest bracket short of networks (one lost in flight, too)
    first, size = s.brackets[b % len(s.brackets)]
    if len(members.get(b, [])) + starting.get(b, 0) < size:
      return None, (first, b)
  first, _ = s.brackets[(newest + 1) % len(s.brackets)]
  return None, (first, newest + 1)


def _propose(s: _Scheduler, state: SchedulerState, n: int, pending: list):
  state, out, memo = _feed(s, state), [], {}
  # The sampler's observations do not change within a call: its predictions are made once, when needed.
  predicted = lambda fed=state: memo["p"] if "p" in memo else memo.setdefault("p", _predictions(s, fed))
  step = _bracket_step if s.brackets else _asha_step
  for _ in range(n):
    promoted, new = step(s, state, _in_flight(s, [*pending, *out]), predicted)
    if promoted is not None:
      proposal, ranked = promoted
      key = (s.space.canonical_key(proposal.point), proposal.fidelity)
      notes = {"origin": f"promoted from trial {proposal.continues}", "rung": proposal.fidelity, **ranked}
      if s.brackets:
        notes["bracket"] = state.networks[key[0]].bracket
      state = dataclasses.replace(state, notes={**state.notes, key: notes})
      out.append(proposal)
      continue
    state, proposal = _sample(s, state, [*pending, *out], *new)
    if proposal is None:
      break
    out.append(proposal)
  return state, out


def _sample(s: _Scheduler, state: SchedulerState, flying: list, rung: int, bracket: int) -> tuple:
  """(state, AtFidelity of a new network from the sampler at `rung`, or None when it has none)."""
  fresh = [
    FidelityPoint(point, _fidelity(s, f)) if s.joint else point
    for point, f, _ in map(split_proposal, flying)
    if s.space.canonical_key(point) not in state.networks
  ]
  inner, points = s.sampler.propose(state.sampler, 1, fresh)
  state = dataclasses.replace(state, sampler=inner)
  if not points:
    return state, None
  notes = {**s.sampler.notes(inner, points[0]), "rung": s.fidelities[rung]}
  point = _unwrap(s, points[0])
  if s.brackets:
    notes["bracket"] = bracket
  key = (s.space.canonical_key(point), s.fidelities[rung])
  return dataclasses.replace(state, notes={**state.notes, key: notes}), AtFidelity(point, s.fidelities[rung])


def _unwrap(s: _Scheduler, proposal: Any) -> Any:
  """The network of a sampler's proposal (a FidelityPoint with model="joint")."""
  if not s.joint:
    return proposal
  if not isinstance(proposal, FidelityPoint):
    raise ValueError(
      f"scheduler: model='joint' but the sampler proposed a {type(proposal).__name__}; build it on"
      " fidelity_space(space, fidelities) (wiring does: config.scheduler_config.model)"
    )
  return proposal.point


def _update(s: _Scheduler, state: SchedulerState, observations: list) -> SchedulerState:
  if s.joint and observations:  # each network at its fidelity, as the joint sampler reads it
    at = lambda o: {"kind": FIDELITY_KIND, "fidelity": _fidelity(s, o.fidelity), "point": o.arch_json}
    at_fidelity = [dataclasses.replace(o, arch_json=at(o)) for o in observations]
    state = dataclasses.replace(state, sampler=s.sampler.update(state.sampler, at_fidelity))
  networks, order, notes = dict(state.networks), list(state.order), dict(state.notes)
  for o in observations:
    point = s.space.from_json(o.arch_json)
    k, f = s.space.canonical_key(point), _fidelity(s, o.fidelity)
    notes.pop((k, f), None)
    if k not in networks:
      noted = o.info.get("strategy") if isinstance(o.info.get("strategy"), dict) else {}
      networks[k] = _Network(point=point, bracket=int(noted.get("bracket", -1)), done={})
      order.append(k)
    if f not in networks[k].done:
      networks[k] = dataclasses.replace(networks[k], done={**networks[k].done, f: o})
  return dataclasses.replace(state, networks=networks, order=tuple(order), notes=notes)


def _notes(s: _Scheduler, state: SchedulerState, proposal: Any) -> dict:
  point, fidelity, _ = split_proposal(proposal)
  return state.notes.get((s.space.canonical_key(point), _fidelity(s, fidelity)), {})
