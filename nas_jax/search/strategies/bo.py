"""The one Bayesian-optimisation strategy, composed of parts that are values:

    bo(space, featurizer=otmann(), surrogate=gp(), acquisition=ei(), optimiser=ea(), initial=pool())

Every model-based method of nas_jax is this strategy with other parts (`presets`): NASBOT is
OTMANN + GP + EI + EA, BANANAS a path encoding + ensemble + ITS + mutation, Auto-Keras the edit
distance + fixed GP + UCB + tree search. A featurizer part is built on the space
(`features.featurizers`), the surrogate on the featurizer (`surrogates.point_model`); the
acquisition (`acquisition.functions`), optimiser (`acquisition.optimizers`), initial design
(`initial`) and objective (`objectives`: one value, ParEGO or EHVI) are values as given.

One proposal: the initial design first, then per slot the surrogate is fitted on the successful
observations, the points pending evaluation (and those chosen earlier in the call) are
hallucinated at the model's mean, and the optimiser maximises the acquisition; with `batch` > 1
its next-best points are queued for the next calls (BANANAS' k).

Replay determinism: every draw comes from `step_key(key, history, pending)`, folded per slot and
split into (fit, optimiser, auxiliary) keys, and the featurizer's cache is a function of the
observed points alone, so `update(init(key), journal)` proposes what the uninterrupted run did.

Warm refits (`refit_every` = k > 1, GPs with fitted hyper-parameters): with m successful
observations, the full multi-start fit is made on the first m0 of them, m0 = m rounded down to a
multiple of k (m0 = m while m < k), with a key of m0 alone; each proposal then refits from its
hyper-parameters with the surrogate's `warm_steps`. The anchor is kept in the state and, after a
resume, recomputed from the journal, so replay stays exact; k = 1 is the full fit every time. With
`chain_fits`, each full fit on m0 >= 2k observations starts once from the hyper-parameters of the
one on the first m0 - k (`point_model.fit`'s `start`) and n_starts - 1 times at random, so fewer
starts keep what earlier fits found; after a resume the chain is refitted from its first link.

On a constrained space the optimiser is wrapped by `feasible_first`. On a fidelity space
(`spaces.fidelity_space`, points (network, fidelity)) the featurizer is built on the base space and
sees the fidelity too (`features.fidelity`), so one surrogate models every observation at its
fidelity; the optimiser starts from each network once, at the full fidelity, where the
acquisition is evaluated, and EI's incumbent is the best full-fidelity score (`bo_context`).
Optimisers that build points themselves (tree search, enumeration, gradients) are refused there.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from typing import Any, NamedTuple

import jax
import numpy as np

from nas_jax.acquisition import mutation
from nas_jax.acquisition.acq_optimiser import AcqOptimiser, check_counts, feasible_first
from nas_jax.acquisition.conditional_search import ValueAcquisition, value_acquisition
from nas_jax.features.featurizer import FeatureCache
from nas_jax.features.fidelity import with_fidelity
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import bo_context, common
from nas_jax.search.strategies.initial import InitialDesign, pool
from nas_jax.search.strategies.objectives import Objective, single
from nas_jax.search.strategy import Strategy
from nas_jax.surrogates import point_model

__all__ = ["BOState", "bo"]

_ANCHOR_STREAM = 0x3FFF_FFF1  # folds the state key for anchor fits, apart from the step keys
_PREDICT_STREAM = 0x3FFF_FFF3  # folds the state key for `predict`'s fits


@dataclasses.dataclass(frozen=True)
class BOState:
  """key: the search key; history: every observation; cache: the featurizer's cache of the
  observed points (None without a model); queue: chosen points not proposed yet; notes: canonical
  key -> notes of proposed points; anchor: (m0, point_model.Fitted) of the last anchor fit of
  warm refits, or ()."""

  key: jax.Array
  history: common.History
  cache: FeatureCache | None = None
  queue: tuple = ()
  notes: dict = dataclasses.field(default_factory=dict)
  anchor: tuple = ()


class _Engine(NamedTuple):
  """One bo strategy's parts, checked and built on its space. model is None for an acquisition
  that reads no model; score makes the optimiser's score function of a fit; parts are the names
  recorded with each proposal."""

  space: Any
  goal: str
  model: point_model.PointModel | None
  acquisition: Any
  optimiser: AcqOptimiser
  initial: InitialDesign
  objective: Objective
  score: Any
  batch: int
  refit_every: int
  chain_fits: bool
  parts: dict


def bo(
  space: Any,
  goal: str = "max",
  *,
  featurizer: Any,
  surrogate: Any,
  acquisition: Any,
  optimiser: AcqOptimiser,
  initial: InitialDesign | None = None,
  objective: Objective | None = None,
  batch: int = 1,
  refit_every: int = 1,
  chain_fits: bool = False,
) -> Strategy:
  """BO over `space` from parts; every part is checked against the others here, before any evaluation.

  Args:
    space: a Space.
    goal: the task's goal (the model reads `to_score`, so it always maximises).
    featurizer: a featurizer part (`features.featurizers`: otmann(), encoding("path"), ...).
    surrogate: a surrogate part (`surrogates.point_model`: gp(), gp_fixed(), ensemble()).
    acquisition: an acquisition (`acquisition.functions`: ei(), ucb(kappa=...), ...); uniform()
      fits no model (RAND).
    optimiser: an acquisition optimiser (`acquisition.optimizers`: ea(), mutation_search(), ...).
    initial: the initial design (`initial.pool()` by default, or `initial.random_design(n=...)`).
    objective: what is modelled (`objectives.single()` by default, `parego(...)`, `ehvi(...)`).
    batch: points per optimisation.
    refit_every: warm GP refits between full fits (the module docstring); 1: the full fit always.
    chain_fits: each full fit (refit_every > 1) starts once from the previous one's optimum.
  """
  if goal not in GOALS:
    raise ValueError(f"bo: goal={goal!r}; allowed: {', '.join(GOALS)}")
  check_counts("bo: ", {"batch": (batch, 1), "refit_every": (refit_every, 1)})
  initial, objective = initial or pool(), objective or single()
  if space.fidelities and not optimiser.from_space:
    raise ValueError(
      f"bo: optimiser {optimiser.name!r} builds points itself, without a fidelity; on a fidelity space use"
      " one whose candidates come from the space (ea, mutation_search, random_search)"
    )
  if optimiser.check is not None:
    optimiser.check(space)
  # Built for the uniform acquisition too, so that their options are checked: RAND uses neither.
  feats = with_fidelity(featurizer(space.base), space.fidelities) if space.fidelities else featurizer(space)
  model = surrogate(feats)
  if not acquisition.needs_model:
    model = None
  _check_refits(model, refit_every, chain_fits)
  objective.check(space, model, optimiser)
  if optimiser.needs_values and (
    model is None or model.vectors or feats.encode_values is None or not acquisition.closed_form
  ):
    raise ValueError(
      f"bo: optimiser {optimiser.name!r} ascends the acquisition's gradient: it needs a gp surrogate on a"
      " featurizer of raw values (arc or poor_man) and a closed-form acquisition (ei, pi or ucb)"
    )
  if space.feasible is not None:
    optimiser = feasible_first(optimiser, space.feasible)
  joint = acquisition.joint and model is not None and not model.vectors
  score = objective.scorer(space, acquisition, joint)
  parts = {"optimizer": optimiser.name, **({"featurizer": feats.name, "surrogate": model.name} if model else {})}
  engine = _Engine(
    space, goal, model, acquisition, optimiser, initial, objective, score, batch, refit_every, chain_fits, parts
  )
  return Strategy(
    init=functools.partial(_init, engine),
    propose=functools.partial(_propose, engine),
    update=functools.partial(_update, engine),
    notes=common.notes_reader(space),
    predict=functools.partial(_predict, engine),
    restart=functools.partial(_restart, engine),
  )


def _check_refits(model: point_model.PointModel | None, refit_every: int, chain_fits: Any) -> None:
  """ValueError unless the model has what refit_every > 1 and chain_fits need."""
  if refit_every > 1 and (model is None or model.surrogate.refit is None):
    raise ValueError(
      f"bo: refit_every={refit_every} needs a surrogate with warm refits (gp with fitted, not sampled,"
      " hyper-parameters); use 1"
    )
  if not isinstance(chain_fits, bool):
    raise ValueError(f"bo: chain_fits={chain_fits!r}; expected True or False")
  if chain_fits and (refit_every == 1 or model.surrogate.fit_from is None):
    raise ValueError(
      f"bo: chain_fits=True chains the full fits of refit_every={refit_every} > 1 and needs a gp with fitted,"
      " not sampled, hyper-parameters; set refit_every > 1 or chain_fits=False"
    )


def _init(e: _Engine, key: jax.Array) -> BOState:
  cache = e.model.featurizer.init([]) if e.model is not None else None
  return BOState(key=key, history=common.empty_history(), cache=cache)


def _restart(e: _Engine, state: BOState) -> BOState:
  # The cache is a function of the points alone (module docstring): the distances between
  # points seen before are what a replay would compute again.
  return dataclasses.replace(_init(e, state.key), cache=state.cache)


def _update(e: _Engine, state: BOState, observations: list) -> BOState:
  if not observations:
    return state
  state = common.observe(state, e.space, e.goal, observations)
  if e.model is None:
    return state
  new = state.history.points[len(state.history) - len(observations) :]
  return dataclasses.replace(state, cache=e.model.featurizer.extend(state.cache, new))


def _modelled(e: _Engine, history: common.History, n_pending: int) -> bool:
  return e.initial.ready(int(history.ok.sum()), len(history) + n_pending)


def _predict(e: _Engine, state: BOState, points: list):
  """The model's mean score at `points` (`Strategy.predict`), fitted on the successes with a key
  of the state's key and history alone; None before the initial design is over or without a model."""
  history = state.history
  if e.model is None or not points or not _modelled(e, history, 0):
    return None
  ok = np.flatnonzero(history.ok)
  key = jax.random.fold_in(jax.random.fold_in(state.key, _PREDICT_STREAM), len(history))
  train = [history.points[i] for i in ok]
  return point_model.mean_at(e.model, key, state.cache, train, history.scores[ok], list(points))


