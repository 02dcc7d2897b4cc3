"""The Architecture pytree: a layer graph as fixed-shape padded arrays plus a mask.

Real layers come first (`mask = arange(N) < n_layers`); padded layers have label 0, no units, no
stride and no edges, so every graph quantity ignores them. A batch is the same pytree with a
leading axis B on every leaf, so functions of one architecture work under `jax.vmap`.
"""

from __future__ import annotations

from typing import Any, Sequence

import flax.struct
import jax
import numpy as np

from nas_jax.arch import labels as labels_lib

__all__ = ["Architecture", "from_arrays", "stack", "unstack", "pad", "next_power_of_two", "zero_padded"]


@flax.struct.dataclass
class Architecture:
  """A padded layer graph (NASBOT, Sec. 2.2).

  Attributes:
    labels: [N] int32, label ids into `labels.vocabulary(kind)`.
    units: [N] int32, unit count, 0 where the layer has none.
    strides: [N] int32, spatial stride (conv/res 1 or 2, pools 2), 0 where the layer has none.
    adjacency: [N, N] bool, `adjacency[i, j]` is the edge i -> j.
    mask: [N] bool, True for real layers.
    kind: static, "cnn" or "mlp"; names the label vocabulary.
  """

  labels: jax.Array
  units: jax.Array
  strides: jax.Array
  adjacency: jax.Array
  mask: jax.Array
  kind: str = flax.struct.field(pytree_node=False)

  @property
  def num_slots(self) -> int:
    """N, the padded number of layers."""
    return self.labels.shape[-1]

  @property
  def vocabulary(self) -> tuple[str, ...]:
    return labels_lib.vocabulary(self.kind)

  @classmethod
  def from_json(cls, obj: Any, **options) -> Architecture:
    """`json_io.from_json(obj, **options)`: a validated architecture from the interchange JSON
    (a dict or a JSON string); options pad_to, limits, mass_params."""
    from nas_jax.arch import json_io  # json_io imports this module

    return json_io.from_json(obj, **options)

  def to_json(self) -> dict[str, Any]:
    """`json_io.to_json`: the interchange JSON of one (unbatched) architecture."""
    from nas_jax.arch import json_io  # json_io imports this module

    return json_io.to_json(self)


def from_arrays(kind: str, labels, units, strides, adjacency) -> Architecture:
  """The unpadded Architecture of n layers given as labels, units, strides [n] int and adjacency
  [n, n] bool (arrays or nested sequences); every slot is real."""
  ints = lambda x: np.asarray(x, np.int32)
  return Architecture(
    ints(labels), ints(units), ints(strides), np.asarray(adjacency, bool), np.ones(len(labels), bool), kind
  )


def zero_padded(x, shape: tuple[int, ...]) -> np.ndarray:
  """A new numpy array of `shape` holding x, each axis trimmed or zero-padded at its end, dtype
  kept; never a view of x, so that an edit of the copy leaves x as it was (as np.pad does).

  One zero array and one slice copy: for the small arrays of one network this is several times
  cheaper than np.pad's general path, and a search pads every candidate it featurizes.
  """
  x = np.asarray(x)
  common = tuple(slice(0, min(a, b)) for a, b in zip(x.shape, shape))
  out = np.zeros(shape, x.dtype)
  out[common] = x[common]
  return out


def _resize(arch: Architecture, n: int) -> Architecture:
  """Pads with empty slots, or trims trailing padding, to N = n (numpy leaves)."""
  real = int(np.asarray(arch.mask).sum())
  if real > n:
    raise ValueError(f"pad_to={n} is less than the number of layers ({real})")
  vec = lambda x: zero_padded(x, (n,))
  return Architecture(
    labels=vec(arch.labels),
    units=vec(arch.units),
    strides=vec(arch.strides),
    adjacency=zero_padded(arch.adjacency, (n, n)),
    mask=vec(arch.mask),
    kind=arch.kind,
  )


def pad(arch: Architecture, n: int) -> Architecture:
  """Re-pads one architecture to N = n slots (trimming padding only, never real layers)."""
  if np.ndim(arch.labels) != 1:
    raise ValueError(f"pad: expected one architecture (labels [N]), got shape {np.shape(arch.labels)}")
  return _resize(arch, n)


def next_power_of_two(n: int, least: int = 1) -> int:
  """The smallest power of two >= n, or `least` if larger: a padded capacity, so that sizes that
  grow one at a time compile O(log n) shapes."""
  return max(least, 1 << max(int(n) - 1, 0).bit_length())


def stack(archs: Sequence[Architecture], *, pad_to: int | None = None) -> Architecture:
  """Pads a list of architectures of one kind to a common N and stacks them into a batch.

  Args:
    archs: non-empty sequence of unbatched architectures of the same kind.
    pad_to: N; defaults to the largest number of layers in `archs`.

  Returns:
    An Architecture whose leaves have a leading axis B = len(archs).
  """
  archs = list(archs)
  if not archs:
    raise ValueError("stack: archs is empty; pass at least one Architecture")
  for i, a in enumerate(archs):
    if not isinstance(a, Architecture):
      raise TypeError(f"stack: archs[{i}] is a {type(a).__name__}; expected an Architecture")
    if np.ndim(a.labels) != 1:
      raise ValueError(f"stack: archs[{i}] is already a batch (labels shape {np.shape(a.labels)})")
    if a.kind != archs[0].kind:
      raise ValueError(
        f"stack: archs[{i}].kind is {a.kind!r} but archs[0].kind is {archs[0].kind!r}; a batch holds one kind"
      )
  n = max(int(np.asarray(a.mask).sum()) for a in archs) if pad_to is None else pad_to
  padded = [_resize(a, n) for a in archs]
  return jax.tree.map(lambda *xs: np.stack(xs), *padded)


def unstack(batch: Architecture) -> list[Architecture]:
  """Splits a batch into unbatched architectures, each trimmed to its own number of layers."""
  if np.ndim(batch.labels) != 2:
    raise ValueError(f"unstack: expected a batch (labels [B, N]), got shape {np.shape(batch.labels)}")
  host = jax.tree.map(np.asarray, batch)
  out = []
  for b in range(host.labels.shape[0]):
    one = jax.tree.map(lambda x, b=b: x[b], host)
    out.append(_resize(one, int(one.mask.sum())))
  return out
