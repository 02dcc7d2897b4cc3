"""Multi-fidelity search on NAS-Bench-201 (README, "Multi-fidelity search"): the 12-epoch and
200-epoch tables as two fidelities, a scheduler over any strategy, and single-fidelity baselines,
each with an evaluation budget that passes 100 average 200-epoch trainings of simulated time.

The arg names the method (default asha_bananas; add `+smoke` for a tiny budget, as tests do; add `+joint` to a scheduler
method for model-based multi-fidelity: its sampler models every network at every fidelity it was
evaluated at, scheduler_config.model = "joint", e.g. asha_bananas+joint, asha_nasbot+joint; add
`+model` for that and promotions ranked by the model's predictions at 200 epochs too,
scheduler_config.promote = "model", e.g. asha_bananas+model):
  random, re, ls, bananas           single fidelity (200 epochs), 150 evaluations
  asha_random, sh_random, hyperband_random
                                    the scheduler, random networks
  asha_re, asha_ls, sh_ls, asha_bananas, hyperband_bananas (BOHB-like), asha_nasbot
                                    the scheduler, that strategy as its sampler
  python launch/search.py --config=configs/multifidelity_nb201.py:asha_bananas \\
    --config.workdir=runs/asha_bananas --config.task.path=../shared/data/nasbench201
The comparison at equal simulated time: `benchmarks/bench_multifidelity.py`.
"""

import ml_collections

from configs import bananas_nb201, ls_nb201, nasbot_nb201, random_nb201, re_nb201

_STRATEGIES = {"random": random_nb201, "re": re_nb201, "ls": ls_nb201, "bananas": bananas_nb201, "nasbot": nasbot_nb201}
# Evaluations a run needs to pass 100 average 200-epoch trainings of simulated time: the scheduler
# spends 12/200 of one on each network started at 12 epochs.
_BUDGETS = {"": 150, "asha": 450, "sh": 450, "hyperband": 300}


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  methods = [t for t in tokens if t not in ("smoke", "joint", "model")] or ["asha_bananas"]
  scheduler, _, strategy = (methods[0] if len(methods) == 1 else "").rpartition("_")
  promote = "model" in tokens
  joint = "joint" in tokens or promote
  if len(methods) != 1 or scheduler not in _BUDGETS or strategy not in _STRATEGIES or (joint and not scheduler):
    raise ValueError(
      f"get_config: arg must be a strategy ({', '.join(_STRATEGIES)}) or scheduler_strategy (scheduler one"
      f" of asha, sh, hyperband), optionally +smoke, and +joint or +model with a scheduler; got {arg!r}"
    )
  smoke = "smoke" in tokens
  c = _STRATEGIES[strategy].get_config("smoke" if smoke else ("warm" if strategy == "nasbot" else ""))
  if scheduler:
    c.task.fidelities = "12,200"
    c.scheduler = scheduler
    if joint:  # the sampler models (network, fidelity): spaces.fidelity_space
      c.scheduler_config.model = "joint"
    if promote:  # and ranks each rung by its predictions at the full fidelity
      c.scheduler_config.promote = "model"
  c.budget = 30 if smoke else _BUDGETS[scheduler]
  return c
