"""Surrogate models: kernels, exact GP regression, hyper-parameter fitting, the Surrogate API."""

from nas_jax.surrogates.gp import GPPosterior, Hypers
from nas_jax.surrogates.gp_fit import Box, FitResult, fit_map, sample_hypers
from nas_jax.surrogates.kernels import (
  ArcKernel,
  ExpSquared,
  Hamming,
  Matern12,
  Matern52,
  NasbotKernel,
  Product,
  Sum,
  exp_squared_profile,
  matern12_profile,
  matern52_profile,
)
from nas_jax.surrogates.surrogate import (
  GPState,
  JointInputs,
  Predictive,
  Surrogate,
  gp_surrogate,
  hallucinate,
)

__all__ = [
  "ArcKernel",
  "Box",
  "ExpSquared",
  "FitResult",
  "GPPosterior",
  "GPState",
  "Hamming",
  "Hypers",
  "JointInputs",
  "Matern12",
  "Matern52",
  "NasbotKernel",
  "Predictive",
  "Product",
  "Sum",
  "Surrogate",
  "exp_squared_profile",
  "fit_map",
  "gp_surrogate",
  "hallucinate",
  "matern12_profile",
  "matern52_profile",
  "sample_hypers",
]
