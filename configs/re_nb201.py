"""Regularized evolution (population 30, tournament 10) on NAS-Bench-201 CIFAR-10 (BANANAS Sec. 5.1).

Run (`:smoke` = tiny budget, used by tests and CI; the table folder is never downloaded):
  python launch/search.py --config=configs/re_nb201.py[:smoke] --config.workdir=runs/re_nb201 \\
    --config.task.path=../shared/data/nasbench201
The comparison (150 queries, all NB201 methods, as in BANANAS Sec. 5.1): see `random_nb201.py`.

`:zc_warmup` starts from the 10 cells a zero-cost proxy ranks best of 1,000 random ones,
`:zc_prescreen` makes each child the proxy's best of 4 mutants, `:zc_warmup+zc_prescreen` both
(docs/proxies_search.md; the proxy's CSV is `config.proxy.path`).

Space, task and executor fields are those of `random_nb201.py`.
"""

import ml_collections

from configs import common, random_nb201


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = common.split_arg(arg, ("smoke", "zc_warmup", "zc_prescreen"))
  c = random_nb201.get_config("smoke" if "smoke" in tokens else "")
  c.strategy = "regularized_evolution"
  c.strategy_config = ml_collections.ConfigDict({"population_size": 30, "tournament_size": 10})
  return common.add_proxy(c, tokens)
