"""Random search over regression MLPs, trained on scikit-learn's diabetes data; the score is the
validation MSE on standardised targets (minimised), and the test MSE is recorded.

Run (`:smoke` = two small networks, one epoch, inline; used by tests):
  python launch/search.py --config=configs/random_mlp_diabetes.py[:smoke] --config.workdir=runs/random_mlp_diabetes
On a Ray cluster:
  python launch/search.py --config=configs/random_mlp_diabetes.py --config.executor=ray \
    --config.ray_address=auto --config.workdir=runs/random_mlp_diabetes

Executor and training fields are those of `random_cnn_digits.py`.
"""

import ml_collections

from configs import random_cnn_digits


def get_config(arg: str = "") -> ml_collections.ConfigDict:
  c = random_cnn_digits.get_config(arg)
  c.space.kind = "mlp"
  c.task.dataset = "diabetes"  # "digits", "diabetes" or a .csv/.npz path (then set target and task_type)
  c.task.epochs = 1 if arg == "smoke" else 50
  return c
