"""Config names to constructors: one table per kind of part, the spaces and the strategies.

This is the one place where a name from a config becomes a value; nothing below `wiring/` looks
a part up by name. `SPACES` maps `config.space.name` to a space constructor, `STRATEGIES` maps
`config.strategy` to a factory `(config, space, task) -> Strategy` that reads
`config.strategy_config`, and the part tables (`FEATURIZERS`, `SURROGATES`, `ACQUISITIONS`,
`OPTIMISERS`) serve the generic `bo` strategy, whose config names each part and its options:

    strategy="bo", strategy_config={featurizer="path", surrogate="gp", surrogate_config={...},
      acquisition="ei", optimizer="enumerate", initial="random", n_init=10}

A preset's factory passes its options to the preset and turns the few that name a part (e.g.
NASBOT's acquisition "random", Auto-Keras' kernel "otmann") into that part.
"""

from __future__ import annotations

import functools
import math
from types import MappingProxyType
from typing import Any, Callable

from nas_jax.acquisition import functions as acq
from nas_jax.acquisition import optimizers
from nas_jax.acquisition.conditional_search import per_depth
from nas_jax.features import encodings
from nas_jax.features import featurizers as feat
from nas_jax.features.otmann import KERNEL_NU_STR
from nas_jax.search.strategies import baselines, local_search, objectives, presets, regularized_evolution, schedulers
from nas_jax.acquisition.prescreen import prescreen
from nas_jax.features.proxy_feature import with_proxy_feature
from nas_jax.search.strategies.bo import bo
from nas_jax.search.strategies.proxy_search import with_proxy
from nas_jax.search.strategies.initial import pool, random_design
from nas_jax.search.strategy import Strategy
from nas_jax.spaces.cells import nb101_space, nb201_space
from nas_jax.spaces.conditional import conditional_space
from nas_jax.spaces.morph_space import morph_space
from nas_jax.spaces.space import Space, layer_graph_space
from nas_jax.spaces.proxy_scores import prescreened
from nas_jax.surrogates import gp_lbfgs, point_model
from nas_jax.surrogates.proxy_prior import prior_mean
from nas_jax.wiring.proxy_sources import proxy_meter

__all__ = [
  "SPACES",
  "FEATURIZERS",
  "SURROGATES",
  "ACQUISITIONS",
  "OPTIMISERS",
  "FITTERS",
  "STRATEGIES",
  "SCHEDULERS",
  "make_strategy",
  "build",
]

#: Search spaces by config name: config.space.name -> constructor(**config.space fields but name).
SPACES: dict[str, Callable[..., Space]] = {
  "layer_graph": layer_graph_space,
  "nb201": nb201_space,
  "nb101": nb101_space,
  "autokeras": morph_space,
  "conditional": conditional_space,
}

#: Featurizer constructors by their config name (`strategy_config.featurizer`).
FEATURIZERS: MappingProxyType[str, Callable] = MappingProxyType(
  {
    "otmann": feat.otmann,
    "edit": feat.edit,
    **{name: functools.partial(feat.encoding, name) for name in encodings.ENCODINGS},
    "arc": feat.arc,
    "poor_man": feat.poor_man,
  }
)
#: Surrogate constructors by their config name (`strategy_config.surrogate`).
SURROGATES: MappingProxyType[str, Callable] = MappingProxyType(
  {
    "gp": point_model.gp,
    "gp_fixed": point_model.gp_fixed,
    "ensemble": point_model.ensemble,
  }
)
#: Acquisition constructors by their config name (`strategy_config.acquisition`).
ACQUISITIONS: MappingProxyType[str, Callable] = MappingProxyType(
  {
    "ei": acq.ei,
    "pi": acq.pi,
    "ucb": acq.ucb,
    "ts": acq.thompson,
    "its": acq.independent_thompson,
    "random": acq.uniform,
  }
)
#: Acquisition optimiser constructors by their config name (`strategy_config.optimizer`).
OPTIMISERS: MappingProxyType[str, Callable] = MappingProxyType(
  {
    "ea": optimizers.ea,
    "mutation": optimizers.mutation_search,
    "random": optimizers.random_search,
    "tree": optimizers.tree,
    "enumerate": optimizers.enumeration,
    "per_depth": per_depth,
  }
)
#: GP hyper-parameter fits by config name (`fitter`, options in `fitter_config`) of NASBOT's
#: strategy_config or a bo GP's surrogate_config: "adam" is the GP's own multi-start Adam fit.
FITTERS: MappingProxyType[str, Callable] = MappingProxyType({"adam": lambda: None, "lbfgs": gp_lbfgs.lbfgs})
_ACQUISITION_OPTIONS = ("kappa", "xi", "sigma_scale")  # what acquisition_config may set, for any acquisition


