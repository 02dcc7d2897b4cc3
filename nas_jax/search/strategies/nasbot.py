"""NASBOT (spec nasbot.md 7-9): a GP with the OTMANN kernel, EI with hallucinated pending
evaluations, maximised by the EA over network modifiers; and RAND, the same EA fed Unif(0, 1).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.acquisition import evolution
from nas_jax.acquisition import functions as acq
from nas_jax.features.otmann import KERNEL_NU_STR, otmann_distances
from nas_jax.features.pairwise import OtmannPair
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy
from nas_jax.surrogates import gp_fit
from nas_jax.surrogates.kernels import NasbotKernel
from nas_jax.surrogates.surrogate import gp_surrogate, hallucinate

__all__ = ["KERNELS", "NasbotState", "nasbot", "nasbot_factory", "rand_factory", "nasbot_box"]

KERNELS = ("combined", "d", "d_bar")  # the kernel ablation of App. C.4 (Fig. 7a)
_OFF = 1e-9  # the scale a switched-off kernel term is held at: exp(-20.7), never exactly 0


@dataclasses.dataclass(frozen=True)
class NasbotState:
  """key: the search key; history: every observation (failed ones too, with NaN scores);
  d, d_bar: [n_nu, n, n] float64 OTMANN distances between the history's points, extended by
  `update` one new row block at a time; notes: canonical key -> notes of proposed points."""

  key: jax.Array
  history: common.History
  d: np.ndarray
  d_bar: np.ndarray
  notes: dict = dataclasses.field(default_factory=dict)


def nasbot_box(n_nu: int, kernel: str = "combined", *, p: float = 1.0, p_bar: float = 2.0) -> gp_fit.Box:
  """The hyper-parameter prior box of the authors' code (nasbot.md App. R), relative to Var(Y);
  `kernel="d"` or `"d_bar"` holds the other term's scale fixed at ~0 (the Fig. 7a ablation)."""
  if kernel not in KERNELS:
    raise ValueError(f"kernel: {kernel!r} is unknown; allowed: {', '.join(KERNELS)}")
  lower, upper = NasbotKernel.bounds(n_nu, p=p, p_bar=p_bar)
  off = jnp.log(_OFF)
  if kernel == "d":
    lower, upper = lower.replace(log_alpha_bar=off), upper.replace(log_alpha_bar=off)
  elif kernel == "d_bar":
    lower, upper = lower.replace(log_alpha=off), upper.replace(log_alpha=off)
  return gp_fit.Box.create(lower, upper)



def _grow(old: np.ndarray, rows: np.ndarray) -> np.ndarray:
  """[n_nu, n, n] distances plus rows [n_nu, k, n + k] of k new points -> [n_nu, n + k, n + k]."""
  n = old.shape[1]
  return np.concatenate([np.concatenate([old, rows[:, :, :n].transpose(0, 2, 1)], 2), rows], 1)


