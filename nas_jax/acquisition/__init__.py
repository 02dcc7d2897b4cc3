"""Acquisition functions over a Predictive, and the optimisers that maximise them over a space."""

from nas_jax.acquisition.functions import (
  ei,
  gp_ucb_beta,
  independent_thompson,
  lcb,
  pi,
  thompson,
  ucb,
  uniform,
  with_pending,
)

__all__ = [
  "ei",
  "gp_ucb_beta",
  "independent_thompson",
  "lcb",
  "pi",
  "thompson",
  "ucb",
  "uniform",
  "with_pending",
]
