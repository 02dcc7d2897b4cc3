"""Conditional BO with the poor man's embedding (arc_kernel.md 4): the search of
`arc_conditional_digits.py` with an ARD squared-exponential GP on the parameters rescaled to
[0, 1], inactive ones set to -1, in place of the arc kernel.

Run (`:smoke` = the three initial networks and two proposals, one epoch, inline; used by tests):
  python launch/search.py --config=configs/poor_man_conditional_digits.py[:smoke] \
    --config.workdir=runs/poor_man_conditional
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
  c.strategy_config = _OPTIONS("poor_man", arg == "smoke")
  return c
