"""The authors' OTMANN (github.com/kirthevasank/nasbot, `nn/nn_comparators.py`) on nas_jax networks,
and the authors' networks (their examples and chains of their modifiers) as nas_jax networks, for
`bench_otmann.py --authors_code=PATH` and `bench_otmann_agreement.py --authors_code=PATH`. Nothing of
that repository is shipped here: PATH is the user's copy, made Python 3 with the standard library's
2to3 (the code is Python 2), then Python 2's integer division restored where `nn/nn_modifiers.py`
computes unit counts and slice indices:

  git clone https://github.com/kirthevasank/nasbot /tmp/nasbot
  python3.11 -m lib2to3 -w -n /tmp/nasbot/nn /tmp/nasbot/utils /tmp/nasbot/gp /tmp/nasbot/opt
  sed -i -e 's|) / len(|) // len(|' -e 's|num_modifiable_layers / num_groups|num_modifiable_layers // num_groups|' \
    /tmp/nasbot/nn/nn_modifiers.py

(lib2to3 ships with Python up to 3.12). Its distance needs numpy, scipy and POT, which nas_jax
installs. Its networks are built with the validity check off: that code asks every child of ip to
be a conv or res layer, which the bench's random CNNs need not be, and the check does not enter
the distance. Its modifiers draw from numpy's global random state, which `modified_networks` seeds.
"""

import argparse
import sys

import numpy as np
from scipy import sparse

from nas_jax.arch import json_io, labels

# The authors' modifiers make networks outside the search space's limits (more layers, wider
# fan-in, units below 8); the distance is defined on them all.
LIMITS = json_io.Limits(max_layers=1000, max_edges=10_000, max_degree=1000, max_mass=1e15, min_units=1, max_units=10**9)
MLP_TASK = "reg"  # regression MLPs: the authors' label set ends in 'linear'


def load(path: str):
  """(neural_network, nn_comparators) modules of the authors' code at `path`."""
  sys.path.insert(0, path)
  try:
    from nn import neural_network, nn_comparators
  except SyntaxError as e:
    raise SystemExit(f"--authors_code={path!r}: {e.msg} in {e.filename}: run 2to3 on it first (see {__file__})")
  return neural_network, nn_comparators


def networks(neural_network, archs) -> list:
  """The authors' network of each nas_jax CNN (ConvNeuralNetwork: labels, units, strides,
  connectivity) or MLP (a regression MultiLayerPerceptron: labels, units, connectivity)."""
  neural_network.ConvNeuralNetwork._child_check_if_valid_network = lambda self: True
  out = []
  for a in archs:
    obj = a.to_json()
    layers = obj["layers"]
    conn = np.zeros((len(layers), len(layers)))
    for i, j in obj["edges"]:
      conn[i, j] = 1.0
    labels_ = [layer["label"] for layer in layers]
    units = [layer.get("units") for layer in layers]
    if obj["kind"] == "mlp":
      all_labels = neural_network.get_mlp_layer_labels(MLP_TASK)
      out.append(neural_network.MultiLayerPerceptron(MLP_TASK, labels_, sparse.dok_matrix(conn), units, all_labels))
    else:
      strides = [layer.get("stride") if layer["label"].startswith(("conv", "res")) else None for layer in layers]
      all_labels = neural_network.get_cnn_layer_labels()
      out.append(neural_network.ConvNeuralNetwork(labels_, sparse.dok_matrix(conn), units, strides, all_labels))
  return out


def to_json(net) -> dict:
  """nas_jax's interchange JSON of one of the authors' networks, in their (topological) layer order.

  Units are kept where a nas_jax layer has them; elsewhere the authors' code ignores them too (ip
  sends one channel, pools pass theirs on, decision layers take a share of the non-processing
  mass), and their blocked MLPs carry stray numbers there."""
  kind = "cnn" if net.nn_class == "cnn" else "mlp"
  table = labels.label_table(kind)
  layers = []
  for i, name in enumerate(net.layer_labels):
    layer = {"label": name}
    lid = table.names.index(name)
    if table.has_units[lid]:
      units = net.num_units_in_each_layer[i]
      if units is None or units != int(units):
        raise ValueError(f"{kind} layer {i} ({name}): units {units!r}; expected a whole number")
      layer["units"] = int(units)
    if table.has_stride[lid]:
      layer["stride"] = int(net.strides[i])
    layers.append(layer)
  conn = sparse.coo_matrix(net.conn_mat)
  edges = sorted([int(i), int(j)] for i, j, v in zip(conn.row, conn.col, conn.data) if v)
  return {"kind": kind, "layers": layers, "edges": edges}


def modified_networks(kind: str, count: int, seed: int, rounds: int = 5) -> list:
  """`count` of the authors' networks: their examples (`nn_examples.generate_cnn_architectures`
  or `generate_mlp_architectures('reg')`), then `rounds` rounds of their `NNModifier` applied to
  the previous round's networks, 1-6 modifications each (as their `generate_many_neural_networks`),
  so later networks sit at the end of chains of up to 6 * rounds modifications. `load` first."""
  from nn import nn_examples, nn_modifiers

  options = argparse.Namespace(**{o["name"]: o["default"] for o in nn_modifiers.nn_modifier_args})
  modifier = nn_modifiers.NNModifier(None, options=options, reporter="silent")
  np.random.seed(seed)
  start = (
    nn_examples.generate_cnn_architectures() if kind == "cnn" else nn_examples.generate_mlp_architectures(MLP_TASK)
  )
  steps = np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0]) / 6
  out, current = list(start), list(start)
  per_round = -(-(count - len(start)) // rounds)
  for _ in range(rounds):
    current = modifier(current, per_round, steps)
    out += current
  return out[:count]


def distances(nn_comparators, nets: list, nu_str) -> tuple[np.ndarray, np.ndarray]:
  """(d, d_bar) [n_nu, n, n] by the authors' `OTMANNDistanceComputer.evaluate_single` per pair i < j
  (non-assignment penalty 1, mislabel coefficient 1, struct coefficient nu_str), as their GP calls it."""
  comp = nn_comparators.get_default_otmann_distance("cnn" if nets[0].nn_class == "cnn" else "mlp-reg", 1.0)
  n, k = len(nets), len(nu_str)
  d, d_bar = np.zeros((k, n, n)), np.zeros((k, n, n))
  for i in range(n):
    for j in range(i + 1, n):
      r = comp.evaluate_single(nets[i], nets[j], [1.0] * k, list(nu_str), dist_type="lp-emd")
      d[:, i, j] = d[:, j, i] = r[0::2]
      d_bar[:, i, j] = d_bar[:, j, i] = r[1::2]
  return d, d_bar
