"""Auto-Keras network descriptors (Auto-Keras Sec. 3.1): the Descriptor pytree of padded arrays,
built from lists or from an autokeras Architecture, padded and stacked into batches on the host.
`edit_distance` measures distances between them.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple, Sequence

import flax.struct
import jax
import numpy as np

from nas_jax.arch import main_chain
from nas_jax.arch.architecture import Architecture, next_power_of_two

__all__ = ["SKIP_TYPES", "Descriptor", "descriptor", "arch_descriptor", "pad_descriptor", "stack_descriptors"]

SKIP_TYPES = ("add", "concat")  # stored as their index: 0 = add, 1 = concat
# Padded slots hold these values, so that every formula stays finite on them (a width of 0 would
# divide 0 by 0); masks and lengths keep them out of every result.
_PAD_WIDTH = 1
_PAD_SKIP = (1, 2, 0)
# (entries, mask, what a padded slot of the entries holds) of each kind of entry
_KINDS = (("conv", "conv_mask", _PAD_WIDTH), ("dense", "dense_mask", _PAD_WIDTH), ("skips", "skip_mask", _PAD_SKIP))


@flax.struct.dataclass
class Descriptor:
  """desc(f) (Auto-Keras Sec. 3.1) as padded arrays; real entries come first.

  conv: [Lc] int32, widths of the convolutions with kernel > 1, in main-chain order;
  conv_mask: [Lc] bool. dense: [Ld] int32, widths of the dense layers, classifier included;
  dense_mask: [Ld] bool. skips: [S, 3] int32 triples (u, v, type), type an index into
  SKIP_TYPES; skip_mask: [S] bool. A batch adds a leading axis B to every leaf.
  """

  conv: jax.Array
  conv_mask: jax.Array
  dense: jax.Array
  dense_mask: jax.Array
  skips: jax.Array
  skip_mask: jax.Array


def _widths(name: str, widths) -> list[int]:
  if isinstance(widths, (str, bytes)) or not isinstance(widths, Sequence):
    raise TypeError(f"{name}: {type(widths).__name__} given; expected a list of integer widths")
  for i, w in enumerate(widths):
    if isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 1:
      raise ValueError(f"{name}[{i}]: {w!r} is not allowed; a width is an integer >= 1")
  return [int(w) for w in widths]


def _skip_triples(skips) -> list[tuple[int, int, int]]:
  if isinstance(skips, (str, bytes)) or not isinstance(skips, Sequence):
    raise TypeError(f"skips: {type(skips).__name__} given; expected a list of (u, v, type) triples")
  out = []
  for i, s in enumerate(skips):
    if isinstance(s, (str, bytes)) or not isinstance(s, Sequence) or len(s) != 3:
      raise ValueError(f"skips[{i}]: {s!r} is not a triple; expected (u, v, type)")
    u, v, kind = s
    if any(isinstance(x, bool) or not isinstance(x, numbers.Integral) for x in (u, v)):
      raise ValueError(f"skips[{i}]: u, v = {u!r}, {v!r}; they must be integers with 1 <= u < v")
    if not 1 <= u < v:
      raise ValueError(f"skips[{i}]: u, v = {u}, {v}; a skip needs 1 <= u < v")
    if kind not in SKIP_TYPES:
      raise ValueError(f"skips[{i}]: type {kind!r} is unknown; allowed: {', '.join(SKIP_TYPES)}")
    out.append((int(u), int(v), SKIP_TYPES.index(kind)))
  return out


def _check_sizes(sizes, counts: tuple[int, int, int], where: str) -> tuple[int, int, int]:
  names = ("conv", "dense", "skips")
  if sizes is None:
    return tuple(max(1, c) for c in counts)
  if not isinstance(sizes, Sequence) or len(sizes) != 3:
    raise ValueError(f"{where}: sizes={sizes!r}; expected (Lc, Ld, S) or None")
  for name, size, count in zip(names, sizes, counts):
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < max(1, count):
      raise ValueError(
        f"{where}: sizes={tuple(sizes)} has room for {size!r} {name} entries; it needs an integer >= {max(1, count)}"
      )
  return tuple(int(s) for s in sizes)


def descriptor(conv, dense=(), skips=(), *, sizes=None) -> Descriptor:
  """A Descriptor from plain Python lists (Auto-Keras Sec. 3.1), checked before any array exists.

  Args:
    conv: conv widths in main-chain order, integers >= 1 (may be empty).
    dense: dense widths in order, classifier included, integers >= 1 (may be empty).
    skips: (u, v, type) triples with integers 1 <= u < v and type in SKIP_TYPES.
    sizes: capacities (Lc, Ld, S) to pad to; default the real counts (at least 1 each).

  Returns:
    Descriptor with leaves [Lc], [Lc], [Ld], [Ld], [S, 3], [S].

  Raises:
    TypeError / ValueError naming the field, the value and what is allowed.
  """
  conv, dense = _widths("conv", conv), _widths("dense", dense)
  triples = _skip_triples(skips)
  lc, ld, ls = _check_sizes(sizes, (len(conv), len(dense), len(triples)), "descriptor")

  def padded(values, size, fill):
    return np.array(values + [fill] * (size - len(values)), np.int32)

  return Descriptor(  # numpy leaves: a search builds hundreds per proposal, on the host
    conv=padded(conv, lc, _PAD_WIDTH),
    conv_mask=np.arange(lc) < len(conv),
    dense=padded(dense, ld, _PAD_WIDTH),
    dense_mask=np.arange(ld) < len(dense),
    skips=padded(triples, ls, _PAD_SKIP).reshape(ls, 3),
    skip_mask=np.arange(ls) < len(triples),
  )


def arch_descriptor(arch: Architecture, num_classes: int, *, sizes=None) -> Descriptor:
  """desc(f) of an autokeras Architecture (Auto-Keras Sec. 3.1): conv block widths in chain order, hidden fc
  widths then the classifier's `num_classes`, and the skip triples (`main_chain.Chain`)."""
  chain = main_chain.chain_view(arch)
  units = np.asarray(arch.units)
  return descriptor(
    [int(units[c]) for c in chain.convs],
    [int(units[f]) for f in chain.fcs] + [num_classes],
    chain.skip_triples(),
    sizes=sizes,
  )


