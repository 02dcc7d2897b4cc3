"""Conditional BO (arc_kernel.md 6, issue 12) over the conditional space of chain MLPs: a GP with
the arc kernel, the poor man's embedding, or NASBOT's OTMANN kernel on the points' networks, and
EI (or UCB) maximised per depth by random candidates, mutation and gradient ascent.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.acquisition import evolution
from nas_jax.acquisition import functions as acq
from nas_jax.acquisition.continuous import maximize_continuous, n_evaluations
from nas_jax.features.featurizers import POOR_MAN_FILL, conditional_spec_of, make_featurizer
from nas_jax.features.pairwise import ArcPair, VectorPair
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy
from nas_jax.spaces import conditional as cond
from nas_jax.surrogates import gp, gp_fit, point_model
from nas_jax.surrogates.priors import arc_box, poor_man_box
from nas_jax.surrogates.surrogate import Predictive, gp_surrogate, hallucinate

__all__ = ["KERNELS", "OPTIMIZERS", "ACQUISITIONS", "ConditionalBOState", "conditional_bo",
           "conditional_bo_factory"]

KERNELS = ("arc", "poor_man", "otmann")
OPTIMIZERS = ("gradient", "mutation")
ACQUISITIONS = ("ei", "ucb")
_MIN_OK = 2  # successes before the GP is fitted (Ours: one point tells nothing of a length-scale)
_CHILDREN = 100  # EA children per depth next to the gradient stage
_VAR_FLOOR = 1e-12  # relative to Var(Y): keeps the gradient of the std finite at observed points


@dataclasses.dataclass(frozen=True)
class ConditionalBOState:
  """key: the search key; history: every observation; notes: canonical key -> notes."""

  key: jax.Array
  history: common.History
  notes: dict = dataclasses.field(default_factory=dict)


@flax.struct.dataclass
class _Model:
  """The acquisition of a fitted vector GP, as a pytree: one compile per capacity C.

  posterior, posterior_p: gp.GPPosterior [S, ...] conditioned on the observations, and also on
  the pending points at their mean; train_u: [C, P] float unit values; train_active: [C, P] bool;
  lower, upper: [P] float; layer: [P] int (`ConditionalSpec.layer`); best: [] the best score;
  beta: [] UCB weight; kernel ("arc" | "poor_man"), acquisition ("ei" | "ucb"): static.
  """

  posterior: gp.GPPosterior
  posterior_p: gp.GPPosterior
  train_u: jax.Array
  train_active: jax.Array
  lower: jax.Array
  upper: jax.Array
  layer: jax.Array
  best: jax.Array
  beta: jax.Array
  kernel: str = flax.struct.field(pytree_node=False)
  acquisition: str = flax.struct.field(pytree_node=False)



def _pad(x: np.ndarray, axis: int, size: int) -> np.ndarray:
  widths = [(0, 0)] * x.ndim
  widths[axis] = (0, size - x.shape[axis])
  return np.pad(x, widths)


def _pair(kernel: str, u1, a1, u2, a2):
  """GP input of points (u [n, P] unit values, active [n, P]) against others: an ArcPair, or the
  poor man's embedding (inactive -> POOR_MAN_FILL) as a VectorPair."""
  if kernel == "arc":
    return ArcPair(u1, a1, u2, a2)
  return VectorPair(jnp.where(a1, u1, POOR_MAN_FILL), jnp.where(a2, u2, POOR_MAN_FILL))


def _box(kernel: str, n_params: int) -> gp_fit.Box:
  """The prior boxes of the Table 1 regressors (`surrogates.priors`)."""
  return arc_box(n_params) if kernel == "arc" else poor_man_box(n_params)


def _acq_values(acquisition: str, pred: Predictive, pred_p: Predictive, best, beta) -> jax.Array:
  """[m] EI or UCB with the mean of pred and the std of pred_p (hallucinated pending points)."""
  pred = acq.with_pending(pred, pred_p)
  return acq.ei(pred, best) if acquisition == "ei" else acq.ucb(pred, beta=beta)


