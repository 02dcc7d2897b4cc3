"""Acquisition functions, each built by its own constructor: `acq = ei(xi=0.01)`, then
`acq(pred, best, key) -> [m]` scores of m candidates, larger is better (nas_jax maximises).

An acquisition is a small pytree (its options are leaves, so a jitted caller compiles once per
kind of acquisition, not per option value) with three facts the engine reads:
`closed_form` (an elementwise function of the predictive mean and std, which a gradient can
ascend), `joint` (it needs joint posterior samples) and `needs_model` (False only for `uniform`).

A Predictive with mean and std [S, m] (S hyper-parameter samples) gets the acquisition averaged
over S (NASBOT App. B.1). Pending evaluations are hallucinated by one rule for every acquisition:
the engine passes `with_pending(pred, pred_pending)`, the mean of the model of the observations
with the std (and samples) of the model that also holds the pending points at their mean.

The value at candidate i never depends on the candidates after it (thompson picks a sample row by
key alone, and independent_thompson's draws come from jax's partitionable threefry, where
normal(key, [r])[:m] == normal(key, [m])), so callers may score padded candidate slots and cut,
compiling one program per capacity instead of one per candidate count.
"""

from __future__ import annotations

import math

import flax.struct
import jax
import jax.numpy as jnp
from jax.scipy.special import ndtr

from nas_jax.surrogates.surrogate import Predictive

__all__ = [
  "EI",
  "PI",
  "UCB",
  "LCB",
  "Thompson",
  "IndependentThompson",
  "Uniform",
  "ei",
  "pi",
  "ucb",
  "lcb",
  "thompson",
  "independent_thompson",
  "uniform",
  "gp_ucb_beta",
  "with_pending",
]

_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _over_hypers(values: jax.Array) -> jax.Array:
  """[m] -> [m]; [S, m] -> mean over S."""
  return values.mean(0) if values.ndim == 2 else values


def _number(where: str, value, least: float = 0.0) -> float:
  """`value` as a float, checked in plain Python: finite and >= least."""
  if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < least:
    raise ValueError(f"{where}={value!r}; expected a finite number >= {least:g}")
  return float(value)


@flax.struct.dataclass
class EI:
  """Expected improvement E[max(0, f - tau)], tau = best + xi (NASBOT Sec. 2.1, eq. (2)): [m] >= 0.

  (mu - tau) Phi(z) + s phi(z) with s = sigma_scale * sigma and z = (mu - tau) / s, and
  max(mu - tau, 0) where s = 0. sigma_scale < 1 narrows the predictive (BANANAS' code: 1/5).
  """

  xi: float = 0.0
  sigma_scale: float = 1.0
  name = "ei"
  closed_form, joint, needs_model = True, False, True

  def __call__(self, pred: Predictive, best, key=None) -> jax.Array:
    diff = pred.mean - (best + self.xi)
    std = pred.std * self.sigma_scale
    positive = std > 0
    sigma = jnp.where(positive, std, 1.0)
    z = diff / sigma
    # diff * Phi(z) rather than sigma * z * Phi(z): finite when a tiny sigma makes z infinite.
    value = diff * ndtr(z) + sigma * jnp.exp(-0.5 * z**2) / _SQRT_2PI
    # The closed form cancels for very negative z and can dip a hair below 0; EI is >= 0.
    value = jnp.where(positive, jnp.maximum(value, 0.0), jnp.maximum(diff, 0.0))
    return _over_hypers(value)


@flax.struct.dataclass
class PI:
  """Probability of improvement P[f > best + xi] = Phi((mu - best - xi) / s), s = sigma_scale *
  sigma: [m]. Where s = 0 it is 1 if mu > best + xi, else 0."""

  xi: float = 0.0
  sigma_scale: float = 1.0
  name = "pi"
  closed_form, joint, needs_model = True, False, True

  def __call__(self, pred: Predictive, best, key=None) -> jax.Array:
    diff = pred.mean - (best + self.xi)
    std = pred.std * self.sigma_scale
    positive = std > 0
    value = jnp.where(positive, ndtr(diff / jnp.where(positive, std, 1.0)), (diff > 0).astype(diff.dtype))
    return _over_hypers(value)


@flax.struct.dataclass
class UCB:
  """Upper confidence bound mu + kappa sigma: [m]. Srinivas et al. (2010) write it
  mu + sqrt(beta_t) sigma: kappa = sqrt(beta_t) (`gp_ucb_beta`)."""

  kappa: float = 2.0
  name = "ucb"
  closed_form, joint, needs_model = True, False, True

  def __call__(self, pred: Predictive, best=None, key=None) -> jax.Array:
    return _over_hypers(pred.mean + self.kappa * pred.std)


