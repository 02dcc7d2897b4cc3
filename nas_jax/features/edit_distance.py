"""Auto-Keras edit distance between network descriptors (autokeras.md 1.5, 3): the Descriptor
pytree, and the distance matrices of sets of descriptors, whose pairs' terms (`edit_terms`) run
in jitted chunks vmapped over pairs, the skip assignments on the host.
"""

from __future__ import annotations

import functools
import numbers
from typing import NamedTuple, Sequence, Union

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import main_chain
from nas_jax.arch.architecture import Architecture
from nas_jax.features import edit_terms

__all__ = [
  "LAYER_MATCHES",
  "SKIP_TYPES",
  "Descriptor",
  "EditDistances",
  "arch_descriptor",
  "descriptor",
  "edit_distance_terms",
  "edit_distances",
  "pad_descriptor",
  "stack_descriptors",
]

SKIP_TYPES = ("add", "concat")  # stored as their index: 0 = add, 1 = concat
LAYER_MATCHES = ("separate", "joint")
# Padded slots hold these values, so that every formula stays finite on them (a width of 0 would
# divide 0 by 0); masks and lengths keep them out of every result.
_PAD_WIDTH = 1
_PAD_SKIP = (1, 2, 0)
_BLOCK_COSTS = 1 << 22  # d_s entries held on the host at once (32 MiB)


@flax.struct.dataclass
class Descriptor:
  """desc(f) of autokeras.md 1.5 as padded arrays; real entries come first.

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
  """A Descriptor from plain Python lists (autokeras.md 1.5), checked before any array exists.

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
  """desc(f) of an autokeras Architecture (spec 1.5): conv block widths in chain order, hidden fc
  widths then the classifier's `num_classes`, and the skip triples (`main_chain.Chain`)."""
  chain = main_chain.chain_view(arch)
  units = np.asarray(arch.units)
  return descriptor(
    [int(units[c]) for c in chain.convs],
    [int(units[f]) for f in chain.fcs] + [num_classes],
    chain.skip_triples(),
    sizes=sizes,
  )


def _counts(desc: Descriptor) -> np.ndarray:
  """Real entries of each kind: [..., 3] int (conv, dense, skips)."""
  masks = (desc.conv_mask, desc.dense_mask, desc.skip_mask)
  return np.stack([np.asarray(m).sum(-1) for m in masks], -1)


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
  for name in ("conv_mask", "dense_mask", "skip_mask"):
    mask = np.asarray(getattr(desc, name))
    if not np.array_equal(mask, np.arange(mask.shape[-1]) < mask.sum(-1, keepdims=True)):
      raise ValueError(f"{where}: {name} has a real entry after a padded one; real entries come first")
  return _counts(desc)


class _Leaves(NamedTuple):
  """A Descriptor's leaves as numpy arrays (reading them is cheaper than a pytree map)."""

  conv: np.ndarray
  conv_mask: np.ndarray
  dense: np.ndarray
  dense_mask: np.ndarray
  skips: np.ndarray
  skip_mask: np.ndarray


def _first_real(d: _Leaves, where: str) -> tuple[int, int, int]:
  """`_real_counts` of one unbatched descriptor: n real entries come first iff the first n of n
  are real."""
  out = []
  for name in ("conv_mask", "dense_mask", "skip_mask"):
    mask = getattr(d, name)
    n = int(mask.sum())
    if not mask[:n].all():
      raise ValueError(f"{where}: {name} has a real entry after a padded one; real entries come first")
    out.append(n)
  return tuple(out)


def pad_descriptor(desc: Descriptor, sizes: tuple[int, int, int]) -> Descriptor:
  """desc (one or a batch) at capacities (Lc, Ld, S); padding never changes a distance.

  Raises:
    ValueError if a capacity is smaller than the real entries, or a mask has a real entry after
    a padded one.
  """
  axis = np.ndim(desc.conv) - 1  # the slot axis, after any batch axis
  counts = tuple(int(c) for c in _real_counts(desc, "pad_descriptor").reshape(-1, 3).max(0))
  lc, ld, ls = _check_sizes(sizes, counts, "pad_descriptor")
  return Descriptor(
    conv=_fit(desc.conv, lc, axis, _PAD_WIDTH),
    conv_mask=_fit(desc.conv_mask, lc, axis, False),
    dense=_fit(desc.dense, ld, axis, _PAD_WIDTH),
    dense_mask=_fit(desc.dense_mask, ld, axis, False),
    skips=_fit(desc.skips, ls, axis, _PAD_SKIP),
    skip_mask=_fit(desc.skip_mask, ls, axis, False),
  )


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
  if sizes is None:
    most = np.max([(d.conv.shape[0], d.dense.shape[0], d.skips.shape[0]) for d in descs], axis=0)
    sizes = tuple(1 << (int(c) - 1).bit_length() for c in most)
  # Filled slot by slot on the host: a search stacks its whole history for every batch of
  # candidates, and padding each descriptor on its own (`pad_descriptor`) costs ten times more.
  # Plain attribute reads and one check per mask: per descriptor this is most of the cost.
  host = [_Leaves(*(np.asarray(getattr(d, f)) for f in _Leaves._fields)) for d in descs]
  counts = [_first_real(d, f"stack_descriptors: descs[{i}]") for i, d in enumerate(host)]
  lc, ld, ls = _check_sizes(sizes, tuple(int(c) for c in np.max(counts, 0)), "stack_descriptors")
  b = len(host)
  out = Descriptor(
    conv=np.full((b, lc), _PAD_WIDTH, np.int32),
    conv_mask=np.zeros((b, lc), bool),
    dense=np.full((b, ld), _PAD_WIDTH, np.int32),
    dense_mask=np.zeros((b, ld), bool),
    skips=np.tile(np.asarray(_PAD_SKIP, np.int32), (b, ls, 1)),
    skip_mask=np.zeros((b, ls), bool),
  )
  for i, (d, (nc, nd, ns)) in enumerate(zip(host, counts)):
    out.conv[i, :nc], out.conv_mask[i, :nc] = d.conv[:nc], True
    out.dense[i, :nd], out.dense_mask[i, :nd] = d.dense[:nd], True
    out.skips[i, :ns], out.skip_mask[i, :ns] = d.skips[:ns], True
  return out


