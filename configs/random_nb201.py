"""Random search (distinct uniform cells) on NAS-Bench-201 CIFAR-10 (BANANAS Sec. 5.1).

Run (`:smoke` = tiny budget, used by tests and CI; the table folder is never downloaded):
  python launch/search.py --config=configs/random_nb201.py[:smoke] --config.workdir=runs/random_nb201 \\
    --config.task.path=../shared/data/nasbench201
Comparison (150 queries, as in BANANAS Sec. 5.1; regret = best test - test of the best-valid cell):
  python launch/compare.py --configs=configs/bananas_nb201.py,configs/re_nb201.py,\\
configs/ls_nb201.py,configs/gp_nb201.py,configs/random_nb201.py --seeds=20 --budget=150 \\
    --out=runs/compare_nb201
"""

import ml_collections

from configs import common


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  smoke = common.is_smoke(arg)
  c = ml_collections.ConfigDict()
  c.strategy = "random"
  c.strategy_config = ml_collections.ConfigDict({})
  # dedup_key: "string" (the authors' code) or "iso" (NB201's isomorphism classes, `iso_class`)
  c.space = ml_collections.ConfigDict({"name": "nb201", "kind": "nb201", "dedup_key": "string"})
  # dataset: cifar10 | cifar100 | imagenet16; report_metric: test | valtest (the BANANAS code's)
  c.task = ml_collections.ConfigDict(
    {
      "name": "nb201",
      "path": "../shared/data/nasbench201",
      "dataset": "cifar10",
      "report_metric": "test",
      "fidelities": "",  # "12,200": both tables, for a scheduler
    }
  )
  c.budget = 15 if smoke else 150
  c.num_workers = 1
  return common.add_run_fields(c, executor="inline", eval_timeout_s=0.0)  # a table lookup: no worker processes
