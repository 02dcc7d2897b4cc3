"""Host-side editing of layer graphs (`HostGraph`s): image sizes, reachability, validated write-back.

Graph surgery (NASBOT's modifiers) is not a jit workload: it edits small numpy arrays, then
returns to a padded `Architecture` through `from_json`, which checks every validity rule
(NASBOT Sec. 2.2; App. B.2-B.3).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import numpy as np

from nas_jax.arch import json_io
from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture, next_power_of_two, zero_padded
from nas_jax.arch.host_graph import HostGraph
from nas_jax.arch.json_io import FLAT, Limits, from_json

__all__ = [
  "Edit",
  "FLAT",
  "append_layers",
  "finish",
  "image_sizes",
  "reachability",
  "host_rng",
  "child_key",
]

Role = labels_lib.Role


class Edit(NamedTuple):
  """One modifier's graph edit, split so it can be drawn at random or enumerated (neighbours).

  Attributes:
    sites: `(g, limits) -> list[tuple]`, every eligible choice; a random draw picks `site[0]`
      uniformly among the distinct first entries, then a site with that entry.
    apply: `(g, site, rng, limits) -> HostGraph`, the edited graph, not yet validated; `rng`
      draws what is left random once the site is fixed.
    none: why there is no site, formatted with the limits' fields, e.g. "{max_layers}".
  """

  sites: Callable[[HostGraph, Limits], list[tuple]]
  apply: Callable[[HostGraph, tuple, np.random.Generator, Limits], HostGraph]
  none: str


def append_layers(g: HostGraph, labels, units, strides) -> HostGraph:
  """`g` with new edgeless layers appended after its last slot (ids n, n + 1, ...)."""
  k = len(labels)
  return HostGraph(
    kind=g.kind,
    labels=np.concatenate([g.labels, np.asarray(labels, np.int32)]),
    units=np.concatenate([g.units, np.asarray(units, np.int32)]),
    strides=np.concatenate([g.strides, np.asarray(strides, np.int32)]),
    adj=zero_padded(g.adj, (len(g.adj) + k,) * 2),
  )


def finish(g: HostGraph, num_slots: int, limits: Limits, pad_to: int | None = None) -> tuple[Architecture | None, str]:
  """Validates an edited graph through `from_json` and pads it.

  Args:
    g: the edited graph.
    num_slots: N of the architecture it came from; kept when the result fits in it.
    limits: search-space limits the result must satisfy.
    pad_to: a declared capacity; when given, the result has exactly this N.

  Returns:
    `(arch, "")` on success. Otherwise `(None, reason)` with `from_json`'s message. Without
    `pad_to`, a result with more than `num_slots` layers is padded to the next power of two.
  """
  if pad_to is not None and g.n > pad_to:
    return None, f"result has {g.n} layers; the capacity pad_to is {pad_to}"
  n_out = pad_to if pad_to is not None else (num_slots if g.n <= num_slots else next_power_of_two(g.n))
  try:
    return from_json(json_io.graph_json(*g), pad_to=n_out, limits=limits), ""
  except ValueError as e:
    return None, f"result invalid: {e}"


def image_sizes(g: HostGraph) -> np.ndarray:
  """[n] int64 downsampling factor of each layer's output (`json_io.image_sizes`; valid graphs)."""
  return json_io.image_sizes(g.kind, g.labels, g.strides, g.adj)


def reachability(adj: np.ndarray) -> np.ndarray:
  """[n, n] bool transitive closure: `r[i, j]` iff a non-empty path i -> ... -> j exists."""
  r = np.array(adj, bool)
  for k in range(r.shape[0]):
    r |= r[:, k : k + 1] & r[k : k + 1, :]
  return r


def host_rng(key) -> np.random.Generator:
  """A numpy Generator determined by a JAX key: typed (`jax.random.key`) or raw uint32 data.

  Raises:
    TypeError if `key` is neither.
  """
  if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
    key = jax.random.key_data(key)
  data = np.asarray(key)
  if data.dtype != np.uint32 or data.ndim != 1:
    raise TypeError(
      f"key: got {type(key).__name__} with dtype {data.dtype} and shape {data.shape}; expected a"
      " jax.random key (typed, or raw uint32 [2] as from jax.random.PRNGKey)"
    )
  return np.random.default_rng(data.tolist())


def child_key(rng: np.random.Generator) -> np.ndarray:
  """A fresh raw key, uint32 [2], drawn from `rng`; accepted by `host_rng` and `jax.random`."""
  return rng.integers(0, 2**32, size=2, dtype=np.uint32)
