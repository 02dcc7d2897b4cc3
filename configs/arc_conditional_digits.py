"""Conditional BO with the arc kernel (Swersky et al. 2013, Sec. 2.2) over chain MLPs on digits: a GP on
the cylindrical embedding of every parameter, EI with hallucinated pending points, maximised per
depth by random points, NASBOT's EA and gradient ascent on the continuous parameters. Task, space
and executor fields are those of `random_conditional_digits.py`.

Run (`:smoke` = the three initial networks and two proposals, one epoch, inline; used by tests):
  python launch/search.py --config=configs/arc_conditional_digits.py[:smoke] --config.workdir=runs/arc_conditional
The equal-budget ablation of the acquisition optimiser: add --config.strategy_config.gradient=False.
"""

import ml_collections

from configs import random_conditional_digits


def conditional_bo_options(kernel: str, smoke: bool) -> ml_collections.ConfigDict:
  """The `conditional_bo` keyword arguments of the conditional configs."""
  return ml_collections.ConfigDict(
    {
      "featurizer": kernel,  # "arc" | "poor_man" | "otmann"
      "acquisition": "ei",  # "ei" | "ucb"
      "acquisition_config": {"kappa": 2.0**0.5},  # UCB only: mean + kappa std, kappa = sqrt(beta), beta = 2
      "n_starts_fit": 2 if smoke else 8,
      "fit_steps": 10 if smoke else 100,
      "n_random": 10 if smoke else 200,  # random points per depth
      "n_grad_starts": 2 if smoke else 16,  # gradient starts per depth
      "grad_steps": 5 if smoke else 50,
      "gradient": kernel != "otmann",  # gradient ascent per depth (the kernel needs a gradient) | False: the EA only
      # EA children per depth; None: 100, plus with gradient=False what the gradient stage spends
      # (equal acquisition evaluations). A FieldReference so that --config overrides take an int.
      "n_mutations": ml_collections.FieldReference(10 if smoke else None, field_type=int),
    }
  )


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_conditional_digits.get_config(arg)
  c.strategy = "conditional_bo"
  c.strategy_config = conditional_bo_options("arc", arg == "smoke")
  return c