def _anchor(e: _Engine, state: BOState, ok: np.ndarray) -> tuple:
  """(m0, the full fit on the first m0 successes) for warm refits: the state's, or made now.

  With chain_fits, the fit on m0 >= 2k starts from the one on m0 - k: the state's if it is that
  one, else the chain is refitted down to the state's anchor or to its first link (m0 = k)."""
  k = e.refit_every
  m0 = len(ok) if len(ok) < k else len(ok) - len(ok) % k
  if state.anchor and state.anchor[0] == m0:
    return state.anchor
  links = [m0]
  while e.chain_fits and links[-1] >= 2 * k and not (state.anchor and state.anchor[0] == links[-1] - k):
    links.append(links[-1] - k)
  anchor = state.anchor if e.chain_fits and links[-1] >= 2 * k else ()
  for m in reversed(links):
    key = jax.random.fold_in(jax.random.fold_in(state.key, _ANCHOR_STREAM), m)
    points = [state.history.points[i] for i in ok[:m]]
    # What the refits model (ParEGO: a scalarisation, with weights of the anchor's own key).
    targets, _, _ = e.objective.targets(state.history, ok[:m], key)
    start = anchor[1] if anchor else None
    anchor = (m, point_model.fit(e.model, key, state.cache, points, targets, m, start=start))
  return anchor


