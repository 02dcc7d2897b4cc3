"""The published model-based methods as presets of the one `bo` strategy, each with its paper's
option names: NASBOT and RAND (NASBOT Sec. 4-5), BANANAS and its GP-BO baseline (BANANAS Algorithm
1, Sec. 5.1; presets "paper" and "code": the paper's or the authors' code's settings), Auto-Keras
(Auto-Keras Sec. 3) and conditional BO with the arc kernel (Swersky et al. 2013). Each takes the
parts it lets a user swap as values, and an `objective` (`objectives.parego(...)`, `ehvi(...)`) for
multi-objective search.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Sequence

from nas_jax.acquisition.acq_optimiser import check_counts
from nas_jax.acquisition.conditional_search import per_depth
from nas_jax.acquisition.functions import ei, independent_thompson, ucb, uniform
from nas_jax.acquisition.optimizers import ea, mutation_search, tree
from nas_jax.features import featurizers as feat
from nas_jax.search.strategies.bo import bo
from nas_jax.search.strategies.initial import pool, random_design
from nas_jax.search.strategy import Strategy
from nas_jax.surrogates.point_model import ensemble, gp, gp_fixed

__all__ = ["BANANAS_PRESETS", "EA_SCREEN", "nasbot", "rand", "bananas", "gp_bo", "autokeras", "conditional_bo"]

# Every difference between BANANAS' presets (the paper against the authors' code): the encoding, the acquisition, the
# ensemble's ddof, EI's std scale when EI is chosen instead (the code's sigma / 5), and the
# candidates of the random-candidates ablation.
BANANAS_PRESETS = MappingProxyType(
  {
    "paper": dict(encoding="path", acquisition=ucb(kappa=0.5), ddof=1, ei_sigma_scale=1.0, n_random_candidates=1000),
    "code": dict(
      encoding="trunc_path", acquisition=independent_thompson(), ddof=0, ei_sigma_scale=0.2, n_random_candidates=200
    ),
  }
)


EA_SCREEN = 16  #: the screen's k where one is asked for (`configs/nasbot_nb201.py:screen`; docs/architectures.md)


def nasbot(
  space: Any,
  goal: str = "max",
  *,
  featurizer: Any = None,
  surrogate: Any = None,
  acquisition: Any = None,
  optimiser: Any = None,
  initial: Any = None,
  objective: Any = None,
  **options,
) -> Strategy:
  """NASBOT (Sec. 4; App. B): the initial pool, then EI (hallucinated pending networks) of a GP
  with the OTMANN kernel of eq. (7), maximised by the EA with n_EA = clip(25 sqrt(t), 50, 500).

  Each part replaces NASBOT's: featurizer `otmann()` (e.g. otmann(solver=sinkhorn())); surrogate
  `gp()` (gp(kernel=otmann_kernel(d_bar=False)), d=False and its p, p_bar are the App. C.4
  ablations; gp(fitter=lbfgs(...)) an L-BFGS fit); acquisition `ei()` (uniform() is RAND, `rand`);
  optimiser `ea()` (ea(screen=k): our EA on lower bounds, `optimizers.ea`); initial `pool()`
  (random_design(n=10): random cells first).
  options: `bo`'s (refit_every = k > 1: the full GP fit every k evaluations and warm refits
  between; k = 7 with gp(warm_steps=0) is the authors' code's schedule, not the paper's)."""
  acquisition = acquisition or ei()
  if not acquisition.needs_model:
    options["refit_every"] = 1  # no model, nothing to refit
  return bo(
    space,
    goal,
    featurizer=featurizer or feat.otmann(),
    surrogate=surrogate or gp(),
    acquisition=acquisition,
    optimiser=optimiser or ea(),
    initial=initial or pool(),
    objective=objective,
    **options,
  )


def rand(space: Any, goal: str = "max", **parts) -> Strategy:
  """RAND (NASBOT Sec. 5; App. C.1): NASBOT's EA over uniform random acquisition values; `nasbot`'s
  parts and options but the acquisition."""
  return nasbot(space, goal, acquisition=uniform(), **parts)


