"""nas_jax: neural architecture search by Bayesian optimisation, in JAX.

This module only re-exports the public API, in layer order; see the README for a tour.
"""

from nas_jax.arch.architecture import Architecture, pad, stack, unstack
from nas_jax.arch.cell import Cell, cell_to_architecture
from nas_jax.arch.cell_graphs import cell_layer_graph
from nas_jax.arch.graph import (
  MASS_PARAMS,
  MassParams,
  layer_masses,
  path_lengths,
  topological_order,
  total_mass,
)
from nas_jax.arch.host_graph import canonical_key
from nas_jax.arch.json_io import Limits
from nas_jax.arch.labels import vocabulary
from nas_jax.spaces.cells import nb101_space, nb201_space
from nas_jax.spaces.modifiers import (
  MODIFIERS,
  STRUCTURE_MODIFIERS,
  UNIT_MODIFIERS,
  compound_mutation,
)
from nas_jax.spaces.pools import initial_pool
from nas_jax.spaces.random_arch import random_architecture, random_json
from nas_jax.spaces.space import Space, layer_graph_space
from nas_jax.spaces.constrained import constrained
from nas_jax.spaces.proxy_scores import ProxyMeter, ProxyScores, prescreened
from nas_jax.features.bourgain import (
  BourgainAnchors,
  anchors_from_sets,
  bourgain_anchors,
  bourgain_embed,
)
from nas_jax.features.edit_distance import (
  Descriptor,
  EditDistances,
  descriptor,
  edit_distance_terms,
  edit_distances,
  pad_descriptor,
  stack_descriptors,
)
from nas_jax.features.encodings import ENCODINGS, encode
from nas_jax.features.featurizers import arc, edit, encoding, otmann, poor_man
from nas_jax.features.proxy_feature import with_proxy_feature
from nas_jax.features.otmann import KERNEL_NU_STR, OtmannDistances, otmann_distances
from nas_jax.features.otmann_solver import Solver, bound, exact, greedy, sinkhorn
from nas_jax.features.pairwise import arc_pair, hamming, otmann_pair, sq_euclidean, vector_pair
from nas_jax.surrogates.ensemble import ensemble_surrogate
from nas_jax.surrogates.gp_fit import Box, fit_map, sample_hypers
from nas_jax.surrogates.gp_lbfgs import Lbfgs, fit_lbfgs, lbfgs
from nas_jax.surrogates.kernels import (
  ArcKernel,
  ExpSquared,
  Hamming,
  Matern12,
  Matern52,
  NasbotKernel,
  Product,
  Sum,
)
from nas_jax.surrogates.point_model import ensemble, gp, gp_fixed
from nas_jax.surrogates.priors import KernelPrior, arc_kernel, otmann_kernel
from nas_jax.surrogates.proxy_prior import prior_mean
from nas_jax.surrogates.surrogate import Predictive, Surrogate, gp_surrogate, hallucinate
from nas_jax.acquisition.evolution import ea_maximize, n_ea_schedule, n_mut_schedule
from nas_jax.acquisition.tree_search import TreeResult, tree_maximize
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
from nas_jax.acquisition.acq_optimiser import feasible_first
from nas_jax.acquisition.prescreen import prescreen
from nas_jax.acquisition.conditional_search import per_depth
from nas_jax.acquisition.optimizers import ea, enumeration, mutation_search, random_search, tree
from nas_jax.acquisition.pareto import crowding_distance, hypervolume, non_dominated, pareto_ranks
from nas_jax.search.executors import InlineExecutor
from nas_jax.search.journal import replay as replay_journal
from nas_jax.search.loop import run as run_search
from nas_jax.search.process_executor import ProcessExecutor
from nas_jax.search.results import pareto_front
from nas_jax.search.ray_executor import RayExecutor
from nas_jax.search.simulated_executor import SimulatedExecutor
from nas_jax.search.state import Observation, Status, to_score
from nas_jax.search.strategy import AtFidelity, Strategy
from nas_jax.search.strategies.schedulers import asha, hyperband, successive_halving
from nas_jax.search.strategies.bo import bo
from nas_jax.search.strategies.initial import pool, random_design
from nas_jax.search.strategies.objectives import ehvi, parego, single
from nas_jax.search.strategies.presets import autokeras, bananas, conditional_bo, gp_bo, nasbot, rand
from nas_jax.search.strategies.proxy_search import with_proxy
from nas_jax.search.task import Task, TaskResult
from nas_jax.training.saved_model import load_model
from nas_jax.wiring.config import check_search_config, search_from_config
from nas_jax.wiring.parts import SCHEDULERS, SPACES, STRATEGIES, make_strategy