def _joint(widths: jax.Array, mask: jax.Array, dense: jax.Array, dense_mask: jax.Array):
  """Conv then dense widths as one list [Lc + Ld] with its mask, real entries first."""
  n_conv = mask.sum()
  k = jnp.arange(widths.shape[0] + dense.shape[0])
  from_conv = widths[jnp.clip(k, 0, widths.shape[0] - 1)]
  from_dense = dense[jnp.clip(k - n_conv, 0, dense.shape[0] - 1)]
  return jnp.where(k < n_conv, from_conv, from_dense), k < n_conv + dense_mask.sum()


def _layer_terms(a: Descriptor, b: Descriptor, layer_match: str) -> jax.Array:
  """D_l of W pairs (a[p], b[p]): [W]."""
  if layer_match == "joint":
    joint = jax.vmap(_joint)
    return edit_terms.layer_edit_distances(
      *joint(a.conv, a.conv_mask, a.dense, a.dense_mask), *joint(b.conv, b.conv_mask, b.dense, b.dense_mask)
    )
  return edit_terms.layer_edit_distances(a.conv, a.conv_mask, b.conv, b.conv_mask) + edit_terms.layer_edit_distances(
    a.dense, a.dense_mask, b.dense, b.dense_mask
  )


def _pack(h: Descriptor) -> np.ndarray:
  """A host batch as one [B, 2 Lc + 2 Ld + 4 S] int32 matrix, so that picking a chunk's pairs is
  one indexing per side rather than one per leaf."""
  leaves = (h.conv, h.conv_mask, h.dense, h.dense_mask, h.skips.reshape(h.skips.shape[0], -1), h.skip_mask)
  return np.concatenate([np.asarray(x, np.int32) for x in leaves], axis=1)


def _unpack(x: jax.Array, sizes: tuple[int, int, int]) -> Descriptor:
  lc, ld, ls = sizes
  cut = np.cumsum([lc, lc, ld, ld, 3 * ls])
  conv, conv_mask, dense, dense_mask, skips, skip_mask = jnp.split(x, cut, axis=1)
  return Descriptor(
    conv=conv,
    conv_mask=conv_mask.astype(bool),
    dense=dense,
    dense_mask=dense_mask.astype(bool),
    skips=skips.reshape(x.shape[0], ls, 3),
    skip_mask=skip_mask.astype(bool),
  )


@functools.partial(jax.jit, static_argnames=("sizes_a", "sizes_b", "layer_match"))
def _pair_terms(xa: jax.Array, xb: jax.Array, sizes_a: tuple, sizes_b: tuple, layer_match: str):
  """D_l [W] and the d_s cost matrices [W, Sa, Sb] of W pairs, packed (`_pack`) with capacities
  sizes_a and sizes_b."""
  pa, pb = _unpack(xa, sizes_a), _unpack(xb, sizes_b)
  return _layer_terms(pa, pb, layer_match), edit_terms.skip_distance(pa.skips[:, :, None], pb.skips[:, None, :])


class EditDistances(NamedTuple):
  """The two terms of eq. (3), numpy float64 [n_a, n_b]: layers D_l and skips D_s."""

  layers: np.ndarray
  skips: np.ndarray

  def total(self, lam: float = 1.0) -> np.ndarray:
    """d = D_l + lam * D_s (eq. 3): [n_a, n_b] float64."""
    return self.layers + _check_lam(lam) * self.skips


Descs = Union[Descriptor, Sequence[Descriptor]]


