"""The terms of the Auto-Keras edit distance (Auto-Keras Sec. 3.1) between two networks: the
substitution costs d_l (eq. 5) and d_s (eq. 8), the layer term D_l of two width lists by a masked
dynamic programme (jit- and vmap-safe), and the skip term D_s of a batch of pairs by an exact
rectangular assignment on the host.
"""

from __future__ import annotations

import functools
import itertools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  "width_distance",
  "skip_distance",
  "layer_edit_distance",
  "layer_edit_distances",
  "skip_edit_distances",
  "few_skip_edit_distances",
  "FEW_SKIPS",
]


def width_distance(w_a: jax.Array, w_b: jax.Array) -> jax.Array:
  """d_l = |w_a - w_b| / max(w_a, w_b) in [0, 1) (eq. 5): widths >= 1, broadcast -> float."""
  w_a, w_b = jnp.asarray(w_a, float), jnp.asarray(w_b, float)
  return jnp.abs(w_a - w_b) / jnp.maximum(w_a, w_b)


def skip_distance(s_a: jax.Array, s_b: jax.Array) -> jax.Array:
  """d_s of eq. (8) in [0, 1]: triples (u, v, type) [..., 3] int, broadcast -> [...] float.

  With delta = v - u, (|u_a - u_b| + |delta_a - delta_b|) / (max u + max delta); 1 when the
  types differ (Auto-Keras eq. (8); 1 in the authors' code). The denominator is >= 2 since u, delta >= 1.
  """
  s_a, s_b = jnp.asarray(s_a), jnp.asarray(s_b)
  u_a, u_b = s_a[..., 0].astype(float), s_b[..., 0].astype(float)
  delta_a = (s_a[..., 1] - s_a[..., 0]).astype(float)
  delta_b = (s_b[..., 1] - s_b[..., 0]).astype(float)
  num = jnp.abs(u_a - u_b) + jnp.abs(delta_a - delta_b)
  same = num / (jnp.maximum(u_a, u_b) + jnp.maximum(delta_a, delta_b))
  return jnp.where(s_a[..., 2] == s_b[..., 2], same, 1.0)


def _levenshtein(sub: jax.Array, n_a: jax.Array, n_b: jax.Array) -> jax.Array:
  """A[n_a][n_b] of the DP for eq. (4) of Auto-Keras Sec. 3.1 for W pairs at once: unit insertions and
  deletions, substitution costs sub: [W, La, Lb] float; n_a, n_b: [W] int real lengths. Returns
  [W]. One loop step per row, the pairs on the minor axis of every array in it.

  Column j of a row depends only on columns <= j of it and of the row before, so entries
  past n_b never reach the answer: padding needs no mask here. Rows past the longest n_a are not
  computed at all (the loop's bound is that length), so a batch of short lists in a wide padding
  costs what its own lists need.
  """
  w, _, lb = sub.shape
  cols = jnp.arange(lb + 1, dtype=sub.dtype)[:, None]  # [Lb + 1, 1]
  sub_rows = jnp.transpose(sub, (1, 2, 0))  # [La, Lb, W]

  def row(i, carry):
    prev, last = carry  # [Lb + 1, W]: row i, and row n_a once the loop has passed it
    # Best ways into (i + 1, j) that do not come from (i + 1, j - 1): delete, or substitute.
    best = jnp.concatenate([jnp.full((1, w), i + 1, sub.dtype), jnp.minimum(prev[1:] + 1, prev[:-1] + sub_rows[i])])
    # An insertion costs 1 per column, so A[i][j] = min_{k <= j} best[k] + (j - k). A log-depth
    # prefix scan, not lax.cummin: XLA lowers cummin to a window as wide as the row (quadratic,
    # slower on CPU); min is exact, so the two agree bit for bit.
    cur = jax.lax.associative_scan(jnp.minimum, best - cols, axis=0) + cols
    return cur, jnp.where(i + 1 == n_a, cur, last)

  start = jnp.broadcast_to(cols, (lb + 1, w))
  _, last = jax.lax.fori_loop(0, jnp.minimum(n_a.max(initial=0), sub.shape[1]), row, (start, start))
  return (last * jax.nn.one_hot(n_b, lb + 1, axis=0, dtype=sub.dtype)).sum(0)  # column n_b of each pair


def layer_edit_distances(a: jax.Array, a_mask: jax.Array, b: jax.Array, b_mask: jax.Array) -> jax.Array:
  """D_l of W pairs of padded width lists (Auto-Keras Sec. 3.1, eq. (6) corrected); jit-safe.

  Args:
    a: [W, La] int widths, real ones first; a_mask: [W, La] bool. b: [W, Lb] int; b_mask: [W, Lb].

  Returns:
    [W] float: the weighted Levenshtein distances with substitution cost d_l (eq. 5).
  """
  chex.assert_rank([a, a_mask, b, b_mask], 2)
  sub = width_distance(a[:, :, None], b[:, None, :])
  return _levenshtein(sub, a_mask.sum(-1), b_mask.sum(-1))


def layer_edit_distance(a: jax.Array, a_mask: jax.Array, b: jax.Array, b_mask: jax.Array) -> jax.Array:
  """D_l of two padded width lists (`layer_edit_distances` of one pair): a: [La], b: [Lb] -> []."""
  chex.assert_rank([a, a_mask, b, b_mask], 1)
  return layer_edit_distances(a[None], a_mask[None], b[None], b_mask[None])[0]


