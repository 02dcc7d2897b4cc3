"""Acquisition functions of a Predictive: acq(pred, best, key=None, *, options) -> [m].

nas_jax maximises, so larger is better everywhere. A Predictive with mean and std [S, m] (S
hyper-parameter samples) gets the acquisition averaged over S (nasbot.md 7.3).
"""

import math
from typing import Callable

import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

from nas_jax.surrogates.surrogate import Predictive

__all__ = [
  "ACQUISITIONS",
  "CLOSED_FORM",
  "acquire",
  "ei",
  "gp_ucb_beta",
  "hei",
  "independent_thompson",
  "lcb",
  "pi",
  "thompson",
  "ucb",
  "with_pending",
]

_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _over_hypers(values: jax.Array) -> jax.Array:
  """[m] -> [m]; [S, m] -> mean over S."""
  return values.mean(0) if values.ndim == 2 else values


def ei(pred: Predictive, best, key=None, *, xi: float = 0.0) -> jax.Array:
  """Expected improvement E[max(0, f - best - xi)] (nasbot.md 7.5, eq. (2)): [m] float, >= 0.

  (mu - tau) Phi(z) + sigma phi(z) with z = (mu - tau) / sigma, tau = best + xi, and
  max(mu - tau, 0) where sigma = 0. key is unused (deterministic).
  """
  diff = pred.mean - (best + xi)
  positive = pred.std > 0
  sigma = jnp.where(positive, pred.std, 1.0)
  z = diff / sigma
  # diff * Phi(z) rather than sigma * z * Phi(z): finite when a tiny sigma makes z infinite.
  value = diff * ndtr(z) + sigma * jnp.exp(-0.5 * z**2) / _SQRT_2PI
  # The closed form cancels for very negative z and can dip a hair below 0; EI is >= 0.
  value = jnp.where(positive, jnp.maximum(value, 0.0), jnp.maximum(diff, 0.0))
  return _over_hypers(value)


def pi(pred: Predictive, best, key=None, *, xi: float = 0.0) -> jax.Array:
  """Probability of improvement P[f > best + xi] = Phi((mu - best - xi) / sigma): [m] float.

  Where sigma = 0 it is 1 if mu > best + xi, else 0. key is unused.
  """
  diff = pred.mean - (best + xi)
  positive = pred.std > 0
  value = jnp.where(positive, ndtr(diff / jnp.where(positive, pred.std, 1.0)), (diff > 0).astype(diff.dtype))
  return _over_hypers(value)


def _beta(beta: float | Callable, t) -> jax.Array:
  if callable(beta):
    if t is None:
      raise ValueError("ucb/lcb: beta is a schedule, so t (the step, >= 1) is required")
    return beta(t)
  return jnp.asarray(beta)


def ucb(pred: Predictive, best=None, key=None, *, beta: float | Callable = 2.0, t=None):
  """Upper confidence bound mu + sqrt(beta) sigma (Srinivas et al. 2010): [m] float.

  beta: a float, or a schedule beta(t) -> [] (e.g. gp_ucb_beta) evaluated at step t.
  best and key are unused; they keep the one acquisition signature.
  """
  return _over_hypers(pred.mean + jnp.sqrt(_beta(beta, t)) * pred.std)


def lcb(pred: Predictive, best=None, key=None, *, beta: float | Callable = 2.0, t=None):
  """Lower confidence bound mu - sqrt(beta) sigma, a pessimistic score: [m] float.

  For recommending a final point rather than exploring; options as in ucb.
  """
  return _over_hypers(pred.mean - jnp.sqrt(_beta(beta, t)) * pred.std)


def gp_ucb_beta(t, *, dim: int, delta: float = 0.1) -> jax.Array:
  """beta_t = 2 log(t^(dim/2 + 2) pi^2 / (3 delta)) (Srinivas et al. 2010, Thm. 2 as in
  Brochu et al. 2010): [] float, for step t >= 1 (may be traced). Bind dim, delta with partial."""
  if not (isinstance(dim, int) and dim >= 1):
    raise ValueError(f"gp_ucb_beta: dim={dim!r}; expected an int >= 1")
  if not 0 < delta < 1:
    raise ValueError(f"gp_ucb_beta: delta={delta!r}; expected 0 < delta < 1")
  t = jnp.asarray(t, dtype=float)
  return 2.0 * ((dim / 2.0 + 2.0) * jnp.log(t) + jnp.log(jnp.pi**2 / (3.0 * delta)))


