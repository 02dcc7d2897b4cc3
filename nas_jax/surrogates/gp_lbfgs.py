"""GP hyper-parameters by L-BFGS: maximum likelihood from a few starts, each run to convergence in
one jitted while_loop, the box held by a smooth bijection (an alternative to gp_fit.fit_map).
The objective is `gp_lml.log_marginal_likelihood`: gp's value with its gradient in closed form,
which with project=True is the gradient of the projected likelihood itself, so that the line
search sees a gradient consistent with the values it compares.
"""

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from nas_jax.surrogates import gp, gp_lml
from nas_jax.surrogates.gp_fit import Box, FitResult, check_counts, check_starts, sample_box, validate_fit_args

__all__ = ["Lbfgs", "fit_lbfgs", "lbfgs"]

# Evaluations per line search at most. The projected likelihood has kinks where an eigenvalue of
# the kernel matrix crosses 0; there the zoom search can meet its curvature condition on neither
# side and would spend optax's default budget (20) on one iteration, where the next iteration
# from the best point found does better. A step too short grows 8-fold, so that six evaluations
# still reach far from a start where the sigmoid of the box flattens the gradient.
_LINESEARCH_STEPS = 6
_GROWTH = 8.0
# A start on the box's edge maps to this fraction of the width inside it: the sigmoid reaches
# neither end, and from here the start's own gradient can still move it.
_EDGE = 1e-6


class Lbfgs(NamedTuple):
  """The L-BFGS fit as a value (build it with `lbfgs`): fresh starts, iteration cap, convergence
  tolerances and the memory of the inverse-Hessian estimate. Hashable, so a jitted fit takes it
  as a static option."""

  n_starts: int = 4
  max_iter: int = 100
  gtol: float = 1e-5
  ftol: float = 1e-9
  memory_size: int = 10


def lbfgs(
  n_starts: int = 4, *, max_iter: int = 100, gtol: float = 1e-5, ftol: float = 1e-9, memory_size: int = 10
) -> Lbfgs:
  """The L-BFGS fitter of `gp_surrogate(fitter=...)` / `point_model.gp(fitter=...)`.

  Args:
    n_starts: fresh starts drawn uniformly in the box (a warm refit uses none: it starts from the
      earlier optimum alone).
    max_iter: L-BFGS iterations at most per start (a warm refit takes its own cap).
    gtol: a start stops when the largest gradient entry in the unconstrained coordinates is at
      most gtol; ftol: or when the negative log-likelihood changes by at most ftol relative to
      max(|value|, 1) in one iteration.
    memory_size: past steps kept for the inverse-Hessian estimate.

  Raises:
    ValueError naming the option that is out of range.
  """
  check_counts("lbfgs", n_starts=(n_starts, 1), max_iter=(max_iter, 1), memory_size=(memory_size, 1))
  for name, tol in (("gtol", gtol), ("ftol", ftol)):
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol >= 0:
      raise ValueError(f"lbfgs: {name}={tol!r}; expected a float >= 0")
  return Lbfgs(int(n_starts), int(max_iter), float(gtol), float(ftol), int(memory_size))


def _run(u0, neg_lml, *, max_iter, gtol, ftol, memory_size):
  """L-BFGS with optax's zoom line search (at most _LINESEARCH_STEPS evaluations each) from u0 [D]
  until converged or max_iter: u [D]."""
  linesearch = optax.scale_by_zoom_linesearch(_LINESEARCH_STEPS, increase_factor=_GROWTH, initial_guess_strategy="one")
  opt = optax.lbfgs(memory_size=memory_size, linesearch=linesearch)
  value_and_grad = optax.value_and_grad_from_state(neg_lml)

  def searching(carry):
    _, _, it, done = carry
    return ~done & (it < max_iter)

  def step(carry):
    u, state, it, _ = carry
    value, grad = value_and_grad(u, state=state)
    updates, state = opt.update(grad, state, u, value=value, grad=grad, value_fn=neg_lml)
    u = optax.apply_updates(u, updates)
    new_value, new_grad = optax.tree.get(state, "value"), optax.tree.get(state, "grad")
    small_grad = jnp.max(jnp.abs(new_grad)) <= gtol
    stalled = jnp.abs(value - new_value) <= ftol * jnp.maximum(jnp.maximum(jnp.abs(value), jnp.abs(new_value)), 1.0)
    done = small_grad | stalled | ~jnp.isfinite(new_value)
    return u, state, it + 1, done

  u, _, it, _ = jax.lax.while_loop(searching, step, (u0, opt.init(u0), jnp.zeros((), jnp.int32), jnp.array(False)))
  return u, it


