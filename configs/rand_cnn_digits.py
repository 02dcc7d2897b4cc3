"""RAND (spec nasbot.md 10.4) over CNNs trained on scikit-learn's digits: NASBOT's EA fed
Unif(0, 1) instead of the acquisition; every other field is that of `nasbot_cnn_digits.py`.

Run (`:smoke` = two tiny networks, one epoch, inline; used by tests):
  python launch/search.py --config=configs/rand_cnn_digits.py[:smoke] --config.workdir=runs/rand_cnn
"""

import os
import runpy

import ml_collections

_BASE = runpy.run_path(os.path.join(os.path.dirname(__file__), "nasbot_cnn_digits.py"))["get_config"]


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = _BASE(arg)
  c.strategy = "rand"
  c.strategy_config.acquisition = "random"
  return c
