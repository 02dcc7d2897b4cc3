"""Kernels as pytrees of unconstrained log-parameters: kernel(pair) -> covariance [n1, n2].

Static choices are `pytree_node=False` fields. Each kernel also gives `diag(pair) -> [n1]`, the
prior variance of the pair's first points, and `bounds(...)`, its default log-uniform prior box.
"""

import functools
from typing import Any, Callable

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.features.pairwise import ArcPair, DistancePair, OtmannPair, VectorPair, typed_dataclass

__all__ = [
  "ArcKernel",
  "ExpSquared",
  "Hamming",
  "Matern12",
  "Matern52",
  "NasbotKernel",
  "Product",
  "Sum",
  "exp_squared_profile",
  "matern12_profile",
  "matern52_profile",
]


def exp_squared_profile(r2: jax.Array) -> jax.Array:
  """exp(-r^2 / 2) of scaled squared distances r2: [...] -> [...]."""
  return jnp.exp(-0.5 * r2)


def matern12_profile(r2: jax.Array) -> jax.Array:
  """Matern-1/2 (exponential, Laplace) exp(-r) of r2: [...] -> [...].

  The double `where` keeps the gradient in r2 finite at r = 0, where sqrt has none.
  """
  positive = r2 > 0
  return jnp.exp(-jnp.where(positive, jnp.sqrt(jnp.where(positive, r2, 1.0)), 0.0))


def matern52_profile(r2: jax.Array) -> jax.Array:
  """Matern-5/2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r) of r2: [...] -> [...].

  The double `where` keeps the gradient finite at r = 0, where sqrt is not differentiable but
  the profile is.
  """
  positive = r2 > 0
  r = jnp.where(positive, jnp.sqrt(jnp.where(positive, r2, 1.0)), 0.0)
  s5r = jnp.sqrt(5.0) * r
  return (1.0 + s5r + 5.0 / 3.0 * r2) * jnp.exp(-s5r)


def _check_pair(kernel: Any, pair: Any, types: tuple[type, ...]) -> None:
  if not isinstance(pair, types):
    allowed = ", ".join(t.__name__ for t in types)
    raise TypeError(f"{type(kernel).__name__}: got a {type(pair).__name__}; expected {allowed}")


def _positive(name: str, value) -> jax.Array:
  value = np.asarray(value, dtype=float)
  if not np.all(np.isfinite(value) & (value > 0)):
    raise ValueError(f"{name}: {value} is not positive and finite")
  return jnp.log(jnp.asarray(value))


def _range(name: str, pair, dim: int | None) -> tuple[jax.Array, jax.Array]:
  lo, hi = (float(v) for v in pair)
  if not 0 < lo <= hi < np.inf:
    raise ValueError(f"{name}: {pair} is not a range 0 < low <= high < inf")
  shape = () if dim is None else (dim,)
  return jnp.full(shape, np.log(lo)), jnp.full(shape, np.log(hi))


def _scaled_sq_dist(kernel: Any, pair: Any, log_length_scale: jax.Array) -> jax.Array:
  """Squared distance over length-scales: [n1, n2]. ARD needs a VectorPair."""
  _check_pair(kernel, pair, (VectorPair, DistancePair))
  if isinstance(pair, DistancePair):
    if jnp.ndim(log_length_scale) != 0:
      raise ValueError(
        f"{type(kernel).__name__}: ARD length-scales (shape {jnp.shape(log_length_scale)}) need"
        " a VectorPair; a DistancePair allows one scalar length-scale"
      )
    return pair.sq_dist * jnp.exp(-2.0 * log_length_scale)
  x1 = pair.x1 * jnp.exp(-log_length_scale)
  x2 = pair.x2 * jnp.exp(-log_length_scale)
  r2 = (x1**2).sum(-1)[:, None] + (x2**2).sum(-1)[None, :] - 2.0 * x1 @ x2.T
  return jnp.maximum(r2, 0.0)


# What the stationary kernels share; each assigns them in its body (diag also serves ArcKernel).
def _variance_diag(self, pair: Any) -> jax.Array:
  """sigma^2 at each of the pair's first points: [n1]."""
  return jnp.full(pair.shape[0], jnp.exp(self.log_variance))


