"""Random search over the conditional space of chain MLPs (arc_kernel.md 6: depth 1..3, and per
layer units, activation, dropout and L2 weight, plus learning rate and batch size), trained on
scikit-learn's digits; the value is the validation error (minimised), the test error is recorded.
The baseline of the conditional BO configs (`*_conditional_digits.py`), which share its fields.

Run (`:smoke` = five networks (the BO configs then fit their GP twice), one epoch, inline; used by tests):
  python launch/search.py --config=configs/random_conditional_digits.py[:smoke] --config.workdir=runs/random_conditional
"""

import ml_collections
from ml_collections import config_dict


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  if arg not in ("", "smoke"):
    raise ValueError(f"get_config: arg must be '' or 'smoke', got {arg!r}")
  smoke = arg == "smoke"
  c = ml_collections.ConfigDict()
  c.strategy = "random"
  c.strategy_config = ml_collections.ConfigDict()  # random search reads no options
  c.space = ml_collections.ConfigDict({"name": "conditional", "kind": "conditional", "max_depth": 3})
  c.task = ml_collections.ConfigDict(
    {
      "name": "conditional",
      "dataset": "digits",  # "digits" (classification) or "diabetes" (regression)
      "epochs": 1 if smoke else 20,
      "data_seed": 0,  # the train/validation/test split; fixed across trials and seeds
      "max_depth": 3,  # must equal space.max_depth
    }
  )
  c.budget = 5 if smoke else 60
  c.num_workers = 1 if smoke else 2
  c.executor = "inline" if smoke else "local"  # "inline" | "local" (process pool) | "ray"
  c.ray_address = ""  # ray: "" starts a local Ray, "auto" or "ray://host:10001" joins a cluster
  c.eval_timeout_s = 0.0 if smoke else 3600.0  # 0: no limit
  # Multi-objective and constrained search (README): cost metrics to minimise besides the value,
  # e.g. "params" or "params,flops" (params | flops | memory_mb | latency_ms), and limits that no
  # proposed or evaluated network exceeds (0: no limit).
  c.objectives = ""
  c.constraints = ml_collections.ConfigDict(
    {"max_params": 0.0, "max_flops": 0.0, "max_memory_mb": 0.0, "max_latency_ms": 0.0}
  )
  c.seed = 0
  c.workdir = config_dict.placeholder(str)  # required: check_search_config says so when unset
  return c
