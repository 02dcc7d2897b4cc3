"""The Auto-Keras search space (Auto-Keras Sec. 3.2-3.3, with the authors' code's family) as a `Space` of `MorphPoint`s
(`nas_jax.arch.morph_point`): random networks morphed from the initial ones, one random morph as
a mutation, every morph as the neighbourhood.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nas_jax.arch import main_chain, morphism
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.json_io import Limits
from nas_jax.arch.morph_point import (
  MorphPoint,
  descriptor_key,
  morph_point_from_json,
  morph_point_to_json,
  weights_id,
)
from nas_jax.spaces import graph_edit
from nas_jax.spaces.space import Space, TreeMoves

__all__ = ["morph_space"]

_MAX_RANDOM_OPS = 10  # `sample`: random networks are 0..10 random morphs from an initial network


def morph_space(
  *,
  kind: str = main_chain.KIND,
  width: int = 64,
  n_blocks: int = 3,
  kernels=(3, 5),
  max_width: int = 1024,
  max_layers: int = 100,
) -> Space:
  """The Auto-Keras space.

  Args:
    kind: "autokeras" (the only kind; a config field like every space's).
    width, n_blocks: the initial networks (`morphism.initial_architectures`).
    kernels: kernel sizes of blocks that deep inserts (code 0.1.x: {3, 5}; 0.2.7+: {3}).
    max_width, max_layers: no op makes a wider layer or more layers (code: 1024 and 100).

  Returns:
    A Space of MorphPoints. `sample` makes random networks (0..10 random morphs from an initial
    one, trained from scratch); `mutate` one random morph (ok=False, the point unchanged, when
    no morph applies within the limits); `neighbours` every morph.
  """
  if kind != main_chain.KIND:
    raise ValueError(f"kind: {kind!r}; the autokeras space holds {main_chain.KIND!r} networks only")
  if not kernels or any(k not in (3, 5) for k in kernels):
    raise ValueError(f"kernels: {kernels!r}; choose kernel sizes among 3 and 5")
  for name, v in (("max_width", max_width), ("max_layers", max_layers)):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"{name}: {v!r}; expected an integer >= 1")
  limits = dict(kernels=tuple(kernels), max_width=max_width, max_layers=max_layers)
  initial_archs = morphism.initial_architectures(width=width, n_blocks=n_blocks)
  json_limits = Limits(
    max_layers=max_layers + 1,
    max_edges=1 << 20,
    max_degree=1 << 20,
    max_mass=float("inf"),
    min_units=1,
    max_units=max_width,
  )

  def check(point: Any, where: str) -> None:
    if not isinstance(point, MorphPoint):
      raise TypeError(f"{where}: {type(point).__name__} given; expected a MorphPoint")

  def ops_of(arch: Architecture, rng: np.random.Generator, n: int) -> list[morphism.Op]:
    return morphism.sample_ops(arch, rng, n, **limits)

  def sample(key, n: int) -> list[MorphPoint]:
    rng = graph_edit.host_rng(key)
    out = []
    for _ in range(n):
      arch = initial_archs[rng.integers(len(initial_archs))]
      for _ in range(rng.integers(_MAX_RANDOM_OPS + 1)):
        ops = ops_of(arch, rng, 1)
        if ops:
          arch = morphism.apply_op(arch, ops[0])
      out.append(MorphPoint(arch))
    return out

  def mutate(point: MorphPoint, key) -> tuple[MorphPoint, bool]:
    check(point, "mutate: point")
    ops = ops_of(point.arch, graph_edit.host_rng(key), 1)
    # Every op that applies lengthens the conv list, doubles a width or adds a new skip, so it
    # changes the descriptor; ok=False only when none applies within the limits.
    return (MorphPoint(morphism.apply_op(point.arch, ops[0])), True) if ops else (point, False)

  def neighbours(point: MorphPoint) -> list[MorphPoint]:
    check(point, "neighbours: point")
    return [MorphPoint(morphism.apply_op(point.arch, o)) for o in morphism.candidate_ops(point.arch, **limits)]

  def canonical_key(point: MorphPoint) -> str:
    check(point, "canonical_key: point")
    return descriptor_key(point.arch)

  def to_json(point: MorphPoint) -> dict:
    check(point, "to_json: point")
    return morph_point_to_json(point)

  def initial(n: int | None = None) -> list[MorphPoint]:
    points = [MorphPoint(a) for a in initial_archs]
    return points if n is None else points[:n]

  def expand(node: MorphPoint, rng: np.random.Generator, n: int, max_ops: int) -> list:
    """Up to n sampled morphs of a tree node, each child holding its ops from the root."""
    if max_ops and len(node.ops) >= max_ops:
      return []
    return [(o, MorphPoint(morphism.apply_op(node.arch, o), ops=node.ops + (o,))) for o in ops_of(node.arch, rng, n)]

  def descend(node: MorphPoint, ancestor: MorphPoint, info: dict, trial: int) -> MorphPoint:
    """The chosen node, warm-started from its evaluated ancestor: the weights its evaluation
    stored ("weights" in its task info), else those named by its architecture."""
    stored = info.get("weights")
    parent = stored if isinstance(stored, str) and stored else weights_id(ancestor.arch.to_json())
    return MorphPoint(node.arch, parent, int(trial), tuple(node.ops))

  return Space(
    name="autokeras",
    kind=main_chain.KIND,
    sample=sample,
    mutate=mutate,
    neighbours=neighbours,
    canonical_key=canonical_key,
    to_json=to_json,
    from_json=lambda obj: morph_point_from_json(obj, json_limits),
    initial=initial,
    layer_graph=lambda point: point.arch,
    tree=TreeMoves(root=lambda point: MorphPoint(point.arch), expand=expand, descend=descend),
  )
