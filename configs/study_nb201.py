"""A study on NAS-Bench-201 (docs/studies.md): NASBOT's protocol (Sec. 5, Fig. 2), best validation
and test regret against simulated wall-clock time, for NASBOT, BANANAS, regularized evolution,
local search, random search and ASHA around random and BANANAS, with 1, 4 and 16 simulated workers,
async and sync, model time charged and not, on all three datasets, 20 seeds.

The arg picks methods, '+'-joined (`:random+re+ls` runs those three), and `smoke` the tiny study.

Run (`:smoke` = two methods, one dataset, one and two workers, two seeds: about two minutes on two
cores; the table folder is never downloaded):
  python launch/study.py --config=configs/study_nb201.py[:smoke] --config.workdir=runs/study_nb201 \\
    --config.task.path=../shared/data/nasbench201
On a Ray cluster: add `--config.ray_address=HOST:PORT` (the head's). Fewer seeds for a slow method:
`--config.seeds_of=nasbot=5`; fewer of an axis: `--config.workers=1,4 --config.modes=async`.
"""

import ml_collections
from ml_collections import config_dict

from configs import common

_METHODS = {
  "nasbot": "configs/nasbot_nb201.py",
  "bananas": "configs/bananas_nb201.py",
  "re": "configs/re_nb201.py",
  "ls": "configs/ls_nb201.py",
  "random": "configs/random_nb201.py",
  "asha_random": "configs/multifidelity_nb201.py:asha_random",
  "asha_bananas": "configs/multifidelity_nb201.py:asha_bananas",
}
_SMOKE = {"random": "configs/random_nb201.py:smoke", "re": "configs/re_nb201.py:smoke"}


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = common.split_arg(arg, ("smoke", *_METHODS))
  smoke = "smoke" in tokens
  methods = _SMOKE if smoke else _METHODS
  chosen = [t for t in tokens if t != "smoke"] or list(methods)
  if any(m not in methods for m in chosen):
    raise ValueError(f"get_config: {arg!r}; the smoke study's methods are {', '.join(_SMOKE)}")
  c = ml_collections.ConfigDict()
  # method name (a-z, 0-9, _) -> its search config, path.py[:arg] from the repository root
  c.methods = ml_collections.ConfigDict({m: methods[m] for m in chosen})
  c.datasets = "cifar10" if smoke else "cifar10,cifar100,imagenet16"
  c.workers = "1,2" if smoke else "1,4,16"  # simulated workers of a trial
  c.modes = "async,sync"  # a worker count above 1 runs each mode
  c.model_time = "free" if smoke else "free,charged"  # charged: proposal seconds delay evaluations
  c.seeds = 2 if smoke else 20  # seeds 0 .. seeds-1
  c.seeds_of = ""  # fewer seeds for some methods: "nasbot=5,bananas=10"
  # Evaluations of a one-worker trial (0: each method config's own, 150 and ASHA's 450); a trial of
  # M workers gets budget * M ** budget_growth, so more workers reach further in simulated time.
  c.budget = 0
  c.budget_growth = 0.5
  c.report_hours = "" if smoke else "10,25,50"  # simulated hours of the table ("": the shortest trial's end)
  c.executor = "simulated"  # the trials' executor: simulated workers on the tables' training seconds
  c.task = ml_collections.ConfigDict({"path": "../shared/data/nasbench201"})
  c.processes = 0  # trials at once on this machine's process pool; 0: one per core (with Ray: at most this many)
  c.ray_address = ""  # "": the local process pool; "auto" or "HOST:PORT": a Ray cluster's head
  c.ray_connect_timeout_s = 30.0
  c.worker_retries = 3  # reruns of a trial whose process or Ray node was lost
  c.workdir = config_dict.placeholder(str)  # required: the study's folder
  return c
