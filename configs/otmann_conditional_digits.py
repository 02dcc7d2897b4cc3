"""Conditional BO with NASBOT's OTMANN GP (arc_kernel.md 6: arc vs OTMANN on one problem): the
search of `arc_conditional_digits.py` with the GP on each point's network (depth, units and
activations; the kernel cannot see learning rate, batch size, dropout or L2), maximised by
random points and NASBOT's EA only, since OTMANN has no gradient in the parameters.

Run (`:smoke` = the three initial networks and two proposals, one epoch, inline; used by tests):
  python launch/search.py --config=configs/otmann_conditional_digits.py[:smoke] --config.workdir=runs/otmann_conditional
"""

import os
import runpy

import ml_collections

_HERE = os.path.dirname(__file__)
_BASE = runpy.run_path(os.path.join(_HERE, "random_conditional_digits.py"))["get_config"]
_OPTIONS = runpy.run_path(os.path.join(_HERE, "arc_conditional_digits.py"))["conditional_bo_options"]


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = _BASE(arg)
  c.strategy = "conditional_bo"
  c.strategy_config = _OPTIONS("otmann", arg == "smoke")
  return c
