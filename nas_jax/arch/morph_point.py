"""Points of the Auto-Keras space (Auto-Keras Sec. 3.2-3.3): a network and where it came from, so
that training can warm-start from its parent's weights; their keys and JSON.

A `MorphPoint` is the architecture and, when it was made by morphing an evaluated network, the
name of that parent's stored weights and the ops from it. Its JSON is the architecture's JSON
plus a "morph" entry, so the journal records each network's parent and op list. Duplicates are networks with equal
descriptors (as in the authors' code). The space over these points is `nas_jax.spaces.morph_space`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NamedTuple

import numpy as np

from nas_jax.arch import main_chain, morphism
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.json_io import Limits, show

__all__ = ["MorphPoint", "network_json", "weights_id", "descriptor_key", "morph_point_to_json", "morph_point_from_json"]


class MorphPoint(NamedTuple):
  """One network of the space.

  Attributes:
    arch: the autokeras Architecture (trimmed to its layers).
    parent: the name under which the evaluated network it is morphed from stored its weights (the
      "weights" its evaluation journalled, e.g. `<weights_id>-<seed>`), or None (from scratch).
    parent_trial: that network's trial id, for readers of the journal; None without a parent.
    ops: the morphs from the parent, in order (empty without a parent).
  """

  arch: Architecture
  parent: str | None = None
  parent_trial: int | None = None
  ops: tuple[morphism.Op, ...] = ()


def network_json(obj: dict) -> dict:
  """The network's own JSON: `obj` without the "morph" record of how an Auto-Keras search reached
  it (`morph_point_to_json`)."""
  return {k: v for k, v in obj.items() if k != "morph"}


def weights_id(arch_json: dict) -> str:
  """A digest of a network's layers and edges (slot order included, since parameters are named by
  slot): the first part of the name its trained weights are stored under."""
  body = {k: arch_json[k] for k in ("kind", "layers", "edges")}
  return hashlib.blake2b(json.dumps(body, sort_keys=True).encode(), digest_size=12).hexdigest()


def descriptor_key(arch: Architecture) -> str:
  """desc(f) as a string (Auto-Keras Sec. 3.1): conv widths, hidden fc widths, sorted skip triples."""
  chain = main_chain.chain_view(arch)
  units = np.asarray(arch.units)
  return json.dumps(
    [[int(units[c]) for c in chain.convs], [int(units[f]) for f in chain.fcs], sorted(chain.skip_triples())]
  )


def morph_point_to_json(point: MorphPoint) -> dict:
  """The architecture's interchange JSON, plus {"morph": {parent, parent_trial, ops}} with a parent."""
  obj = point.arch.to_json()
  if point.parent is not None:
    obj["morph"] = {
      "parent": point.parent,
      "parent_trial": point.parent_trial,
      "ops": [o.to_json() for o in point.ops],
    }
  return obj


def morph_point_from_json(obj: Any, limits: Limits) -> MorphPoint:
  """`morph_point_to_json`'s inverse, the architecture validated against `limits`."""
  if not isinstance(obj, dict):
    raise ValueError(f"architecture: {type(obj).__name__} given; expected an object")
  arch = Architecture.from_json(network_json(obj), limits=limits)
  if arch.kind != main_chain.KIND:
    raise ValueError(f"kind: {show(arch.kind)}; the autokeras space holds {show(main_chain.KIND)} networks")
  morph = obj.get("morph")
  if morph is None:
    return MorphPoint(arch)
  if not isinstance(morph, dict) or set(morph) != {"parent", "parent_trial", "ops"}:
    raise ValueError(f"morph: {show(morph)}; expected an object with keys parent, parent_trial, ops")
  parent, trial, ops = morph["parent"], morph["parent_trial"], morph["ops"]
  if not isinstance(parent, str) or not parent:
    raise ValueError(
      f"morph.parent: {show(parent)}; expected the parent's stored weights name (omit morph without a parent)"
    )
  if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int) or trial < 0):
    raise ValueError(f"morph.parent_trial: {show(trial)}; expected a trial id >= 0 or null")
  if not isinstance(ops, list):
    raise ValueError(f"morph.ops: {show(ops)}; expected a list of ops")
  return MorphPoint(arch, parent, trial, tuple(morphism.Op.from_json(o) for o in ops))
