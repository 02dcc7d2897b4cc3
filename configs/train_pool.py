"""Trains the paper's initial pool (NASBOT App. B.3; Figs. 20-21) on one dataset and prints, per network,
its validation accuracy (or MSE), seconds per epoch, compile seconds and peak RSS.

Run (`:smoke` = the smallest pool CNN, C8, for one epoch; used by tests):
  python launch/train.py --config=configs/train_pool.py[:smoke]
MLP pool on diabetes, or on a table of yours:
  python launch/train.py --config=configs/train_pool.py --config.kind=mlp --config.dataset=diabetes
  python launch/train.py --config=configs/train_pool.py --config.kind=mlp \
    --config.dataset=data.csv --config.target=price
"""

import ml_collections

from configs import common


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  smoke = common.is_smoke(arg)
  c = ml_collections.ConfigDict()
  c.kind = "cnn"  # "cnn" (Fig. 20 pool) | "mlp" (Fig. 21 pool)
  c.dataset = "digits"  # "digits" | "diabetes" | a .csv/.npz path (then set target and task)
  c.target = ""  # a table's target column
  c.task = "regression"  # a table's task: "regression" | "classification"
  c.indices = (7,) if smoke else tuple(range(10))  # pool members, 0-based (C1 is 0)
  c.epochs = 1 if smoke else 5
  c.batch_size = 32
  c.learning_rate = 1e-3
  c.optimizer = "adam"  # "adam" | "sgd" | "momentum"
  c.schedule = "cosine"  # "constant" | "cosine"
  c.weight_decay = 0.0
  c.seed = 0  # the data split, initialisation and shuffling
  c.workdir = ""  # if set, results are also written to <workdir>/train_pool.json
  return c
