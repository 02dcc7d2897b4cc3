"""GP-BO baseline of BANANAS (spec bananas.md 9): a zero-mean GP on val errors with the fixed
kernel alpha^2 exp(-d / l^2), d the Hamming distance between encodings, and UCB over mutants.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import jax
import numpy as np

from nas_jax.acquisition import mutation
from nas_jax.features import encodings
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy

__all__ = ["GPBOState", "hamming_kernel", "gp_posterior", "gp_bo", "gp_factory"]


@dataclasses.dataclass(frozen=True)
class GPBOState:
  """key: the search key; history: every observation."""

  key: jax.Array
  history: common.History


def hamming_kernel(xa: Any, xb: Any, alpha: float, lengthscale: float) -> np.ndarray:
  """k(a, b) = alpha^2 exp(-d(a, b) / l^2), d = sum |a - b| (spec 9). xa: [n, D], xb: [m, D]
  0/1 features -> [n, m] float64. Host numpy: n grows by one per step, so jit would recompile."""
  xa, xb = np.asarray(xa, np.float64), np.asarray(xb, np.float64)
  d = xa @ (1.0 - xb).T + (1.0 - xa) @ xb.T  # Hamming distance of 0/1 vectors
  return alpha**2 * np.exp(-d / lengthscale**2)


def gp_posterior(x, y, xc, *, alpha=1.5, lengthscale=3.0, noise=1e-5):
  """Zero-mean GP posterior mean and std at xc given (x [n, D], y [n]), in float64 numpy.
  The diagonal gets noise^2 plus a 1e-9 jitter (cells with equal encodings would be singular).

  Returns:
    (mean [m], std [m]).
  """
  x, xc = np.asarray(x, np.float64), np.asarray(xc, np.float64)
  k = hamming_kernel(x, x, alpha, lengthscale) + (noise**2 + 1e-9) * np.eye(len(x))
  ks = hamming_kernel(x, xc, alpha, lengthscale)
  chol = np.linalg.cholesky(k)
  a = np.linalg.solve(chol.T, np.linalg.solve(chol, np.asarray(y, np.float64)))
  v = np.linalg.solve(chol, ks)
  var = np.maximum(alpha**2 - (v * v).sum(0), 0.0)
  return ks.T @ a, np.sqrt(var)


def gp_bo(
    space: Any, goal: str = "max", *, encoding: str = "path",
    encode_fn: Callable[[Sequence[Any]], Any] | None = None, alpha: float = 1.5,
    lengthscale: float = 3.0, noise: float = 1e-5, beta: float = 0.5, n_init: int = 10,
    n_scored: int = 200, error_offset: float = 100.0,
) -> Strategy:
  """GP-BO (spec 9): one query per step; candidates are rate-1 mutants of the 5 best points
  (spec 7 procedure), of which a random n_scored are scored by f - beta * sigma on errors.

  y = error_offset - score, as in `bananas`. encoding: the path encoding by default (ablation
  (3) of the paper); encode_fn overrides it for other spaces.
  """
  if goal not in GOALS:
    raise ValueError(f"gp_bo: goal={goal!r}; allowed: {', '.join(GOALS)}")
  if encode_fn is None:
    if encoding not in encodings.ENCODINGS:
      raise ValueError(f"gp_bo: encoding={encoding!r}; allowed: {', '.join(encodings.ENCODINGS)}")
    encode_fn = lambda pts: encodings.encode(encoding, pts)

  def init(key):
    return GPBOState(key=key, history=common.empty_history())

  def propose(state, n, pending):
    exclude = set(state.history.keys) | {space.canonical_key(q) for q in pending}
    key = common.step_key(state.key, state.history, pending)
    h = state.history
    if len(h) + len(pending) < n_init or not h.ok.any():
      return state, mutation.random_candidates(space, key, exclude, n=n)
    k_cand, k_sub = jax.random.split(key)
    ok = np.flatnonzero(h.ok)
    points, scores = [h.points[i] for i in ok], h.scores[ok]
    cands = mutation.mutation_candidates(
        space, k_cand, mutation.select_parents(points, scores, 5), exclude
    )
    if not cands:
      return state, mutation.random_candidates(space, k_sub, exclude, n=n)
    sub = common.host_rng(k_sub).permutation(len(cands))[:n_scored]
    cands = [cands[i] for i in sub]
    mean, std = gp_posterior(
        encode_fn(points), error_offset - scores, encode_fn(cands), alpha=alpha,
        lengthscale=lengthscale, noise=noise,
    )
    return state, [cands[i] for i in mutation.top_k(-(mean - beta * std), n)]

  def update(state, observations):
    return dataclasses.replace(
        state, history=common.add_observations(state.history, space, goal, observations)
    )

  return Strategy(init=init, propose=propose, update=update)


def gp_factory(config, space, task) -> Strategy:
  """`config.strategy = "gp_bo"`; `config.strategy_config` holds keyword arguments of gp_bo."""
  sc = config.get("strategy_config", None) if hasattr(config, "get") else None
  kwargs = sc.to_dict() if hasattr(sc, "to_dict") else dict(sc or {})
  return gp_bo(space, task.goal, **kwargs)
