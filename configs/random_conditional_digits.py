"""Random search over the conditional space of chain MLPs (our space: depth 1..3, and per
layer units, activation, dropout and L2 weight, plus learning rate and batch size), trained on
scikit-learn's digits; the value is the validation error (minimised), the test error is recorded.
The baseline of the conditional BO configs (`*_conditional_digits.py`), which share its fields.

Run (`:smoke` = five networks (the BO configs then fit their GP twice), one epoch, inline; used by tests):
  python launch/search.py --config=configs/random_conditional_digits.py[:smoke] --config.workdir=runs/random_conditional
"""

import ml_collections

from configs import common


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  smoke = common.is_smoke(arg)
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
  executor, timeout = ("inline", 0.0) if smoke else ("local", 3600.0)
  return common.add_run_fields(c, executor=executor, eval_timeout_s=timeout, scheduler=False)
