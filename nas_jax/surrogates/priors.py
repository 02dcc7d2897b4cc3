"""Every GP prior box of nas_jax in one place, and the box a featurizer's pair type gets by default.

Boxes are log-uniform over hyper-parameters and relative to Var(Y) (targets are normalised).
"""

from __future__ import annotations

from types import MappingProxyType

import jax.numpy as jnp

from nas_jax.features.pairwise import ArcPair, DistancePair, OtmannPair, VectorPair
from nas_jax.surrogates import gp_fit, kernels

__all__ = ["NASBOT_KERNELS", "VECTOR_KERNELS", "nasbot_box", "arc_box", "vector_box", "default_box"]

NASBOT_KERNELS = ("combined", "d", "d_bar")  # the kernel ablation of NASBOT App. C.4 (Fig. 7a)
VECTOR_KERNELS = MappingProxyType(
  {
    "exp_squared": kernels.ExpSquared,
    "matern52": kernels.Matern52,
    "matern12": kernels.Matern12,
    "hamming": kernels.Hamming,
  }
)
_OFF = 1e-9  # the scale a switched-off kernel term is held at: exp(-20.7), never exactly 0
# Our boxes for the arc kernel (the paper does not say how it sets them): omega and the
# length-scales span the same inverse scales of [0, 1] inputs; the noise may reach Var(Y), since
# network performance is noisy.
_VARIANCE = (0.1, 10.0)
_OMEGA = (0.05, 20.0)
_RHO = (0.01, 1.0)
_LENGTH_SCALE = (0.05, 20.0)
_NOISE = (1e-3, 1.0)


def nasbot_box(n_nu: int, kernel: str = "combined", *, p: float = 1.0, p_bar: float = 2.0) -> gp_fit.Box:
  """The OTMANN kernel's box of the authors' code (github.com/kirthevasank/nasbot); `kernel="d"` or `"d_bar"`
  holds the other term's scale fixed at ~0 (the Fig. 7a ablation)."""
  if kernel not in NASBOT_KERNELS:
    raise ValueError(f"kernel: {kernel!r} is unknown; allowed: {', '.join(NASBOT_KERNELS)}")
  lower, upper = kernels.NasbotKernel.bounds(n_nu, p=p, p_bar=p_bar)
  off = jnp.log(_OFF)
  if kernel == "d":
    lower, upper = lower.replace(log_alpha_bar=off), upper.replace(log_alpha_bar=off)
  elif kernel == "d_bar":
    lower, upper = lower.replace(log_alpha=off), upper.replace(log_alpha=off)
  return gp_fit.Box.create(lower, upper)


def arc_box(n_params: int) -> gp_fit.Box:
  """An ArcKernel GP over n_params conditional parameters (omega, rho, variance, noise)."""
  return gp_fit.Box.create(
    *kernels.ArcKernel.bounds(n_params, variance=_VARIANCE, omega=_OMEGA, rho=_RHO), noise=_NOISE
  )


def vector_box(dim: int | None, kernel: str = "exp_squared", *, ard: bool = True) -> gp_fit.Box:
  """A stationary kernel on vectors (ARD over dim features unless ard=False or dim is None)."""
  if kernel not in VECTOR_KERNELS:
    raise ValueError(f"kernel: {kernel!r} is unknown for vectors; allowed: {', '.join(VECTOR_KERNELS)}")
  cls = VECTOR_KERNELS[kernel]
  length = (0.1, 100.0) if kernel == "hamming" else _LENGTH_SCALE
  return gp_fit.Box.create(*cls.bounds(dim if ard else None, variance=_VARIANCE, length_scale=length), noise=_NOISE)


def default_box(pair_type: type, dim: int | None, kernel: str | None = None, **options) -> gp_fit.Box:
  """The box a fitted GP gets over a featurizer's pairs: the OTMANN kernel (options of
  `nasbot_box`), the arc kernel, an isotropic Matern-1/2 on distances, or a vector kernel."""
  if pair_type is OtmannPair:
    return nasbot_box(dim, kernel or "combined", **options)
  if pair_type is ArcPair:
    return arc_box(dim)
  if pair_type is DistancePair:
    return vector_box(None, kernel or "matern12")
  if pair_type is VectorPair:
    return vector_box(dim, kernel or "exp_squared", **options)
  raise ValueError(f"default_box: no GP prior for {pair_type.__name__} inputs")
