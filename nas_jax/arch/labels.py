"""Layer-label vocabularies per network kind, and the per-label attributes that graph code reads.

A label id is an index into `vocabulary(kind)`. Attribute tables are numpy constants so that jitted
code can gather from them with a traced label array.
"""

from __future__ import annotations

import enum
import types
from typing import NamedTuple

import numpy as np

__all__ = [
  "Role",
  "KINDS",
  "LAYER_GRAPH_KINDS",
  "JSON_KINDS",
  "CELL_LAYER_KINDS",
  "LabelTable",
  "vocabulary",
  "label_table",
  "label_id",
  "group_names",
]


class Role(enum.IntEnum):
  """What a label does in the network; decides masses, units and validity rules."""

  IP = 0
  OP = 1
  CONV = 2  # conv3/5/7: units = filters, stride 1 or 2
  RES = 3  # res3/5/7: two convs with a skip; units and stride as conv
  POOL = 4  # max-pool / avg-pool: no units, stride 2, channels pass through
  FC = 5  # CNN fully connected layer on flattened input
  ACT = 6  # MLP dense layer followed by the named activation
  DECISION = 7  # softmax (classification) or linear (regression); feeds op
  CELL_OP = 8  # an operation node of a cell space (NAS-Bench-101/201); no units
  SKIP = 9  # autokeras add-skip branch: max-pools to the target's size, then a 1x1 conv with bias
  CONCAT = 10  # autokeras concat-skip: concat(main, pooled skip) -> 1x1 conv -> BN -> ReLU
  GAP = 11  # global average pool: [B, H, W, C] -> [B, C]


_CNN = (
  ("ip", Role.IP, 0),
  ("op", Role.OP, 0),
  ("conv3", Role.CONV, 3),
  ("conv5", Role.CONV, 5),
  ("conv7", Role.CONV, 7),
  ("res3", Role.RES, 3),
  ("res5", Role.RES, 5),
  ("res7", Role.RES, 7),
  ("max-pool", Role.POOL, 3),
  ("avg-pool", Role.POOL, 3),
  ("fc", Role.FC, 0),
  ("softmax", Role.DECISION, 0),
)
_MLP = (
  ("ip", Role.IP, 0),
  ("op", Role.OP, 0),
  ("relu", Role.ACT, 0),
  ("crelu", Role.ACT, 0),
  ("leaky-relu", Role.ACT, 0),
  ("softplus", Role.ACT, 0),
  ("elu", Role.ACT, 0),
  ("logistic", Role.ACT, 0),
  ("tanh", Role.ACT, 0),
  ("linear", Role.DECISION, 0),
  ("softmax", Role.DECISION, 0),
)
_NB201 = (
  ("input", Role.IP, 0),
  ("output", Role.OP, 0),
  ("skip_connect", Role.CELL_OP, 0),
  ("nor_conv_1x1", Role.CELL_OP, 1),
  ("nor_conv_3x3", Role.CELL_OP, 3),
  ("avg_pool_3x3", Role.CELL_OP, 3),
)
_NB101 = (
  ("input", Role.IP, 0),
  ("output", Role.OP, 0),
  ("conv3x3-bn-relu", Role.CELL_OP, 3),
  ("conv1x1-bn-relu", Role.CELL_OP, 1),
  ("maxpool3x3", Role.CELL_OP, 3),
)

# Layer graphs of cells as networks (`nas_jax.arch.cell_graphs`): the benchmarks' op names, ops
# with weights as convs (units = output channels), pools as pools; identities are edges, not layers.
_NB201_LAYERS = (
  ("input", Role.IP, 0),
  ("output", Role.OP, 0),
  ("nor_conv_1x1", Role.CONV, 1),
  ("nor_conv_3x3", Role.CONV, 3),
  ("avg_pool_3x3", Role.POOL, 3),
)
_NB101_LAYERS = (
  ("input", Role.IP, 0),
  ("output", Role.OP, 0),
  ("conv3x3-bn-relu", Role.CONV, 3),
  ("conv1x1-bn-relu", Role.CONV, 1),  # also the 1x1 projections of the cell input
  ("maxpool3x3", Role.POOL, 3),
)

# The Auto-Keras reference family (the authors' code's, with post-activation blocks): conv blocks conv -> BN -> merge of
# add-skips -> ReLU, 2x2 max-pools, a global-average-pool head with ReLU dense blocks. Skips are
# vertices: `conv1` (add) and `concat` (the projection of a concatenation).
_AUTOKERAS = (
  ("ip", Role.IP, 0),
  ("op", Role.OP, 0),
  ("conv3", Role.CONV, 3),
  ("conv5", Role.CONV, 5),
  ("conv1", Role.SKIP, 1),
  ("concat", Role.CONCAT, 1),
  ("max-pool", Role.POOL, 2),
  ("gap", Role.GAP, 0),
  ("fc", Role.FC, 0),
  ("softmax", Role.DECISION, 0),
)

