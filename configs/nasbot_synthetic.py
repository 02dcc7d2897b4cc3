"""NASBOT (Sec. 4; App. B) on a synthetic objective of NASBOT App. C.4 (default f1 on CNNs); the
task, space and executor fields are those of `ea_synthetic.py`.

The config arg takes `ea_synthetic.py`'s tokens (`smoke`: the initial pool plus two BO steps,
used by tests and CI; `f0`..`f3`) and the paper's ablations (App. C.4, Fig. 7), "+"-separated (commas would split --configs lists):
  d | d_bar                  (a: one distance term in the kernel; default both)
  unit | structure           (b: modifier subsets; default all nine)
  p11 | p12 | p21 | p22      (c: the powers (p, p_bar) of eq. (7); default p12)
e.g. the modifier ablation on f2, as `launch/compare.py --configs=...` takes it:
  python launch/search.py --config=configs/nasbot_synthetic.py:f2+unit --config.workdir=runs/f2_unit
"""

import ml_collections

from configs import ea_synthetic


def nasbot_options(smoke: bool) -> ml_collections.ConfigDict:
  """The `nasbot` parts every NASBOT config starts from (the acquisition is NASBOT's EI)."""
  return ml_collections.ConfigDict(
    {
      "featurizer": "otmann",
      # solver: "exact" (POT) | "sinkhorn" (ott-jax, batched); params: "paper" | "nasbot_code" (the authors' code)
      "featurizer_config": {"solver": "exact", "params": "paper"},
      "surrogate": "gp",
      "surrogate_config": {
        "kernel": "combined",  # "combined" | "d" | "d_bar" (Fig. 7a)
        "p": 1.0,
        "p_bar": 2.0,
        "n_hyper_samples": 0,  # 0: maximum likelihood; > 0: posterior samples (App. B.1)
        "n_starts": 4 if smoke else 8,
        "fit_steps": 30 if smoke else 100,
        "warm_steps": 20,
      },
      "optimizer": "ea",
      # n_EA = clip(scale sqrt(t), lo, hi) (the authors' code); selection: "paper" | "nasbot_code"
      "optimizer_config": {"scale": 25.0, "lo": 10 if smoke else 50, "hi": 20 if smoke else 500, "selection": "paper"},
      "refit_every": 1,  # k > 1: full GP fit every k evaluations, warm_steps-step refits between
    }
  )


_KERNELS, _MODIFIERS = ("d", "d_bar"), ("unit", "structure")
_POWERS = {"p11": (1.0, 1.0), "p12": (1.0, 2.0), "p21": (2.0, 1.0), "p22": (2.0, 2.0)}


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  for group in (_KERNELS, _MODIFIERS, tuple(_POWERS)):
    if sum(t in group for t in tokens) > 1:
      raise ValueError(f"get_config: arg {arg!r} names more than one of {', '.join(group)}")
  own = [t for t in tokens if t in _KERNELS + _MODIFIERS + tuple(_POWERS)]
  c = ea_synthetic.get_config("+".join(t for t in tokens if t not in own))
  smoke = "smoke" in tokens
  c.strategy = "nasbot"
  c.strategy_config = nasbot_options(smoke)
  gp = c.strategy_config.surrogate_config
  gp.kernel = next((t for t in own if t in _KERNELS), "combined")
  gp.p, gp.p_bar = _POWERS[next((t for t in own if t in _POWERS), "p12")]
  c.space.modifiers = next((t for t in own if t in _MODIFIERS), "all")  # "all" | "unit" | "structure"
  c.budget = 12 if smoke else 200
  return c