@functools.partial(jax.jit, static_argnames=("n_starts", "max_iter", "gtol", "ftol", "memory_size", "project"))
def _fit_lbfgs(key, box, pair, y, mask, starts, *, n_starts, max_iter, gtol, ftol, memory_size, project):
  lower, unravel = ravel_pytree(box.lower)
  upper, _ = ravel_pytree(box.upper)
  dtype = jnp.promote_types(jnp.result_type(y), lower.dtype)
  lower, upper = lower.astype(dtype), upper.astype(dtype)
  width = upper - lower
  moves = width > 0  # a fixed leaf (lower == upper) has zero width: sigmoid(u) cannot move it

  def to_theta(u):
    return lower + width * jax.nn.sigmoid(u)

  def to_u(theta):
    frac = jnp.where(moves, (theta - lower) / jnp.where(moves, width, 1.0), 0.5)
    return jax.scipy.special.logit(jnp.clip(frac, _EDGE, 1.0 - _EDGE))

  def lml(theta):
    return gp_lml.log_marginal_likelihood(unravel(theta), pair, y, mask, project=project)

  fresh = sample_box(key, box, n_starts) if n_starts else None
  batches = [s for s in (starts, fresh) if s is not None]
  thetas = jnp.concatenate([jax.vmap(lambda h: ravel_pytree(h)[0])(s).astype(dtype) for s in batches])

  def one_start(theta0):
    u, n_iter = _run(
      to_u(theta0), lambda u: -lml(to_theta(u)), max_iter=max_iter, gtol=gtol, ftol=ftol, memory_size=memory_size
    )
    lml0, lml_end = lml(theta0), lml(to_theta(u))
    better = jnp.isfinite(lml_end) & ~(lml_end < lml0)  # NaN or worse: the start is returned
    return jnp.where(better, to_theta(u), theta0), jnp.where(better, lml_end, lml0), n_iter

  theta, lmls, n_iter = jax.lax.map(one_start, thetas)
  best = jnp.argmax(jnp.where(jnp.isnan(lmls), -jnp.inf, lmls))
  return FitResult(unravel(theta[best]), lmls, jnp.isfinite(lmls[best])), n_iter


def fit_lbfgs(
  key: jax.Array,
  box: Box,
  pair: Any,
  y,
  mask,
  *,
  n_starts: int = 4,
  starts: gp.Hypers | None = None,
  max_iter: int = 100,
  gtol: float = 1e-5,
  ftol: float = 1e-9,
  memory_size: int = 10,
  project: bool = False,
) -> tuple[FitResult, jax.Array]:
  """Maximum-likelihood hyper-parameters by L-BFGS from given and fresh starts.

  Each start runs L-BFGS (optax's, with its zoom line search) on -log p(z | hypers) (gp_lml) in the
  dtype of y (float64 under x64), in unconstrained coordinates u with
  log-hyper = lower + (upper - lower) sigmoid(u), so the box holds without projection and a
  fixed leaf (lower == upper) stays put. The starts run one after another in one program
  (lax.map of a lax.while_loop), each until `lbfgs`'s convergence test or max_iter, so a start
  that converges early costs no more iterations (a vmap would run every start as long as the
  slowest; on CPU, XLA also hung on that vmap of nested while loops at C = 120). A start whose
  end is NaN or lower than its start returns the start, so the fit never ends below its best
  start.

  Args:
    key: PRNG key for the fresh starts; box: Box; pair: Pairwise (C, C); y: [C] float;
      mask: [C] bool.
    n_starts: fresh starts, uniform in the box (0 is allowed when `starts` are given).
    starts: gp.Hypers with leaves [k, ...] inside the box (e.g. an earlier optimum), or None.
    max_iter, gtol, ftol, memory_size: as in `lbfgs`; project: as in gp.condition.

  Returns:
    FitResult over the k + n_starts starts (given ones first): its lml [k + n_starts] is the
    log-likelihood where each start ended; n_iter: [k + n_starts] int32, iterations per start.

  Raises:
    ValueError, TypeError: on invalid arguments, before anything is traced.
  """
  validate_fit_args("fit_lbfgs", box, pair, y, mask, n_starts=(n_starts, 0 if starts is not None else 1))
  lbfgs(max(n_starts, 1), max_iter=max_iter, gtol=gtol, ftol=ftol, memory_size=memory_size)  # checks the options
  check_starts("fit_lbfgs", starts, box)
  options = dict(max_iter=max_iter, gtol=float(gtol), ftol=float(ftol), memory_size=memory_size)
  return _fit_lbfgs(
    key, box, pair, jnp.asarray(y), jnp.asarray(mask), starts, n_starts=n_starts, project=project, **options
  )