def bananas(
  space: Any,
  goal: str = "max",
  *,
  preset: str = "code",
  encoding: str | None = None,
  acquisition: Any = None,
  ddof: int | None = None,
  optimiser: Any = None,
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
  featurizer: Any = None,
  objective: Any = None,
) -> Strategy:
  """BANANAS: n_init random cells, then batches of k chosen by one acquisition of an ensemble on
  the cells' encoding, fitted to error_offset - score (the val error in % for accuracies in %).
  `preset` fills what is None (encoding, acquisition, ddof: `BANANAS_PRESETS`); the optimiser
  mutates the n_parents best cells unless another is given; a given featurizer replaces the
  encoding's (e.g. the encoding with a proxy's feature appended). The ablations with the preset's
  values are parts: EI is ei(sigma_scale=BANANAS_PRESETS[preset]["ei_sigma_scale"]), random
  candidates random_search(n_candidates=BANANAS_PRESETS[preset]["n_random_candidates"])."""
  if preset not in BANANAS_PRESETS:
    raise ValueError(f"bananas: preset={preset!r}; allowed: {', '.join(BANANAS_PRESETS)}")
  check_counts("bananas: ", {"n_init": (n_init, 1), "k": (k, 1)})
  chosen = BANANAS_PRESETS[preset]
  return bo(
    space,
    goal,
    featurizer=featurizer or feat.encoding(encoding or chosen["encoding"]),
    surrogate=ensemble(
      n_members=n_members,
      hidden=hidden,
      epochs=epochs,
      batch_size=batch_size,
      lr=lr,
      ddof=chosen["ddof"] if ddof is None else ddof,
      target_offset=error_offset,
    ),
    acquisition=acquisition or chosen["acquisition"],
    optimiser=optimiser
    or mutation_search(n_parents=n_parents, n_candidates=n_candidates, attempts_per_parent=attempts_per_parent),
    initial=random_design(n=n_init),
    objective=objective,
    batch=k,
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
  objective: Any = None,
) -> Strategy:
  """BANANAS' GP-BO baseline (BANANAS Sec. 5.1; constants from the authors' code): a zero-mean GP on
  val errors with the fixed kernel alpha^2 exp(-d / l^2), d the Hamming distance of encodings, and
  UCB (f - beta sigma on errors) over n_scored random mutants of the 5 best cells; one query per
  step."""
  return bo(
    space,
    goal,
    featurizer=feat.encoding(encoding),
    surrogate=gp_fixed(kernel="hamming", variance=alpha**2, length_scale=lengthscale**2, target_offset=error_offset),
    acquisition=ucb(kappa=beta),
    optimiser=mutation_search(n_parents=5, n_scored=n_scored),
    initial=random_design(n=n_init),
    objective=objective,
  )


def autokeras(
  space: Any,
  goal: str = "max",
  *,
  num_classes: int = 10,
  lam: float = 1.0,
  layer_match: str = "separate",
  bourgain_repeat: str = "intended",
  target: str = "cost",
  n_children: int = 8,
  t0: float = 1.0,
  r: float = 0.9,
  t_low: float = 1e-4,
  variant: str = "paper",
  max_ops: int = 0,
  beta: float = 2.576,
  featurizer: Any = None,
  surrogate: Any = None,
  optimiser: Any = None,
  objective: Any = None,
) -> Strategy:
  """Auto-Keras / NASNM: G0 and G1, then UCB mu + beta sigma of a GP with the edit-distance kernel
  (exp(-rho) on Bourgain coordinates, fixed; target "cost": the paper's zero-mean GP on
  1 - accuracy, "accuracy": the code's), maximised by the tree search of Alg. 1, whose choice
  warm-starts from its ancestor. A given featurizer, surrogate or optimiser replaces the paper's
  (NASBOT's otmann(), gp() and ea() are the ablations)."""
  if target not in ("cost", "accuracy"):
    raise ValueError(f"autokeras: target={target!r}; allowed: cost, accuracy")
  offset = (1.0 if goal == "max" else 0.0) if target == "cost" else None  # a "min" task's value is its cost
  return bo(
    space,
    goal,
    featurizer=featurizer
    or feat.edit(num_classes=num_classes, lam=lam, layer_match=layer_match, bourgain_repeat=bourgain_repeat),
    surrogate=surrogate or gp_fixed(kernel="matern12", target_offset=offset),
    acquisition=ucb(kappa=beta),
    optimiser=optimiser or tree(n_children=n_children, t0=t0, r=r, t_low=t_low, variant=variant, max_ops=max_ops),
    initial=pool(),
    objective=objective,
  )


def conditional_bo(
  space: Any,
  goal: str = "max",
  *,
  featurizer: Any = None,
  acquisition: Any = None,
  gradient: bool = True,
  n_starts_fit: int = 8,
  fit_steps: int = 100,
  n_random: int = 200,
  n_grad_starts: int = 16,
  grad_steps: int = 50,
  n_mutations: int | None = None,
  objective: Any = None,
) -> Strategy:
  """Conditional BO over chain MLPs (Swersky et al. 2013; the search is our choice): the space's
  initial points, random ones until 2 successes, then a fitted GP on `featurizer` (arc() by default,
  poor_man(), or NASBOT's otmann() on the points' networks, which has no gradient: gradient=False)
  and EI (or ucb(kappa=sqrt(beta))), maximised per depth by random points, the EA and, with
  gradient, gradient ascent on the continuous parameters (`per_depth`); n_mutations None spends
  equal evaluations either way."""
  return bo(
    space,
    goal,
    featurizer=featurizer or feat.arc(),
    surrogate=gp(n_starts=n_starts_fit, fit_steps=fit_steps),
    acquisition=acquisition or ei(),
    optimiser=per_depth(
      n_random=n_random, gradient=gradient, n_grad_starts=n_grad_starts, grad_steps=grad_steps, n_mutations=n_mutations
    ),
    initial=pool(min_ok=2),
    objective=objective,
  )