# Layer groups of the grouped structural cost (NASBOT App. A.3); "all" is always first.
_GROUPS = types.MappingProxyType(
  {
    "cnn": (
      ("all", None),
      ("conv", ("conv3", "conv5", "conv7", "res3", "res5", "res7")),
      ("pool", ("max-pool", "avg-pool")),
      ("fc", ("fc",)),
    ),
    "mlp": (
      ("all", None),
      ("rec", ("relu", "crelu", "leaky-relu", "softplus", "elu")),
      ("sig", ("logistic", "tanh")),
    ),
    "autokeras": (
      ("all", None),
      ("conv", ("conv3", "conv5", "conv1", "concat")),
      ("pool", ("max-pool", "gap")),
      ("fc", ("fc",)),
    ),
    "nb201": (("all", None),),
    "nb101": (("all", None),),
    "nb201_layers": (
      ("all", None),
      ("conv", ("nor_conv_1x1", "nor_conv_3x3")),
      ("pool", ("avg_pool_3x3",)),
    ),
    "nb101_layers": (
      ("all", None),
      ("conv", ("conv3x3-bn-relu", "conv1x1-bn-relu")),
      ("pool", ("maxpool3x3",)),
    ),
  }
)
_VOCAB = types.MappingProxyType(
  {
    "cnn": _CNN,
    "mlp": _MLP,
    "nb201": _NB201,
    "nb101": _NB101,
    "autokeras": _AUTOKERAS,
    "nb201_layers": _NB201_LAYERS,
    "nb101_layers": _NB101_LAYERS,
  }
)
KINDS = tuple(_VOCAB)
# Kinds whose architectures use the layer-graph interchange JSON and NASBOT's validity rules;
# cell kinds are built by `nas_jax.arch.cell` (ops as nodes, input and output as ip/op).
LAYER_GRAPH_KINDS = ("cnn", "mlp")
# Kinds written as interchange JSON: the layer graphs and the Auto-Keras family, whose
# main-chain rules live in `nas_jax.arch.main_chain`.
JSON_KINDS = LAYER_GRAPH_KINDS + ("autokeras",)
# Kinds of cell networks (`nas_jax.arch.cell_graphs.cell_layer_graph`). Their layers *sum* their
# inputs, so a layer's input has as many channels as its smallest summand (not the sum), and
# their ip stores the cell input's channel count as its units (not NASBOT's 1 unit).
CELL_LAYER_KINDS = ("nb201_layers", "nb101_layers")


class LabelTable(NamedTuple):
  """Per-label attributes of one kind; every array is indexed by label id.

  Attributes:
    names: label names, in id order.
    role: [L] int32, a `Role` per label.
    kernel: [L] int32, spatial kernel size (0 where none).
    has_units: [L] bool, whether layers with this label carry a unit count.
    has_stride: [L] bool, whether the JSON stride field may be set (conv and res).
    groups: [n_groups, L] bool, membership of each structural-cost group; row 0 is "all".
  """

  names: tuple[str, ...]
  role: np.ndarray
  kernel: np.ndarray
  has_units: np.ndarray
  has_stride: np.ndarray
  groups: np.ndarray


def _check_kind(kind: str) -> None:
  if kind not in _VOCAB:
    raise ValueError(f"kind: {kind!r} is unknown; allowed: {', '.join(KINDS)}")


def vocabulary(kind: str) -> tuple[str, ...]:
  """The label names of `kind` (one of `KINDS`), in label-id order."""
  return label_table(kind).names


def group_names(kind: str) -> tuple[str, ...]:
  """Names of the structural-cost groups of `kind`, "all" first (NASBOT App. A.3)."""
  _check_kind(kind)
  return tuple(name for name, _ in _GROUPS[kind])


def label_id(kind: str, name: str) -> int:
  """The id of label `name` in `kind`; ValueError listing the allowed names otherwise."""
  names = vocabulary(kind)
  if name not in names:
    raise ValueError(f"{name!r} is not a {kind} label; allowed: {', '.join(names)}")
  return names.index(name)


def _build_table(kind: str) -> LabelTable:
  entries = _VOCAB[kind]
  names = tuple(n for n, _, _ in entries)
  role = np.array([r for _, r, _ in entries], np.int32)
  groups = np.array([[members is None or n in members for n in names] for _, members in _GROUPS[kind]], bool)
  table = LabelTable(
    names=names,
    role=role,
    kernel=np.array([k for _, _, k in entries], np.int32),
    has_units=np.isin(role, (Role.CONV, Role.RES, Role.FC, Role.ACT, Role.SKIP, Role.CONCAT)),
    has_stride=np.isin(role, (Role.CONV, Role.RES)) & (kind != "autokeras"),  # its convs keep the size
    groups=groups,
  )
  for array in table[1:]:
    array.setflags(write=False)  # shared by every caller
  return table


# Built at import from the vocabularies above: a constant, read by every caller.
_TABLES = types.MappingProxyType({kind: _build_table(kind) for kind in KINDS})


def label_table(kind: str) -> LabelTable:
  """The attribute table of `kind`."""
  _check_kind(kind)
  return _TABLES[kind]
