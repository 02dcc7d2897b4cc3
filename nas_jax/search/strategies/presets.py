"""The published model-based methods as presets of the one `bo` strategy, each with its paper's
option names: NASBOT and RAND (nasbot.md 7-10), BANANAS and its GP-BO baseline (bananas.md 8-9,
presets "paper" and "code" of spec 14), Auto-Keras (autokeras.md 4-7) and conditional BO with the
arc kernel (arc_kernel.md 6). Each takes `objectives`, `multi_objective` ("parego" or "ehvi") and
`ehvi_ref` for multi-objective search, passed to `bo` (its docstring).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from nas_jax.features import encodings
from nas_jax.features.otmann import KERNEL_NU_STR
from nas_jax.search.strategies import common
from nas_jax.search.strategies.bo import bo
from nas_jax.search.strategy import Strategy

__all__ = [
  "BANANAS_PRESETS",
  "CONDITIONAL_KERNELS",
  "CONDITIONAL_OPTIMIZERS",
  "nasbot",
  "bananas",
  "gp_bo",
  "autokeras",
  "conditional_bo",
  "nasbot_factory",
  "rand_factory",
  "bananas_factory",
  "gp_factory",
  "autokeras_factory",
  "conditional_bo_factory",
]

# Every difference between BANANAS' presets (bananas.md 14).
BANANAS_PRESETS = {
  "paper": dict(encoding="path", acquisition="ucb", ddof=1, ei_sigma_scale=1.0, n_random_candidates=1000),
  "code": dict(encoding="trunc_path", acquisition="its", ddof=0, ei_sigma_scale=0.2, n_random_candidates=200),
}


def nasbot(
  space: Any,
  goal: str = "max",
  *,
  acquisition: str = "ei",
  nu_str=KERNEL_NU_STR,
  solver: str = "exact",
  otmann_params: str = "paper",
  kernel: str = "combined",
  p: float = 1.0,
  p_bar: float = 2.0,
  n_hyper_samples: int = 0,
  n_starts: int = 16,
  fit_steps: int = 200,
  ea_scale: float = 25.0,
  ea_min: int = 50,
  ea_max: int = 500,
  selection: str = "paper",
  chunk_size: int = 256,
  refit_every: int = 1,
  warm_steps: int = 20,
  objectives: tuple = (),
  multi_objective: str = "parego",
  ehvi_ref: tuple = (),
) -> Strategy:
  """NASBOT: the initial pool, then EI (hallucinated pending networks) from a GP with the OTMANN
  kernel of eq. (7), maximised by the EA with n_EA = clip(ea_scale sqrt(t), ea_min, ea_max).
  kernel "d"/"d_bar" and p, p_bar are the App. C.4 ablations; acquisition="random" is RAND.
  refit_every > 1 fits the GP in full every that many evaluations and refits it from there with
  warm_steps steps in between (not in the paper: a speed option, `bo`'s warm refits)."""
  return bo(
    space,
    goal,
    featurizer="otmann",
    featurizer_config=dict(nu_str=nu_str, solver=solver, params=otmann_params, chunk_size=chunk_size),
    surrogate="gp",
    surrogate_config=dict(
      kernel=kernel,
      p=p,
      p_bar=p_bar,
      n_hyper_samples=n_hyper_samples,
      n_starts=n_starts,
      fit_steps=fit_steps,
      warm_steps=warm_steps,
    ),
    acquisition=acquisition,
    optimizer="ea",
    optimizer_config=dict(scale=ea_scale, lo=ea_min, hi=ea_max, selection=selection),
    initial="pool",
    refit_every=refit_every if acquisition != "random" else 1,
    objectives=objectives,
    multi_objective=multi_objective,
    ehvi_ref=ehvi_ref,
  )


def bananas(
  space: Any,
  goal: str = "max",
  *,
  preset: str = "code",
  encoding: str | None = None,
  acquisition: str | None = None,
  ddof: int | None = None,
  ei_sigma_scale: float | None = None,
  ucb_beta: float = 0.5,
  candidates: str = "mutation",
  n_random_candidates: int | None = None,
  n_init: int = 10,
  k: int = 10,
  n_parents: int = 5,
  n_candidates: int = 100,
  attempts_per_parent: int = 100,
  error_offset: float = 100.0,
  n_members: int = 5,
  epochs: int = 150,
  batch_size: int = 32,
  lr: float = 0.01,
  hidden: Sequence[int] = (20,) * 10,
  objectives: tuple = (),
  multi_objective: str = "parego",
  ehvi_ref: tuple = (),
) -> Strategy:
  """BANANAS: n_init random cells, then batches of k chosen by one acquisition of an ensemble on
  the cells' encoding, fitted to error_offset - score (the val error in % for accuracies in %)."""
  if preset not in BANANAS_PRESETS:
    raise ValueError(f"bananas: preset={preset!r}; allowed: {', '.join(BANANAS_PRESETS)}")
  given = dict(
    encoding=encoding,
    acquisition=acquisition,
    ddof=ddof,
    ei_sigma_scale=ei_sigma_scale,
    n_random_candidates=n_random_candidates,
  )
  o = {name: BANANAS_PRESETS[preset][name] if v is None else v for name, v in given.items()}
  if o["encoding"] not in encodings.ENCODINGS:
    raise ValueError(f"bananas: encoding={o['encoding']!r}; allowed: {', '.join(encodings.ENCODINGS)}")
  for name, v in (("n_init", n_init), ("k", k), ("n_parents", n_parents)):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"bananas: {name}={v!r}; expected an int >= 1")
  if candidates not in ("mutation", "random"):
    raise ValueError(f"bananas: candidates={candidates!r}; allowed: mutation, random")
  if candidates == "mutation":
    optimizer_config = dict(n_parents=n_parents, n_candidates=n_candidates, attempts_per_parent=attempts_per_parent)
  else:
    optimizer_config = dict(n_candidates=o["n_random_candidates"])
  return bo(
    space,
    goal,
    featurizer=o["encoding"],
    surrogate="ensemble",
    surrogate_config=dict(
      n_members=n_members,
      hidden=tuple(hidden),
      epochs=epochs,
      batch_size=batch_size,
      lr=lr,
      ddof=o["ddof"],
      target_offset=error_offset,
    ),
    acquisition=o["acquisition"],
    acquisition_config=dict(kappa=ucb_beta, sigma_scale=o["ei_sigma_scale"]),
    optimizer=candidates,
    optimizer_config=optimizer_config,
    initial="random",
    n_init=n_init,
    batch=k,
    objectives=objectives,
    multi_objective=multi_objective,
    ehvi_ref=ehvi_ref,
  )


