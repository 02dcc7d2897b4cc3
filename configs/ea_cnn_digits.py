"""The paper's EA baseline (NASBOT Sec. 5; App. C.1) over CNNs, trained on scikit-learn's digits; the
score is validation accuracy (maximised), and the test accuracy is recorded.

Run (`:smoke` = two small networks, one epoch, inline; used by tests):
  python launch/search.py --config=configs/ea_cnn_digits.py[:smoke] --config.workdir=runs/ea_cnn_digits
On a Ray cluster:
  python launch/search.py --config=configs/ea_cnn_digits.py --config.executor=ray \
    --config.ray_address=auto --config.workdir=runs/ea_cnn_digits

Space, task and executor fields are those of `random_cnn_digits.py`.
"""

import ml_collections

from configs import random_cnn_digits


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_cnn_digits.get_config(arg)
  c.strategy = "ea"
  c.strategy_config = ml_collections.ConfigDict({"n_mut": 10})  # mutants per generation (NASBOT App. C.1)
  return c
