"""BANANAS (preset "code": truncated path encoding, ITS) on NAS-Bench-201 CIFAR-10 (BANANAS Algorithm 1).

Run (`:smoke` = tiny budget, used by tests and CI; `:paper` = the paper's preset, path encoding and
UCB; the table folder is never downloaded):
  python launch/search.py --config=configs/bananas_nb201.py[:smoke|:paper|:smoke+paper] --config.workdir=runs/bananas_nb201 \\
    --config.task.path=../shared/data/nasbench201
Zero-cost proxy variants (docs/proxies_search.md; '+'-joined with the above): `zc_warmup` starts
from the 10 cells the proxy ranks best of 1,000, `zc_prescreen` passes the acquisition the best
quarter of the mutants, `zc_feature` appends the proxy to the encoding.
The comparison (150 queries, all NB201 methods, as in BANANAS Sec. 5.1): see `random_nb201.py`.

Space, task and executor fields are those of `random_nb201.py`.
"""

import ml_collections

from configs import common, random_nb201


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = common.split_arg(arg, ("smoke", "paper", "zc_warmup", "zc_prescreen", "zc_feature"))
  smoke = "smoke" in tokens
  c = random_nb201.get_config("smoke" if smoke else "")
  c.strategy = "bananas"
  # "code" (truncated path, ITS) | "paper" (path, UCB): the authors' code or the paper
  options = {"preset": "paper" if "paper" in tokens else "code"}
  if smoke:
    options.update(epochs=5, hidden=(8, 8))
  c.strategy_config = ml_collections.ConfigDict(options)
  c.budget = 25 if smoke else 150  # smoke: past the 10 random cells into two BO iterations
  return common.add_proxy(c, tokens)
