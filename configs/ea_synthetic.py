"""The paper's EA baseline (NASBOT Sec. 5; App. C.1) on a synthetic objective of NASBOT App. C.4
(default f1 on CNNs).

The config arg is a "+"-separated list of tokens: `smoke` (tiny budget, used by tests and
CI) and a function `f0`..`f3` (f1 and f0 on CNNs, f2 and f3 on MLPs: our reading of App. C.4), e.g.
  python launch/search.py --config=configs/ea_synthetic.py[:smoke] --config.workdir=runs/ea_f1
  python launch/search.py --config=configs/ea_synthetic.py:f2 --config.workdir=runs/ea_f2
"""

import ml_collections

from configs import common


FUNCTIONS = {"f0": "cnn", "f1": "cnn", "f2": "mlp", "f3": "mlp"}  # function -> space kind


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  bad = [t for t in tokens if t != "smoke" and t not in FUNCTIONS]
  if bad or sum(t in FUNCTIONS for t in tokens) > 1:
    raise ValueError(
      f"get_config: arg must be '+'-separated tokens, smoke and at most one of {', '.join(FUNCTIONS)}; got {arg!r}"
    )
  smoke = "smoke" in tokens
  function = next((t for t in tokens if t in FUNCTIONS), "f1")
  c = ml_collections.ConfigDict()
  c.strategy = "ea"
  c.strategy_config = ml_collections.ConfigDict({"n_mut": 10})  # mutants per generation (NASBOT App. C.1)
  c.space = ml_collections.ConfigDict({"name": "layer_graph", "kind": FUNCTIONS[function], "max_layers": 60})
  # delay_s: seconds each evaluation sleeps, to stand in for training when testing executors.
  c.task = ml_collections.ConfigDict({"name": "synthetic", "function": function, "delay_s": 0.0, "fidelities": ""})
  # fidelities: e.g. "1,3,9" for a noisy cheap variant below the last (tasks.synthetic); "" for none
  c.budget = 6 if smoke else 200  # Fig. 7 runs 200 evaluations
  c.num_workers = 1
  return common.add_run_fields(c, executor="inline", eval_timeout_s=0.0)