def _predictive(post: gp.GPPosterior, pair: Any) -> Predictive:
  mean, var = jax.vmap(gp.predict, (0, None))(post, pair)
  return Predictive(mean, jnp.sqrt(jnp.maximum(var, _VAR_FLOOR * post.y_scale[:, None] ** 2)))


def _acquisition(model: _Model, values: jax.Array) -> jax.Array:
  """The acquisition of one point, values [P] -> [], differentiable in its active values."""
  active = model.layer <= values[0]
  u = jnp.where(active, (values - model.lower) / (model.upper - model.lower), 0.0)
  pair = _pair(model.kernel, u[None], active[None], model.train_u, model.train_active)
  pred, pred_p = _predictive(model.posterior, pair), _predictive(model.posterior_p, pair)
  return _acq_values(model.acquisition, pred, pred_p, model.best, model.beta)[0]


_score_batch = jax.jit(jax.vmap(_acquisition, in_axes=(None, 0)))


def _fit(key, surrogate, pair, y: np.ndarray, n_points: int):
  """(state, state_p): the GP on pair (C, C) fitted to the first len(y) slots (scores y), and
  also conditioned on the pending slots up to n_points at its mean (the same when none)."""
  slots = np.arange(pair.shape[0])
  ok, pending = jnp.asarray(slots < len(y)), (slots >= len(y)) & (slots < n_points)
  y_pad = jnp.asarray(_pad(np.asarray(y, np.float64), 0, len(slots)))
  state = surrogate.fit(key, pair, y_pad, ok)
  return state, hallucinate(surrogate, state, pair, y_pad, ok, jnp.asarray(pending)) if pending.any() else state


def _vector_acquisition(key, surrogate, spec, points, y, *, kernel, acquisition, beta):
  """(score, model): `score(points) -> [m]` and the `_Model` of the vector GP fitted on points
  (observations first, then pending ones), y: [n_ok] scores."""
  u, active = cond.to_unit(cond.stack_points(points), spec)
  c = common.capacity(len(points), 16)
  u, active = jnp.asarray(_pad(u, 0, c)), jnp.asarray(_pad(active, 0, c))
  state, state_p = _fit(key, surrogate, _pair(kernel, u, active, u, active), y, len(points))
  model = _Model(state.posterior, state_p.posterior, u, active, jnp.asarray(spec.lower), jnp.asarray(spec.upper),
                 jnp.asarray(spec.layer), jnp.asarray(float(np.max(y))), jnp.asarray(float(beta)), kernel, acquisition)

  def score(cands: list) -> np.ndarray:
    values = np.stack([np.asarray(p.values, np.float64) for p in cands])
    return np.asarray(_score_batch(model, jnp.asarray(_pad(values, 0, common.capacity(len(cands), 8)))))[: len(cands)]

  return score, model


def _otmann_acquisition(key, model: point_model.PointModel, points, y, *, acquisition, beta):
  """(score, None): NASBOT's GP (OTMANN kernel, projected) on `cond.to_architecture` of points
  (observations first, then pending ones), through the engine's featurizer and surrogate."""
  fitted = point_model.fit(model, key, model.featurizer.init(points), points, np.asarray(y), len(y))
  best = float(np.max(y))

  def score(cands: list) -> np.ndarray:
    pred, pred_p = point_model.predict(fitted, cands)
    return np.asarray(_acq_values(acquisition, pred, pred_p, best, beta))

  return score, None


def _to_point(values: np.ndarray, spec: cond.ConditionalSpec) -> cond.ConditionalPoint:
  """The canonical point of values [P]: integers rounded, clipped to the bounds, inactive values
  at their lower bounds (as the space keeps them)."""
  values = np.clip(np.where(spec.integer, np.round(values), values), spec.lower, spec.upper)
  active = cond.activity(values, spec)
  return cond.ConditionalPoint(np.where(active, values, spec.lower).astype(np.float32), active)


