"""Acquisition functions over a Predictive, and (later) optimisers of them."""

from nas_jax.acquisition.functions import (
  ei,
  gp_ucb_beta,
  hei,
  independent_thompson,
  lcb,
  pi,
  thompson,
  ucb,
  with_pending,
)

__all__ = [
  "ei",
  "gp_ucb_beta",
  "hei",
  "independent_thompson",
  "lcb",
  "pi",
  "thompson",
  "ucb",
  "with_pending",
]