def build(table: dict, name: Any, where: str, options: Any = None) -> Any:
  """`table[name](**options)`; a ValueError naming `where`, the value and what is allowed."""
  if not isinstance(name, str) or name not in table:
    raise ValueError(f"{where}: {name!r} is unknown; choose one of: {', '.join(table)}")
  try:
    return table[name](**_dict(options))
  except TypeError as e:  # an option the constructor does not take
    raise ValueError(f"{where} {name!r}: {e}") from None


def _dict(options: Any) -> dict:
  if options is None:
    return {}
  out = options.to_dict() if hasattr(options, "to_dict") else options
  if not isinstance(out, dict):
    raise ValueError(f"options {options!r}: expected a dict of options")
  return dict(out)


def _with_fitter(options: dict, where: str) -> dict:
  """options with its `fitter` name and `fitter_config` turned into the fitter value."""
  if "fitter" in options or "fitter_config" in options:
    options["fitter"] = build(FITTERS, options.pop("fitter", "adam"), where, options.pop("fitter_config", None))
  return options


def _acquisition(name: Any, options: dict, where: str) -> Any:
  """The acquisition `name` with those of `options` (kappa, xi, sigma_scale) that it takes; every
  option must be a finite number >= 0, whichever acquisition reads it."""
  unknown = sorted(set(options) - set(_ACQUISITION_OPTIONS))
  if unknown:
    raise ValueError(f"{where}: options {unknown} are unknown; allowed: {', '.join(_ACQUISITION_OPTIONS)}")
  for k, v in options.items():
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
      raise ValueError(f"{where}.{k}={v!r}; expected a finite number >= 0")
  taken = {"ei": ("xi", "sigma_scale"), "pi": ("xi", "sigma_scale"), "ucb": ("kappa",)}.get(name, ())
  return build(ACQUISITIONS, name, where, {k: v for k, v in options.items() if k in taken})


def _objective(o: dict, task: Any) -> Any:
  """The objective of a strategy config: the task's value, or ParEGO / EHVI over its objectives."""
  method, samples, ref = o.pop("multi_objective", "parego"), o.pop("ehvi_samples", 64), tuple(o.pop("ehvi_ref", ()))
  if method not in ("parego", "ehvi"):
    raise ValueError(f"strategy_config.multi_objective={method!r}; allowed: parego, ehvi")
  if not task.objectives:
    if method != "parego" or ref:
      raise ValueError(f"strategy_config.multi_objective={method!r} needs other objectives (config.objectives)")
    return objectives.single()
  if method == "parego":
    return objectives.parego(task.objectives)
  return objectives.ehvi(task.objectives, goal=task.goal, n_samples=samples, ref=ref)


def _options(config: Any) -> dict:
  return _dict(config.get("strategy_config", None) if hasattr(config, "get") else None)


def _call(strategy: Callable, space: Any, task: Any, o: dict, **parts) -> Strategy:
  """`strategy(space, task.goal, **parts, **o)`; an option it does not take is a ValueError that
  names the options given."""
  try:
    return strategy(space, task.goal, **parts, **o)
  except TypeError as e:
    given = ", ".join(f"{k}={v!r}" for k, v in sorted(o.items()))
    raise ValueError(f"config.strategy_config ({given}): {e}") from None


def _preset(preset: Callable, o: dict, space: Any, task: Any, **parts) -> Strategy:
  return _call(preset, space, task, o, objective=_objective(o, task), **parts)


