"""Auto-Keras edit distance between network descriptors (Auto-Keras Sec. 3.1): the distance matrices
of sets of descriptors (`edit_descriptors`), whose pairs' terms (`edit_terms`) run in jitted
chunks over pairs, the skip assignments in them too for up to FEW_SKIPS skips a network, on the
host beyond.
"""

from __future__ import annotations

import functools
import numbers
from typing import NamedTuple, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch.architecture import next_power_of_two
from nas_jax.features import edit_terms
from nas_jax.features.edit_descriptors import (
  SKIP_TYPES,
  Descriptor,
  arch_descriptor,
  descriptor,
  pad_descriptor,
  stack_descriptors,
)

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

#: The `layer_match` rules of `edit_distances`: conv and dense lists matched apart ("separate") or as
#: one list ("joint").
LAYER_MATCHES = ("separate", "joint")
_BLOCK_COSTS = 1 << 22  # d_s entries held on the host at once (32 MiB)
_MIN_PAIRS = 1024  # a call's fewest pairs (padded), so that calls of a few candidates share one program


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


@functools.partial(jax.jit, static_argnames=("sizes", "layer_match"))
def _pair_terms(xa: jax.Array, xb: jax.Array, sizes: tuple, layer_match: str):
  """D_l [W] of W pairs, both sides packed (`_pack`) with capacities sizes (Lc, Ld, S), and their
  skip term D_s [W] when S is at most FEW_SKIPS, else the d_s cost matrices [W, S, S] for the
  host's assignment."""
  pa, pb = _unpack(xa, sizes), _unpack(xb, sizes)
  cost = edit_terms.skip_distance(pa.skips[:, :, None], pb.skips[:, None, :])
  if _few_skips(sizes):
    cost = edit_terms.few_skip_edit_distances(cost, pa.skip_mask.sum(-1), pb.skip_mask.sum(-1))
  return _layer_terms(pa, pb, layer_match), cost


def _few_skips(sizes: tuple) -> bool:
  return sizes[2] <= edit_terms.FEW_SKIPS


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
  """Both terms of the edit distance (Auto-Keras Sec. 3.1) between two sets of descriptors.

  Args:
    descs_a: a list of Descriptor or a batch (conv [n_a, Lc]).
    descs_b: the same for the columns; None gives the symmetric matrix of descs_a: pairs i < j
      are computed and mirrored, the diagonal is 0.
    layer_match: "separate" (default, the code: conv and dense lists matched apart, summed) or
      "joint" (one list, conv then dense, with conv-dense substitution allowed).
    chunk_size: pairs per jitted call; each call is padded to a power of two, at least 1024
      pairs (or chunk_size's power of two if smaller). Both sets are padded to common capacities.

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
  capacities = lambda h: (h.conv.shape[1], h.dense.shape[1], h.skips.shape[1])
  # One set of capacities for both sides: a search's candidates vary, its history less.
  sizes = tuple(map(max, capacities(ha), capacities(hb)))
  if capacities(ha) != capacities(hb):
    ha, hb = pad_descriptor(ha, sizes), pad_descriptor(hb, sizes)
  n_a, n_b = ha.conv.shape[0], hb.conv.shape[0]
  if descs_b is None:
    ia, ib = np.triu_indices(n_a, 1)
  else:
    ia, ib = (x.ravel() for x in np.indices((n_a, n_b)))
  # Pairs in order of their row lists' lengths: the DP loops only to a chunk's longest, so
  # chunks of similar lengths skip the rows that padding would add (bit-for-bit the same values).
  rows = ha.conv_mask.sum(-1) + (ha.dense_mask.sum(-1) if layer_match == "joint" else 0)
  order = np.argsort(rows[ia], kind="stable")
  ia, ib = ia[order], ib[order]
  skips_a, skips_b = ha.skip_mask.sum(-1), hb.skip_mask.sum(-1)
  layers, skips = np.zeros((n_a, n_b)), np.zeros((n_a, n_b))
  xa, xb = _pack(ha), _pack(hb)
  least = min(_MIN_PAIRS, next_power_of_two(chunk_size))  # or chunk_size's power of two if smaller
  few = _few_skips(sizes)  # D_s comes out of the chunks' program
  # Otherwise the skip assignments run on the host once per block of chunks: per chunk, their
  # setup cost as much as the DP. A block's d_s matrices (float64) stay under _BLOCK_COSTS entries.
  block = max(chunk_size, len(ia)) if few else max(chunk_size, _BLOCK_COSTS // sizes[2] ** 2)
  for lo in range(0, len(ia), block):
    pairs = np.arange(lo, min(lo + block, len(ia)))
    costs = None if few else np.empty((len(pairs), sizes[2], sizes[2]))
    for start in range(0, len(pairs), chunk_size):
      sel = pairs[start : start + chunk_size]
      sel_a, sel_b = ia[sel], ib[sel]
      idx = np.arange(next_power_of_two(len(sel), least=least)) % len(sel)  # padded with repeats of real pairs
      d_l, skip = _pair_terms(xa[sel_a[idx]], xb[sel_b[idx]], sizes, layer_match)
      layers[sel_a, sel_b] = np.asarray(d_l, np.float64)[: len(sel)]
      if few:
        skips[sel_a, sel_b] = np.asarray(skip, np.float64)[: len(sel)]
      else:
        costs[start : start + len(sel)] = np.asarray(skip, np.float64)[: len(sel)]
    if not few:
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

  Arguments as in `edit_distance_terms`; lam: the skip weight, >= 0 (1 in the authors' code).
  """
  lam = _check_lam(lam)
  terms = edit_distance_terms(descs_a, descs_b, layer_match=layer_match, chunk_size=chunk_size)
  return terms.total(lam)