def _check_lam(lam) -> float:
  if isinstance(lam, bool) or not isinstance(lam, numbers.Real) or not 0 <= lam < np.inf:
    raise ValueError(f"lam: {lam!r}; expected a finite number >= 0")
  return float(lam)


def _as_batch(descs: Descs, name: str) -> Descriptor:
  if isinstance(descs, Descriptor):
    if np.ndim(descs.conv) != 2:
      raise ValueError(f"{name}: one Descriptor given; pass a list or a batch (conv [B, Lc])")
    return descs
  if isinstance(descs, (str, bytes)) or not isinstance(descs, Sequence) or not descs:
    raise TypeError(f"{name}: {type(descs).__name__} given; expected a non-empty list of Descriptor or a batch")
  return stack_descriptors(descs)


def _host(desc: Descriptor) -> Descriptor:
  return jax.tree.map(np.asarray, desc)


def edit_distance_terms(
  descs_a: Descs, descs_b: Descs | None = None, *, layer_match: str = "separate", chunk_size: int = 4096
) -> EditDistances:
  """Both terms of the edit distance (autokeras.md 3) between two sets of descriptors.

  Args:
    descs_a: a list of Descriptor or a batch (conv [n_a, Lc]).
    descs_b: the same for the columns; None gives the symmetric matrix of descs_a: pairs i < j
      are computed and mirrored, the diagonal is 0.
    layer_match: "separate" (default, the code: conv and dense lists matched apart, summed) or
      "joint" (one list, conv then dense, with conv-dense substitution allowed).
    chunk_size: pairs per jitted call; each call is padded to a power of two <= chunk_size.

  Returns:
    EditDistances(layers, skips), numpy float64 [n_a, n_b]; `.total(lam)` gives d.

  Raises:
    TypeError / ValueError naming the bad argument.
  """
  if layer_match not in LAYER_MATCHES:
    raise ValueError(f"layer_match: {layer_match!r} is unknown; choose one of: {', '.join(LAYER_MATCHES)}")
  if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
    raise ValueError(f"chunk_size: {chunk_size!r}; expected a positive integer")
  ha = _host(_as_batch(descs_a, "descs_a"))
  hb = ha if descs_b is None else _host(_as_batch(descs_b, "descs_b"))
  n_a, n_b = ha.conv.shape[0], hb.conv.shape[0]
  if descs_b is None:
    ia, ib = np.triu_indices(n_a, 1)
  else:
    ia, ib = (x.ravel() for x in np.indices((n_a, n_b)))
  skips_a, skips_b = ha.skip_mask.sum(-1), hb.skip_mask.sum(-1)
  layers, skips = np.zeros((n_a, n_b)), np.zeros((n_a, n_b))
  xa, xb = _pack(ha), _pack(hb)
  sizes = lambda h: (h.conv.shape[1], h.dense.shape[1], h.skips.shape[1])
  # The skip assignments run once per block of chunks: per chunk, their setup cost as much as
  # the DP. A block's d_s matrices (float64) stay under _BLOCK_COSTS entries.
  block = max(chunk_size, _BLOCK_COSTS // (ha.skips.shape[1] * hb.skips.shape[1]))
  for lo in range(0, len(ia), block):
    pairs = np.arange(lo, min(lo + block, len(ia)))
    costs = np.empty((len(pairs), ha.skips.shape[1], hb.skips.shape[1]))
    for start in range(0, len(pairs), chunk_size):
      sel = pairs[start : start + chunk_size]
      sel_a, sel_b = ia[sel], ib[sel]
      idx = np.arange(1 << (len(sel) - 1).bit_length()) % len(sel)  # padded with repeats of real pairs
      d_l, cost = _pair_terms(xa[sel_a[idx]], xb[sel_b[idx]], sizes(ha), sizes(hb), layer_match)
      layers[sel_a, sel_b] = np.asarray(d_l, np.float64)[: len(sel)]
      costs[start : start + len(sel)] = np.asarray(cost, np.float64)[: len(sel)]
    sel_a, sel_b = ia[pairs], ib[pairs]
    skips[sel_a, sel_b] = edit_terms.skip_edit_distances(costs, skips_a[sel_a], skips_b[sel_b])
  if descs_b is None:
    layers[ib, ia], skips[ib, ia] = layers[ia, ib], skips[ia, ib]
  return EditDistances(layers, skips)


def edit_distances(
  descs_a: Descs,
  descs_b: Descs | None = None,
  *,
  lam: float = 1.0,
  layer_match: str = "separate",
  chunk_size: int = 4096,
) -> np.ndarray:
  """d = D_l + lam * D_s (eq. 3) between two sets of descriptors: numpy float64 [n_a, n_b].

  Arguments as in `edit_distance_terms`; lam: the skip weight, >= 0 (1 in the code, spec 11).
  """
  lam = _check_lam(lam)
  terms = edit_distance_terms(descs_a, descs_b, layer_match=layer_match, chunk_size=chunk_size)
  return terms.total(lam)
