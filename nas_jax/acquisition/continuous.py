"""Gradient ascent of a differentiable acquisition over the continuous coordinates of points
(issue 12 item 3): Adam from S starts in one vmap, every coordinate kept inside its bounds.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax

__all__ = ["maximize_continuous", "n_evaluations"]


def n_evaluations(n_starts: int, steps: int) -> int:
  """Acquisition evaluations of one `maximize_continuous` call: per start, its x0, one per step
  (value and gradient together count as one) and the last point."""
  return n_starts * (steps + 2)


@functools.partial(jax.jit, static_argnames=("steps", "lr", "jitter"))
def _ascend(key, acq_fn, x0, free, lower, upper, *, steps, lr, jitter):
  width = upper - lower
  opt = optax.adam(lr)

  def one(k, x, u0, f):
    def value(u):  # fixed coordinates are passed exactly: a depth must not become 2.9999999
      return acq_fn(jnp.where(f, lower + u * width, x))

    # Starts that coincide, or sit where a symmetric acquisition has a zero gradient, part here.
    noise = jitter * jax.random.normal(k, u0.shape, u0.dtype)
    start = jnp.where(f, jnp.clip(u0 + noise, 0.0, 1.0), u0)
    v0 = value(u0)

    def step(carry, _):
      u, state, best_u, best_v = carry
      v, g = jax.value_and_grad(value)(u)
      better = v > best_v  # a NaN value is never better
      best_u, best_v = jnp.where(better, u, best_u), jnp.where(better, v, best_v)
      g = jnp.where(f & jnp.isfinite(g), -g, 0.0)  # optax minimises
      updates, state = opt.update(g, state, u)
      return (jnp.where(f, jnp.clip(u + updates, 0.0, 1.0), u), state, best_u, best_v), None

    init = (start, opt.init(start), u0, jnp.where(jnp.isnan(v0), -jnp.inf, v0))
    (u, _, best_u, best_v), _ = jax.lax.scan(step, init, None, length=steps)
    v = value(u)
    better = v > best_v
    return jnp.where(better, u, best_u), jnp.where(better, v, best_v)

  safe_width = jnp.where(width > 0, width, 1.0)
  u, acq = jax.vmap(one)(jax.random.split(key, x0.shape[0]), x0, (x0 - lower) / safe_width, free)
  return jnp.where(free, lower + u * width, x0), acq


def _check(x0, free, lower, upper, steps, lr, jitter) -> None:
  if x0.ndim != 2 or not np.all(np.isfinite(x0)):
    raise ValueError(f"x0_values: shape {x0.shape} or non-finite entries; expected finite [S, P]")
  if free.shape != x0.shape or free.dtype != bool:
    raise ValueError(f"free: {free.dtype} of shape {free.shape}; expected bool {x0.shape}")
  for name, bound in (("lower", lower), ("upper", upper)):
    if bound.shape != x0.shape[1:] or not np.all(np.isfinite(bound)):
      raise ValueError(f"{name}: shape {bound.shape}; expected finite [{x0.shape[1]}] (P of x0_values)")
  if np.any(free & ~(lower < upper)):
    raise ValueError(f"lower, upper: {lower}, {upper}; free coordinates need lower < upper")
  if np.any(free & ((x0 < lower) | (x0 > upper))):
    raise ValueError("x0_values: a free coordinate lies outside [lower, upper]; starts must be in bounds")
  if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
    raise ValueError(f"steps: {steps!r}; expected an integer >= 1")
  if not (isinstance(lr, (int, float)) and lr > 0):
    raise ValueError(f"lr: {lr!r}; expected a positive float")
  if not (isinstance(jitter, (int, float)) and jitter >= 0):
    raise ValueError(f"jitter: {jitter!r}; expected a float >= 0")


def maximize_continuous(
  key: jax.Array,
  acq_fn: Callable[[jax.Array], jax.Array],
  x0_values,
  free,
  lower,
  upper,
  *,
  steps: int = 50,
  lr: float = 0.05,
  jitter: float = 0.01,
) -> tuple[jax.Array, jax.Array]:
  """Maximises acq_fn from S starts by Adam on the free coordinates, clipped to the bounds.

  Each coordinate moves in units of its range, (x - lower) / (upper - lower), so lr is the step
  as a fraction of every range. A free start first moves by N(0, jitter^2) of its range (drawn
  from key); every value met on the way, x0's included, is a candidate, so each start returns a
  value at least acq_fn(x0). A gradient that is not finite is skipped.

  acq_fn is an argument of one jitted program, compiled once per shape: pass a
  `jax.tree_util.Partial` of a module-level function, whose arrays are pytree leaves; any other
  callable is wrapped as a Partial without arguments, compiled once per function object.

  Args:
    key: PRNG key of the jitter.
    acq_fn: values [P] -> [] float, differentiable in the free coordinates.
    x0_values: [S, P] float starts; free coordinates must lie within the bounds.
    free: [S, P] bool, the coordinates that move; the others come back exactly as in x0_values.
    lower, upper: [P] float bounds (lower < upper wherever a coordinate is free).
    steps, lr: Adam steps and learning rate; jitter: scale of the start's move.

  Returns:
    values: [S, P] float, the best point met from each start; acq: [S] float, acq_fn there
    (-inf if it was never finite). `n_evaluations(S, steps)` counts the calls of acq_fn.

  Raises:
    ValueError naming the argument, before anything is traced.
  """
  x0 = np.asarray(x0_values, np.float64)
  free, lower, upper = np.asarray(free), np.asarray(lower, np.float64), np.asarray(upper, np.float64)
  _check(x0, free, lower, upper, steps, lr, jitter)
  if not callable(acq_fn):
    raise TypeError(f"acq_fn: a {type(acq_fn).__name__}; expected a callable values [P] -> []")
  if not isinstance(acq_fn, jax.tree_util.Partial):
    acq_fn = jax.tree_util.Partial(acq_fn)
  return _ascend(
    key,
    acq_fn,
    jnp.asarray(x0),
    jnp.asarray(free),
    jnp.asarray(lower),
    jnp.asarray(upper),
    steps=int(steps),
    lr=float(lr),
    jitter=float(jitter),
  )
