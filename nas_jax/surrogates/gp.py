"""Exact GP regression on padded data: jittered Cholesky, log marginal likelihood, posterior,
and rank-one (Cholesky append) updates. Algebra is in normalised units,
z = (y - y_shift) / y_scale over the real points; padded points (mask False) change nothing.
"""

import logging
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve, solve_triangular

__all__ = [
  "FIXED_NOISES",
  "GPPosterior",
  "Hypers",
  "add_point",
  "check_ok",
  "JitterNote",
  "cholesky",
  "cholesky_with_jitter",
  "condition",
  "condition_fixed",
  "log_likelihood",
  "log_marginal_likelihood",
  "normalise",
  "predict",
  "predict_joint",
  "project_psd",
  "validate_data",
  "with_noise",
]

log = logging.getLogger(__name__)

# Relative to the mean diagonal; tried in order until the factor is finite.
_JITTERS = (0.0, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2)
# The Auto-Keras code: alpha_GP = 1e-10 on the diagonal, raised x10 up to 1e-6 if Cholesky fails.
FIXED_NOISES = (1e-10, 1e-9, 1e-8, 1e-7, 1e-6)


@flax.struct.dataclass
class Hypers:
  """GP hyper-parameters. kernel: a kernel pytree; log_noise: [] float, log noise variance of
  normalised targets. A batch adds a leading axis to every leaf."""

  kernel: Any
  log_noise: jax.Array


@flax.struct.dataclass
class GPPosterior:
  """A GP conditioned on C padded points.

  hypers: Hypers; chol: [C, C] float, lower Cholesky factor of K + noise (identity rows at
  padding); alpha: [C] float, (K + noise)^-1 z; z: [C] float, normalised targets (0 at padding);
  y_shift, y_scale: [] float; mask: [C] bool; ok: [] bool, False if the factorisation failed;
  jitter: [] float, the jitter added to factorise, relative to the mean diagonal (0 when none).
  """

  hypers: Hypers
  chol: jax.Array
  alpha: jax.Array
  z: jax.Array
  y_shift: jax.Array
  y_scale: jax.Array
  mask: jax.Array
  ok: jax.Array
  jitter: jax.Array


@jax.custom_jvp
def _cholesky(a: jax.Array) -> jax.Array:
  """Cholesky of a + jitter*I with the first jitter in _JITTERS that gives a finite factor."""
  eye = jnp.eye(a.shape[0], dtype=a.dtype)
  scale = jnp.mean(jnp.abs(jnp.diag(a)))
  jitters = jnp.asarray(_JITTERS, dtype=a.dtype)

  def attempt(i):
    chol = jnp.linalg.cholesky(a + jitters[i] * scale * eye)
    return chol, jnp.all(jnp.isfinite(chol))

  def cond(carry):
    i, _, ok = carry
    return ~ok & (i < len(_JITTERS) - 1)

  def body(carry):
    i, _, _ = carry
    return (i + 1, *attempt(i + 1))

  _, chol, _ = jax.lax.while_loop(cond, body, (0, *attempt(0)))
  return chol


@_cholesky.defjvp
def _cholesky_jvp(primals, tangents):
  # dL = L Phi(L^-1 dA L^-T), Phi = lower triangle with half the diagonal; the jitter that the
  # loop picked is held fixed, so reverse mode never has to go through the while_loop.
  (a,), (da,) = primals, tangents
  chol = _cholesky(a)
  da = 0.5 * (da + da.T)
  x = solve_triangular(chol, da, lower=True)
  x = solve_triangular(chol, x.T, lower=True).T
  phi = jnp.tril(x) - 0.5 * jnp.diag(jnp.diag(x))
  return chol, chol @ phi