def _bo(config, space, task, proxy: tuple = (None, {})) -> Strategy:
  o = _options(config)
  objective = _objective(o, task)
  initial, n_init, min_ok = o.pop("initial", "pool"), o.pop("n_init", 10), o.pop("min_ok", 1)
  designs = {"pool": lambda: pool(min_ok=min_ok), "random": lambda: random_design(n=n_init, min_ok=min_ok)}
  parts = dict(
    featurizer=build(
      FEATURIZERS, o.pop("featurizer", "otmann"), "strategy_config.featurizer", o.pop("featurizer_config", None)
    ),
    surrogate=build(
      SURROGATES,
      o.pop("surrogate", "gp"),
      "strategy_config.surrogate",
      _with_fitter(_dict(o.pop("surrogate_config", None)), "strategy_config.surrogate_config.fitter"),
    ),
    acquisition=_acquisition(
      o.pop("acquisition", "ei"), _dict(o.pop("acquisition_config", None)), "strategy_config.acquisition"
    ),
    optimiser=build(OPTIMISERS, o.pop("optimizer", "ea"), "strategy_config.optimizer", o.pop("optimizer_config", None)),
    initial=build(designs, initial, "strategy_config.initial"),
  )
  meter, p = proxy
  if p.get("feature"):
    parts["featurizer"] = with_proxy_feature(parts["featurizer"], meter)
  if p.get("prior_mean"):
    parts["surrogate"] = prior_mean(parts["surrogate"], meter)
  if p.get("prescreen"):
    parts["optimiser"] = prescreen(parts["optimiser"], meter, one_in=p["prescreen"])
  return _call(bo, space, task, o, objective=objective, **parts)


def _nasbot(config, space, task, acquisition: str | None = None) -> Strategy:
  """NASBOT; `acquisition` overrides the config's (RAND: "random")."""
  o = _with_fitter(_options(config), "strategy_config.fitter")
  name = o.pop("acquisition", "ei")
  chosen = build(ACQUISITIONS, acquisition or name, "strategy_config.acquisition")
  return _preset(presets.nasbot, o, space, task, acquisition=chosen)


def _bananas(config, space, task, proxy: tuple = (None, {})) -> Strategy:
  o = _options(config)
  chosen = presets.BANANAS_PRESETS.get(o.get("preset", "code"), presets.BANANAS_PRESETS["code"])
  name, kappa, sigma = o.pop("acquisition", None), o.pop("ucb_beta", None), o.pop("ei_sigma_scale", None)
  if name is not None or kappa is not None or sigma is not None:
    scales = dict(
      kappa=0.5 if kappa is None else kappa, sigma_scale=chosen["ei_sigma_scale"] if sigma is None else sigma
    )
    o["acquisition"] = _acquisition(name or chosen["acquisition"].name, scales, "strategy_config.acquisition")
  candidates, n_random = o.pop("candidates", "mutation"), o.pop("n_random_candidates", None)
  if candidates not in ("mutation", "random"):
    raise ValueError(f"strategy_config.candidates: {candidates!r} is unknown; choose one of: mutation, random")
  if candidates == "random":
    o["optimiser"] = optimizers.random_search(n_candidates=n_random or chosen["n_random_candidates"])
  meter, p = proxy
  if p.get("prior_mean"):
    raise ValueError(
      "config.proxy.prior_mean: bananas models with an ensemble, which has no prior mean; use proxy.feature"
    )
  if p.get("feature"):
    o["featurizer"] = with_proxy_feature(feat.encoding(o.pop("encoding", None) or chosen["encoding"]), meter)
  if p.get("prescreen"):
    counts = {k: o.pop(k) for k in ("n_parents", "n_candidates", "attempts_per_parent") if k in o}
    o["optimiser"] = prescreen(o.get("optimiser") or optimizers.mutation_search(**counts), meter, one_in=p["prescreen"])
  return _preset(presets.bananas, o, space, task)


def _autokeras(config, space, task) -> Strategy:
  """Auto-Keras; kernel "otmann" and optimizer "ea" are the ablations with NASBOT's GP and EA."""
  o = _options(config)
  kernel, optimizer, n_ea = o.pop("kernel", "edit"), o.pop("optimizer", "tree"), o.pop("n_ea", 200)
  parts = {}
  if kernel == "otmann":
    parts.update(featurizer=feat.otmann(nu_str=KERNEL_NU_STR), surrogate=point_model.gp(n_starts=8, fit_steps=100))
  elif kernel != "edit":
    raise ValueError(f"strategy_config.kernel: {kernel!r} is unknown; choose one of: edit, otmann")
  if optimizer == "ea":
    parts["optimiser"] = optimizers.ea(n_ea=n_ea, pool=False)
  elif optimizer != "tree":
    raise ValueError(f"strategy_config.optimizer: {optimizer!r} is unknown; choose one of: tree, ea")
  return _preset(presets.autokeras, o, space, task, **parts)