def _fit(e: _Engine, keys: tuple, state: BOState, taken: list) -> tuple:
  """(fitted, best, observed, notes, anchor): the surrogate on the successes with `taken` pending."""
  k_fit, _, k_aux = keys
  history = state.history
  ok = np.flatnonzero(history.ok)
  targets, observed, notes = e.objective.targets(history, ok, k_aux)
  train = [history.points[i] for i in ok] + taken
  cache = e.model.featurizer.extend(state.cache, taken)
  anchor = _anchor(e, state, ok) if e.refit_every > 1 else state.anchor
  fitted = point_model.fit(e.model, k_fit, cache, train, targets, len(ok), warm=anchor[1] if anchor else None)
  best = float(bo_context.incumbent(e.space, history, ok, targets))
  return fitted, best, observed, notes, anchor


def _choose(e: _Engine, keys: tuple, state: BOState, taken: list, exclude: set) -> tuple[list, tuple]:
  """([(point, value, notes)] of one optimisation, best first; the first point's notes hold the
  seconds spent), and the anchor of warm refits (or ())."""
  _, k_opt, k_aux = keys
  ctx = bo_context.optimiser_context(e.space, state.history, exclude)
  t0 = time.perf_counter()
  anchor, notes = state.anchor, {}
  if e.model is None:  # the uniform acquisition: one host stream of values per optimisation
    rng = common.host_rng(k_aux)
    score = lambda cands: rng.uniform(size=len(cands))
  else:
    fitted, best, observed, notes, anchor = _fit(e, keys, state, taken)
    if e.optimiser.needs_values:
      va = ValueAcquisition(point_model.value_model(fitted), best, e.acquisition)
      ctx = ctx._replace(value_fn=jax.tree_util.Partial(value_acquisition, va))
    score = e.score(fitted, best, k_aux, observed)
    cheap = point_model.screened(fitted) if e.optimiser.screens else None
    if cheap is not None:
      ctx = ctx._replace(screen_fn=e.score(cheap, best, k_aux, observed))
    # Dispatch is asynchronous: without waiting here, a fit that is all device work (the
    # ensemble's training) would be timed as the acquisition's, which reads its results first.
    jax.block_until_ready((fitted.state, fitted.state_p))
  t1 = time.perf_counter()
  chosen = e.optimiser.maximize((k_opt, k_aux), score, ctx, e.batch)
  seconds = {"fit": round(t1 - t0, 4), "acquisition": round(time.perf_counter() - t1, 4)}
  out = [(p, v, {**x, **notes}) for p, v, x in chosen]
  if out:  # the seconds go with the first point only, so that summing a journal's counts each once
    out[0][2]["seconds"] = seconds
  return out, anchor