def _create(cls, variance=1.0, length_scale=1.0):
  """From positive values; length_scale: scalar or [D]. Raises ValueError."""
  return cls(_positive("variance", variance), _positive("length_scale", length_scale))


def _bounds(cls, dim=None, *, variance=(0.01, 100.0), length_scale=(0.01, 100.0)):
  """(lower, upper) kernels of a log-uniform box; dim=None: one length-scale, else [dim]."""
  v0, v1 = _range("variance", variance, None)
  l0, l1 = _range("length_scale", length_scale, dim)
  return cls(v0, l0), cls(v1, l1)


@typed_dataclass
class ExpSquared:
  """sigma^2 exp(-|x - x'|^2_l / 2) on a VectorPair (ARD) or a DistancePair (isotropic).

  log_variance: [] float; log_length_scale: [] or [D] float.
  """

  log_variance: jax.Array
  log_length_scale: jax.Array

  def __call__(self, pair: VectorPair | DistancePair) -> jax.Array:
    r2 = _scaled_sq_dist(self, pair, self.log_length_scale)
    return jnp.exp(self.log_variance) * exp_squared_profile(r2)

  diag = _variance_diag
  create = classmethod(_create)
  bounds = classmethod(_bounds)


@typed_dataclass
class Matern12:
  """sigma^2 exp(-|x - x'|_l) on a VectorPair (ARD) or a DistancePair (isotropic).

  log_variance: [] float; log_length_scale: [] or [D] float. With variance = length_scale = 1
  it is the Auto-Keras kernel exp(-rho) on Bourgain coordinates (Auto-Keras eq. (2)).
  """

  log_variance: jax.Array
  log_length_scale: jax.Array

  def __call__(self, pair: VectorPair | DistancePair) -> jax.Array:
    if isinstance(pair, VectorPair):
      # Differences, not |x|^2 + |x'|^2 - 2 x.x': sqrt would turn that form's ~1e-16 rounding
      # into r ~ 1e-8 at x = x', and exp(-r) is not flat there, so k(x, x) would fall below 1.
      diff = (pair.x1[:, None, :] - pair.x2[None, :, :]) * jnp.exp(-self.log_length_scale)
      r2 = (diff**2).sum(-1)
    else:
      r2 = _scaled_sq_dist(self, pair, self.log_length_scale)
    return jnp.exp(self.log_variance) * matern12_profile(r2)

  diag = _variance_diag
  create = classmethod(_create)
  bounds = classmethod(_bounds)


@typed_dataclass
class Matern52:
  """sigma^2 Matern-5/2(|x - x'|_l) on a VectorPair (ARD) or a DistancePair (isotropic).

  log_variance: [] float; log_length_scale: [] or [D] float.
  """

  log_variance: jax.Array
  log_length_scale: jax.Array

  def __call__(self, pair: VectorPair | DistancePair) -> jax.Array:
    r2 = _scaled_sq_dist(self, pair, self.log_length_scale)
    return jnp.exp(self.log_variance) * matern52_profile(r2)

  diag = _variance_diag
  create = classmethod(_create)
  bounds = classmethod(_bounds)


@typed_dataclass
class Hamming:
  """sigma^2 exp(-sum_i [x_i != x'_i] / l_i) on a VectorPair of 0/1 encodings.

  log_variance: [] float; log_length_scale: [] or [D] float.
  """

  log_variance: jax.Array
  log_length_scale: jax.Array

  def __call__(self, pair: VectorPair) -> jax.Array:
    _check_pair(self, pair, (VectorPair,))
    w = jnp.broadcast_to(jnp.exp(-self.log_length_scale), pair.x1.shape[-1:])
    # For 0/1 entries, [a != b] = a + b - 2ab, so weighted mismatches are three matmuls.
    mismatch = (pair.x1 @ w)[:, None] + (pair.x2 @ w)[None, :] - 2.0 * (pair.x1 * w) @ pair.x2.T
    return jnp.exp(self.log_variance) * jnp.exp(-jnp.maximum(mismatch, 0.0))

  diag = _variance_diag
  create = classmethod(_create)
  bounds = classmethod(functools.partial(_bounds, length_scale=(0.1, 100.0)))


