"""The BO engine on NAS-Bench-201 CIFAR-10, any featurizer x surrogate x acquisition x optimiser.

The default is NASBOT's model (the OTMANN GP on cells converted to layer graphs, EI) with
BANANAS' mutation optimiser; `:enumerate` scores all 15,625 cells at every step instead, and
`:path_ensemble` is BANANAS' ensemble on path encodings under the same EI and optimiser (10
queries per fit, as BANANAS); tokens combine, e.g. `:path_ensemble+enumerate`.
Run (`:smoke` = tiny budget, used by tests and CI; the table folder is never downloaded):
  python launch/search.py --config=configs/bo_nb201.py[:smoke] --config.workdir=runs/bo_nb201 \\
    --config.task.path=../shared/data/nasbench201
Any part is an override, e.g. --config.strategy_config.optimizer=ea or
--config.strategy_config.featurizer=path_iso --config.strategy_config.surrogate=gp.

Space, task and executor fields are those of `random_nb201.py`.
"""

import ml_collections

from configs import random_nb201

_TOKENS = ("smoke", "enumerate", "path_ensemble")


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  bad = [t for t in tokens if t not in _TOKENS]
  if bad:
    raise ValueError(f"arg must be '+'-separated tokens of {', '.join(_TOKENS)}; got {bad}")
  c = random_nb201.get_config("smoke" if "smoke" in tokens else "")
  smoke = "smoke" in tokens
  path = "path_ensemble" in tokens
  c.strategy = "bo"
  c.strategy_config = ml_collections.ConfigDict(
    {
      "featurizer": "path" if path else "otmann",
      "featurizer_config": {},
      "surrogate": "ensemble" if path else "gp",
      "surrogate_config": (
        {"target_offset": 100.0, "hidden": [8, 8] if smoke else [20] * 10, "epochs": 20 if smoke else 150}
        if path
        else {"n_starts": 2 if smoke else 8, "fit_steps": 20 if smoke else 100}
      ),
      "acquisition": "ei",
      "optimizer": "enumerate" if "enumerate" in tokens else "mutation",
      "optimizer_config": {} if "enumerate" in tokens else {"n_candidates": 30 if smoke else 100},
      "initial": "random",
      "n_init": 10,
    }
  )
  return c
