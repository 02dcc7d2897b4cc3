"""Multi-fidelity schedulers over any strategy: successive halving and Hyperband (synchronous
brackets; Jamieson & Talwalkar 2016, Li et al. 2017) and ASHA (asynchronous promotion; Li et al.
2020). A scheduler is a Strategy whose proposals are `AtFidelity`s: it decides which network
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
import math
from typing import Any, Sequence

import jax
import numpy as np

from nas_jax.search.state import Observation, Status, to_score
from nas_jax.search.strategy import AtFidelity, Strategy, split_proposal
from nas_jax.spaces.fidelity_space import FIDELITY_KIND, FidelityPoint

__all__ = ["SCHEDULERS", "MODELS", "PROMOTE", "SchedulerState", "bracket_sizes", "scheduler", "make_scheduler"]

SCHEDULERS = ("sh", "hyperband", "asha")
MODELS = ("fidelity", "joint")  # what the sampler sees: the model fidelity, or every fidelity
PROMOTE = ("value", "model")  # what ranks a rung: its observed values, or the joint model's predictions


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


def bracket_sizes(name: str, rungs: int, eta: int) -> tuple[tuple[int, int], ...]:
  """The brackets a scheduler cycles through, as (first rung, networks started there).

  Successive halving: one bracket, eta^(R-1) networks at the lowest rung (R rungs); Hyperband:
  brackets s = R-1 .. 0, ceil(R / (s + 1) * eta^s) networks starting at rung R-1-s (Li et al.
  2017); ASHA: no brackets (one growing rung 0)."""
  top = rungs - 1
  if name == "sh":
    return ((0, eta**top),)
  if name == "hyperband":
    return tuple((top - s, math.ceil(rungs / (s + 1) * eta**s)) for s in range(top, -1, -1))
  return ()


def _check(
  name: str, eta: Any, min_points: Any, fidelities: tuple, model: Any, promote: Any, sampler: Strategy
) -> None:
  if name not in SCHEDULERS:
    raise ValueError(f"scheduler: {name!r} is unknown; choose one of: {', '.join(SCHEDULERS)}")
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


def scheduler(
  name: str,
  sampler: Strategy,
  space: Any,
  goal: str,
  fidelities: Sequence[float],
  *,
  eta: int = 3,
  min_points: int = 10,
  model: str = "fidelity",
  promote: str = "value",
) -> Strategy:
  """Wraps `sampler` in the scheduler `name` ("sh", "hyperband" or "asha").

  Args:
    name: which scheduler.
    sampler: the strategy that proposes new networks (any single-fidelity Strategy).
    space: the Space of its points.
    goal: the task's goal.
    fidelities: the task's fidelities, increasing (`Task.fidelities`): the rungs.
    eta: each rung promotes its best 1/eta (at least one network in a synchronous bracket).
    min_points: successful evaluations a fidelity needs before the sampler models it ("fidelity").
    model: "fidelity" (the sampler sees the model fidelity) or "joint" (it sees every observation
      at its fidelity; `sampler` must be built on `fidelity_space(space, fidelities)`).
    promote: "value" (a rung's networks ranked by their values there) or "model" (with model="joint":
      ranked by the sampler's predicted score at the full fidelity, which reads every network at
      every fidelity; by their values while the sampler has no model yet).
  """
  fidelities = tuple(float(f) for f in fidelities)
  _check(name, eta, min_points, fidelities, model, promote, sampler)
  joint = model == "joint"
  brackets = bracket_sizes(name, len(fidelities), eta)

  def init(key):
    return SchedulerState(key=key, sampler=sampler.init(key))

  def model_fidelity(state: SchedulerState) -> float:
    for f in reversed(fidelities):
      if sum(1 for n in state.networks.values() if f in n.done and n.done[f].ok) >= min_points:
        return f
    return fidelities[0]

  def view(state: SchedulerState) -> list[Observation]:
    """What the sampler sees (the module docstring): one observation per network, in order."""
    f, out = model_fidelity(state), []
    for k in state.order:
      done = state.networks[k].done
      if f in done:
        out.append(done[f])
      else:
        first = done[min(done)]
        unscored = f"not evaluated at the model fidelity {f:g}"
        out.append(dataclasses.replace(first, value=None, status=Status.FAILED, error=unscored, test_value=None))
    return out

  def feed(state: SchedulerState) -> SchedulerState:
    if joint:  # the sampler was fed every observation as it came (`update`)
      return state
    seen = view(state)
    signature = tuple((o.trial_id, int(o.status), o.value) for o in seen)
    if signature[: len(state.fed)] == state.fed:
      inner = sampler.update(state.sampler, seen[len(state.fed) :]) if len(seen) > len(state.fed) else state.sampler
    else:
      start = sampler.restart(state.sampler) if sampler.restart else sampler.init(state.key)
      inner = sampler.update(start, seen)
    return dataclasses.replace(state, sampler=inner, fed=signature)

  def in_flight(pending: Sequence) -> dict:
    """(canonical key, fidelity) -> point of every proposal in flight."""
    out = {}
    for p in pending:
      point, fidelity, _ = split_proposal(p)
      out[space.canonical_key(point), fidelities[-1] if fidelity is None else fidelity] = point
    return out

  def predictions(state: SchedulerState) -> dict:
    """canonical key -> the sampler's predicted full-fidelity score of every network with a
    success below the full fidelity (promote="model"); {} while the sampler has no model."""
    top = fidelities[-1]
    keys = [k for k in state.order if any(f < top and o.ok for f, o in state.networks[k].done.items())]
    mean = sampler.predict(state.sampler, [FidelityPoint(state.networks[k].point, top) for k in keys]) if keys else None
    return {} if mean is None else dict(zip(keys, np.asarray(mean, np.float64)))

  def promotion(state: SchedulerState, keys: Sequence, rung: int, flying: dict, keep, predicted) -> tuple | None:
    """(proposal, notes) of the first of the best `keep(finished)` networks of `keys` at `rung` not
    yet run (or in flight) at the next rung; None when there is none. The successes at `rung` are
    ranked by their values there, or by `predicted()` (promote="model"); ties: the first run."""
    f, g = fidelities[rung], fidelities[rung + 1]
    finished = [k for k in keys if f in state.networks[k].done]
    ok = [k for k in finished if state.networks[k].done[f].ok]
    count = keep(len(finished))
    waiting = {k for k in ok if g not in state.networks[k].done and (k, g) not in flying}
    if not count or not waiting:
      return None
    scores, notes = to_score([state.networks[k].done[f].value for k in ok], goal), {}
    guess = predicted() if promote == "model" else {}
    if guess:
      scores = np.nan_to_num(np.array([guess[k] for k in ok]), nan=-np.inf)
    for i in np.argsort(-scores, kind="stable")[:count]:
      k = ok[i]
      if k in waiting:
        if guess:
          notes = {"ranked_by": "model", "predicted": round(float(scores[i]), 6) if np.isfinite(scores[i]) else None}
        return AtFidelity(state.networks[k].point, g, state.networks[k].done[f].trial_id), notes
    return None

  def asha_step(state: SchedulerState, flying: dict, predicted):
    """ASHA: the highest rung with a promotable network promotes it; else a new network at rung 0."""
    for rung in range(len(fidelities) - 2, -1, -1):
      p = promotion(state, state.order, rung, flying, lambda finished: finished // eta, predicted)
      if p is not None:
        return p, None
    return None, (0, -1)

  def bracket_step(state: SchedulerState, flying: dict, predicted):
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
    newest = max([*members, *starting, -1])
    for b in range(newest + 1):
      first, size = brackets[b % len(brackets)]
      keys = members.get(b, [])
      if len(keys) < size:
        continue  # still filling, or its new networks still run: its first rung is not complete
      for rung in range(first, len(fidelities) - 1):
        reached = [k for k in keys if fidelities[rung] in state.networks[k].done or (k, fidelities[rung]) in flying]
        if any((k, fidelities[rung]) in flying for k in reached):
          break  # this rung is still running: the bracket waits here
        p = promotion(state, reached, rung, flying, lambda finished: max(1, finished // eta), predicted)
        if p is not None:
          return p, None
    for b in range(newest + 1):  # the oldest bracket short of networks (one lost in flight, too)
      first, size = brackets[b % len(brackets)]
      if len(members.get(b, [])) + starting.get(b, 0) < size:
        return None, (first, b)
    first, _ = brackets[(newest + 1) % len(brackets)]
    return None, (first, newest + 1)

  def propose(state, n, pending):
    state, out, memo = feed(state), [], {}
    # The sampler's observations do not change within a call: its predictions are made once, when needed.
    predicted = lambda fed=state: memo["p"] if "p" in memo else memo.setdefault("p", predictions(fed))
    for _ in range(n):
      flying = in_flight([*pending, *out])
      promoted, new = (asha_step if name == "asha" else bracket_step)(state, flying, predicted)
      if promoted is not None:
        promoted, ranked = promoted
        key = (space.canonical_key(promoted.point), promoted.fidelity)
        notes = {"origin": f"promoted from trial {promoted.continues}", "rung": promoted.fidelity, **ranked}
        if name != "asha":
          notes["bracket"] = state.networks[key[0]].bracket
        state = dataclasses.replace(state, notes={**state.notes, key: notes})
        out.append(promoted)
        continue
      rung, bracket = new
      fresh = [
        FidelityPoint(point, fidelities[-1] if f is None else f) if joint else point
        for point, f, _ in map(split_proposal, [*pending, *out])
        if space.canonical_key(point) not in state.networks
      ]
      inner, points = sampler.propose(state.sampler, 1, fresh)
      state = dataclasses.replace(state, sampler=inner)
      if not points:
        break
      notes = {**sampler.notes(inner, points[0]), "rung": fidelities[rung]}
      point = unwrap(points[0])
      if name != "asha":
        notes["bracket"] = bracket
      key = (space.canonical_key(point), fidelities[rung])
      state = dataclasses.replace(state, notes={**state.notes, key: notes})
      out.append(AtFidelity(point, fidelities[rung]))
    return state, out

  def unwrap(proposal: Any) -> Any:
    """The network of a sampler's proposal (a FidelityPoint with model="joint")."""
    if not joint:
      return proposal
    if not isinstance(proposal, FidelityPoint):
      raise ValueError(
        f"scheduler: model='joint' but the sampler proposed a {type(proposal).__name__}; build it on"
        " fidelity_space(space, fidelities) (wiring does: config.scheduler_config.model)"
      )
    return proposal.point

  def at_fidelity(o: Observation) -> Observation:
    """o as the joint sampler reads it: its network at its fidelity."""
    f = fidelities[-1] if o.fidelity is None else float(o.fidelity)
    return dataclasses.replace(o, arch_json={"kind": FIDELITY_KIND, "fidelity": f, "point": o.arch_json})

  def update(state, observations):
    if joint and observations:
      state = dataclasses.replace(state, sampler=sampler.update(state.sampler, [at_fidelity(o) for o in observations]))
    networks, order, notes = dict(state.networks), list(state.order), dict(state.notes)
    for o in observations:
      point = space.from_json(o.arch_json)
      k, f = space.canonical_key(point), fidelities[-1] if o.fidelity is None else o.fidelity
      notes.pop((k, f), None)
      if k not in networks:
        noted = o.info.get("strategy") if isinstance(o.info.get("strategy"), dict) else {}
        networks[k] = _Network(point=point, bracket=int(noted.get("bracket", -1)), done={})
        order.append(k)
      if f not in networks[k].done:
        networks[k] = dataclasses.replace(networks[k], done={**networks[k].done, f: o})
    return dataclasses.replace(state, networks=networks, order=tuple(order), notes=notes)

  def notes(state, proposal):
    point, fidelity, _ = split_proposal(proposal)
    return state.notes.get((space.canonical_key(point), fidelities[-1] if fidelity is None else fidelity), {})

  return Strategy(init=init, propose=propose, update=update, notes=notes)


def make_scheduler(name: str, sampler: Strategy, space: Any, task: Any, options: dict | None = None) -> Strategy:
  """`config.scheduler` over the config's strategy; `config.scheduler_config` gives `options`
  (eta, min_points, model; with model="joint" the strategy is built on the fidelity space)."""
  if task.objectives:
    raise ValueError(
      f"scheduler: {name!r} ranks networks by their value alone; it does not take a task with other"
      f" objectives {[n for n, _ in task.objectives]} (unset config.objectives)"
    )
  return scheduler(name, sampler, space, task.goal, task.fidelities, **dict(options or {}))