def _pad(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
  return np.pad(x, ((0, 0), (0, rows - x.shape[1]), (0, cols - x.shape[2])))


def nasbot(space: Any, goal: str = "max", *, acquisition: str = "ei", nu_str=KERNEL_NU_STR,
           solver: str = "exact", otmann_params: str = "paper", kernel: str = "combined",
           p: float = 1.0, p_bar: float = 2.0, n_hyper_samples: int = 0, n_starts: int = 16,
           fit_steps: int = 200, ea_scale: float = 25.0, ea_min: int = 50, ea_max: int = 500,
           selection: str = "paper", chunk_size: int = 256) -> Strategy:
  """NASBOT as a Strategy over a layer-graph Space.

  The initial pool (`space.initial()`) is proposed first (App. B.3), then random samples until
  an evaluation succeeds (a pool can be empty under tight limits). After that, each proposal
  fits the GP (kernel of eq. (7) on d, d_bar at every nu_str; hyper-parameters by multi-start
  maximum likelihood, or `n_hyper_samples` posterior samples as the paper does), adds the pending
  networks as kriging believers, and runs the EA of spec 8.1 from the evaluated networks and the
  pool with n_EA = clip(ea_scale sqrt(t), ea_min, ea_max) on hallucinated EI (`hei`). With
  `acquisition="random"` it is RAND (spec 10.4): the same EA scores every network Unif(0, 1).

  Args:
    space: a layer-graph Space (`spaces.space.layer_graph_space`).
    goal: the task's goal; the GP models scores (`to_score`), so it always maximises.
    acquisition: "ei" (NASBOT) or "random" (RAND).
    nu_str: the structural weights of the kernel's distances (App. B.1).
    solver, otmann_params, chunk_size: passed to `features.otmann.otmann_distances`.
    kernel: "combined", "d" or "d_bar" (Fig. 7a); p, p_bar: the powers of eq. (7) (Fig. 7c).
    n_hyper_samples: 0 for a maximum-likelihood fit, else slice samples (EI averaged over them).
    n_starts, fit_steps: the vmapped multi-start fit.
    ea_scale, ea_min, ea_max, selection: the EA's schedule and selection rule.
  """
  if goal not in GOALS:
    raise ValueError(f"nasbot: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if acquisition not in ("ei", "random"):
    raise ValueError(f"nasbot: acquisition={acquisition!r}; allowed: ei, random")
  nus = tuple(float(v) for v in np.atleast_1d(nu_str))
  chains = 4 if n_hyper_samples else 1
  surrogate = gp_surrogate(
      nasbot_box(len(nus), kernel, p=p, p_bar=p_bar), n_starts=n_starts, steps=fit_steps,
      n_hyper_samples=n_hyper_samples, n_chains=chains, project=True,
  )

  def dist(a, b=None):
    out = otmann_distances(a, b, solver=solver, nu_str=nus, params=otmann_params, chunk_size=chunk_size)
    return out.d, out.d_bar

  def bo_score_fn(key, history, d, d_bar, pending):
    """Hallucinated EI, given the history's distance cache: `(score, score_known)` where
    `score(cands)` solves OTMANN for new points and `score_known(idx)` reads history rows."""
    points = list(history.points) + list(pending)
    n_hist, n_all = len(history), len(history) + len(pending)
    c = common.capacity(n_all, 16)
    if pending:
      pd, pdb = dist(list(pending), points)
      d, d_bar = _grow(d, pd), _grow(d_bar, pdb)
    pair = OtmannPair(jnp.asarray(_pad(d, c, c)), jnp.asarray(_pad(d_bar, c, c)))
    ok = np.zeros(c, bool)
    ok[:n_hist] = history.ok
    y = np.zeros(c)
    y[:n_hist] = np.where(history.ok, history.scores, 0.0)
    pending_mask = (np.arange(c) >= n_hist) & (np.arange(c) < n_all)
    state = surrogate.fit(key, pair, jnp.asarray(y), jnp.asarray(ok))
    state_p = hallucinate(surrogate, state, pair, jnp.asarray(y), jnp.asarray(ok),
                          jnp.asarray(pending_mask)) if pending else state
    best = float(history.scores[history.ok].max())

    def hei(cd, cdb):
      m = cd.shape[1]
      rows = common.capacity(m, 8)
      cross = OtmannPair(jnp.asarray(_pad(cd, rows, c)), jnp.asarray(_pad(cdb, rows, c)))
      values = acq.hei(surrogate.predict(state, cross), surrogate.predict(state_p, cross), best)
      return np.asarray(values)[:m]

    return (lambda cands: hei(*dist(list(cands), points)),
            lambda idx: hei(d[:, idx, :n_all], d_bar[:, idx, :n_all]))

  def init(key):
    empty = np.zeros((len(nus), 0, 0))
    return NasbotState(key=key, history=common.empty_history(), d=empty, d_bar=empty)

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(q) for q in pending}
    key = common.step_key(state.key, state.history, pending)
    out = common.fresh(space, space.initial(), exclude)[:n]
    notes = dict(state.notes)
    notes.update({space.canonical_key(q): {"origin": "initial_pool"} for q in out})
    pending = list(pending)
    for j in range(n - len(out)):
      k_fit, k_ea, k_rand = jax.random.split(jax.random.fold_in(key, j), 3)
      history = state.history
      if not history.ok.any():  # nothing to model yet (the pool is in flight, failed or empty)
        sampled = common.fresh(space, space.sample(k_rand, n - len(out)), exclude)
        notes.update({space.canonical_key(q): {"origin": "sample"} for q in sampled})
        out += sampled
        break
      t = len(history)
      n_ea = evolution.n_ea_schedule(t, scale=ea_scale, lo=ea_min, hi=ea_max)
      pool = [q for q in space.initial() if space.canonical_key(q) not in history.keys]
      known = np.flatnonzero(history.ok)
      if acquisition == "random":
        rng = common.host_rng(k_rand)
        score = lambda cands: rng.uniform(size=len(cands))
        known_scores = score(known)
      else:
        score, score_known = bo_score_fn(k_fit, history, state.d, state.d_bar, pending + out)
        known_scores = score_known(known)
      # The evaluated networks' acquisition comes from the distance cache; only the EA's
      # children and pool networks without an observation yet (in flight) need new LPs.
      population = [history.points[i] for i in known] + pool
      scores = np.concatenate([known_scores, score(pool) if pool else np.zeros(0)])
      chosen, values = evolution.ea_maximize(
          k_ea, score, population, space, n_ea=n_ea, n_mut=evolution.n_mut_schedule(n_ea),
          exclude=exclude, selection=selection, population_scores=scores,
      )
      if not chosen:
        break
      exclude.add(space.canonical_key(chosen[0]))
      out.append(chosen[0])
      notes[space.canonical_key(chosen[0])] = {"origin": acquisition, "acquisition": float(values[0]), "n_ea": n_ea}
    return dataclasses.replace(state, notes=notes), out

  def update(state, observations):
    if not observations:
      return state
    history = common.add_observations(state.history, space, goal, observations)
    d, d_bar = state.d, state.d_bar
    if acquisition == "ei":
      nd, ndb = dist(list(history.points[len(state.history):]), list(history.points))
      d, d_bar = _grow(d, nd), _grow(d_bar, ndb)
    notes = {k: v for k, v in state.notes.items() if k not in history.keys}
    return dataclasses.replace(state, history=history, d=d, d_bar=d_bar, notes=notes)

  return Strategy(init=init, propose=propose, update=update, notes=common.notes_reader(space))


def nasbot_factory(config, space, task) -> Strategy:
  """`config.strategy = "nasbot"`; `config.strategy_config` holds keyword arguments of `nasbot`."""
  return nasbot(space, task.goal, **common.strategy_options(config))


def rand_factory(config, space, task) -> Strategy:
  """`config.strategy = "rand"`: NASBOT's EA on Unif(0, 1) values (spec 10.4)."""
  return nasbot(space, task.goal, **{**common.strategy_options(config), "acquisition": "random"})
