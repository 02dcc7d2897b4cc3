"""Random search over CNNs, trained on scikit-learn's digits (8x8 images, 10 classes); the score is
validation accuracy (maximised), and the test accuracy is recorded.

Run (`:smoke` = two small networks, one epoch, inline; used by tests):
  python launch/search.py --config=configs/random_cnn_digits.py[:smoke] --config.workdir=runs/random_cnn_digits
On a Ray cluster:
  python launch/search.py --config=configs/random_cnn_digits.py --config.executor=ray \
    --config.ray_address=auto --config.workdir=runs/random_cnn_digits
"""

import ml_collections

from configs import common


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  smoke = common.is_smoke(arg)
  c = ml_collections.ConfigDict()
  c.strategy = "random"
  c.strategy_config = ml_collections.ConfigDict()  # random search reads no options
  # smoke: at most 8 layers, so networks are small (the pools' networks are longer and left out).
  c.space = ml_collections.ConfigDict({"name": "layer_graph", "kind": "cnn", "max_layers": 8 if smoke else 60})
  c.task = ml_collections.ConfigDict(
    {
      "name": "train",
      "dataset": "digits",  # "digits", "diabetes" or a .csv/.npz path (then set target and task_type)
      "epochs": 1 if smoke else 8,
      "batch_size": 32,
      "learning_rate": 1e-3,
      "optimizer": "adam",  # "adam" | "sgd" | "momentum"
      "schedule": "cosine",  # "constant" | "cosine"
      "weight_decay": 0.0,
      "data_seed": 0,  # the train/validation/test split; fixed across trials and seeds
      "target": "",
      "task_type": "classification",
      # "specialised" (a program per network) | "padded" (one program per padding; on a CPU far slower for CNNs, README) | "auto"
      "trainer": "specialised",
      # epochs a scheduler may stop at, ending at epochs, e.g. "1,3,9" with epochs 9; "" for none
      "fidelities": "",
      "checkpoint_dir": "",  # continued networks' checkpoints; "" for WORKDIR/checkpoints
    }
  )
  c.budget = 2 if smoke else 60
  c.num_workers = 1 if smoke else 2
  return common.add_run_fields(c, executor="inline" if smoke else "local", eval_timeout_s=0.0 if smoke else 3600.0)