def _propose(e: _Engine, state: BOState, n: int, pending: list) -> tuple[BOState, list]:
  space, history = e.space, state.history
  exclude = set(history.keys) | {space.canonical_key(q) for q in pending}
  key = common.step_key(state.key, history, pending)
  out = common.fresh(space, state.queue, exclude)
  queue, out = list(out[n:]), out[:n]
  notes = dict(state.notes)
  first = e.initial.first(space, exclude, n - len(out))
  notes.update({space.canonical_key(q): {"origin": "initial_pool"} for q in first})
  out += first
  warm = _modelled(e, history, len(pending))
  for j in itertools.count():
    if len(out) >= n:
      break
    keys = tuple(jax.random.split(jax.random.fold_in(key, j), 3))
    chosen = []
    if warm:
      chosen, anchor = _choose(e, keys, state, list(pending) + out, exclude)
      state = dataclasses.replace(state, anchor=anchor)
    if chosen:
      for point, value, extra in chosen:
        notes[space.canonical_key(point)] = {"origin": e.acquisition.name, **e.parts, "acquisition": value, **extra}
      exclude.update(space.canonical_key(p) for p, _, _ in chosen)
      points = [p for p, _, _ in chosen]
      queue += points[n - len(out) :]
      out += points[: n - len(out)]
      continue
    # The initial design, or one slot the optimiser found nothing new for.
    need = 1 if warm else e.initial.n_random(n - len(out), len(history) + len(pending))
    sampled = mutation.random_candidates(space, keys[2], exclude, n=need)
    notes.update({space.canonical_key(q): {"origin": "sample"} for q in sampled})
    exclude.update(space.canonical_key(q) for q in sampled)
    out += sampled
    if not warm or not sampled:
      break
  return dataclasses.replace(state, queue=tuple(queue), notes=notes), out
