"""Config names to constructors: one table per kind of part, the spaces and the strategies.

This is the one place where a name from a config becomes a value; nothing below `wiring/` looks
a part up by name. `SPACES` maps `config.space.name` to a space constructor, `STRATEGIES` maps
`config.strategy` to a factory `(config, space, task) -> Strategy` that reads
`config.strategy_config`, and the part tables (`FEATURIZERS`, `SURROGATES`, `ACQUISITIONS`,
`OPTIMISERS`) serve the generic `bo` strategy, whose config names each part and its options:

    strategy="bo", strategy_config={featurizer="path", surrogate="gp", surrogate_config={...},
      acquisition="ei", optimizer="enumerate", initial="random", n_init=10}

A preset's config names parts the same way, each replacing the preset's (`configs/nasbot_nb201.py`
names all of NASBOT's), and its other options, the paper's settings, go to the preset as they are.
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
from nas_jax.spaces.space import Space
from nas_jax.spaces.proxy_scores import prescreened
from nas_jax.surrogates import gp_lbfgs, point_model
from nas_jax.surrogates.proxy_prior import prior_mean
from nas_jax.wiring import names
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
  "layer_graph": names.layer_graph_space,
  "nb201": nb201_space,
  "nb101": nb101_space,
  "autokeras": morph_space,
  "conditional": conditional_space,
}

#: Featurizer constructors by their config name (`strategy_config.featurizer`).
FEATURIZERS: MappingProxyType[str, Callable] = MappingProxyType(
  {
    "otmann": names.otmann_featurizer,
    "edit": feat.edit,
    **{name: functools.partial(feat.encoding, name) for name in encodings.ENCODINGS},
    "arc": feat.arc,
    "poor_man": feat.poor_man,
  }
)
#: Surrogate constructors by their config name (`strategy_config.surrogate`).
SURROGATES: MappingProxyType[str, Callable] = MappingProxyType(
  {
    "gp": names.gp,
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
#: GP hyper-parameter fits by config name (`fitter`, options in `fitter_config`) of a GP's
#: surrogate_config (`bo` and the presets alike): "adam" is the GP's own multi-start Adam fit.
FITTERS: MappingProxyType[str, Callable] = MappingProxyType({"adam": lambda: None, "lbfgs": gp_lbfgs.lbfgs})
_ACQUISITION_OPTIONS = ("kappa", "xi", "sigma_scale")  # what acquisition_config may set, for any acquisition


def build(table: dict, name: Any, where: str, options: Any = None) -> Any:
  """`table[name](**options)`; a ValueError naming `where`, the value and what is allowed."""
  make = names.lookup(table, name, where)
  try:
    return make(**_dict(options))
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


# The parts a `bo` config need not name; a preset makes those its config does not name.
_BO_PARTS = MappingProxyType(
  dict(featurizer="otmann", surrogate="gp", acquisition="ei", optimizer="ea", initial="pool")
)


def _parts(o: dict, named: Any) -> dict:
  """The parts that strategy_config `o` (or `named`) names, each with its `<part>_config`, built
  through the tables; the initial design "random" takes n_init, either takes min_ok."""
  name = lambda part: o.pop(part, named.get(part))
  config = lambda part: _dict(o.pop(f"{part}_config", None))
  parts, where = {}, "strategy_config."
  if (f := name("featurizer")) is not None:
    parts["featurizer"] = build(FEATURIZERS, f, where + "featurizer", config("featurizer"))
  if (f := name("surrogate")) is not None:
    fitter = _with_fitter(config("surrogate"), where + "surrogate_config.fitter")
    parts["surrogate"] = build(SURROGATES, f, where + "surrogate", fitter)
  if (f := name("acquisition")) is not None:
    parts["acquisition"] = _acquisition(f, config("acquisition"), where + "acquisition")
  if (f := name("optimizer")) is not None:
    parts["optimiser"] = build(OPTIMISERS, f, where + "optimizer", config("optimizer"))
  if (f := name("initial")) is not None:
    n_init, min_ok = o.pop("n_init", 10), o.pop("min_ok", 1)
    designs = {"pool": lambda: pool(min_ok=min_ok), "random": lambda: random_design(n=n_init, min_ok=min_ok)}
    parts["initial"] = build(designs, f, where + "initial")
  return parts


def _proxy_parts(parts: dict, proxy: tuple, strategy: str) -> dict:
  """`parts` with a proxy's feature, prior mean and prescreen (`config.proxy`) around them."""
  meter, p = proxy
  wraps = (("feature", "featurizer", with_proxy_feature), ("prior_mean", "surrogate", prior_mean))
  for use, part, wrap in (*wraps, ("prescreen", "optimiser", lambda o, m: prescreen(o, m, one_in=p["prescreen"]))):
    if p.get(use):
      if part not in parts:
        named = "optimizer" if part == "optimiser" else part
        raise ValueError(f"config.proxy.{use}: it wraps {strategy!r}'s {part}; name one in strategy_config.{named}")
      parts[part] = wrap(parts[part], meter)
  return parts


def _with_parts(strategy: Callable, named: Any = MappingProxyType({})) -> Callable:
  """The factory of `bo` or a preset: the parts its config names, built here, its other options
  passed on as they are."""

  def factory(config, space, task, proxy: tuple = (None, {})) -> Strategy:
    o = _options(config)
    objective = _objective(o, task)
    parts = _proxy_parts(_parts(o, named), proxy, strategy.__name__)
    return _call(strategy, space, task, o, objective=objective, **parts)

  return factory


def _bananas(config, space, task, proxy: tuple = (None, {})) -> Strategy:
  """BANANAS; a proxy's feature goes on the preset's encoding, its prescreen around the preset's
  mutation search, where the config names no other featurizer or optimizer."""
  o = _options(config)
  objective, parts = _objective(o, task), _parts(o, {})
  meter, p = proxy
  if p.get("prior_mean"):
    raise ValueError(
      "config.proxy.prior_mean: bananas models with an ensemble, which has no prior mean; use proxy.feature"
    )
  if p.get("feature") and "featurizer" not in parts:
    chosen = presets.BANANAS_PRESETS.get(o.get("preset", "code"), presets.BANANAS_PRESETS["code"])
    parts["featurizer"] = feat.encoding(o.pop("encoding", None) or chosen["encoding"])
  if p.get("prescreen") and "optimiser" not in parts:
    counts = {k: o.pop(k) for k in ("n_parents", "n_candidates", "attempts_per_parent") if k in o}
    parts["optimiser"] = optimizers.mutation_search(**counts)
  return _call(presets.bananas, space, task, o, objective=objective, **_proxy_parts(parts, proxy, "bananas"))


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
  "bo": _with_parts(bo, _BO_PARTS),
  "nasbot": _with_parts(presets.nasbot),
  "rand": _with_parts(presets.rand),
  "bananas": _bananas,
  "gp_bo": _with_parts(presets.gp_bo),
  "autokeras": _with_parts(presets.autokeras),
  "conditional_bo": _with_parts(presets.conditional_bo),
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
_PROXY_MODELS = MappingProxyType({"bo": STRATEGIES["bo"], "nasbot": STRATEGIES["nasbot"], "bananas": _bananas})
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