@flax.struct.dataclass
class LCB:
  """Lower confidence bound mu - kappa sigma: [m], a pessimistic score for recommending a point."""

  kappa: float = 2.0
  name = "lcb"
  closed_form, joint, needs_model = True, False, True

  def __call__(self, pred: Predictive, best=None, key=None) -> jax.Array:
    return _over_hypers(pred.mean - self.kappa * pred.std)


@flax.struct.dataclass
class Thompson:
  """One joint posterior draw over the m candidates, a row of pred.samples picked by key: [m].
  It needs joint samples (an ensemble's members, or a GP's joint draws)."""

  name = "ts"
  closed_form, joint, needs_model = False, True, True

  def __call__(self, pred: Predictive, best=None, key=None) -> jax.Array:
    if pred.samples is None:
      raise ValueError("thompson: pred.samples is None; predict with JointInputs to get draws")
    if key is None:
      raise ValueError("thompson: key is None; Thompson sampling needs a PRNG key")
    return pred.samples[jax.random.randint(key, (), 0, pred.samples.shape[0])]


@flax.struct.dataclass
class IndependentThompson:
  """mu + sigma eps, eps ~ N(0, 1) independent per candidate (marginal draws): [m]. Cheaper than
  `Thompson` (no joint covariance); with [S, m] one hyper-parameter sample is drawn by key."""

  name = "its"
  closed_form, joint, needs_model = False, False, True

  def __call__(self, pred: Predictive, best=None, key=None) -> jax.Array:
    if key is None:
      raise ValueError("independent_thompson: key is None; it needs a PRNG key")
    k_hyper, k_eps = jax.random.split(key)
    mean, std = pred.mean, pred.std
    if mean.ndim == 2:
      s = jax.random.randint(k_hyper, (), 0, mean.shape[0])
      mean, std = mean[s], std[s]
    return mean + std * jax.random.normal(k_eps, mean.shape, dtype=mean.dtype)


@flax.struct.dataclass
class Uniform:
  """RAND's acquisition (NASBOT Sec. 5; App. C.1): a Unif(0, 1) value per candidate, read from no model.
  The engine draws the values itself, from one host stream per optimisation, and fits nothing."""

  name = "random"
  closed_form, joint, needs_model = False, False, False


def ei(*, xi: float = 0.0, sigma_scale: float = 1.0) -> EI:
  """`EI` with improvement threshold best + xi and the predictive std scaled by sigma_scale."""
  return EI(_number("ei: xi", xi), _number("ei: sigma_scale", sigma_scale))


def pi(*, xi: float = 0.0, sigma_scale: float = 1.0) -> PI:
  """`PI` with threshold best + xi and the predictive std scaled by sigma_scale."""
  return PI(_number("pi: xi", xi), _number("pi: sigma_scale", sigma_scale))


def ucb(*, kappa: float = 2.0) -> UCB:
  """`UCB`, mu + kappa sigma (BANANAS' paper: kappa 0.5; Auto-Keras: 2.576)."""
  return UCB(_number("ucb: kappa", kappa))


def lcb(*, kappa: float = 2.0) -> LCB:
  """`LCB`, mu - kappa sigma."""
  return LCB(_number("lcb: kappa", kappa))


def thompson() -> Thompson:
  """`Thompson`: one joint posterior draw."""
  return Thompson()


def independent_thompson() -> IndependentThompson:
  """`IndependentThompson`: independent draws per candidate (BANANAS' ITS)."""
  return IndependentThompson()


def uniform() -> Uniform:
  """`Uniform`: RAND's random acquisition values, no model."""
  return Uniform()


def gp_ucb_beta(t, *, dim: int, delta: float = 0.1) -> jax.Array:
  """beta_t = 2 log(t^(dim/2 + 2) pi^2 / (3 delta)) (Srinivas et al. 2010, Thm. 2 as in
  Brochu et al. 2010): [] float, for step t >= 1 (may be traced); `ucb(kappa=sqrt(beta_t))`."""
  if not (isinstance(dim, int) and dim >= 1):
    raise ValueError(f"gp_ucb_beta: dim={dim!r}; expected an int >= 1")
  if not 0 < delta < 1:
    raise ValueError(f"gp_ucb_beta: delta={delta!r}; expected 0 < delta < 1")
  t = jnp.asarray(t, dtype=float)
  return 2.0 * ((dim / 2.0 + 2.0) * jnp.log(t) + jnp.log(jnp.pi**2 / (3.0 * delta)))


def with_pending(pred: Predictive, pred_pending: Predictive) -> Predictive:
  """Mean from the real data, std and samples from the model that also holds the pending points
  at their posterior mean (surrogate.hallucinate): NASBOT App. B.3 and the authors' code's `hei`."""
  return Predictive(pred.mean, pred_pending.std, pred_pending.samples)