def _random_points(rng: np.random.Generator, spec: cond.ConditionalSpec, depth: int, n: int) -> list:
  """n points of one depth, every parameter uniform in its bounds (integers uniform)."""
  ints = rng.integers(spec.lower.astype(np.int64), spec.upper.astype(np.int64) + 1, (n, len(spec.names)))
  values = np.where(spec.integer, ints, rng.uniform(spec.lower, spec.upper, (n, len(spec.names))))
  values[:, 0] = depth  # index 0 is the depth (spaces/conditional.py)
  return [_to_point(v, spec) for v in values]


def _spec_of(space: Any) -> cond.ConditionalSpec:
  if getattr(space, "kind", None) != cond.KIND:
    raise ValueError(f"space: kind {getattr(space, 'kind', None)!r}; conditional_bo needs a {cond.KIND!r} space")
  return conditional_spec_of(space)


def _check_options(kernel, optimizer, acquisition, counts: dict) -> None:
  for name, value, allowed in (("kernel", kernel, KERNELS), ("optimizer", optimizer, OPTIMIZERS),
                               ("acquisition", acquisition, ACQUISITIONS)):
    if value not in allowed:
      raise ValueError(f"conditional_bo: {name}={value!r}; allowed: {', '.join(allowed)}")
  if kernel == "otmann" and optimizer == "gradient":
    raise ValueError("conditional_bo: optimizer='gradient' with kernel='otmann'; OTMANN reads networks, not"
                     " values, so it has no gradient: use optimizer='mutation' (or None)")
  for name, (value, least) in counts.items():
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
      raise ValueError(f"conditional_bo: {name}={value!r}; expected an integer >= {least}")


