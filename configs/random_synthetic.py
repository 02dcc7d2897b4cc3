"""Random search on a synthetic objective of spec nasbot.md 10.6 (default f1 on CNNs).

Run (`:smoke` = tiny budget, used by tests and CI):
  python launch/search.py --config=configs/random_synthetic.py[:smoke] --config.workdir=runs/random_f1
f2 on MLPs (f3 likewise; f0 takes either kind):
  python launch/search.py --config=configs/random_synthetic.py --config.task.function=f2 \
    --config.space.kind=mlp --config.workdir=runs/random_f2
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
  c.space = ml_collections.ConfigDict({"name": "layer_graph", "kind": "cnn", "max_layers": 60})
  # delay_s: seconds each evaluation sleeps, to stand in for training when testing executors.
  c.task = ml_collections.ConfigDict({"name": "synthetic", "function": "f1", "delay_s": 0.0})
  c.budget = 6 if smoke else 200  # Fig. 7 runs 200 evaluations
  c.num_workers = 1
  c.executor = "inline"  # "inline" | "local" (process pool) | "ray"
  c.ray_address = ""  # ray: "" starts a local Ray, "auto" or "ray://host:10001" joins a cluster
  c.eval_timeout_s = 0.0  # 0: no limit (the inline executor cannot stop an evaluation)
  c.seed = 0
  c.workdir = config_dict.placeholder(str)  # required: check_search_config says so when unset
  return c
