"""GP-BO with a path-encoding Hamming kernel (alpha 1.5, l 3) on NAS-Bench-201 CIFAR-10 (BANANAS Sec. 5.1).

Run (`:smoke` = tiny budget, used by tests and CI; the table folder is never downloaded):
  python launch/search.py --config=configs/gp_nb201.py[:smoke] --config.workdir=runs/gp_nb201 \\
    --config.task.path=../shared/data/nasbench201
The comparison (150 queries, all NB201 methods, as in BANANAS Sec. 5.1): see `random_nb201.py`.

Space, task and executor fields are those of `random_nb201.py`.
"""

import ml_collections

from configs import random_nb201


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_nb201.get_config(arg)
  c.strategy = "gp_bo"
  c.strategy_config = ml_collections.ConfigDict({"encoding": "path"})
  return c
