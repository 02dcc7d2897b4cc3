"""Random search on a synthetic objective of NASBOT App. C.4 (default f1 on CNNs); the config
arg and every field but the strategy are those of `ea_synthetic.py`.

Run (`:smoke` = tiny budget, used by tests and CI; `:f2` = f2 on MLPs):
  python launch/search.py --config=configs/random_synthetic.py[:smoke] --config.workdir=runs/random_f1
"""

import ml_collections

from configs import ea_synthetic


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = ea_synthetic.get_config(arg)
  c.strategy = "random"
  c.strategy_config = ml_collections.ConfigDict()  # random search reads no options
  return c