def conditional_bo(space: Any, goal: str = "max", *, kernel: str = "arc", acquisition: str = "ei",
                   beta: float = 2.0, n_starts_fit: int = 8, fit_steps: int = 100, n_random: int = 200,
                   n_grad_starts: int = 16, grad_steps: int = 50, optimizer: str | None = None,
                   n_mutations: int | None = None) -> Strategy:
  """BO over `spaces.conditional.conditional_space` as a Strategy.

  The initial points (`space.initial()`) come first, then random samples until 2 evaluations
  have succeeded. Each later proposal fits a GP on the successes (scores, so it maximises) with
  maximum likelihood (`n_starts_fit` vmapped starts, `fit_steps` Adam steps), adds the pending
  points as kriging believers, and maximises the acquisition for every depth D: `n_random` random
  points of depth D and the observed ones are scored, NASBOT's EA mutates the best
  (`space.mutate`, `n_mutations` new points), and with optimizer "gradient" the best
  `n_grad_starts` points run `grad_steps` Adam steps on their active continuous parameters
  through the differentiable GP. The best point over all depths whose canonical key is neither
  observed nor pending is proposed; its notes record the acquisition evaluations spent.

  Args:
    space: a conditional space; goal: the task's goal.
    kernel: "arc" (ArcKernel on `to_unit`), "poor_man" (ARD ExpSquared on the -1-filled unit
      values) or "otmann" (NASBOT's GP on `to_architecture`, which sees only depth, units and
      activations).
    acquisition: "ei" or "ucb" (mean + sqrt(beta) std).
    optimizer: "gradient" or "mutation"; None picks "gradient", or "mutation" for "otmann".
    n_mutations: EA children per depth; None gives 100, plus with "mutation" the evaluations the
      gradient stage would spend (n_grad_starts (grad_steps + 2)), so that by default both
      optimizers spend equal acquisition evaluations.
  """
  optimizer = optimizer or ("mutation" if kernel == "otmann" else "gradient")
  _check_options(kernel, optimizer, acquisition, {
      "n_starts_fit": (n_starts_fit, 1), "fit_steps": (fit_steps, 1), "n_random": (n_random, 1),
      "n_grad_starts": (n_grad_starts, 1), "grad_steps": (grad_steps, 1),
      "n_mutations": (0 if n_mutations is None else n_mutations, 0)})
  if goal not in GOALS:
    raise ValueError(f"conditional_bo: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if not (isinstance(beta, (int, float)) and beta >= 0):
    raise ValueError(f"conditional_bo: beta={beta!r}; expected a number >= 0")
  spec = _spec_of(space)
  gradient = optimizer == "gradient"
  if n_mutations is None:
    n_mutations = _CHILDREN + (0 if gradient else n_evaluations(n_grad_starts, grad_steps))
  options = dict(acquisition=acquisition, beta=beta)
  if kernel == "otmann":
    model = point_model.point_model("gp", make_featurizer("otmann", space), n_starts=n_starts_fit, fit_steps=fit_steps)
    fit = lambda key, points, y: _otmann_acquisition(key, model, points, y, **options)
  else:
    surrogate = gp_surrogate(_box(kernel, len(spec.names)), n_starts=n_starts_fit, steps=fit_steps)
    fit = lambda key, points, y: _vector_acquisition(key, surrogate, spec, points, y, kernel=kernel, **options)

  def maximise(key, score, model, history, exclude) -> tuple[list, int]:
    """[(acquisition, point, origin)] of every depth's best points, and the evaluations spent."""
    spent = [0]

    def counted(cands):
      spent[0] += len(cands)
      return score(cands)

    found, starts = [], []
    for depth in range(1, spec.max_depth + 1):
      k_rand, k_ea = jax.random.split(jax.random.fold_in(key, depth))
      randoms = _random_points(common.host_rng(k_rand), spec, depth, n_random)
      population = randoms + [p for p, ok in zip(history.points, history.ok) if ok and p.values[0] == depth]
      points, values = evolution.ea_maximize(
          k_ea, counted, population, space, n_ea=n_mutations, n_mut=evolution.n_mut_schedule(max(n_mutations, 1)),
          n=n_grad_starts if gradient else 1, exclude=exclude, population_scores=counted(population))
      random_keys = {space.canonical_key(p) for p in randoms}
      found += [(float(v), p, "random" if space.canonical_key(p) in random_keys else "mutation")
                for p, v in zip(points, values)]
      starts += points
    if gradient and starts:
      x0 = np.stack([np.asarray(p.values, np.float64) for p in starts])
      free = np.stack([np.asarray(p.active) for p in starts]) & ~spec.integer
      values, acq_values = maximize_continuous(jax.random.fold_in(key, 0), jax.tree_util.Partial(_acquisition, model),
                                               x0, free, spec.lower, spec.upper, steps=grad_steps)
      spent[0] += n_evaluations(len(starts), grad_steps)
      moved = [_to_point(v, spec) for v in np.asarray(values)]
      cond.check_point(cond.stack_points(moved), spec)
      found += [(float(a), p, "gradient") for a, p in zip(np.asarray(acq_values), moved)]
    return found, spent[0]

  def choose(key, history, pending, exclude):
    ok = np.flatnonzero(history.ok)
    k_fit, k_opt = jax.random.split(key)
    t0 = time.perf_counter()
    score, model = fit(k_fit, [history.points[i] for i in ok] + list(pending), history.scores[ok])
    t1 = time.perf_counter()
    found, spent = maximise(k_opt, score, model, history, exclude)
    seconds = {"fit": t1 - t0, "acquisition": time.perf_counter() - t1}
    for value, point, origin in sorted(found, key=lambda f: -f[0]):
      if space.canonical_key(point) not in exclude:
        return point, {"origin": origin, "acquisition": value, "depth": int(point.values[0]), "kernel": kernel,
                       "optimizer": optimizer, "n_acq_evals": spent, "seconds": seconds}
    return None, None

  def init(key):
    return ConditionalBOState(key=key, history=common.empty_history())

  def propose(state, n, pending):
    choose_one = lambda k, exclude, taken: choose(k, state.history, taken, exclude)
    return common.model_based_propose(state, n, pending, space, choose_one, min_ok=_MIN_OK)

  def update(state, observations):
    return common.observe(state, space, goal, observations) if observations else state

  return Strategy(init=init, propose=propose, update=update, notes=common.notes_reader(space))


def conditional_bo_factory(config, space, task) -> Strategy:
  """`config.strategy = "conditional_bo"`; `config.strategy_config` holds keyword arguments of
  `conditional_bo`."""
  return conditional_bo(space, task.goal, **common.strategy_options(config))
