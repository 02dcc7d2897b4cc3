"""`prior_mean`: a GP whose prior mean is a line in a proxy's score (our use of Abdelfattah et al. 2021): the GP
models what the proxy does not explain.

At each fit the line m(x) = a + b q(x), q the proxy's rank quantile among the train points
(`features.proxy_feature`), is fitted to the observed targets by least squares; the GP is fitted
to the residuals y - m(x), and its predictions have m(x) added back (mean and joint samples; the
std is the GP's). Far from the data the prediction reverts to the line rather than to the mean
of the observations, so an unexplored cell the proxy likes is predicted above one it does not.
"""

from __future__ import annotations

from typing import Any, Callable

import flax.struct
import jax
import jax.numpy as jnp

from nas_jax.features.featurizer import Featurizer
from nas_jax.features.proxy_feature import ProxyPair, with_proxy_values
from nas_jax.surrogates.point_model import PointModel
from nas_jax.surrogates.surrogate import JointInputs, Predictive, Surrogate

__all__ = ["PriorState", "fit_line", "shifted", "prior_mean"]


@flax.struct.dataclass
class PriorState:
  """base: the GP's state on the residuals; coef: [2] the line's (a, b)."""

  base: Any
  coef: jax.Array


def fit_line(z: jax.Array, y: jax.Array, mask: jax.Array) -> jax.Array:
  """[2] (a, b) minimising sum over mask of (y - a - b z)^2; b = 0 when z is constant there,
  (0, 0) with no observation."""
  y = jnp.asarray(y)
  w = jnp.asarray(mask).astype(y.dtype)
  n = jnp.maximum(w.sum(), 1.0)
  zm, ym = (w * z).sum() / n, (w * y).sum() / n
  var = (w * (z - zm) ** 2).sum()
  b = jnp.where(var > 1e-12, (w * (z - zm) * (y - ym)).sum() / jnp.where(var > 1e-12, var, 1.0), 0.0)
  return jnp.stack([ym - b * zm, b])


def _line(coef: jax.Array, z: jax.Array) -> jax.Array:
  return coef[0] + coef[1] * z


def shifted(surrogate: Surrogate) -> Surrogate:
  """`surrogate` (over Pairwise inputs) read through ProxyPair inputs, with the fitted line as
  its prior mean (the module docstring); condition, refit and fit_from keep or refit the line likewise."""

  def fit(key, inputs: ProxyPair, y, mask):
    coef = fit_line(inputs.z, y, mask)
    return PriorState(surrogate.fit(key, inputs.pair, y - _line(coef, inputs.z), mask), coef)

  def predict(state: PriorState, inputs) -> Predictive:
    if isinstance(inputs, JointInputs):
      z, base = inputs.cross.z, JointInputs(inputs.cross.pair, inputs.test.pair)
    else:
      z, base = inputs.z, inputs.pair
    pred = surrogate.predict(state.base, base)
    shift = _line(state.coef, z)
    samples = None if pred.samples is None else pred.samples + shift
    return Predictive(pred.mean + shift, pred.std, samples)

  condition = refit = None
  if surrogate.condition is not None:

    def condition(state: PriorState, inputs: ProxyPair, y, mask):
      residual = y - _line(state.coef, inputs.z)
      return PriorState(surrogate.condition(state.base, inputs.pair, residual, mask), state.coef)

  if surrogate.refit is not None:

    def refit(key, state: PriorState, inputs: ProxyPair, y, mask):
      coef = fit_line(inputs.z, y, mask)
      return PriorState(surrogate.refit(key, state.base, inputs.pair, y - _line(coef, inputs.z), mask), coef)

  fit_from = None
  if surrogate.fit_from is not None:

    def fit_from(key, state: PriorState, inputs: ProxyPair, y, mask):
      coef = fit_line(inputs.z, y, mask)
      return PriorState(surrogate.fit_from(key, state.base, inputs.pair, y - _line(coef, inputs.z), mask), coef)

  return Surrogate(fit, predict, condition, refit, fit_from)


def prior_mean(part: Callable[[Featurizer], PointModel], proxy: Any) -> Callable[[Featurizer], PointModel]:
  """The GP surrogate part `part` (`point_model.gp()`, `gp_fixed()`) with the proxy's line as its
  prior mean, named "<name>+prior_mean"; the proxy is any value with `score(points) -> [n]`."""

  def build(featurizer: Featurizer) -> PointModel:
    base = part(featurizer)
    if base.vectors:
      raise ValueError(
        f"prior_mean: surrogate {base.name!r} reads vectors, not a GP's pairs; give it the proxy as a"
        " feature instead (proxy.feature)"
      )
    return base._replace(
      name=f"{base.name}+prior_mean", featurizer=with_proxy_values(featurizer, proxy), surrogate=shifted(base.surrogate)
    )

  return build
