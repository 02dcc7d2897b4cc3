"""BANANAS (preset "code": truncated path encoding, ITS) on NAS-Bench-201 CIFAR-10 (spec bananas.md 8, 14).

Run (`:smoke` = tiny budget, used by tests and CI; the table folder is never downloaded):
  python launch/search.py --config=configs/bananas_nb201.py[:smoke] --config.workdir=runs/bananas_nb201 \\
    --config.task.path=../shared/data/nasbench201
The comparison of spec 11.2 (150 queries, all NB201 methods): see `random_nb201.py`.

Space, task and executor fields are those of `random_nb201.py`.
"""
import os
import runpy

import ml_collections

_BASE = runpy.run_path(os.path.join(os.path.dirname(__file__), "random_nb201.py"))["get_config"]


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = _BASE(arg)
  smoke = arg == "smoke"
  c.strategy = "bananas"
  options = {"preset": "code"}  # "code" (truncated path, ITS) | "paper" (path, UCB); spec 14
  if smoke:
    options.update(epochs=5, hidden=(8, 8))
  c.strategy_config = ml_collections.ConfigDict(options)
  c.budget = 25 if smoke else 150  # smoke: past the 10 random cells into two BO iterations
  return c
