"""The GP log marginal likelihood with its gradient in closed form: one factorisation per evaluation.

`gp.log_marginal_likelihood` differentiates by autodiff through the Cholesky (and, for kernels
that are not PSD, passes the gradient straight through the eigenvalue clipping, which is exact
only where the Gram matrix is already PSD). Here the value is the same, and the gradient comes
from the one factorisation the value needs, via dL/dG = (alpha alpha^T - G^-1) / 2 (Rasmussen &
Williams eq. 5.9), G the Gram matrix with noise:

- project=False: one jittered Cholesky; G^-1 from its triangular factor.
- project=True: one eigendecomposition K = V diag(w) V^T of the masked kernel matrix. It gives
  G = V diag(max(w, 0) + noise) V^T, so the value and G^-1 need no Cholesky, and the derivative
  of the clipping itself (Daleckii-Krein: dP = V (F o V^T dK V) V^T with F_ij the divided
  difference of max(., 0) at w_i, w_j), so the gradient is that of the projected likelihood that
  the value computes. Padded slots get an eigenvalue below every real one (a Gershgorin bound),
  so they stay apart from the real spectrum and are dropped by their position.
- project=True, straight_through=True: the same value, and the gradient with F = 1, i.e. with
  the clipping passed straight through, as `gp.project_psd` passes it. It is the gradient of
  `gp.log_marginal_likelihood` to rounding, which costs an eigendecomposition and a jittered
  Cholesky with its backward pass; here it costs the eigendecomposition alone (the Adam fit's
  gradient, gp_fit.optimise).
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.linalg import cho_solve
import numpy as np

from nas_jax.arch.host_threads import on_cores
from nas_jax.surrogates import gp

__all__ = ["log_marginal_likelihood"]

# Below this size a batch of eigendecompositions is over before threads would pay for themselves.
_HOST_EIGH_LEAST = 128


def _eigh_or_nan(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """numpy's eigh of a [k, C, C], NaN for a matrix it cannot decompose (a non-finite entry, or
  no convergence), as XLA's eigh returns: the fit then skips that step, where an exception would
  end it."""
  if np.isfinite(a).all():
    try:
      return np.linalg.eigh(a)
    except np.linalg.LinAlgError:
      pass
  if len(a) > 1:
    return tuple(np.concatenate(x) for x in zip(*(_eigh_or_nan(m[None]) for m in a)))
  return np.full(a.shape[:-1], np.nan, a.dtype), np.full(a.shape, np.nan, a.dtype)


def _host_eigh(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """numpy's eigh of a [..., C, C] (symmetric), the batch split over the cores.

  `pure_callback` may hand over a jax Array: it becomes numpy first, since indexing a jax Array
  here would run an XLA program from inside the one that called back, which deadlocks when the
  process has one core (the caller holds the only executor)."""
  a = np.asarray(a)
  flat = a.reshape((-1,) + a.shape[-2:])
  parts = on_cores(lambda idx: _eigh_or_nan(flat[idx]), len(flat))
  w, v = (np.concatenate(x) for x in zip(*parts))
  return w.reshape(a.shape[:-1]), v.reshape(a.shape)


def _eigh(x: jax.Array) -> tuple[jax.Array, jax.Array]:
  """jnp.linalg.eigh of x [..., C, C]: (w [..., C] ascending, V [..., C, C]).

  On the CPU, from C = _HOST_EIGH_LEAST, numpy computes it on the host: it calls the LAPACK
  driver that XLA calls (syevd) on the same symmetrised input, but a batch (the fit's starts,
  under vmap) runs on every core, where XLA runs it on one. Elsewhere, jnp.linalg.eigh.
  """
  if x.shape[-1] < _HOST_EIGH_LEAST:
    return jnp.linalg.eigh(x)

  def host(x):
    shapes = (jax.ShapeDtypeStruct(x.shape[:-1], x.dtype), jax.ShapeDtypeStruct(x.shape, x.dtype))
    return jax.pure_callback(_host_eigh, shapes, 0.5 * (x + x.mT), vmap_method="broadcast_all")

  return jax.lax.platform_dependent(x, cpu=host, default=lambda x: tuple(jnp.linalg.eigh(x)))


def _eigen_parts(k, noise, z, mask):
  """(value, a, h, w, V, real): the likelihood; a = V^T G^-1 z and h = 1 / (max(w, 0) + noise) [C],
  G^-1 z and G^-1 in the eigenbasis, both zero at padded components; the eigenvalues w [C] and
  eigenvectors V [C, C] of the masked kernel matrix; real: [C] bool, the real components."""
  c = mask.shape[0]
  n = mask.sum()
  # Padded rows of k are zero; put them at an eigenvalue below the real block's spectrum.
  floor = -1.0 - jnp.max(jnp.abs(k).sum(-1))
  w, v = _eigh(k + jnp.diag(jnp.where(mask, 0.0, floor)))
  real = jnp.arange(c) >= c - n  # eigh sorts ascending: the C - n padded ones come first
  g = jnp.where(real, jnp.maximum(w, 0.0) + noise, 1.0)
  proj = v.T @ z
  a = jnp.where(real, proj / g, 0.0)
  value = -0.5 * (a * proj).sum() - 0.5 * jnp.where(real, jnp.log(g), 0.0).sum() - 0.5 * n * jnp.log(2.0 * jnp.pi)
  return value, a, jnp.where(real, 1.0 / g, 0.0), w, v, real


def _clip_divided_differences(w, real):
  """F_ij = (max(w_i, 0) - max(w_j, 0)) / (w_i - w_j), the derivative of max(., 0) where w_i = w_j:
  1 if both are positive, 0 if neither is, w_+ / (w_+ - w_-) across the sign (never 0 / 0).

  An eigenvalue within rounding of 0 (|w| <= C eps max|w|) counts as positive: a PSD matrix has
  many such, of either sign by chance, and clipping one moves the value by no more than rounding,
  while a slope of 0 for it would make the gradient jump at every step.
  """
  tol = w.shape[0] * jnp.finfo(w.dtype).eps * jnp.max(jnp.where(real, jnp.abs(w), 0.0))
  pos = (w > -tol) & real
  wi, wj = w[:, None], w[None, :]
  across = pos[:, None] != pos[None, :]
  gap = jnp.where(across, wi - wj, 1.0)
  mixed = (jnp.maximum(wi, 0.0) - jnp.maximum(wj, 0.0)) / gap
  return jnp.where(pos[:, None] & pos[None, :], 1.0, jnp.where(across, mixed, 0.0))


def _cholesky_parts(k, noise, z, mask):
  """(value, W): the likelihood and (alpha alpha^T - G^-1) / 2 over the real block [C, C]."""
  chol, _ = gp.cholesky_with_jitter(gp.with_noise(k, noise, mask))
  alpha = cho_solve((chol, True), z)
  value = gp.log_likelihood(z, alpha, chol, mask)
  inverse = cho_solve((chol, True), jnp.eye(mask.shape[0], dtype=k.dtype))
  both = mask[:, None] & mask[None, :]
  return value, jnp.where(both, 0.5 * (alpha[:, None] * alpha[None, :] - inverse), 0.0)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def _lml_of_gram(k, noise, z, mask, project, straight_through):
  if project:
    return _eigen_parts(k, noise, z, mask)[0]
  return _cholesky_parts(k, noise, z, mask)[0]


def _lml_fwd(k, noise, z, mask, project, straight_through):
  if project:
    value, a, h, w, v, real = _eigen_parts(k, noise, z, mask)
    if straight_through:
      # V W~ V^T with W~ = (a a^T - diag(h)) / 2 in the eigenbasis is (alpha alpha^T - G^-1) / 2:
      # an outer product and one matrix product rather than two.
      alpha = v @ a
      d_k = 0.5 * (alpha[:, None] * alpha[None, :] - (v * h) @ v.T)
    else:
      w_tilde = 0.5 * (a[:, None] * a[None, :] - jnp.diag(h))
      d_k = v @ (_clip_divided_differences(w, real) * w_tilde) @ v.T
    d_noise = 0.5 * ((a * a).sum() - h.sum())  # trace(W~); padded components are 0
  else:
    value, d_k = _cholesky_parts(k, noise, z, mask)
    d_noise = jnp.trace(d_k)
  both = mask[:, None] & mask[None, :]
  return value, (jnp.where(both, 0.5 * (d_k + d_k.T), 0.0), d_noise, z, mask)


def _lml_bwd(project, straight_through, res, g):
  d_k, d_noise, z, mask = res
  return g * d_k, g * d_noise, jnp.zeros_like(z), None


_lml_of_gram.defvjp(_lml_fwd, _lml_bwd)


def log_marginal_likelihood(
  hypers: gp.Hypers,
  pair: Any,
  y: jax.Array,
  mask: jax.Array,
  *,
  project: bool = False,
  straight_through: bool = False,
) -> jax.Array:
  """log p(z | hypers): [] float, the value of `gp.log_marginal_likelihood` (arguments as there)
  with the closed-form gradient of the module docstring. NaN if the factorisation failed.

  With project=True the eigenvalues are clipped at 0 before the noise is added, and the gradient
  is that of the clipped likelihood, or with straight_through=True the straight-through one of
  gp.project_psd (straight_through is ignored without project).
  """
  y, mask = jnp.asarray(y), jnp.asarray(mask)
  y_shift, y_scale = gp.normalise(y, mask)
  z = jnp.where(mask, (y - y_shift) / y_scale, 0.0)
  both = mask[:, None] & mask[None, :]
  k = jnp.where(both, hypers.kernel(pair), 0.0)
  return _lml_of_gram(k, jnp.exp(hypers.log_noise), z, mask, project, project and straight_through)
