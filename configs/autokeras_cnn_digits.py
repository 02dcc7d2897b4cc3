"""Auto-Keras (NASNM) on scikit-learn's digits: networks of the Auto-Keras family grown by network
morphism, a GP with the edit-distance kernel (Bourgain embedding), UCB and the tree search of
Alg. 1; each child is trained warm-started from its ancestor's morphed weights (Auto-Keras Sec. 3).

Arguments, joined by "+" (e.g. `:otmann`, `:smoke+ea`):
  smoke   tiny networks (width 8), one epoch, 3 evaluations, children at most 2 morphs away,
          inline; used by tests.
  small   the CPU comparison setting: width 16, 4 epochs, children at most 4 morphs from the
          history (`max_ops`), 12 evaluations.
  otmann  cross-over: the same tree search on NASBOT's OTMANN GP instead of the edit kernel.
  ea      cross-over: NASBOT's EA maximises the edit-distance UCB (mutants train from scratch).
  random  random search on the same space (random morph chains, trained from scratch).

Run:
  python launch/search.py --config=configs/autokeras_cnn_digits.py --config.workdir=runs/autokeras
  python launch/search.py --config=configs/autokeras_cnn_digits.py --config.strategy_config.beta=10 ...
Weights of every trained network go to WORKDIR/weights (`task.weights_dir` moves them).
"""

import ml_collections

from configs import common

_TOKENS = ("smoke", "small", "otmann", "ea", "random")


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  tokens = [t for t in arg.split("+") if t]
  bad = [t for t in tokens if t not in _TOKENS]
  if bad or ("random" in tokens and len({"otmann", "ea"} & set(tokens))):
    raise ValueError(
      f"get_config: arg must be tokens from {', '.join(_TOKENS)} joined by '+' (random takes"
      f" no kernel or optimizer token); got {arg!r}"
    )
  smoke, small = "smoke" in tokens, "small" in tokens
  c = ml_collections.ConfigDict()
  c.strategy = "random" if "random" in tokens else "autokeras"
  c.strategy_config = ml_collections.ConfigDict()
  if c.strategy == "autokeras":
    c.strategy_config = ml_collections.ConfigDict(
      {
        "beta": 2.576,  # UCB weight (code; the paper sweeps 1e-2..1e2)
        "lam": 1.0,  # skip-connection weight of the edit distance
        "target": "cost",  # the GP models cost = 1 - accuracy (paper) | "accuracy" (code)
        "n_children": 8,  # morphs sampled per expansion (code)
        "variant": "paper",  # SA test per child (paper) | "code": at pop time
        "num_classes": 10,
        "max_ops": 2 if smoke else 4 if small else 0,  # 0: the paper's unbounded tree (see autokeras.autokeras)
      }
    )
    # The cross-overs name the parts that replace the edit kernel's GP or the tree search.
    if "otmann" in tokens:
      c.strategy_config.update(featurizer="otmann", surrogate="gp", surrogate_config={"n_starts": 8, "fit_steps": 100})
    if "ea" in tokens:
      c.strategy_config.update(optimizer="ea", optimizer_config={"n_ea": 200, "pool": False})
  c.space = ml_collections.ConfigDict(
    {
      "name": "autokeras",
      "kind": "autokeras",
      "width": 8 if smoke else 16 if small else 64,
      "n_blocks": 3,
      "kernels": (3, 5),
      "max_width": 1024,
      "max_layers": 100,
    }
  )
  c.task = ml_collections.ConfigDict(
    {
      "name": "morph_train",
      "dataset": "digits",
      "epochs": 1 if smoke else 4 if small else 10,
      "patience": 3,  # early stopping on the validation loss (Auto-Keras Sec. 4.3; code tau = 5, min delta 1e-4)
      "batch_size": 32,
      "learning_rate": 1e-3,
      "optimizer": "adam",
      "schedule": "constant",  # the code's Adam at 1e-3 during the search
      "weight_decay": 0.0,
      "data_seed": 0,
      "target": "",
      "task_type": "classification",
      "weights_dir": "",  # "" = WORKDIR/weights
      "morph_noise": True,  # the authors' code's symmetry-breaking noise on new weights
    }
  )
  c.budget = 3 if smoke else 12 if small else 30
  c.num_workers = 1
  c.prefetch = 0 if smoke else 1  # Auto-Keras Sec. 4.4: the next proposal is made while a network trains
  executor, timeout = ("inline", 0.0) if smoke else ("local", 3600.0)
  return common.add_run_fields(c, executor=executor, eval_timeout_s=timeout, scheduler=False)