def _check_powers(p, p_bar) -> None:
  """The powers of eq. (7) are positive finite numbers (the Fig. 7c ablation tries 1 and 2)."""
  for name, v in (("p", p), ("p_bar", p_bar)):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < float("inf"):
      raise ValueError(f"{name}: {v!r}; expected a positive finite number")


@typed_dataclass
class NasbotKernel:
  """alpha exp(-sum_i beta_i d_i^p) + alpha_bar exp(-sum_i beta_bar_i d_bar_i^p_bar), eq. (7).

  log_alpha, log_alpha_bar: [] float; log_beta, log_beta_bar: [n_nu] float; p, p_bar static
  (NASBOT eq. (7): p = 1, p_bar = 2). The Gram matrix need not be PSD (NASBOT Sec. 4): fit and
  condition it with `project=True`.
  """

  log_alpha: jax.Array
  log_alpha_bar: jax.Array
  log_beta: jax.Array
  log_beta_bar: jax.Array
  p: float = flax.struct.field(pytree_node=False, default=1.0)
  p_bar: float = flax.struct.field(pytree_node=False, default=2.0)

  def __call__(self, pair: OtmannPair) -> jax.Array:
    _check_pair(self, pair, (OtmannPair,))
    s = jnp.einsum("k,kij->ij", jnp.exp(self.log_beta), pair.d**self.p)
    s_bar = jnp.einsum("k,kij->ij", jnp.exp(self.log_beta_bar), pair.d_bar**self.p_bar)
    return jnp.exp(self.log_alpha) * jnp.exp(-s) + jnp.exp(self.log_alpha_bar) * jnp.exp(-s_bar)

  def diag(self, pair: OtmannPair) -> jax.Array:
    """alpha + alpha_bar: [n1], since d(G, G) = 0 (NASBOT Theorem 1)."""
    return jnp.full(pair.shape[0], jnp.exp(self.log_alpha) + jnp.exp(self.log_alpha_bar))

  @classmethod
  def create(cls, alpha, alpha_bar, beta, beta_bar, *, p=1.0, p_bar=2.0) -> "NasbotKernel":
    """From positive values; beta, beta_bar: [n_nu]. Raises ValueError."""
    log_beta, log_beta_bar = _positive("beta", beta), _positive("beta_bar", beta_bar)
    if log_beta.ndim != 1 or log_beta.shape != log_beta_bar.shape:
      raise ValueError(f"beta, beta_bar: shapes {log_beta.shape}, {log_beta_bar.shape}; need both [n_nu]")
    _check_powers(p, p_bar)
    return cls(
      _positive("alpha", alpha),
      _positive("alpha_bar", alpha_bar),
      log_beta,
      log_beta_bar,
      float(p),
      float(p_bar),
    )

  @classmethod
  def bounds(
    cls,
    n_nu=4,
    *,
    alpha=(0.01, 100.0),
    beta=(1e-9, 1e-3),
    beta_bar=(0.1, 100.0),
    p=1.0,
    p_bar=2.0,
  ):
    """(lower, upper) kernels: the authors' code boxes (github.com/kirthevasank/nasbot), relative to Var(Y)."""
    _check_powers(p, p_bar)
    a0, a1 = _range("alpha", alpha, None)
    b0, b1 = _range("beta", beta, n_nu)
    c0, c1 = _range("beta_bar", beta_bar, n_nu)
    return cls(a0, a0, b0, c0, float(p), float(p_bar)), cls(a1, a1, b1, c1, float(p), float(p_bar))


