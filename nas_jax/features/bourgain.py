"""Bourgain embedding of a distance matrix (named in Auto-Keras Sec. 3.1; built as the authors' code
builds it) and its out-of-sample map (our choice; the paper is silent): coordinates phi whose
Euclidean distances rho feed the kernel exp(-rho) of eq. (2).
"""

from __future__ import annotations

import math
import numbers
from typing import Sequence

import chex
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  "BOURGAIN_REPEATS",
  "BourgainAnchors",
  "anchors_from_sets",
  "bourgain_anchors",
  "bourgain_embed",
]

#: The `repeat` rules of `bourgain_anchors`: T sets per level ("intended") or T - i at level i (the authors' code).
BOURGAIN_REPEATS = ("intended", "code")


@flax.struct.dataclass
class BourgainAnchors:
  """The anchor sets S_1..S_m of one embedding, one per coordinate.

  sets: [m, A] int32 indices of history networks; mask: [m, A] bool, True for real members
  (real members first, every set non-empty); n: static, the history size they index.
  """

  sets: jax.Array
  mask: jax.Array
  n: int = flax.struct.field(pytree_node=False)


def _check_n(n) -> int:
  if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
    raise ValueError(f"n: {n!r}; expected the number of history networks, an integer >= 1")
  return int(n)


def _set_sizes(n: int, repeat: str) -> list[int]:
  """Anchor-set size of each coordinate: 2^i for levels i = 0..k, R_i times each.

  k = ceil(log2 n - 1), T = ceil(ln n); R_i = T ("intended") or max(T - i, 0) ("code", whose
  loop variable shadows T). n = 1 has no level: no coordinate, K = [[1]] (as in the authors' code).
  """
  k, t = math.ceil(math.log2(n) - 1), math.ceil(math.log(n))
  sizes = []
  for i in range(k + 1):
    sizes += [2**i] * (t if repeat == "intended" else max(t - i, 0))
  return sizes


def _anchors(sets: np.ndarray, sizes: Sequence[int], n: int) -> BourgainAnchors:
  mask = np.arange(sets.shape[1])[None, :] < np.asarray(sizes, int).reshape(-1, 1)
  return BourgainAnchors(jnp.asarray(np.where(mask, sets, 0), jnp.int32), jnp.asarray(mask), n)


def bourgain_anchors(key: jax.Array, n: int, *, repeat: str = "intended") -> BourgainAnchors:
  """Random anchor sets for n history networks (Bourgain's construction, as the authors' code draws them).

  Each set of level i holds 2^i indices drawn uniformly from {0..n-1} with replacement. The
  draw depends only on key and n (the code reseeds its RNG with 123 on every call).

  Args:
    key: PRNG key.
    n: number of history networks, >= 1.
    repeat: "intended" (T sets per level) or "code" (T - i sets at level i, the code's bug).
      Coordinates m for n = 2, 3, 10, 47, 100: 1, 4, 12, 24, 35 / 1, 3, 6, 10, 15.

  Returns:
    BourgainAnchors with sets [m, A], A = the largest set size (1 if m = 0).
  """
  n = _check_n(n)
  if repeat not in BOURGAIN_REPEATS:
    raise ValueError(f"repeat: {repeat!r} is unknown; choose one of: {', '.join(BOURGAIN_REPEATS)}")
  sizes = _set_sizes(n, repeat)
  width = max(sizes, default=1)
  # The shape [m, A] changes with n: a host generator seeded by the key draws without a compile.
  seed = np.asarray(jax.random.randint(key, (4,), 0, np.iinfo(np.int32).max))
  sets = np.random.default_rng(seed).integers(0, n, (len(sizes), width))
  return _anchors(sets, sizes, n)


def anchors_from_sets(sets: Sequence[Sequence[int]], n: int) -> BourgainAnchors:
  """Explicit anchor sets (0-based indices of history networks), e.g. to fix them in tests.

  Raises:
    ValueError naming the set that is empty or holds an index outside [0, n).
  """
  n = _check_n(n)
  if isinstance(sets, (str, bytes)) or not isinstance(sets, Sequence):
    raise TypeError(f"sets: {type(sets).__name__} given; expected a list of lists of indices")
  for i, s in enumerate(sets):
    if isinstance(s, (str, bytes)) or not isinstance(s, Sequence) or not s:
      raise ValueError(f"sets[{i}]: {s!r}; an anchor set is a non-empty list of indices")
    for x in s:
      if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not 0 <= x < n:
        raise ValueError(f"sets[{i}]: index {x!r} is not an integer in [0, {n}), the history size")
  sizes = [len(s) for s in sets]
  width = max(sizes, default=1)
  padded = np.array([list(s) + [0] * (width - len(s)) for s in sets], int).reshape(len(sets), width)
  return _anchors(padded, sizes, n)


def bourgain_embed(d, anchors: BourgainAnchors) -> np.ndarray:
  """Coordinates phi_k(x) = min_{s in S_k} d(x, f_s), one per anchor set (Auto-Keras Sec. 3.1).

  The same map embeds the history (pass its [n, n] matrix) and candidates outside it (pass their
  distances to the history, [n*, n]; our choice, `oos = "anchors"`), so exp(-||phi_a - phi_b||)
  over history and candidates together is one Laplace kernel on R^m: every Gram matrix is PSD.
  No 1/m scaling; each coordinate is 1-Lipschitz in d when d obeys the triangle inequality.

  Args:
    d: [rows, n] float, distances >= 0 of each embedded network to the n history networks.
    anchors: BourgainAnchors over the same n history networks.

  Returns:
    phi: [rows, m] numpy float64, computed on the host like the distances it reads.

  Raises:
    ValueError if d is not 2-d, holds negative or non-finite values, or has n != anchors.n.
  """
  if not isinstance(anchors, BourgainAnchors):
    raise TypeError(f"anchors: {type(anchors).__name__} given; expected BourgainAnchors")
  d = np.asarray(d, dtype=float)
  if d.ndim != 2 or d.shape[1] != anchors.n:
    raise ValueError(f"d: shape {d.shape}; expected [rows, n] with n = {anchors.n}, the anchors' history size")
  if not np.all(np.isfinite(d)) or np.any(d < 0):
    raise ValueError("d: has negative or non-finite entries; distances must be >= 0")
  sets, mask = np.asarray(anchors.sets), np.asarray(anchors.mask)
  phi = np.where(mask[None], d[:, sets], np.inf).min(-1)
  chex.assert_shape(phi, (d.shape[0], sets.shape[0]))
  return phi
