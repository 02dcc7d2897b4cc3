"""NASBOT over CNNs trained on scikit-learn's digits (the README's main job); validation accuracy
is maximised and test accuracy recorded. Task, space and executor fields are those of
`random_cnn_digits.py`; the strategy options those of `nasbot_synthetic.py`.

Run (`:smoke` = two tiny networks, one epoch, inline; used by tests):
  python launch/search.py --config=configs/nasbot_cnn_digits.py[:smoke] --config.workdir=runs/nasbot_cnn
"""

import ml_collections

from configs import nasbot_synthetic, random_cnn_digits


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_cnn_digits.get_config(arg)
  c.strategy = "nasbot"
  c.strategy_config = nasbot_synthetic.nasbot_options(arg == "smoke")
  return c
