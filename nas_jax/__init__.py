"""nas_jax: neural architecture search by Bayesian optimisation, in JAX.

This module only re-exports the public API; see the README for a tour.
"""
from nas_jax.arch.architecture import Architecture, pad, stack, unstack
from nas_jax.arch.graph import (
    MASS_PARAMS,
    MassParams,
    layer_masses,
    path_lengths,
    topological_order,
    total_mass,
)
from nas_jax.arch.json_io import Limits
from nas_jax.arch.labels import vocabulary
from nas_jax.spaces.pools import initial_pool
from nas_jax.spaces.random_arch import random_architecture, random_json

__all__ = [
    "Architecture",
    "Limits",
    "MASS_PARAMS",
    "MassParams",
    "initial_pool",
    "layer_masses",
    "pad",
    "path_lengths",
    "random_architecture",
    "random_json",
    "stack",
    "topological_order",
    "total_mass",
    "unstack",
    "vocabulary",
]
