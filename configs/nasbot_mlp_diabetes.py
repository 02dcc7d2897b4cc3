"""NASBOT over regression MLPs on scikit-learn's diabetes data (validation MSE, minimised), or on
a CSV/NPZ table you point to with --config.task.dataset=PATH --config.task.target=COLUMN.
Task, space and executor fields are those of `random_mlp_diabetes.py`.

Run: python launch/search.py --config=configs/nasbot_mlp_diabetes.py[:smoke] --config.workdir=runs/nasbot_mlp
"""

import ml_collections

from configs import nasbot_synthetic, random_mlp_diabetes


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_mlp_diabetes.get_config(arg)
  c.strategy = "nasbot"
  c.strategy_config = nasbot_synthetic.nasbot_options(arg == "smoke")
  return c
