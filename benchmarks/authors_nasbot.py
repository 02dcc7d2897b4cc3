"""The authors' OTMANN (github.com/kirthevasank/nasbot, `nn/nn_comparators.py`) on nas_jax networks,
for `bench_otmann.py --authors_code=PATH`. Nothing of that repository is shipped here: PATH is the
user's copy, made Python 3 with the standard library's 2to3 (the code is Python 2):

  git clone https://github.com/kirthevasank/nasbot /tmp/nasbot
  python3.11 -m lib2to3 -w -n /tmp/nasbot/nn /tmp/nasbot/utils /tmp/nasbot/gp /tmp/nasbot/opt

(lib2to3 ships with Python up to 3.12). Its distance needs numpy, scipy and POT, which nas_jax
installs. Its networks are built with the validity check off: that code asks every child of ip to
be a conv or res layer, which the bench's random CNNs need not be, and the check does not enter
the distance.
"""

import sys

import numpy as np
from scipy import sparse


def load(path: str):
  """(neural_network, nn_comparators) modules of the authors' code at `path`."""
  sys.path.insert(0, path)
  try:
    from nn import neural_network, nn_comparators
  except SyntaxError as e:
    raise SystemExit(f"--authors_code={path!r}: {e.msg} in {e.filename}: run 2to3 on it first (see {__file__})")
  return neural_network, nn_comparators


def networks(neural_network, archs) -> list:
  """The authors' ConvNeuralNetwork of each CNN (labels, units, strides, connectivity)."""
  neural_network.ConvNeuralNetwork._child_check_if_valid_network = lambda self: True
  out = []
  for a in archs:
    obj = a.to_json()
    layers = obj["layers"]
    conn = np.zeros((len(layers), len(layers)))
    for i, j in obj["edges"]:
      conn[i, j] = 1.0
    labels = [layer["label"] for layer in layers]
    strides = [layer.get("stride") if layer["label"].startswith(("conv", "res")) else None for layer in layers]
    units = [layer.get("units") for layer in layers]
    labels_all = neural_network.get_cnn_layer_labels()
    out.append(neural_network.ConvNeuralNetwork(labels, sparse.dok_matrix(conn), units, strides, labels_all))
  return out


def distances(nn_comparators, nets: list, nu_str) -> tuple[np.ndarray, np.ndarray]:
  """(d, d_bar) [n_nu, n, n] by the authors' `OTMANNDistanceComputer.evaluate_single` per pair i < j
  (non-assignment penalty 1, mislabel coefficient 1, struct coefficient nu_str), as their GP calls it."""
  comp = nn_comparators.get_default_otmann_distance("cnn", 1.0)
  n, k = len(nets), len(nu_str)
  d, d_bar = np.zeros((k, n, n)), np.zeros((k, n, n))
  for i in range(n):
    for j in range(i + 1, n):
      r = comp.evaluate_single(nets[i], nets[j], [1.0] * k, list(nu_str), dist_type="lp-emd")
      d[:, i, j] = d[:, j, i] = r[0::2]
      d_bar[:, i, j] = d_bar[:, j, i] = r[1::2]
  return d, d_bar