def _conditional_bo(config, space, task) -> Strategy:
  o = _options(config)
  kernel, name, beta = o.pop("kernel", "arc"), o.pop("acquisition", "ei"), o.pop("beta", 2.0)
  featurizer = build(
    {"arc": feat.arc, "poor_man": feat.poor_man, "otmann": feat.otmann}, kernel, "strategy_config.kernel"
  )
  optimizer = o.pop("optimizer", None) or ("mutation" if kernel == "otmann" else "gradient")
  if optimizer not in ("gradient", "mutation"):
    raise ValueError(f"strategy_config.optimizer: {optimizer!r} is unknown; choose one of: gradient, mutation")
  if not (isinstance(beta, (int, float)) and not isinstance(beta, bool) and beta >= 0):
    raise ValueError(f"strategy_config.beta={beta!r}; expected a number >= 0")
  scorers = {"ei": lambda: acq.ei(), "ucb": lambda: acq.ucb(kappa=math.sqrt(beta))}
  acquisition = build(scorers, name, "strategy_config.acquisition")
  o["gradient"] = optimizer == "gradient"
  return _preset(presets.conditional_bo, o, space, task, featurizer=featurizer, acquisition=acquisition)


def _with_goal(strategy: Callable, takes_objectives: bool = True) -> Callable:
  """The factory of a strategy that takes (space, goal, **strategy_config) and the task's objectives."""

  def factory(config, space, task) -> Strategy:
    objectives = {"objectives": task.objectives} if takes_objectives else {}
    return _call(strategy, space, task, _options(config), **objectives)

  return factory


#: Search strategies by config name: config.strategy -> factory(config, space, task) -> Strategy.
STRATEGIES: dict[str, Callable[..., Strategy]] = {
  "random": _with_goal(baselines.random_search, takes_objectives=False),
  "ea": _with_goal(baselines.evolution),
  "local_search": _with_goal(local_search.local_search),
  "regularized_evolution": _with_goal(regularized_evolution.regularized_evolution),
  "bo": _bo,
  "nasbot": _nasbot,
  "rand": functools.partial(_nasbot, acquisition="random"),
  "bananas": _bananas,
  "gp_bo": lambda config, space, task: _preset(presets.gp_bo, _options(config), space, task),
  "autokeras": _autokeras,
  "conditional_bo": _conditional_bo,
}


#: Multi-fidelity schedulers by config name: config.scheduler -> constructor(sampler, space, goal,
#: fidelities, **config.scheduler_config).
SCHEDULERS: MappingProxyType[str, Callable[..., Strategy]] = MappingProxyType(
  {
    "sh": schedulers.successive_halving,
    "hyperband": schedulers.hyperband,
    "asha": schedulers.asha,
  }
)


# How a strategy takes a proxy's parts (`config.proxy`) besides the warm-up, which any strategy
# takes: "model" factories are called with the proxy (prescreened optimiser, feature, prior
# mean); "moves" strategies run on the prescreened space.
_PROXY_MODELS = MappingProxyType({"bo": _bo, "bananas": _bananas})
_PROXY_MOVES = ("regularized_evolution", "local_search", "ea")


def _proxy_strategy(name: str, config: Any, space: Any, task: Any) -> Strategy:
  """The strategy `name` with the parts of `config.proxy` (`wiring.proxy_sources`)."""
  meter, p = proxy_meter(config, space)
  if meter is None:
    return STRATEGIES[name](config, space, task)
  if name in _PROXY_MODELS:
    strategy = _PROXY_MODELS[name](config, space, task, (meter, p))
  else:
    wanted = [f for f in ("feature", "prior_mean") if p[f]] + (
      ["prescreen"] if p["prescreen"] and name not in _PROXY_MOVES else []
    )
    if wanted:
      takes = ", ".join([*_PROXY_MODELS, *_PROXY_MOVES]) if "prescreen" in wanted else ", ".join(_PROXY_MODELS)
      raise ValueError(f"config.proxy.{wanted[0]}: strategy {name!r} does not take it; strategies that do: {takes}")
    moved = prescreened(space, meter, one_in=p["prescreen"]) if p["prescreen"] else space
    strategy = STRATEGIES[name](config, moved, task)
  return with_proxy(strategy, space, meter, n=p["warmup_n"], k=p["warmup_k"])


def make_strategy(name: str, config: Any, space: Any, task: Any) -> Strategy:
  """Builds the strategy `name` of `STRATEGIES`, with a proxy's parts when `config.proxy` uses
  one; ValueError listing the known names otherwise."""
  if name not in STRATEGIES:
    raise ValueError(f"strategy: {name!r} is unknown; choose one of: {', '.join(sorted(STRATEGIES))}")
  return _proxy_strategy(name, config, space, task)
