"""RAND (NASBOT Sec. 5; App. C.1): NASBOT's EA fed Unif(0, 1) instead of the acquisition, on a
synthetic objective; every other field is that of `nasbot_synthetic.py`.

Run: python launch/search.py --config=configs/rand_synthetic.py[:smoke] --config.workdir=runs/rand_f1
"""

import ml_collections

from configs import nasbot_synthetic


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = nasbot_synthetic.get_config(arg)
  c.strategy = "rand"
  return c
