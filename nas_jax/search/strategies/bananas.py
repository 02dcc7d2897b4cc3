"""BANANAS (spec bananas.md 8): a deep ensemble on path encodings, candidates by mutating the best
queried points, batches of k chosen by one acquisition; presets "paper" and "code" (spec 14).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import jax
import numpy as np

from nas_jax.acquisition import functions as acq
from nas_jax.acquisition import mutation
from nas_jax.features import encodings
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy
from nas_jax.surrogates.ensemble import ensemble_surrogate
from nas_jax.surrogates.surrogate import Predictive

__all__ = ["PRESETS", "ACQUISITIONS", "BananasState", "bananas", "bananas_factory", "acquire"]

# Every difference between the presets (spec 14); encodings name `features.encodings.ENCODINGS`.
PRESETS = {
    "paper": dict(
        encoding="path", acquisition="ucb", ddof=1, ei_sigma_scale=1.0, n_random_candidates=1000
    ),
    "code": dict(
        encoding="trunc_path", acquisition="its", ddof=0, ei_sigma_scale=0.2,
        n_random_candidates=200,
    ),
}
ACQUISITIONS = ("ucb", "ei", "pi", "ts", "its")
CANDIDATES = ("mutation", "random")


@dataclasses.dataclass(frozen=True)
class BananasState:
  """key: the search key; history: every observation; queue: points chosen by the last BO
  iteration and not yet proposed; info: facts of the last BO iteration (JSON-able)."""

  key: jax.Array
  history: common.History
  queue: tuple = ()
  info: dict = dataclasses.field(default_factory=dict)


def acquire(
    name: str, pred: Predictive, best: float, key: jax.Array, *, ucb_beta: float = 0.5,
    ei_sigma_scale: float = 1.0,
) -> jax.Array:
  """Acquisition values (higher is better) of a Predictive over scores (spec 6).

  UCB is mean + ucb_beta * std (the paper's f - 0.5 sigma on errors); EI and PI use
  std * ei_sigma_scale (code: 1/5); TS uses one ensemble member (pred.samples [M, m]); ITS one
  independent normal draw per candidate.
  """
  if name == "ucb":
    return acq.ucb(pred, beta=ucb_beta**2)  # acq.ucb adds sqrt(beta) * std
  if name in ("ei", "pi"):
    scaled = pred.replace(std=pred.std * ei_sigma_scale)
    return (acq.ei if name == "ei" else acq.pi)(scaled, best)
  if name == "ts":
    return acq.thompson(pred, key=key)
  if name == "its":
    return acq.independent_thompson(pred, key=key)
  raise ValueError(f"acquisition: {name!r} is unknown; allowed: {', '.join(ACQUISITIONS)}")



def _pad_rows(x: np.ndarray, c: int) -> np.ndarray:
  return np.concatenate([x, np.zeros((c - len(x), *x.shape[1:]), x.dtype)])


def bananas(
    space: Any, goal: str = "max", *, preset: str = "code", encoding: str | None = None,
    encode_fn: Callable[[Sequence[Any]], Any] | None = None, acquisition: str | None = None,
    ddof: int | None = None, ei_sigma_scale: float | None = None, ucb_beta: float = 0.5,
    candidates: str = "mutation", n_random_candidates: int | None = None, n_init: int = 10,
    k: int = 10, n_parents: int = 5, n_candidates: int = 100, attempts_per_parent: int = 100,
    error_offset: float = 100.0, n_members: int = 5, epochs: int = 150, batch_size: int = 32,
    lr: float = 0.01, hidden: Sequence[int] = (20,) * 10,
) -> Strategy:
  """BANANAS as a Strategy over any Space.

  The ensemble fits y = error_offset - score: the val error (%) when the task's value is an
  accuracy (%) and error_offset = 100 (spec 5); use 0 with a "min" task to fit its raw value.

  Args:
    space: a Space; goal: the task's goal.
    preset: "paper" or "code" (spec 14); explicit arguments below override it.
    encoding: a name of `features.encodings.ENCODINGS` (cell spaces), or None with encode_fn.
    encode_fn: points -> [B, D] features; overrides encoding (e.g. for layer-graph spaces).
    acquisition: "ucb", "ei", "pi", "ts" or "its"; ddof, ei_sigma_scale, ucb_beta: spec 6.
    candidates: "mutation" (spec 7) or "random" (the ablation, n_random_candidates of them).
    n_init: t0 random points; k: points per BO iteration; n_parents, n_candidates,
      attempts_per_parent: the candidate procedure of spec 7.
    n_members, epochs, batch_size, lr, hidden: the ensemble (spec 5).
  """
  if goal not in GOALS:
    raise ValueError(f"bananas: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if preset not in PRESETS:
    raise ValueError(f"bananas: preset={preset!r}; allowed: {', '.join(PRESETS)}")
  p = PRESETS[preset]
  encoding = p["encoding"] if encoding is None else encoding
  acquisition = p["acquisition"] if acquisition is None else acquisition
  ddof = p["ddof"] if ddof is None else ddof
  ei_sigma_scale = p["ei_sigma_scale"] if ei_sigma_scale is None else ei_sigma_scale
  n_random = p["n_random_candidates"] if n_random_candidates is None else n_random_candidates
  if acquisition not in ACQUISITIONS:
    raise ValueError(f"bananas: acquisition={acquisition!r}; allowed: {', '.join(ACQUISITIONS)}")
  if candidates not in CANDIDATES:
    raise ValueError(f"bananas: candidates={candidates!r}; allowed: {', '.join(CANDIDATES)}")
  for name, v in (("n_init", n_init), ("k", k), ("n_parents", n_parents)):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"bananas: {name}={v!r}; expected an int >= 1")
  if encode_fn is None:
    if encoding not in encodings.ENCODINGS:
      raise ValueError(f"bananas: encoding={encoding!r}; allowed: {', '.join(encodings.ENCODINGS)}")
    encode_fn = lambda pts: encodings.encode(encoding, pts)
  surrogate = ensemble_surrogate(
      n_members=n_members, hidden=tuple(hidden), epochs=epochs, batch_size=batch_size, lr=lr,
      ddof=ddof,
  )

  def bo_step(key, history, exclude):
    k_fit, k_cand, k_acq = jax.random.split(key, 3)
    ok = np.flatnonzero(history.ok)
    points = [history.points[i] for i in ok]
    scores = history.scores[ok]
    c = common.capacity(len(points), 32)
    x = _pad_rows(np.asarray(encode_fn(points), np.float32), c)
    y = _pad_rows(error_offset - scores, c)
    state = surrogate.fit(k_fit, x, y, np.arange(c) < len(points))
    if candidates == "mutation":
      parents = mutation.select_parents(points, scores, n_parents)
      cands = mutation.mutation_candidates(
          space, k_cand, parents, exclude, n_target=n_candidates,
          attempts_per_parent=attempts_per_parent,
      )
    else:
      cands = mutation.random_candidates(space, k_cand, exclude, n=n_random)
    info = {"n_candidates": len(cands), "train_mae": float(np.mean(state.train_mae))}
    if not cands:
      return [], info
    xc = _pad_rows(np.asarray(encode_fn(cands), np.float32), common.capacity(len(cands), 128))
    pred = surrogate.predict(state, xc)
    m = len(cands)
    pred = Predictive(  # errors -> scores, so that every acquisition maximises
        mean=error_offset - pred.mean[:m], std=pred.std[:m], samples=error_offset - pred.samples[:, :m]
    )
    values = acquire(
        acquisition, pred, float(scores.max()), k_acq, ucb_beta=ucb_beta,
        ei_sigma_scale=ei_sigma_scale,
    )
    return [cands[i] for i in mutation.top_k(values, k)], info

  def init(key):
    return BananasState(key=key, history=common.empty_history())

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(q) for q in pending}
    key = common.step_key(state.key, state.history, pending)
    out = common.fresh(space, state.queue, exclude)
    queue, out, info = tuple(out[n:]), out[:n], state.info
    need = n - len(out)
    if need > 0:
      if len(state.history) + len(pending) < n_init or not state.history.ok.any():
        need = min(need, max(n_init - len(state.history) - len(pending), 1))
        out += mutation.random_candidates(space, key, exclude, n=need)
      else:
        chosen, info = bo_step(key, state.history, exclude)
        chosen = common.fresh(space, chosen, exclude)
        out, queue = out + chosen[:need], tuple(chosen[need:])
    return dataclasses.replace(state, queue=queue, info=info), out

  def update(state, observations):
    return dataclasses.replace(
        state, history=common.add_observations(state.history, space, goal, observations)
    )

  return Strategy(init=init, propose=propose, update=update)


def bananas_factory(config, space, task) -> Strategy:
  """`config.strategy = "bananas"`; `config.strategy_config` holds keyword arguments of
  `bananas` (preset, encoding, acquisition, ...)."""
  sc = config.get("strategy_config", None) if hasattr(config, "get") else None
  kwargs = sc.to_dict() if hasattr(sc, "to_dict") else dict(sc or {})
  return bananas(space, task.goal, **kwargs)