@typed_dataclass
class ArcKernel:
  """sigma^2 profile(d^2), d the cylindrical-embedding distance of Swersky et al. 2013, Sec. 2.2 (l = 1, 3).

  log_variance: [] float; log_omega, log_rho: [P] float (omega_i > 0, rho_i in (0, 1]);
  profile: static, `exp_squared_profile` or `matern52_profile`.
  """

  log_variance: jax.Array
  log_omega: jax.Array
  log_rho: jax.Array
  profile: Callable[[jax.Array], jax.Array] = flax.struct.field(pytree_node=False, default=exp_squared_profile)

  def sq_dist(self, pair: ArcPair) -> jax.Array:
    """d(x, x')^2: [n1, n2] of the cylindrical embeddings f_i = a_i w_i (sin t_i, cos t_i),
    t_i = pi rho_i u_i: per parameter 2 w^2 (1 - cos dt) if both are active, w^2 if one is, 0 if
    neither.

    Computed as sum(a w^2) + sum(a' w^2) - 2 f.f' with matrix products, not per pair and
    parameter: an [n1, n2, P] array makes a large Gram matrix many times slower
    (benchmarks/bench_conditional.py). The norms come from the masks, not from sin^2 + cos^2, so
    a value inactive in either point enters only as an exact 0: the two properties of Swersky et al.
    2013 (Sec. 2.1) hold bit for bit. Within one active parameter the difference cancels to ~1e-16
    sum(w^2) (clipped at 0), so "switching one parameter off moves exactly omega" holds to rounding.
    """
    _check_pair(self, pair, (ArcPair,))
    omega2 = jnp.exp(2.0 * self.log_omega)
    rho = jnp.exp(self.log_rho)

    def embed(u, active):  # [n, P] -> [n, 2P]; an inactive parameter sits at the centre, 0
      scale = jnp.where(active, jnp.sqrt(omega2), 0.0)
      angle = jnp.pi * rho * jnp.where(active, u, 0.0)
      return jnp.concatenate([scale * jnp.sin(angle), scale * jnp.cos(angle)], axis=-1)

    norm1 = jnp.where(pair.active1, omega2, 0.0).sum(-1)
    norm2 = jnp.where(pair.active2, omega2, 0.0).sum(-1)
    sq = norm1[:, None] + norm2[None, :] - 2.0 * embed(pair.u1, pair.active1) @ embed(pair.u2, pair.active2).T
    return jnp.maximum(sq, 0.0)

  def __call__(self, pair: ArcPair) -> jax.Array:
    return jnp.exp(self.log_variance) * self.profile(self.sq_dist(pair))

  diag = _variance_diag

  @classmethod
  def create(cls, variance, omega, rho, *, profile=exp_squared_profile) -> "ArcKernel":
    """From values; omega: [P] > 0, rho: [P] in (0, 1]. Raises ValueError."""
    log_omega, log_rho = _positive("omega", omega), _positive("rho", rho)
    if log_omega.ndim != 1 or log_omega.shape != log_rho.shape:
      raise ValueError(f"omega, rho: shapes {log_omega.shape}, {log_rho.shape}; need both [P]")
    if np.any(np.asarray(rho) > 1):
      raise ValueError(f"rho: {rho} has values above 1; rho must be in (0, 1] (our bound)")
    return cls(_positive("variance", variance), log_omega, log_rho, profile)

  @classmethod
  def bounds(
    cls,
    n_params,
    *,
    variance=(0.01, 100.0),
    omega=(0.01, 100.0),
    rho=(0.01, 1.0),
    profile=exp_squared_profile,
  ):
    """(lower, upper) kernels of a log-uniform box over [P] = n_params parameters."""
    if rho[1] > 1:
      raise ValueError(f"rho: {rho} goes above 1; rho must be in (0, 1] (our bound)")
    v0, v1 = _range("variance", variance, None)
    w0, w1 = _range("omega", omega, n_params)
    r0, r1 = _range("rho", rho, n_params)
    return cls(v0, w0, r0, profile), cls(v1, w1, r1, profile)


@typed_dataclass
class Sum:
  """k1(pair) + k2(pair); both kernels read the same pair."""

  k1: Any
  k2: Any

  def __call__(self, pair: Any) -> jax.Array:
    return self.k1(pair) + self.k2(pair)

  def diag(self, pair: Any) -> jax.Array:
    return self.k1.diag(pair) + self.k2.diag(pair)


@typed_dataclass
class Product:
  """k1(pair) * k2(pair); both kernels read the same pair."""

  k1: Any
  k2: Any

  def __call__(self, pair: Any) -> jax.Array:
    return self.k1(pair) * self.k2(pair)

  def diag(self, pair: Any) -> jax.Array:
    return self.k1.diag(pair) * self.k2.diag(pair)