def _fit(x, size: int, axis: int, fill) -> np.ndarray:
  """x cut or padded with `fill` to `size` entries along `axis` (real entries come first); on
  the host, since eager jnp calls per descriptor would cost more than the distances."""
  x = np.asarray(x)
  x = np.take(x, np.arange(min(size, x.shape[axis])), axis=axis)
  tail_shape = list(x.shape)
  tail_shape[axis] = size - x.shape[axis]
  tail = np.broadcast_to(np.asarray(fill, x.dtype), tail_shape)
  return np.concatenate([x, tail], axis)


def _real_counts(desc: Descriptor, where: str) -> np.ndarray:
  """[..., 3] real entries (conv, dense, skips) of a descriptor or a batch; ValueError naming the
  mask that has a real entry after a padded one."""
  masks = [np.asarray(getattr(desc, name)) for _, name, _ in _KINDS]
  for (_, name, _), mask in zip(_KINDS, masks):
    if not np.array_equal(mask, np.arange(mask.shape[-1]) < mask.sum(-1, keepdims=True)):
      raise ValueError(f"{where}: {name} has a real entry after a padded one; real entries come first")
  return np.stack([m.sum(-1) for m in masks], -1)


def pad_descriptor(desc: Descriptor, sizes: tuple[int, int, int]) -> Descriptor:
  """desc (one or a batch) at capacities (Lc, Ld, S); padding never changes a distance.

  Raises:
    ValueError if a capacity is smaller than the real entries, or a mask has a real entry after
    a padded one.
  """
  axis = np.ndim(desc.conv) - 1  # the slot axis, after any batch axis
  counts = tuple(int(c) for c in _real_counts(desc, "pad_descriptor").reshape(-1, 3).max(0))
  fields = {}
  for (name, mask, fill), size in zip(_KINDS, _check_sizes(sizes, counts, "pad_descriptor")):
    fields[name] = _fit(getattr(desc, name), size, axis, fill)
    fields[mask] = _fit(getattr(desc, mask), size, axis, False)
  return Descriptor(**fields)


