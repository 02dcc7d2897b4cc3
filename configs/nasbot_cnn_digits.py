"""NASBOT over CNNs trained on scikit-learn's digits (the README's main job); validation accuracy
is maximised and test accuracy recorded. Task, space and executor fields are those of
`random_cnn_digits.py`; the strategy options those of `nasbot_synthetic.py`.

Run (`:smoke` = two tiny networks, one epoch, inline; used by tests):
  python launch/search.py --config=configs/nasbot_cnn_digits.py[:smoke] --config.workdir=runs/nasbot_cnn
"""

import os
import runpy

import ml_collections

_HERE = os.path.dirname(__file__)
_BASE = runpy.run_path(os.path.join(_HERE, "random_cnn_digits.py"))["get_config"]
_OPTIONS = runpy.run_path(os.path.join(_HERE, "nasbot_synthetic.py"))["nasbot_options"]


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = _BASE(arg)
  c.strategy = "nasbot"
  c.strategy_config = _OPTIONS(arg == "smoke")
  return c
