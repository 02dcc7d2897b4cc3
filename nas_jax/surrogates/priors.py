"""GP kernels as values, each with the prior box its hyper-parameters are fitted in, and the kernel
a featurizer's pair type gets by default.

    gp(kernel=otmann_kernel(d_bar=False))        # NASBOT's d-only ablation (App. C.4, Fig. 7a)
    gp(kernel=matern52(ard=False) + hamming())   # a sum of kernels, each term in its own box

Boxes are log-uniform over hyper-parameters and relative to Var(Y) (targets are normalised). A
config names a kernel ("combined", "d", "exp_squared", ...): `nas_jax.wiring.names` makes the value.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax.numpy as jnp

from nas_jax.features.pairwise import ArcPair, DistancePair, OtmannPair, VectorPair
from nas_jax.surrogates import gp_fit, kernels

__all__ = [
  "KernelPrior",
  "otmann_kernel",
  "arc_kernel",
  "exp_squared",
  "matern52",
  "matern12",
  "hamming",
  "default_kernel",
  "nasbot_box",
  "arc_box",
]

_OFF = 1e-9  # the scale a switched-off kernel term is held at: exp(-20.7), never exactly 0
_NASBOT_NOISE = (0.005, 0.2)  # the authors' code's noise range
# Our boxes for the arc kernel (the paper does not say how it sets them): omega and the
# length-scales span the same inverse scales of [0, 1] inputs; the noise may reach Var(Y), since
# network performance is noisy.
_VARIANCE = (0.1, 10.0)
_OMEGA = (0.05, 20.0)
_RHO = (0.01, 1.0)
_LENGTH_SCALE = (0.05, 20.0)
_NOISE = (1e-3, 1.0)


@dataclasses.dataclass(frozen=True)
class KernelPrior:
  """A GP kernel and its prior box: `bounds(pair_type, dim)` gives the (lower, upper) kernels over
  pairs of `reads` (dim: the featurizer's feature count, or n_nu for OTMANN). `binary`: it reads 0/1
  features only. `a + b` and `a * b` are `kernels.Sum` / `kernels.Product` of the two, each term in
  its own box, with the left term's noise range."""

  name: str
  reads: tuple[type, ...]
  bounds: Callable[[type, Any], tuple]
  noise: tuple[float, float] = _NOISE
  binary: bool = False

  def box(self, pair_type: type, dim: Any) -> gp_fit.Box:
    """The `gp_fit.Box` over pairs of `pair_type`; ValueError if this kernel does not read them."""
    if pair_type not in self.reads:
      reads = ", ".join(t.__name__ for t in self.reads)
      raise ValueError(f"kernel {self.name} reads {reads}; these features give {pair_type.__name__}")
    return gp_fit.Box.create(*self.bounds(pair_type, dim), noise=self.noise)

  def __add__(self, other: Any) -> "KernelPrior":
    return _combine(self, other, kernels.Sum, "+")

  def __mul__(self, other: Any) -> "KernelPrior":
    return _combine(self, other, kernels.Product, "*")


def _combine(a: KernelPrior, b: Any, op: type, sign: str) -> Any:
  if not isinstance(b, KernelPrior):
    return NotImplemented
  reads = tuple(t for t in a.reads if t in b.reads)
  if not reads:
    raise ValueError(f"kernel {a.name} {sign} {b.name}: the terms read no common pair type")

  def bounds(pair_type: type, dim: Any) -> tuple:
    (lo_a, hi_a), (lo_b, hi_b) = a.bounds(pair_type, dim), b.bounds(pair_type, dim)
    return op(lo_a, lo_b), op(hi_a, hi_b)

  return KernelPrior(f"({a.name} {sign} {b.name})", reads, bounds, a.noise, a.binary or b.binary)


def otmann_kernel(*, d: bool = True, d_bar: bool = True, p: float = 1.0, p_bar: float = 2.0) -> KernelPrior:
  """NASBOT's kernel, eq. (7), on OTMANN pairs, in the box of the authors' code
  (github.com/kirthevasank/nasbot); d=False or d_bar=False holds that term's scale fixed at ~0
  (the App. C.4 ablation, Fig. 7a); p, p_bar: the powers (Fig. 7c). ValueError naming a bad option."""
  if not (d or d_bar):
    raise ValueError("otmann_kernel: d=False and d_bar=False leave no term; keep one of them")
  kernels.NasbotKernel.bounds(1, p=p, p_bar=p_bar)  # checks the powers now

  def bounds(pair_type: type, n_nu: int) -> tuple:
    lower, upper = kernels.NasbotKernel.bounds(n_nu, p=p, p_bar=p_bar)
    off = jnp.log(_OFF)
    if not d_bar:
      lower, upper = lower.replace(log_alpha_bar=off), upper.replace(log_alpha_bar=off)
    if not d:
      lower, upper = lower.replace(log_alpha=off), upper.replace(log_alpha=off)
    return lower, upper

  terms = "d, d_bar" if d and d_bar else "d" if d else "d_bar"
  return KernelPrior(f"otmann_kernel({terms}, p={p}, p_bar={p_bar})", (OtmannPair,), bounds, _NASBOT_NOISE)


def arc_kernel() -> KernelPrior:
  """The arc kernel (`kernels.ArcKernel`) over a conditional space's parameters: omega, rho, variance."""
  bounds = lambda pair_type, n: kernels.ArcKernel.bounds(n, variance=_VARIANCE, omega=_OMEGA, rho=_RHO)
  return KernelPrior("arc_kernel()", (ArcPair,), bounds)


def _vector(cls: type, name: str, ard: bool, length: tuple, reads: tuple, binary: bool = False) -> KernelPrior:
  """A stationary kernel on vectors (ARD over their features unless ard=False) or, isotropic, on distances."""

  def bounds(pair_type: type, dim: Any) -> tuple:
    per_feature = dim if ard and pair_type is VectorPair else None
    return cls.bounds(per_feature, variance=_VARIANCE, length_scale=length)

  return KernelPrior(f"{name}(ard={ard})", reads, bounds, binary=binary)


def exp_squared(*, ard: bool = True) -> KernelPrior:
  """`kernels.ExpSquared` on vectors (ARD unless ard=False) or distances."""
  return _vector(kernels.ExpSquared, "exp_squared", ard, _LENGTH_SCALE, (VectorPair, DistancePair))


def matern52(*, ard: bool = True) -> KernelPrior:
  """`kernels.Matern52` on vectors (ARD unless ard=False) or distances."""
  return _vector(kernels.Matern52, "matern52", ard, _LENGTH_SCALE, (VectorPair, DistancePair))


def matern12(*, ard: bool = True) -> KernelPrior:
  """`kernels.Matern12` on vectors (ARD unless ard=False) or distances."""
  return _vector(kernels.Matern12, "matern12", ard, _LENGTH_SCALE, (VectorPair, DistancePair))


def hamming(*, ard: bool = True) -> KernelPrior:
  """`kernels.Hamming` on 0/1 vectors (ARD unless ard=False)."""
  return _vector(kernels.Hamming, "hamming", ard, (0.1, 100.0), (VectorPair,), binary=True)


def default_kernel(pair_type: type, **options) -> KernelPrior:
  """The kernel a fitted GP gets over a featurizer's pairs: the OTMANN kernel (options of
  `otmann_kernel`), the arc kernel, an isotropic Matern-1/2 on distances, or an ARD exp-squared
  on vectors (options of `exp_squared`). TypeError on an option that kernel does not take."""
  if pair_type is OtmannPair:
    return otmann_kernel(**options)
  if pair_type is ArcPair:
    return arc_kernel(**options)
  if pair_type is DistancePair:
    return matern12(**options)
  if pair_type is VectorPair:
    return exp_squared(**options)
  raise ValueError(f"default_kernel: no GP prior for {pair_type.__name__} inputs")


def nasbot_box(n_nu: int, *, p: float = 1.0, p_bar: float = 2.0) -> gp_fit.Box:
  """The box of NASBOT's kernel over n_nu structural weights (`otmann_kernel`)."""
  return otmann_kernel(p=p, p_bar=p_bar).box(OtmannPair, n_nu)


def arc_box(n_params: int) -> gp_fit.Box:
  """An ArcKernel GP over n_params conditional parameters (omega, rho, variance, noise)."""
  return arc_kernel().box(ArcPair, n_params)