__all__ = [
  "Architecture",
  "pad",
  "stack",
  "unstack",
  "MASS_PARAMS",
  "MassParams",
  "layer_masses",
  "path_lengths",
  "topological_order",
  "total_mass",
  "Limits",
  "vocabulary",
  "Cell",
  "cell_to_architecture",
  "nb101_space",
  "nb201_space",
  "cell_layer_graph",
  "MODIFIERS",
  "STRUCTURE_MODIFIERS",
  "UNIT_MODIFIERS",
  "compound_mutation",
  "initial_pool",
  "random_architecture",
  "random_json",
  "SPACES",
  "Space",
  "canonical_key",
  "layer_graph_space",
  "constrained",
  "ProxyScores",
  "ProxyMeter",
  "prescreened",
  "BourgainAnchors",
  "anchors_from_sets",
  "bourgain_anchors",
  "bourgain_embed",
  "Descriptor",
  "EditDistances",
  "descriptor",
  "edit_distance_terms",
  "edit_distances",
  "pad_descriptor",
  "stack_descriptors",
  "ENCODINGS",
  "encode",
  "otmann",
  "edit",
  "encoding",
  "arc",
  "poor_man",
  "with_proxy_feature",
  "KERNEL_NU_STR",
  "OtmannDistances",
  "otmann_distances",
  "Solver",
  "exact",
  "sinkhorn",
  "bound",
  "greedy",
  "arc_pair",
  "hamming",
  "otmann_pair",
  "sq_euclidean",
  "vector_pair",
  "ensemble_surrogate",
  "gp",
  "KernelPrior",
  "otmann_kernel",
  "arc_kernel",
  "gp_fixed",
  "ensemble",
  "prior_mean",
  "Box",
  "fit_map",
  "fit_lbfgs",
  "lbfgs",
  "Lbfgs",
  "sample_hypers",
  "ArcKernel",
  "ExpSquared",
  "Hamming",
  "Matern12",
  "Matern52",
  "NasbotKernel",
  "Product",
  "Sum",
  "Predictive",
  "Surrogate",
  "gp_surrogate",
  "hallucinate",
  "ea_maximize",
  "n_ea_schedule",
  "n_mut_schedule",
  "TreeResult",
  "tree_maximize",
  "ei",
  "pi",
  "ucb",
  "lcb",
  "thompson",
  "independent_thompson",
  "uniform",
  "gp_ucb_beta",
  "with_pending",
  "ea",
  "mutation_search",
  "random_search",
  "tree",
  "enumeration",
  "per_depth",
  "feasible_first",
  "prescreen",
  "bo",
  "with_proxy",
  "pool",
  "random_design",
  "single",
  "parego",
  "ehvi",
  "nasbot",
  "rand",
  "bananas",
  "gp_bo",
  "autokeras",
  "conditional_bo",
  "crowding_distance",
  "hypervolume",
  "non_dominated",
  "pareto_ranks",
  "check_search_config",
  "search_from_config",
  "InlineExecutor",
  "ProcessExecutor",
  "RayExecutor",
  "SimulatedExecutor",
  "replay_journal",
  "run_search",
  "pareto_front",
  "AtFidelity",
  "SCHEDULERS",
  "successive_halving",
  "hyperband",
  "asha",
  "Observation",
  "Status",
  "to_score",
  "STRATEGIES",
  "Strategy",
  "make_strategy",
  "Task",
  "TaskResult",
  "load_model",
]
