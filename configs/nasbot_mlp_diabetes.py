"""NASBOT over regression MLPs on scikit-learn's diabetes data (validation MSE, minimised), or on
a CSV/NPZ table you point to with --config.task.dataset=PATH --config.task.target=COLUMN.
Task, space and executor fields are those of `random_mlp_diabetes.py`.

Run: python launch/search.py --config=configs/nasbot_mlp_diabetes.py[:smoke] --config.workdir=runs/nasbot_mlp
"""

import os
import runpy

import ml_collections

_HERE = os.path.dirname(__file__)
_BASE = runpy.run_path(os.path.join(_HERE, "random_mlp_diabetes.py"))["get_config"]
_OPTIONS = runpy.run_path(os.path.join(_HERE, "nasbot_synthetic.py"))["nasbot_options"]


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = _BASE(arg)
  c.strategy = "nasbot"
  c.strategy_config = _OPTIONS(arg == "smoke")
  return c
