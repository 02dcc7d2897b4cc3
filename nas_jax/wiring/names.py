"""The names a config gives to values that parts take: OTMANN solvers, GP kernels, NASBOT's
modifier subsets and the arc-kernel paper's regression models.

Below `wiring/` these are values (`otmann(solver=sinkhorn(epsilon=1e-2))`,
`gp(kernel=priors.otmann_kernel(d_bar=False))`); a config names them ("sinkhorn", "d") with the
options it has always had, and these tables turn the names into the values, here only.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Any, Callable

from nas_jax.features import featurizers as feat
from nas_jax.features import otmann_solver
from nas_jax.spaces import modifiers
from nas_jax.spaces import space as space_lib
from nas_jax.surrogates import conditional_models as cm
from nas_jax.surrogates import point_model, priors

__all__ = [
  "OTMANN_SOLVERS",
  "GP_KERNELS",
  "CONDITIONAL_MODELS",
  "MODIFIER_SETS",
  "lookup",
  "solver_of",
  "otmann_featurizer",
  "with_solver",
  "gp",
  "conditional_models_of",
  "layer_graph_space",
]

#: OTMANN solvers by config name (`featurizer_config.solver`, `launch/distance.py --solver`).
OTMANN_SOLVERS: MappingProxyType[str, Callable[..., otmann_solver.Solver]] = MappingProxyType(
  {
    "exact": otmann_solver.exact,
    "sinkhorn": otmann_solver.sinkhorn,
    "bound": otmann_solver.bound,
    "greedy": otmann_solver.greedy,
  }
)

#: GP kernels by config name (`surrogate_config.kernel`; its options p, p_bar, ard go to the
#: kernel): NASBOT's kernel and its App. C.4 ablations, and the kernels on vectors.
GP_KERNELS: MappingProxyType[str, Callable[..., priors.KernelPrior]] = MappingProxyType(
  {
    "combined": priors.otmann_kernel,
    "d": functools.partial(priors.otmann_kernel, d_bar=False),
    "d_bar": functools.partial(priors.otmann_kernel, d=False),
    "exp_squared": priors.exp_squared,
    "matern52": priors.matern52,
    "matern12": priors.matern12,
    "hamming": priors.hamming,
  }
)
_KERNEL_OPTIONS = ("p", "p_bar", "ard")
#: NASBOT's modifiers by the names a config gives for the App. C.4 ablation (Fig. 7b): `space.modifiers`.
MODIFIER_SETS: MappingProxyType[str, Any] = MappingProxyType(
  {"all": modifiers.MODIFIERS, "unit": modifiers.UNIT_MODIFIERS, "structure": modifiers.STRUCTURE_MODIFIERS}
)
#: The six models of Swersky et al. 2013 (Table 1) by the paper's names, under which
#: `conditional_experiment.nmse_table` records its rows.
CONDITIONAL_MODELS: MappingProxyType[str, Callable] = MappingProxyType(
  {
    "separate_linear": cm.separate_linear,
    "separate_gp": cm.separate_gp,
    "poor_man_linear": cm.poor_man_linear,
    "poor_man_gp": cm.poor_man_gp,
    "separate_hierarchical_gp": cm.separate_hierarchical_gp,
    "hierarchical_gp": cm.hierarchical_gp,
  }
)


def lookup(table: Any, name: Any, where: str) -> Any:
  """`table[name]`; a ValueError naming `where`, the value and the names allowed."""
  if not isinstance(name, str) or name not in table:
    raise ValueError(f"{where}: {name!r} is unknown; choose one of: {', '.join(table)}")
  return table[name]


def solver_of(name: Any, where: str = "solver") -> otmann_solver.Solver:
  """The solver a config names; a solver value passes through. ValueError naming `where`, the
  name and the known ones."""
  if isinstance(name, otmann_solver.Solver):
    return name
  return lookup(OTMANN_SOLVERS, name, where)()


def with_solver(options: dict, where: str) -> dict:
  """options with its `solver` name (if any) turned into the solver value."""
  if "solver" in options:
    options["solver"] = solver_of(options["solver"], where)
  return options


def otmann_featurizer(**options) -> Any:
  """`featurizers.otmann(**options)` with a config's solver name (`featurizer_config.solver`)."""
  return feat.otmann(**with_solver(options, "strategy_config.featurizer_config.solver"))


def gp(*, kernel: Any = None, **options) -> Any:
  """`point_model.gp(**options)` with a config's kernel name (`surrogate_config.kernel`) turned
  into the kernel value, with the options p, p_bar and ard it takes; without a name, those
  options go to the featurizer's default kernel. ValueError naming an unknown kernel or option."""
  if kernel is None:
    return point_model.gp(**options)
  where = "strategy_config.surrogate_config.kernel"
  make = lookup(GP_KERNELS, kernel, where)
  shape = {k: options.pop(k) for k in _KERNEL_OPTIONS if options.get(k) is not None}
  options = {k: v for k, v in options.items() if k not in _KERNEL_OPTIONS}
  try:
    value = make(**shape)
  except TypeError as e:  # an option this kernel does not take
    raise ValueError(f"{where} {kernel!r}: {e}") from None
  return point_model.gp(kernel=value, **options)


def conditional_models_of(names: Any, argument: str = "models") -> dict:
  """{name: model} of names from `CONDITIONAL_MODELS`; ValueError naming `argument` and the unknown ones."""
  unknown = [n for n in names if not isinstance(n, str) or n not in CONDITIONAL_MODELS]
  if unknown:
    raise ValueError(f"{argument}: {unknown} are not models; expected names from {tuple(CONDITIONAL_MODELS)}")
  return {n: CONDITIONAL_MODELS[n] for n in names}


def layer_graph_space(kind: str, *, modifiers: Any = None, **options) -> Any:
  """`spaces.space.layer_graph_space` with a config's name of a modifier subset
  (`space.modifiers`: "all", "unit", "structure") turned into the subset; ValueError naming an
  unknown one. Names of single modifiers and mappings pass on as they are."""
  if isinstance(modifiers, str):
    modifiers = lookup(MODIFIER_SETS, modifiers, "modifiers")
  return space_lib.layer_graph_space(kind, modifiers=modifiers, **options)