def gp_bo(
  space: Any,
  goal: str = "max",
  *,
  encoding: str = "path",
  alpha: float = 1.5,
  lengthscale: float = 3.0,
  beta: float = 0.5,
  n_init: int = 10,
  n_scored: int = 200,
  error_offset: float = 100.0,
  objectives: tuple = (),
  multi_objective: str = "parego",
  ehvi_ref: tuple = (),
) -> Strategy:
  """BANANAS' GP-BO baseline (spec 9): a zero-mean GP on val errors with the fixed kernel
  alpha^2 exp(-d / l^2), d the Hamming distance of encodings, and UCB (f - beta sigma on errors)
  over n_scored random mutants of the 5 best cells; one query per step."""
  return bo(
    space,
    goal,
    featurizer=encoding,
    surrogate="gp_fixed",
    surrogate_config=dict(kernel="hamming", variance=alpha**2, length_scale=lengthscale**2, target_offset=error_offset),
    acquisition="ucb",
    acquisition_config=dict(kappa=beta),
    optimizer="mutation",
    optimizer_config=dict(n_parents=5, n_scored=n_scored),
    initial="random",
    n_init=n_init,
    objectives=objectives,
    multi_objective=multi_objective,
    ehvi_ref=ehvi_ref,
  )


def autokeras(
  space: Any,
  goal: str = "max",
  *,
  num_classes: int = 10,
  kernel: str = "edit",
  optimizer: str = "tree",
  beta: float = 2.576,
  lam: float = 1.0,
  target: str = "cost",
  n_children: int = 8,
  t0: float = 1.0,
  r: float = 0.9,
  t_low: float = 1e-4,
  variant: str = "paper",
  layer_match: str = "separate",
  bourgain_repeat: str = "intended",
  n_ea: int = 200,
  max_ops: int = 0,
  objectives: tuple = (),
  multi_objective: str = "parego",
  ehvi_ref: tuple = (),
) -> Strategy:
  """Auto-Keras / NASNM: G0 and G1, then UCB mu + beta sigma of a GP with the edit-distance kernel
  (exp(-rho) on Bourgain coordinates, fixed; "cost": the paper's zero-mean GP on 1 - accuracy,
  "accuracy": the code's) maximised by the tree search of Alg. 1, whose choice warm-starts from
  its ancestor. kernel="otmann" puts NASBOT's fitted GP under it, optimizer="ea" NASBOT's EA."""
  for name, value, allowed in (
    ("kernel", kernel, ("edit", "otmann")),
    ("optimizer", optimizer, ("tree", "ea")),
    ("target", target, ("cost", "accuracy")),
  ):
    if value not in allowed:
      raise ValueError(f"autokeras: {name}={value!r}; allowed: {', '.join(allowed)}")
  if kernel == "edit":
    featurizer = dict(
      featurizer="edit",
      featurizer_config=dict(
        num_classes=num_classes, lam=lam, layer_match=layer_match, bourgain_repeat=bourgain_repeat
      ),
    )
    offset = (1.0 if goal == "max" else 0.0) if target == "cost" else None  # a "min" task's value is its cost
    surrogate = dict(surrogate="gp_fixed", surrogate_config=dict(kernel="matern12", target_offset=offset))
  else:
    featurizer = dict(featurizer="otmann", featurizer_config=dict(nu_str=KERNEL_NU_STR))
    surrogate = dict(surrogate="gp", surrogate_config=dict(n_starts=8, fit_steps=100))
  if optimizer == "tree":
    search = dict(
      optimizer="tree",
      optimizer_config=dict(n_children=n_children, t0=t0, r=r, t_low=t_low, variant=variant, max_ops=max_ops),
    )
  else:
    search = dict(optimizer="ea", optimizer_config=dict(n_ea=n_ea, pool=False))
  return bo(
    space,
    goal,
    **featurizer,
    **surrogate,
    acquisition="ucb",
    acquisition_config=dict(kappa=beta),
    **search,
    initial="pool",
    objectives=objectives,
    multi_objective=multi_objective,
    ehvi_ref=ehvi_ref,
  )


