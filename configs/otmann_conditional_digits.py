"""Conditional BO with NASBOT's OTMANN GP (our comparison: arc vs OTMANN on one problem): the
search of `arc_conditional_digits.py` with the GP on each point's network (depth, units and
activations; the kernel cannot see learning rate, batch size, dropout or L2), maximised by
random points and NASBOT's EA only, since OTMANN has no gradient in the parameters.

Run (`:smoke` = the three initial networks and two proposals, one epoch, inline; used by tests):
  python launch/search.py --config=configs/otmann_conditional_digits.py[:smoke] --config.workdir=runs/otmann_conditional
"""

import ml_collections

from configs import arc_conditional_digits, random_conditional_digits


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_conditional_digits.get_config(arg)
  c.strategy = "conditional_bo"
  c.strategy_config = arc_conditional_digits.conditional_bo_options("otmann", arg == "smoke")
  return c
