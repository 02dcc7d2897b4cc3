"""BANANAS (preset "code": truncated path encoding, ITS) on NAS-Bench-201 CIFAR-10 (spec bananas.md 8, 14).

Run (`:smoke` = tiny budget, used by tests and CI; `:paper` = the paper's preset, path encoding and
UCB; the table folder is never downloaded):
  python launch/search.py --config=configs/bananas_nb201.py[:smoke|:paper|:smoke+paper] --config.workdir=runs/bananas_nb201 \\
    --config.task.path=../shared/data/nasbench201
The comparison of spec 11.2 (150 queries, all NB201 methods): see `random_nb201.py`.

Space, task and executor fields are those of `random_nb201.py`.
"""

import ml_collections

from configs import random_nb201


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  if any(t not in ("smoke", "paper") for t in tokens):
    raise ValueError(f"get_config: arg must be '+'-separated tokens of smoke, paper; got {arg!r}")
  smoke = "smoke" in tokens
  c = random_nb201.get_config("smoke" if smoke else "")
  c.strategy = "bananas"
  # "code" (truncated path, ITS) | "paper" (path, UCB); spec 14
  options = {"preset": "paper" if "paper" in tokens else "code"}
  if smoke:
    options.update(epochs=5, hidden=(8, 8))
  c.strategy_config = ml_collections.ConfigDict(options)
  c.budget = 25 if smoke else 150  # smoke: past the 10 random cells into two BO iterations
  return c