CONDITIONAL_KERNELS = ("arc", "poor_man", "otmann")
CONDITIONAL_OPTIMIZERS = ("gradient", "mutation")


def conditional_bo(
  space: Any,
  goal: str = "max",
  *,
  kernel: str = "arc",
  acquisition: str = "ei",
  beta: float = 2.0,
  n_starts_fit: int = 8,
  fit_steps: int = 100,
  n_random: int = 200,
  n_grad_starts: int = 16,
  grad_steps: int = 50,
  optimizer: str | None = None,
  n_mutations: int | None = None,
  objectives: tuple = (),
  multi_objective: str = "parego",
  ehvi_ref: tuple = (),
) -> Strategy:
  """Conditional BO over chain MLPs (arc_kernel.md 6): the space's initial points, random ones until
  2 successes, then a fitted GP with the arc kernel, the poor man's embedding or NASBOT's OTMANN
  kernel (on the points' networks), and EI or UCB (mean + sqrt(beta) std) maximised per depth by
  random points, the EA and, with optimizer "gradient" (the default but for "otmann"), gradient
  ascent on the continuous parameters; n_mutations None spends equal evaluations either way."""
  optimizer = optimizer or ("mutation" if kernel == "otmann" else "gradient")
  for name, value, allowed in (
    ("kernel", kernel, CONDITIONAL_KERNELS),
    ("optimizer", optimizer, CONDITIONAL_OPTIMIZERS),
    ("acquisition", acquisition, ("ei", "ucb")),
  ):
    if value not in allowed:
      raise ValueError(f"conditional_bo: {name}={value!r}; allowed: {', '.join(allowed)}")
  if kernel == "otmann" and optimizer == "gradient":
    raise ValueError(
      "conditional_bo: optimizer='gradient' with kernel='otmann'; OTMANN reads networks, not"
      " values, so it has no gradient: use optimizer='mutation' (or None)"
    )
  if not (isinstance(beta, (int, float)) and beta >= 0):
    raise ValueError(f"conditional_bo: beta={beta!r}; expected a number >= 0")
  return bo(
    space,
    goal,
    featurizer=kernel,
    surrogate="gp",
    surrogate_config=dict(n_starts=n_starts_fit, fit_steps=fit_steps),
    acquisition=acquisition,
    acquisition_config=dict(kappa=math.sqrt(beta)),
    optimizer="per_depth",
    optimizer_config=dict(
      n_random=n_random,
      gradient=optimizer == "gradient",
      n_grad_starts=n_grad_starts,
      grad_steps=grad_steps,
      n_mutations=n_mutations,
    ),
    initial="pool",
    min_ok=2,
    objectives=objectives,
    multi_objective=multi_objective,
    ehvi_ref=ehvi_ref,
  )


def _factory(preset, **fixed):
  def factory(config, space, task) -> Strategy:
    return preset(space, task.goal, objectives=task.objectives, **{**common.strategy_options(config), **fixed})

  factory.__doc__ = f"`config.strategy_config` holds keyword arguments of `{preset.__name__}`."
  return factory


nasbot_factory = _factory(nasbot)
rand_factory = _factory(nasbot, acquisition="random")
bananas_factory = _factory(bananas)
gp_factory = _factory(gp_bo)
autokeras_factory = _factory(autokeras)
conditional_bo_factory = _factory(conditional_bo)
