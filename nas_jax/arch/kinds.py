"""One descriptor value per network kind: what code outside `arch` asks of a kind.

A point's `kind` string (`Architecture.kind`, `Cell.kind`) names its label vocabulary
(`labels.vocabulary`); everything else that depends on the kind, the rank of the network's input,
which model builds it, its cost model, its padded trainer, its encodings' defaults, is a field of
the kind's `Kind`, looked up once with `of(point)` and read where the kind matters, so that no
caller tests the string. A new kind is one `Kind` in `ALL` (and its vocabulary in `labels`).
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

__all__ = ["Kind", "ALL", "CNN", "MLP", "AUTOKERAS", "NB201", "NB101", "NB201_LAYERS", "NB101_LAYERS", "get", "of"]


@dataclasses.dataclass(frozen=True)
class Kind:
  """What a network kind is to the code that builds, costs, trains and encodes its networks.

  Attributes:
    name: the kind string of its points, a key of `labels.vocabulary`.
    input_rank: the rank of one example of its networks' input: 1 for flat features (D,), 3 for
      images (H, W, C), channels last.
    network: `models.arch_net.ArchNet` builds it (and `models.network_costs` costs it): the layer
      graphs of NASBOT and Auto-Keras' chains. Cells are networks of their benchmarks instead.
    main_chain: Auto-Keras' family: one main chain plus skip vertices, under `main_chain`'s rules
      and with its own layer semantics in the model and the cost model.
    padded: a padded model (`models.padded_model`) trains populations of it in one program.
    path_cutoff: for a cell kind, the truncated path encoding's default length (the BANANAS
      authors' code); 0 for the others.
  """

  name: str
  input_rank: int
  network: bool = False
  main_chain: bool = False
  padded: bool = False
  path_cutoff: int = 0

  @property
  def example_shape(self) -> str:
    """The shape of one example in words, "(D,)" or "(H, W, C)", as messages name it."""
    return "(D,)" if self.input_rank == 1 else "(H, W, C)"

  @property
  def batch_shape(self) -> str:
    """The shape of a batch in words, "[B, D]" or "[B, H, W, C]", as messages name it."""
    return "[B, D]" if self.input_rank == 1 else "[B, H, W, C]"


CNN = Kind("cnn", input_rank=3, network=True, padded=True)  #: NASBOT's CNNs (images)
MLP = Kind("mlp", input_rank=1, network=True, padded=True)  #: NASBOT's MLPs (flat features)
AUTOKERAS = Kind("autokeras", input_rank=3, network=True, main_chain=True)  #: Auto-Keras' chains of blocks
NB201 = Kind("nb201", input_rank=3, path_cutoff=30)  #: NAS-Bench-201 cells
NB101 = Kind("nb101", input_rank=3, path_cutoff=40)  #: NAS-Bench-101 cells
#: The layer graphs of NB201 cells (`cell_graphs`), compared by OTMANN; no model builds them.
NB201_LAYERS = Kind("nb201_layers", input_rank=3)
#: The layer graphs of NB101 cells (`cell_graphs`), compared by OTMANN; no model builds them.
NB101_LAYERS = Kind("nb101_layers", input_rank=3)
#: Every kind, in `labels.KINDS` order.
ALL = (CNN, MLP, NB201, NB101, AUTOKERAS, NB201_LAYERS, NB101_LAYERS)
_BY_NAME = MappingProxyType({k.name: k for k in ALL})


def get(name: str) -> Kind:
  """The `Kind` named `name`; ValueError listing the known kinds otherwise."""
  if not isinstance(name, str) or name not in _BY_NAME:
    raise ValueError(f"kind: {name!r} is unknown; allowed: {', '.join(_BY_NAME)}")
  return _BY_NAME[name]


def of(point: Any) -> Kind:
  """The `Kind` of a point, a batch of points or a model: anything with a `kind` string
  (`Architecture`, `Cell`, `host_graph.HostGraph`, `ArchNet`)."""
  return get(point.kind)
