"""The one Bayesian-optimisation strategy: featurizer + surrogate + acquisition + optimiser.

Every model-based method of nas_jax is this strategy with other parts (`presets`): NASBOT is
OTMANN + GP + EI + EA, BANANAS path encoding + ensemble + ITS + mutation, Auto-Keras edit
distance + fixed GP + UCB + tree search, and any other combination the registries allow
(`features.featurizers.FEATURIZERS`, `surrogates.point_model.SURROGATES`,
`acquisition.functions.ACQUISITIONS`, `acquisition.optimizers.OPTIMISERS`) is a config away.

One proposal: the initial design first ("pool": the space's initial points, then random points
until `min_ok` evaluations succeeded; "random": `n_init` random points), then per slot the
surrogate is fitted on the successful observations, the points pending evaluation (and those
chosen earlier in the call) are hallucinated at the model's mean, and the optimiser maximises the
acquisition; with `batch` > 1 its next-best points are queued for the next calls (BANANAS' k).

Replay determinism: every draw comes from `step_key(key, history, pending)`, folded per slot and
split into (fit, optimiser, auxiliary) keys, and the featurizer's cache is a function of the
observed points alone, so `update(init(key), journal)` proposes what the uninterrupted run did.

Warm refits (`refit_every` = k > 1, GPs with fitted hyper-parameters): with m successful
observations, the full multi-start fit is made on the first m0 of them, m0 = m rounded down to a
multiple of k (m0 = m while m < k), with a key of m0 alone; each proposal then refits from its
hyper-parameters with the surrogate's `warm_steps`. The anchor is kept in the state and, after a
resume, recomputed from the journal, so replay stays exact; k = 1 is the full fit every time.

Several objectives (a task with `Task.objectives`, e.g. validation accuracy and parameters), two
ways: "parego" (Knowles 2006, any surrogate and acquisition) models, at each proposal, an
augmented Chebyshev scalarisation of the normalised objectives with weights drawn uniformly from
the simplex; "ehvi" models the value only and maximises its expected hypervolume improvement
(`acquisition.ehvi`), the other objectives being costs the space knows before evaluation
(`Space.costs`, as in a constrained space).

On a fidelity space (`spaces.fidelity_space`, whose points are (network, fidelity)), the
featurizer is built on the base space and sees the fidelity too (`features.fidelity`), so one
surrogate models every observation at its fidelity; the optimiser's candidates are at the full
fidelity, where the acquisition is evaluated, and EI's incumbent is the best full-fidelity score
(the best of any fidelity before one exists). The optimiser starts from each network once, at
the full fidelity, with its highest-fidelity score; optimisers that build points themselves
(tree search, enumeration, gradients) are refused.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Any

import jax
import numpy as np

from nas_jax.acquisition import ehvi as ehvi_lib
from nas_jax.acquisition import functions as acq
from nas_jax.acquisition import mutation, pareto
from nas_jax.acquisition.acq_optimiser import check_counts
from nas_jax.acquisition.conditional_search import ValueAcquisition, value_acquisition
from nas_jax.acquisition.optimizers import make_optimiser
from nas_jax.features.featurizer import FeatureCache
from nas_jax.features.featurizers import make_featurizer
from nas_jax.features.fidelity import with_fidelity
from nas_jax.search.state import GOALS, to_score
from nas_jax.search.strategies import bo_context, common
from nas_jax.search.strategy import Strategy
from nas_jax.surrogates import point_model

__all__ = ["INITIAL", "MULTI_OBJECTIVE", "BOState", "bo", "bo_factory"]

INITIAL = ("pool", "random")
MULTI_OBJECTIVE = ("parego", "ehvi")
_WEIGHTS_STREAM = 0x3FFF_FFF2  # folds a slot's auxiliary key for ParEGO's weights
_INFEASIBLE = -1e30  # an infeasible candidate's acquisition: finite, so annealing and softmax stay defined
_ACQ_DEFAULTS = (("kappa", 2.0), ("xi", 0.0), ("sigma_scale", 1.0))  # `functions.acquire`'s
_ACQ_OPTIONS = tuple(k for k, _ in _ACQ_DEFAULTS)
_ANCHOR_STREAM = 0x3FFF_FFF1  # folds the state key for anchor fits, apart from the step keys
_PREDICT_STREAM = 0x3FFF_FFF3  # folds the state key for `predict`'s fits
# Optimisers whose candidates all come from the Space API (sample, mutate, initial), so that on a
# fidelity space they are FidelityPoints at the full fidelity.
_FIDELITY_OPTIMISERS = ("ea", "mutation", "random")


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


def _options(name: str, value: Any) -> dict:
  if value is None:
    return {}
  out = value.to_dict() if hasattr(value, "to_dict") else value
  if not isinstance(out, dict):
    raise ValueError(f"bo: {name}={value!r}; expected a dict of options")
  return dict(out)


def bo(
  space: Any,
  goal: str = "max",
  *,
  featurizer: str = "otmann",
  featurizer_config=None,
  surrogate: str = "gp",
  surrogate_config=None,
  acquisition: str = "ei",
  acquisition_config=None,
  optimizer: str = "ea",
  optimizer_config=None,
  initial: str = "pool",
  n_init: int = 10,
  min_ok: int = 1,
  batch: int = 1,
  refit_every: int = 1,
  objectives: tuple = (),
  multi_objective: str = "parego",
  ehvi_samples: int = 64,
  ehvi_ref: tuple = (),
) -> Strategy:
  """BO over any Space from registered parts; every option is checked here, before any evaluation.

  Args:
    space: a Space; goal: the task's goal (the model reads `to_score`, so it always maximises).
    featurizer, featurizer_config: a `FEATURIZERS` name that accepts the space, and its options.
    surrogate, surrogate_config: "gp", "gp_fixed" or "ensemble" and its options
      (`point_model.point_model`); `target_offset` c makes it model c - score.
    acquisition, acquisition_config: "ei", "pi", "ucb", "ts", "its" (options kappa, xi,
      sigma_scale: `functions.acquire`), or "random" for Unif(0, 1) values and no model (RAND).
    optimizer, optimizer_config: an `OPTIMISERS` name and its options.
    initial: "pool" or "random" (see the module docstring); n_init: random points first with
      "random"; min_ok: successes before the model is fitted; batch: points per optimisation.
    refit_every: k > 1 makes the full surrogate fit every k successful observations and warm
      refits in between (see the module docstring); 1, the default, is the full fit every time.
    objectives: the task's other objectives, ((name, goal), ...) (`Task.objectives`); () for one.
    multi_objective: with objectives, "parego" or "ehvi" (module docstring); ehvi_samples: its
      Monte Carlo draws per candidate; ehvi_ref: its reference point in raw units, (value, *other
      objectives), or () for 0.1 below the worst observed (`acquisition.ehvi`).
  """
  if goal not in GOALS:
    raise ValueError(f"bo: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if initial not in INITIAL:
    raise ValueError(f"bo: initial={initial!r}; allowed: {', '.join(INITIAL)}")
  check_counts(
    "bo: ", {"n_init": (n_init, 0), "min_ok": (min_ok, 1), "batch": (batch, 1), "refit_every": (refit_every, 1)}
  )
  acq_options = _options("acquisition_config", acquisition_config)
  unknown = sorted(set(acq_options) - set(_ACQ_OPTIONS))
  if unknown:
    raise ValueError(f"bo: acquisition_config has {unknown}; allowed: {', '.join(_ACQ_OPTIONS)}")
  for name, least in (("kappa", 0.0), ("xi", 0.0), ("sigma_scale", 0.0)):
    v = acq_options.get(name, least)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < least:
      raise ValueError(f"bo: acquisition_config.{name}={v!r}; expected a finite number >= {least:g}")
  if acquisition not in acq.ACQUISITIONS + ("random",):
    raise ValueError(f"bo: acquisition={acquisition!r}; allowed: {', '.join(acq.ACQUISITIONS + ('random',))}")
  optimiser = make_optimiser(optimizer, space.kind, **_options("optimizer_config", optimizer_config))
  if space.fidelities and optimizer not in _FIDELITY_OPTIMISERS:
    raise ValueError(
      f"bo: optimizer={optimizer!r} builds points itself, without a fidelity; on a fidelity space choose"
      f" one of: {', '.join(_FIDELITY_OPTIMISERS)}"
    )
  # Built for "random" too, so that its options are checked: RAND uses neither.
  if space.fidelities:  # the featurizer reads the networks; with_fidelity adds their fidelities
    feats = make_featurizer(featurizer, space.base, **_options("featurizer_config", featurizer_config))
    feats = with_fidelity(feats, space.fidelities)
  else:
    feats = make_featurizer(featurizer, space, **_options("featurizer_config", featurizer_config))
  model = point_model.point_model(surrogate, feats, **_options("surrogate_config", surrogate_config))
  if acquisition == "random":
    model = None
  if refit_every > 1 and (model is None or model.surrogate.refit is None):
    raise ValueError(
      f"bo: refit_every={refit_every} needs a surrogate with warm refits (surrogate 'gp' with fitted,"
      f" not sampled, hyper-parameters); this one ({'none' if model is None else surrogate}) has none: use 1"
    )
  objectives = common.check_objectives("bo", objectives)
  if not objectives and multi_objective != "parego":
    raise ValueError(f"bo: multi_objective={multi_objective!r} needs other objectives (config.objectives)")
  if multi_objective not in MULTI_OBJECTIVE:
    raise ValueError(f"bo: multi_objective={multi_objective!r}; allowed: {', '.join(MULTI_OBJECTIVE)}")
  check_counts("bo: ", {"ehvi_samples": (ehvi_samples, 1)})
  ehvi = bool(objectives) and multi_objective == "ehvi"
  ref_scores = None
  if ehvi_ref:
    if not ehvi or len(ehvi_ref) != 1 + len(objectives) or not all(np.isfinite(np.asarray(ehvi_ref, float))):
      raise ValueError(
        f"bo: ehvi_ref={ehvi_ref!r}; with multi_objective='ehvi' it is {1 + len(objectives)} finite raw values"
        f" (value, {', '.join(n for n, _ in objectives) or '...'}), or () for the default"
      )
    goals = [goal, *(g for _, g in objectives)]
    ref_scores = np.array([float(to_score(float(r), g)) for r, g in zip(ehvi_ref, goals)])
  if ehvi and (model is None or optimiser.needs_values or space.costs is None):
    raise ValueError(
      "bo: multi_objective='ehvi' needs a surrogate (not acquisition 'random'), an optimiser that"
      " scores candidates (not 'gradient') and a space that knows the other objectives before"
      " evaluation (a cost metric of config.objectives); use multi_objective='parego'"
    )
  joint = acquisition == "ts" and model is not None and not model.vectors
  if optimiser.needs_values and (
    model is None or model.vectors or model.featurizer.encode_values is None or acquisition not in acq.CLOSED_FORM
  ):
    raise ValueError(
      f"bo: optimizer={optimizer!r} ascends the acquisition's gradient: it needs a GP surrogate on"
      " a featurizer of raw values (arc or poor_man) and acquisition ei, pi or ucb"
    )

  def score_fn(fitted, best, key, observed):
    def score(cands: list) -> np.ndarray:
      # Acquisitions are computed at every padded candidate slot: one program per candidate
      # capacity, not per candidate count. A slot's value does not depend on the slots after it
      # (`acq.acquire`), so cutting afterwards gives what [m] candidates would have.
      pred, pred_p = point_model.predict(fitted, cands, joint=joint and not ehvi, padded=not ehvi)
      if ehvi:
        known = [[float(to_score(space.costs(c)[name], g)) for name, g in objectives] for c in cands]
        return ehvi_lib.ehvi(pred, pred_p, np.asarray(known), observed, key, n_samples=ehvi_samples, ref=ref_scores)
      values = acq.acquire(acquisition, pred, pred_p, best, key, **acq_options)
      return np.asarray(values, np.float64)[: len(cands)]

    return score

  def targets_of(history, ok, key) -> tuple[np.ndarray, np.ndarray | None, dict]:
    """(what the surrogate models at the successes [len(ok)], their scores of every objective
    [len(ok), 1 + m] or None, notes): the value scores, or ParEGO's scalarisation of them all."""
    if not objectives:
      return history.scores[ok], None, {}
    observed = common.objective_scores(history, objectives)[ok]
    if ehvi:
      return history.scores[ok], observed, {"multi_objective": "ehvi"}
    weights = pareto.simplex_weights(common.host_rng(jax.random.fold_in(key, _WEIGHTS_STREAM)), observed.shape[1])
    notes = {"multi_objective": "parego", "weights": [round(float(w), 4) for w in weights]}
    return pareto.parego_scalarise(observed, weights), observed, notes

  def anchor_of(state, ok: np.ndarray) -> tuple:
    """(m0, the full fit on the first m0 successes) for warm refits: the state's, or made now."""
    m0 = len(ok) if len(ok) < refit_every else len(ok) - len(ok) % refit_every
    if state.anchor and state.anchor[0] == m0:
      return state.anchor
    key = jax.random.fold_in(jax.random.fold_in(state.key, _ANCHOR_STREAM), m0)
    points = [state.history.points[i] for i in ok[:m0]]
    # What the refits model (ParEGO: a scalarisation, with weights of the anchor's own key).
    targets, _, _ = targets_of(state.history, ok[:m0], key)
    return m0, point_model.fit(model, key, state.cache, points, targets, m0)

  def choose(keys, state, taken: list, exclude: set) -> tuple[list, tuple]:
    """([(point, value, notes)] of one optimisation, best first; notes hold the seconds spent),
    and the anchor of warm refits (or ())."""
    k_fit, k_opt, k_aux = keys
    history = state.history
    ctx = bo_context.optimiser_context(space, history, exclude)
    t0 = time.perf_counter()
    anchor, mo_notes = state.anchor, {}
    if model is None:  # RAND: the optimiser on Unif(0, 1) values, one host stream per call
      rng = common.host_rng(k_aux)
      score = lambda cands: rng.uniform(size=len(cands))
    else:
      ok = np.flatnonzero(history.ok)
      targets, observed, mo_notes = targets_of(history, ok, k_aux)
      train = [history.points[i] for i in ok] + taken
      cache = model.featurizer.extend(state.cache, taken)
      if refit_every > 1:
        anchor = anchor_of(state, ok)
      warm = anchor[1] if anchor else None
      fitted = point_model.fit(model, k_fit, cache, train, targets, len(ok), warm=warm)
      best = float(bo_context.incumbent(space, history, ok, targets))
      if optimiser.needs_values:
        va = ValueAcquisition(
          point_model.value_model(fitted), best, *(acq_options.get(k, d) for k, d in _ACQ_DEFAULTS), name=acquisition
        )
        ctx = ctx._replace(value_fn=jax.tree_util.Partial(value_acquisition, va))
      score = score_fn(fitted, best, k_aux, observed)
    if space.feasible is not None:  # optimisers that build points themselves (morphs, gradients)
      score = _feasible_first(space.feasible, score)
    t1 = time.perf_counter()
    chosen = optimiser.maximize((k_opt, k_aux), score, ctx, batch)
    if space.feasible is not None:
      chosen = [c for c in chosen if space.feasible(c[0])]
    seconds = {"fit": round(t1 - t0, 4), "acquisition": round(time.perf_counter() - t1, 4)}
    return [(p, v, {**x, **mo_notes, "seconds": seconds}) for p, v, x in chosen], anchor

  parts = {"optimizer": optimizer}
  if model is not None:
    parts.update(featurizer=featurizer, surrogate=surrogate)

  def modelled(history: common.History, n_pending: int) -> bool:
    """Whether the initial design is over: `min_ok` successes (and `n_init` points with "random")."""
    return history.ok.sum() >= min_ok and (initial == "pool" or len(history) + n_pending >= n_init)

  def predict(state, points):
    """The model's mean score at `points` (`Strategy.predict`), fitted on the successes with a key
    of the state's key and history alone; None before the initial design is over or for RAND."""
    history = state.history
    if model is None or not points or not modelled(history, 0):
      return None
    ok = np.flatnonzero(history.ok)
    key = jax.random.fold_in(jax.random.fold_in(state.key, _PREDICT_STREAM), len(history))
    train = [history.points[i] for i in ok]
    return point_model.mean_at(model, key, state.cache, train, history.scores[ok], list(points))

  def init(key):
    return BOState(key=key, history=common.empty_history(), cache=model.featurizer.init([]) if model else None)

  def restart(state):
    # The cache is a function of the points alone (module docstring): the distances between
    # points seen before are what a replay would compute again.
    return dataclasses.replace(init(state.key), cache=state.cache)

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(q) for q in pending}
    key = common.step_key(state.key, state.history, pending)
    out = common.fresh(space, state.queue, exclude)
    queue, out = list(out[n:]), out[:n]
    notes = dict(state.notes)
    if initial == "pool":
      pool = common.fresh(space, space.initial(), exclude)[: n - len(out)]
      notes.update({space.canonical_key(q): {"origin": "initial_pool"} for q in pool})
      out += pool
    history = state.history
    warm = modelled(history, len(pending))
    for j in itertools.count():
      if len(out) >= n:
        break
      keys = jax.random.split(jax.random.fold_in(key, j), 3)
      chosen = []
      if warm:
        chosen, anchor = choose(keys, state, list(pending) + out, exclude)
        state = dataclasses.replace(state, anchor=anchor)
      if chosen:
        for point, value, extra in chosen:
          notes[space.canonical_key(point)] = {"origin": acquisition, **parts, "acquisition": value, **extra}
        exclude.update(space.canonical_key(p) for p, _, _ in chosen)
        points = [p for p, _, _ in chosen]
        queue += points[n - len(out) :]
        out += points[: n - len(out)]
        continue
      # The initial design, or one slot the optimiser found nothing new for.
      if warm:
        need = 1
      elif initial == "pool":
        need = n - len(out)
      else:  # BANANAS: random points up to n_init, at least one per call
        need = min(n - len(out), max(n_init - len(history) - len(pending), 1))
      sampled = mutation.random_candidates(space, keys[2], exclude, n=need)
      notes.update({space.canonical_key(q): {"origin": "sample"} for q in sampled})
      exclude.update(space.canonical_key(q) for q in sampled)
      out += sampled
      if not warm or not sampled:
        break
    return dataclasses.replace(state, queue=tuple(queue), notes=notes), out

  def update(state, observations):
    if not observations:
      return state
    state = common.observe(state, space, goal, observations)
    if model is None:
      return state
    new = state.history.points[len(state.history) - len(observations) :]
    return dataclasses.replace(state, cache=model.featurizer.extend(state.cache, new))

  return Strategy(
    init=init, propose=propose, update=update, notes=common.notes_reader(space), predict=predict, restart=restart
  )


def _feasible_first(feasible, score):
  """`score` with every infeasible candidate at `_INFEASIBLE`, below any feasible one."""

  def scored(cands: list) -> np.ndarray:
    return np.where([feasible(c) for c in cands], score(cands), _INFEASIBLE)

  return scored


def bo_factory(config, space, task) -> Strategy:
  """`config.strategy = "bo"`; `config.strategy_config` holds keyword arguments of `bo`."""
  return bo(space, task.goal, objectives=task.objectives, **common.strategy_options(config))