_BRUTE_MATCHINGS = 720  # pairs with at most this many matchings (6! = 720) try them all


def skip_edit_distances(cost: np.ndarray, n_a: np.ndarray, n_b: np.ndarray) -> np.ndarray:
  """D_s (eq. 7) of each pair: [W] float64 from cost [W, Sa, Sb] and real counts n_a, n_b [W].

  The optimal matching pairs min(n_a, n_b) skips (d_s <= 1 < 2, Auto-Keras eqs. (7)-(8)); each
  unmatched skip of the larger set costs 1. Pairs with at most _BRUTE_MATCHINGS ways to match the
  smaller set into the larger (every pair of up to 5 skips a side, and e.g. 3 into 8) are solved
  together by trying every matching, array-wide; the others one by one by scipy's assignment.
  """
  # scipy.optimize is imported at the first call, not by every launch script at start (a third of a
  # second).
  from scipy.optimize import linear_sum_assignment  # pylint: disable=g-import-not-at-top

  out = np.abs(n_a - n_b).astype(np.float64)
  both = (n_a > 0) & (n_b > 0)
  base = max(cost.shape[1:]) + 1
  # ways[m, k]: matchings of k skips into m, capped (capacities may be large)
  ways = np.array([[min(math.perm(m, k), _BRUTE_MATCHINGS + 1) for k in range(base)] for m in range(base)])
  small = both & (ways[np.maximum(n_a, n_b), np.minimum(n_a, n_b)] <= _BRUTE_MATCHINGS)
  for code in np.unique(n_a[small] * base + n_b[small]).tolist():
    ka, kb = divmod(code, base)
    ps = np.flatnonzero(small & (n_a == ka) & (n_b == kb))
    c = cost[ps, :ka, :kb]
    if ka > kb:  # match the smaller side's skips into the larger's
      c = np.swapaxes(c, 1, 2)
    rows, cols = _matchings(min(ka, kb), max(ka, kb))
    # Each matching's costs summed in sorted order: reordering the skips permutes the matchings
    # but not their cost multisets, so the result is bit-for-bit independent of skip order. Sums
    # of one or two terms are exact in any order, so those skip the sort.
    matched = c[:, rows, cols]
    out[ps] += (matched if min(ka, kb) <= 2 else np.sort(matched, -1)).sum(-1).min(-1)
  for p in np.flatnonzero(both & ~small):
    c = cost[p, : n_a[p], : n_b[p]]
    rows, cols = linear_sum_assignment(c)
    out[p] += c[rows, cols].sum()
  return out


FEW_SKIPS = 4  # skip capacities up to this are assigned in jitted code (4! = 24 matchings)


def few_skip_edit_distances(cost: jax.Array, n_a: jax.Array, n_b: jax.Array) -> jax.Array:
  """D_s (eq. 7) of W pairs by trying every matching, jit-safe: cost [W, Sa, Sb] with Sa, Sb <=
  FEW_SKIPS, real counts n_a, n_b [W] int. Returns [W], equal bit for bit to
  `skip_edit_distances` on the same costs.

  The capacities are padded to one square; a matching of its slots pays d_s for each pair of real
  skips and 1 for each real skip matched to a padded slot. The best one matches min(n_a, n_b)
  pairs of real skips (d_s <= 1 < 2), as the host's rule; its real costs are summed in sorted order
  after the zeros of the other slots, which adds them as the host does.
  """
  chex.assert_rank(cost, 3)
  w, s_a, s_b = cost.shape
  s = max(s_a, s_b)
  if s > FEW_SKIPS:
    raise ValueError(f"cost: {s_a} x {s_b} skip slots; few_skip_edit_distances takes at most {FEW_SKIPS} a side")
  # Pairs on the minor axis of every array: gathering matchings from [W, s, s] is far slower.
  slots = jnp.arange(s)[:, None]
  both = ((slots < n_a)[:, None] & (slots < n_b)[None, :]).reshape(s * s, w)  # [s * s, W]
  square = jnp.pad(jnp.transpose(cost, (1, 2, 0)), ((0, s - s_a), (0, s - s_b), (0, 0))).reshape(s * s, w)
  square = jnp.where(both, square, 0.0)
  rows, cols = _matchings(s, s)
  flat = rows * s + cols  # [M, s]: each matching's slot pairs
  terms = [square[flat[:, t]] for t in range(s)]  # s x [M, W]
  for start in (r % 2 for r in range(s)):  # odd-even transposition sort: s rounds order s terms
    for t in range(start, s - 1, 2):
      terms[t], terms[t + 1] = jnp.minimum(terms[t], terms[t + 1]), jnp.maximum(terms[t], terms[t + 1])
  matched = functools.reduce(jnp.add, terms)
  unmatched = (n_a + n_b) - 2 * both[flat].sum(1)  # [M, W]: real skips left to padded slots
  return (unmatched.astype(cost.dtype) + matched).min(0)


@functools.lru_cache(maxsize=None)
def _matchings(k: int, m: int) -> tuple[np.ndarray, np.ndarray]:
  """Every way to match k items into m >= k: (rows [M, k], cols [M, k]) index arrays."""
  cols = np.array(list(itertools.permutations(range(m), k)), np.int64)
  return np.broadcast_to(np.arange(k), cols.shape), cols
