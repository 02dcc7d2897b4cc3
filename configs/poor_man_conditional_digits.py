"""Conditional BO with the poor man's embedding (Swersky et al. 2013, Sec. 3): the search of
`arc_conditional_digits.py` with an ARD squared-exponential GP on the parameters rescaled to
[0, 1], inactive ones set to -1, in place of the arc kernel.

Run (`:smoke` = the three initial networks and two proposals, one epoch, inline; used by tests):
  python launch/search.py --config=configs/poor_man_conditional_digits.py[:smoke] \
    --config.workdir=runs/poor_man_conditional
"""

import ml_collections

from configs import arc_conditional_digits, random_conditional_digits


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_conditional_digits.get_config(arg)
  c.strategy = "conditional_bo"
  c.strategy_config = arc_conditional_digits.conditional_bo_options("poor_man", arg == "smoke")
  return c
