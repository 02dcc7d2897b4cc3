"""NASBOT (spec nasbot.md 7-9) on a synthetic objective of spec 10.6 (default f1 on CNNs); the
task, space and executor fields are those of `ea_synthetic.py`.

Run (`:smoke` = the initial pool plus two BO steps, used by tests and CI):
  python launch/search.py --config=configs/nasbot_synthetic.py[:smoke] --config.workdir=runs/nasbot_f1
The paper's ablations (App. C.4, Fig. 7):
  --config.strategy_config.kernel=d|d_bar            (a: distance terms of the kernel)
  --config.space.modifiers=unit|structure            (b: modifier subsets)
  --config.strategy_config.p=2 --config.strategy_config.p_bar=1   (c: powers)
"""
import os
import runpy

import ml_collections

_BASE = runpy.run_path(os.path.join(os.path.dirname(__file__), "ea_synthetic.py"))["get_config"]


def nasbot_options(smoke: bool) -> ml_collections.ConfigDict:
  """The `nasbot` keyword arguments every NASBOT config starts from."""
  return ml_collections.ConfigDict({
      "acquisition": "ei",  # "ei" (NASBOT) | "random" (RAND, spec 10.4)
      "solver": "exact",  # OTMANN solver: "exact" (POT) | "sinkhorn" (ott-jax, batched)
      "otmann_params": "paper",  # "paper" | "nasbot_code" (spec App. R)
      "kernel": "combined",  # "combined" | "d" | "d_bar" (Fig. 7a)
      "p": 1.0,
      "p_bar": 2.0,
      "n_hyper_samples": 0,  # 0: maximum likelihood; > 0: posterior samples (App. B.1)
      "n_starts": 4 if smoke else 8,
      "fit_steps": 30 if smoke else 100,
      "ea_scale": 25.0,  # n_EA = clip(ea_scale sqrt(t), ea_min, ea_max) (App. R)
      "ea_min": 10 if smoke else 50,
      "ea_max": 20 if smoke else 500,
      "selection": "paper",  # "paper" | "nasbot_code"
  })


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = _BASE(arg)
  c.strategy = "nasbot"
  c.strategy_config = nasbot_options(arg == "smoke")
  c.space.modifiers = "all"  # "all" | "unit" | "structure" (Fig. 7b)
  c.budget = 12 if arg == "smoke" else 200
  return c
