"""`Proxy`: a zero-cost proxy as a scorer calls it, the score function and what it reads."""

from __future__ import annotations

import enum
from typing import Callable, NamedTuple

import jax

__all__ = ["Reads", "Proxy"]


class Reads(enum.IntEnum):
  """What a proxy's score function takes.

  NET: `score(net: ProxyNet, dtype) -> []`, data-free, computing in the scorer's dtype (synflow).
  BATCH: `score(net: ProxyNet, batch: (x [B, *input_shape], y [B] int)) -> []`.
  CELL: `score(ops, spec) -> []`, a cost of the architecture itself (params, FLOPs); no network is
    built. For NAS-Bench-201, ops [6] int and an `Nb201Spec`.
  """

  NET = 0
  BATCH = 1
  CELL = 2


class Proxy(NamedTuple):
  """A named proxy's score function (pure, traceable) and what it reads; higher scores are
  meant to predict higher accuracy."""

  score: Callable[..., jax.Array]
  reads: Reads

  @property
  def needs_data(self) -> bool:
    return self.reads == Reads.BATCH