def stack_descriptors(descs: Sequence[Descriptor], *, sizes=None) -> Descriptor:
  """A batch of descriptors padded to common capacities.

  Args:
    descs: a non-empty list of unbatched Descriptor.
    sizes: capacities (Lc, Ld, S); default the largest capacities among descs, rounded up to
      powers of two, so that a growing history compiles O(log n) shapes.

  Returns:
    Descriptor with leaves [B, Lc], [B, Lc], [B, Ld], [B, Ld], [B, S, 3], [B, S].
  """
  if isinstance(descs, Descriptor) or not isinstance(descs, Sequence) or not descs:
    raise TypeError(f"descs: {type(descs).__name__} given; expected a non-empty list of Descriptor")
  for i, d in enumerate(descs):
    if not isinstance(d, Descriptor) or np.ndim(d.conv) != 1:
      raise TypeError(f"descs[{i}]: {type(d).__name__} given; expected an unbatched Descriptor")
  # All slots at once, from each leaf concatenated over descs: a search stacks its whole history
  # for every batch of candidates, and a loop per descriptor (or padding each on its own,
  # `pad_descriptor`) costs more than the distances.
  kinds = {name: _real_slots(descs, name, mask) for name, mask, _ in _KINDS}
  holed = min(k.holed for k in kinds.values())
  if holed < len(descs):  # the first descriptor with a hole, and its first such mask, as _real_counts
    mask = next(m for n, m, _ in _KINDS if kinds[n].holed == holed)
    raise ValueError(
      f"stack_descriptors: descs[{holed}]: {mask} has a real entry after a padded one; real entries come first"
    )
  if sizes is None:
    sizes = tuple(next_power_of_two(kinds[name].capacity) for name, _, _ in _KINDS)
  sizes = _check_sizes(sizes, tuple(kinds[name].most for name, _, _ in _KINDS), "stack_descriptors")
  fields = {}
  for (name, mask, fill), size in zip(_KINDS, sizes):
    k = kinds[name]
    fields[name] = np.full((len(descs), size) + np.shape(fill), fill, np.int32)
    fields[mask] = np.zeros((len(descs), size), bool)
    fields[name][k.row, k.slot] = k.entries
    fields[mask][k.row, k.slot] = True
  return Descriptor(**fields)


class _Slots(NamedTuple):
  """The real entries of one kind over a list of descriptors, flattened."""

  row: np.ndarray  # [E] the descriptor of each real entry
  slot: np.ndarray  # [E] its slot
  entries: np.ndarray  # [E] or [E, 3] its value
  most: int  # the most real entries of a descriptor
  capacity: int  # the most slots of a descriptor (>= 1)
  holed: int  # the first descriptor whose mask has a real entry after a padded one, else len


def _real_slots(descs: Sequence[Descriptor], name: str, mask_name: str) -> _Slots:
  masks = [np.asarray(getattr(d, mask_name), bool) for d in descs]
  slots = np.array([len(m) for m in masks])
  row = np.repeat(np.arange(len(descs)), slots)
  slot = np.arange(len(row)) - np.repeat(np.cumsum(slots) - slots, slots)
  mask = np.concatenate(masks)
  count = np.bincount(row, weights=mask, minlength=len(descs)).astype(int)
  holes = np.flatnonzero(np.bincount(row, weights=mask != (slot < count[row]), minlength=len(descs)))
  entries = np.concatenate([np.asarray(getattr(d, name)) for d in descs])[mask]
  return _Slots(
    row[mask],
    slot[mask],
    entries,
    int(count.max()),
    max(1, int(slots.max())),
    int(holes[0]) if len(holes) else len(descs),
  )
