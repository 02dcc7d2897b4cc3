"""Multi-objective search on NAS-Bench-201 CIFAR-10: validation accuracy (max) and the network's
parameters (min, from the table), each method a preset of an existing config with
`objectives = "params"`. The arg picks the method (add `+smoke` for a tiny budget, as tests do):
  random          random search (objectives only recorded)
  nsga2           regularised evolution whose tournaments follow NSGA-II's order (rank, crowding)
  bananas         BANANAS (code preset) on ParEGO scalarisations, new weights at each batch
  bananas_ehvi    BANANAS' ensemble maximising Monte Carlo expected hypervolume improvement
  nasbot          NASBOT (OTMANN GP, warm refits) on ParEGO scalarisations
  nasbot_ehvi     NASBOT's GP maximising expected hypervolume improvement
EHVI's reference point is 0.1 below the worst observed of each objective unless
`strategy_config.ehvi_ref` gives one in raw units, e.g. "(85.0, 1e6)" (accuracy %, parameters).

Run (the table folder is never downloaded):
  python launch/search.py --config=configs/pareto_nb201.py:bananas_ehvi --config.workdir=runs/pareto_nb201 \\
    --config.task.path=../shared/data/nasbench201
Under a parameter budget instead (no network above 0.5 M parameters is ever proposed):
  python launch/search.py --config=configs/pareto_nb201.py:bananas --config.objectives= \\
    --config.constraints.max_params=5e5 --config.workdir=runs/nb201_budget
The benchmark: `python benchmarks/bench_multiobjective.py` (all three datasets, hypervolume).
"""

import ml_collections

from configs import bananas_nb201, nasbot_nb201, random_nb201, re_nb201

_METHODS = {
  "random": (random_nb201, {}),
  "nsga2": (re_nb201, {}),
  "bananas": (bananas_nb201, {}),
  "bananas_ehvi": (bananas_nb201, {"multi_objective": "ehvi", "ehvi_ref": ()}),
  "nasbot": (nasbot_nb201, {}),
  "nasbot_ehvi": (nasbot_nb201, {"multi_objective": "ehvi", "ehvi_ref": ()}),
}


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  methods = [t for t in tokens if t in _METHODS]
  if len(methods) > 1 or any(t not in _METHODS and t != "smoke" for t in tokens):
    raise ValueError(f"get_config: arg must be one of {', '.join(_METHODS)}, optionally +smoke; got {arg!r}")
  method = methods[0] if methods else "bananas"
  base, extra = _METHODS[method]
  smoke = "smoke" in tokens
  c = base.get_config("smoke" if smoke else ("warm" if method.startswith("nasbot") else ""))
  c.objectives = "params"
  c.strategy_config.update(extra)
  c.budget = min(c.budget, 25) if smoke else 100
  return c
