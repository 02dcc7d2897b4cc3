"""RAND (NASBOT Sec. 5; App. C.1) over CNNs trained on scikit-learn's digits: NASBOT's EA fed
Unif(0, 1) instead of the acquisition; every other field is that of `nasbot_cnn_digits.py`.

Run (`:smoke` = two tiny networks, one epoch, inline; used by tests):
  python launch/search.py --config=configs/rand_cnn_digits.py[:smoke] --config.workdir=runs/rand_cnn
"""

import ml_collections

from configs import nasbot_cnn_digits


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = nasbot_cnn_digits.get_config(arg)
  c.strategy = "rand"
  return c
