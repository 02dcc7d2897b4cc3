"""Multi-fidelity search with real training (README, "Multi-fidelity search"): NASBOT's CNN
search on digits with 9 epochs a network, alone or as the sampler of ASHA over 1, 3 and 9 epochs
(a promoted network continues from its checkpoint). 2 worker processes. The arg: nasbot or
asha_nasbot (the default), optionally +smoke.

  python launch/search.py --config=configs/multifidelity_digits.py:asha_nasbot --config.workdir=runs/asha_digits
The comparison at equal wall time: `benchmarks/bench_multifidelity_digits.py`.
"""

import ml_collections

from configs import nasbot_cnn_digits

_METHODS = {"nasbot": ("", 14), "asha_nasbot": ("asha", 30)}  # (scheduler, evaluations)


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  methods = [t for t in tokens if t in _METHODS] or ["asha_nasbot"]
  if len(methods) != 1 or any(t not in _METHODS and t != "smoke" for t in tokens):
    raise ValueError(f"get_config: arg must be one of {', '.join(_METHODS)}, optionally +smoke; got {arg!r}")
  smoke = "smoke" in tokens
  scheduler, budget = _METHODS[methods[0]]
  c = nasbot_cnn_digits.get_config("smoke" if smoke else "")
  c.task.epochs = 3 if smoke else 9
  if scheduler:
    c.task.fidelities = "1,3" if smoke else "1,3,9"
    c.scheduler = scheduler
    c.scheduler_config.min_points = 2 if smoke else 5
  c.budget = 4 if smoke else budget
  return c