def thompson(pred: Predictive, best=None, key=None) -> jax.Array:
  """One joint posterior draw over the m candidates, picked from pred.samples by key: [m].

  Needs pred.samples (for a GP: predict with surrogate.JointInputs). best is unused.
  """
  if pred.samples is None:
    raise ValueError("thompson: pred.samples is None; predict with JointInputs to get draws")
  if key is None:
    raise ValueError("thompson: key is None; Thompson sampling needs a PRNG key")
  return pred.samples[jax.random.randint(key, (), 0, pred.samples.shape[0])]


def independent_thompson(pred: Predictive, best=None, key=None) -> jax.Array:
  """mu + sigma * eps with independent eps ~ N(0, 1) per candidate (marginal draws): [m].

  Cheaper than `thompson` (no joint covariance); with [S, m] a random hyper sample is used.
  """
  if key is None:
    raise ValueError("independent_thompson: key is None; it needs a PRNG key")
  k_hyper, k_eps = jax.random.split(key)
  mean, std = pred.mean, pred.std
  if mean.ndim == 2:
    s = jax.random.randint(k_hyper, (), 0, mean.shape[0])
    mean, std = mean[s], std[s]
  return mean + std * jax.random.normal(k_eps, mean.shape, dtype=mean.dtype)


def with_pending(pred: Predictive, pred_pending: Predictive) -> Predictive:
  """Mean from the real data, std from the model that also holds the pending points at their
  posterior mean (surrogate.hallucinate): nasbot.md 9 and App. R `hei`."""
  return Predictive(pred.mean, pred_pending.std, pred_pending.samples)


def hei(pred: Predictive, pred_pending: Predictive, best, key=None, *, xi: float = 0.0):
  """EI with hallucinated pending evaluations (nasbot.md App. R `hei`): [m] float, >= 0.

  pred: from the real data; pred_pending: from surrogate.hallucinate's state.
  """
  return ei(with_pending(pred, pred_pending), best, xi=xi)


# Elementwise functions of the predictive mean and std (no draws): the acquisitions a gradient can
# ascend.
CLOSED_FORM = ("ei", "pi", "ucb")
ACQUISITIONS = (*CLOSED_FORM, "ts", "its")


def acquire(
  name: str,
  pred: Predictive,
  pred_pending: Predictive,
  best,
  key=None,
  *,
  kappa: float = 2.0,
  xi: float = 0.0,
  sigma_scale: float = 1.0,
) -> jax.Array:
  """The acquisition `name` with pending points hallucinated by one rule: the mean of `pred` (the
  real data) and the std and samples of `pred_pending` (`with_pending`). [m] float, larger is better.

  ei, pi: at best + xi, with the std scaled by sigma_scale (BANANAS' code: 1/5); ucb: mean +
  kappa std (BANANAS' paper 0.5, Auto-Keras 2.576); ts: one joint draw (pred samples: the
  ensemble's members, or a GP's joint samples); its: independent draws per candidate.

  The value at candidate i never depends on the candidates after it: ts picks a sample row by key
  alone, and its' draws come from jax's partitionable threefry (the default since jax 0.5), where
  normal(key, [r])[:m] == normal(key, [m]). So callers may compute at padded candidate slots and
  cut, which compiles one program per capacity instead of one per candidate count.
  """
  p = with_pending(pred, pred_pending)
  if name in ("ei", "pi"):
    p = p.replace(std=p.std * sigma_scale)
    return (ei if name == "ei" else pi)(p, best, xi=xi)
  if name == "ucb":
    return _over_hypers(p.mean + kappa * p.std)
  if name == "ts":
    return thompson(p, key=key)
  if name == "its":
    return independent_thompson(p, key=key)
  raise ValueError(f"acquisition: {name!r} is unknown; allowed: {', '.join(ACQUISITIONS)}")
