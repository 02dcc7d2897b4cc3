"""RAND (spec nasbot.md 10.4): NASBOT's EA fed Unif(0, 1) instead of the acquisition, on a
synthetic objective; every other field is that of `nasbot_synthetic.py`.

Run: python launch/search.py --config=configs/rand_synthetic.py[:smoke] --config.workdir=runs/rand_f1
"""

import os
import runpy

import ml_collections

_BASE = runpy.run_path(os.path.join(os.path.dirname(__file__), "nasbot_synthetic.py"))["get_config"]


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = _BASE(arg)
  c.strategy = "rand"
  c.strategy_config.acquisition = "random"
  return c