def cholesky_with_jitter(a: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Lower Cholesky factor with escalating jitter; jit-, vmap- and grad-safe.

  Args:
    a: [n, n] float, symmetric.

  Returns:
    chol: [n, n] float, the factor of a + j*mean(|diag a|)*I for the first j in
      (0, 1e-10, ..., 1e-2) that works (NaN if none does); ok: [] bool, True if finite.
  """
  if jnp.ndim(a) != 2 or a.shape[0] != a.shape[1]:
    raise ValueError(f"a: shape {jnp.shape(a)}; expected a square [n, n] matrix")
  chol = _cholesky(a)
  return chol, jnp.all(jnp.isfinite(chol))


def check_ok(ok: jax.Array, where: str) -> None:
  """Plain-Python check of an ok flag; raises LinAlgError if it is concretely False.

  Does nothing on traced values, where the flag must travel on to a caller outside jit.
  """
  if not isinstance(ok, jax.core.Tracer) and not bool(np.all(ok)):
    raise np.linalg.LinAlgError(
      f"{where}: the kernel matrix is not positive definite even with jitter"
      f" {_JITTERS[-1]:g}*mean(diag); check the hyper-parameters, the inputs for NaN, or use"
      " project=True for kernels that are not PSD (e.g. NasbotKernel)"
    )


def cholesky(a) -> jax.Array:
  """cholesky_with_jitter in plain Python: a: [n, n] -> chol [n, n]. Raises LinAlgError."""
  chol, ok = jax.jit(cholesky_with_jitter)(jnp.asarray(a))
  check_ok(ok, "cholesky")
  return chol


def project_psd(a: jax.Array) -> jax.Array:
  """Nearest PSD matrix by clipping eigenvalues at 0 (NASBOT Sec. 4; the authors' code): [n, n] -> [n, n].

  The gradient passes straight through (exact wherever a is already PSD), since the eigenvector
  derivative is infinite at the repeated zero eigenvalues that padding creates.
  """
  w, v = jnp.linalg.eigh(jax.lax.stop_gradient(a))
  proj = (v * jnp.maximum(w, 0.0)) @ v.T
  return a + jax.lax.stop_gradient(0.5 * (proj + proj.T) - a)


def normalise(y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Mean and standard deviation (ddof 0; 1 if zero) of y: [C] over mask: [C] bool."""
  n = jnp.maximum(mask.sum(), 1)
  shift = jnp.where(mask, y, 0.0).sum() / n
  var = jnp.where(mask, (y - shift) ** 2, 0.0).sum() / n
  return shift, jnp.where(var > 0, jnp.sqrt(var), 1.0)


def with_noise(k: jax.Array, noise: jax.Array, mask: jax.Array) -> jax.Array:
  """The Gram matrix of kernel values k [C, C] (zero off the real block): noise added on the real
  diagonal, 1 at padding, so padded slots factorise as the identity."""
  return k + jnp.diag(jnp.where(mask, noise, 1.0))


def log_likelihood(z: jax.Array, alpha: jax.Array, chol: jax.Array, mask: jax.Array) -> jax.Array:
  """log N(z | 0, G) over the real points, from G's Cholesky factor chol [C, C] and
  alpha = G^-1 z [C] (z zero at padding): [] float."""
  log_det = jnp.where(mask, jnp.log(jnp.diag(chol)), 0.0).sum()
  return -0.5 * z @ alpha - log_det - 0.5 * mask.sum() * jnp.log(2.0 * jnp.pi)


def _gram(hypers: Hypers, pair: Any, mask: jax.Array, project: bool) -> jax.Array:
  """K + noise*I over real points, identity at padding: [C, C]."""
  both = mask[:, None] & mask[None, :]
  k = jnp.where(both, hypers.kernel(pair), 0.0)
  if project:
    k = jnp.where(both, project_psd(k), 0.0)
  return with_noise(k, jnp.exp(hypers.log_noise), mask)


def condition(
  hypers: Hypers,
  pair: Any,
  y: jax.Array,
  mask: jax.Array,
  *,
  project: bool = False,
  y_shift: jax.Array | None = None,
  y_scale: jax.Array | None = None,
  jitter: bool = True,
) -> GPPosterior:
  """Conditions the GP on the real points (NASBOT Sec. 2.1).

  Args:
    hypers: Hypers.
    pair: Pairwise of the C points with themselves, shape (C, C). Padded entries must be finite.
    y: [C] float targets (any value at padding); mask: [C] bool.
    project: clip the Gram matrix's eigenvalues at 0 first (non-PSD kernels, NASBOT Sec. 4).
    y_shift, y_scale: [] float normalisation; default: normalise(y, mask).
    jitter: escalate the jitter until the factor is finite; False factorises K + noise once,
      for callers that run their own noise ladder (condition_fixed).

  Returns:
    GPPosterior; its ok flag is False if even the largest jitter (or, with jitter=False, the one
    factorisation) failed.
  """
  y, mask = jnp.asarray(y), jnp.asarray(mask)
  if y_shift is None or y_scale is None:
    y_shift, y_scale = normalise(y, mask)
  z = jnp.where(mask, (y - y_shift) / y_scale, 0.0)
  gram = _gram(hypers, pair, mask, project)
  if jitter:
    chol, ok = cholesky_with_jitter(gram)
  else:
    chol = jnp.linalg.cholesky(gram)
    ok = jnp.all(jnp.isfinite(chol))
  alpha = cho_solve((chol, True), z)
  added = jax.lax.stop_gradient(_jitter_added(gram, chol))
  return GPPosterior(hypers, chol, alpha, z, jnp.asarray(y_shift), jnp.asarray(y_scale), mask, ok, added)


def _jitter_added(a: jax.Array, chol: jax.Array) -> jax.Array:
  """The j of chol = cholesky(a + j mean(|diag a|) I): trace(L L^T) - trace(a) = n j mean(|diag a|)."""
  scale = jnp.mean(jnp.abs(jnp.diag(a)))
  return jnp.maximum(jnp.sum(chol**2) - jnp.trace(a), 0.0) / (a.shape[0] * scale)


class JitterNote:
  """`note(jitter, where)` logs, the first time a factorisation needed jitter, its size (host
  values only), and stays silent after: a search whose points need jitter needs it at every step.
  Whoever factorises over a search creates one and keeps it (`gp_surrogate` does, per surrogate).

  Values below 1e-12 are round-off of the trace identity, not jitter (the smallest one is 1e-10).
  """

  def __init__(self) -> None:
    self.logged: float | None = None  # the jitter logged, once one was

  def __call__(self, jitter: Any, where: str) -> None:
    if self.logged is not None or isinstance(jitter, jax.core.Tracer):
      return
    worst = float(np.nanmax(np.asarray(jitter), initial=0.0))
    if worst > 1e-12:
      self.logged = worst
      log.warning(
        "%s: the kernel matrix was factorised with %.0e x mean(diag) added to its diagonal (jitter;"
        " near-duplicate points or a tiny noise). Logged once per surrogate.",
        where,
        worst,
      )


@jax.jit
def _condition_raw(kernel: Any, pair: Any, y: jax.Array, mask: jax.Array, noise: jax.Array):
  zero = jnp.zeros((), y.dtype)
  hypers = Hypers(kernel, jnp.log(noise))
  return condition(hypers, pair, y, mask, y_shift=zero, y_scale=zero + 1, jitter=False)


def condition_fixed(kernel: Any, pair: Any, y, mask, *, noises: tuple[float, ...] = FIXED_NOISES) -> GPPosterior:
  """Conditions a GP with a fixed kernel, zero prior mean and raw targets (the Auto-Keras code).

  Nothing is fitted or normalised: mu = k*^T (K + a I)^-1 y. Each noise variance a in `noises`
  is tried in turn (one compiled call, run from plain Python) until the Cholesky factor is
  finite; any a after the first is logged as a warning.

  Args:
    kernel: a kernel pytree, e.g. Matern12.create() on Bourgain coordinates.
    pair: Pairwise of the C points with themselves, shape (C, C).
    y: [C] float targets (any value at padding); mask: [C] bool.
    noises: increasing positive noise variances; default FIXED_NOISES (1e-10, x10 up to 1e-6).

  Returns:
    GPPosterior with y_shift = 0, y_scale = 1; exp(hypers.log_noise) is the noise that worked.

  Raises:
    ValueError on bad data or noises; LinAlgError if even the last noise fails.
  """
  validate_data(pair, y, mask, where="condition_fixed")
  if not noises or any(not 0 < a < np.inf for a in noises) or list(noises) != sorted(noises):
    raise ValueError(f"condition_fixed: noises={noises!r}; expected increasing positive numbers")
  y, mask = jnp.asarray(y, float), jnp.asarray(mask)
  for a in noises:
    post = _condition_raw(kernel, pair, y, mask, jnp.asarray(a, y.dtype))
    if bool(post.ok):
      if a != noises[0]:
        log.warning("condition_fixed: Cholesky needed noise %g (first try %g)", a, noises[0])
      return post
  raise np.linalg.LinAlgError(
    f"condition_fixed: the kernel matrix is not positive definite even with noise {noises[-1]:g};"
    " is the kernel PSD? (raw exp(-d) is not, Auto-Keras Sec. 3.1)"
  )


def log_marginal_likelihood(
  hypers: Hypers, pair: Any, y: jax.Array, mask: jax.Array, *, project: bool = False
) -> jax.Array:
  """log p(z | hypers) of the normalised targets (as scikit-learn's normalize_y=True): [] float.

  Arguments as in `condition`. NaN if the factorisation failed; differentiable in hypers.
  """
  post = condition(hypers, pair, y, mask, project=project)
  return log_likelihood(post.z, post.alpha, post.chol, mask)


def _cross(post: GPPosterior, pair: Any) -> jax.Array:
  return jnp.where(post.mask[None, :], post.hypers.kernel(pair), 0.0)


def predict(post: GPPosterior, pair: Any) -> tuple[jax.Array, jax.Array]:
  """Posterior mean and variance of f at m test points, in the units of y.

  Args:
    post: GPPosterior over C points.
    pair: Pairwise of the m test points (rows) with the C points (columns), shape (m, C).

  Returns:
    mean: [m] float; var: [m] float, >= 0 (latent f, without noise).
  """
  ks = _cross(post, pair)
  v = solve_triangular(post.chol, ks.T, lower=True)
  var = jnp.maximum(post.hypers.kernel.diag(pair) - (v**2).sum(0), 0.0)
  return post.y_shift + post.y_scale * (ks @ post.alpha), post.y_scale**2 * var


def predict_joint(post: GPPosterior, pair: Any, pair_test: Any) -> tuple[jax.Array, jax.Array]:
  """Posterior mean [m] and joint covariance [m, m] of f at m test points, in units of y.

  pair: (m, C) test points against the C points; pair_test: (m, m) test points with themselves.
  """
  ks = _cross(post, pair)
  v = solve_triangular(post.chol, ks.T, lower=True)
  cov = post.hypers.kernel(pair_test) - v.T @ v
  return post.y_shift + post.y_scale * (ks @ post.alpha), post.y_scale**2 * 0.5 * (cov + cov.T)


def add_point(post: GPPosterior, pair_row: Any, y_new: jax.Array, index: jax.Array) -> GPPosterior:
  """Adds one observation at padded slot `index` by appending a Cholesky row: O(C^2).

  Equals `condition` on the enlarged mask with the same y_shift, y_scale (and project=False).

  Args:
    post: GPPosterior over C points.
    pair_row: Pairwise of the new point (row) with the C points, shape (1, C).
    y_new: [] float, its target; index: [] int, a slot with mask False at and after it.

  Returns:
    GPPosterior with mask[index] True; ok is False if the slot rule is broken or the new pivot
    is not positive.
  """
  slots = jnp.arange(post.mask.shape[0])
  free = ~jnp.any(post.mask & (slots >= index))
  k = _cross(post, pair_row)[0]
  l = solve_triangular(post.chol, k, lower=True)
  pivot = post.hypers.kernel.diag(pair_row)[0] + jnp.exp(post.hypers.log_noise) - l @ l
  row = l.at[index].set(jnp.sqrt(jnp.maximum(pivot, 0.0)))
  chol = post.chol.at[index].set(row)
  z = post.z.at[index].set((y_new - post.y_shift) / post.y_scale)
  return post.replace(
    chol=chol,
    alpha=cho_solve((chol, True), z),
    z=z,
    mask=post.mask.at[index].set(True),
    ok=post.ok & free & (pivot > 0),
  )


def validate_data(pair: Any, y, mask, *, where: str) -> None:
  """Plain-Python checks before tracing: pair (C, C), y: [C] float, mask: [C] bool, at least one
  real point and finite real targets (value checks only on concrete arrays). Raises ValueError."""
  y_shape, mask_shape = jnp.shape(y), jnp.shape(mask)
  if len(y_shape) != 1:
    raise ValueError(f"{where}: y has shape {y_shape}; expected [C]")
  if mask_shape != y_shape or jnp.result_type(mask) != jnp.bool_:
    raise ValueError(f"{where}: mask is {jnp.result_type(mask)} of shape {mask_shape}; expected bool {y_shape}")
  if tuple(pair.shape) != (y_shape[0], y_shape[0]):
    raise ValueError(f"{where}: pair has shape {tuple(pair.shape)}; expected (C, C) = {y_shape * 2}")
  if isinstance(y, jax.core.Tracer) or isinstance(mask, jax.core.Tracer):
    return
  y, mask = np.asarray(y), np.asarray(mask)
  if not mask.any():
    raise ValueError(f"{where}: mask has no True entry; a GP needs at least one observation")
  if not np.all(np.isfinite(y[mask])):
    bad = np.flatnonzero(~np.isfinite(y) & mask)
    raise ValueError(f"{where}: y is not finite at real points {bad}; mask them out instead")
