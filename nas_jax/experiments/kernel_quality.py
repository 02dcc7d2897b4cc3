"""How well a kernel matrix follows the performance of the networks it compares (Auto-Keras Sec. 5.3):
K against P = 1 - |v_i - v_j|, both rank-transformed to normal quantiles and scaled to [-1, 1],
compared by their mean squared difference (the authors' recipe; the paper reports 0.112).
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

__all__ = ["normal_scores", "performance_matrix", "kernel_quality"]


def normal_scores(m) -> np.ndarray:
  """Every entry of an [n, n] matrix replaced by Phi^-1((rank + 1) / (n^2 + 1)) of its rank among
  all n^2 entries (ties share their mean rank), divided by the largest absolute value."""
  m = np.asarray(m, np.float64)
  if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
    raise ValueError(f"m: shape {m.shape}; expected a square matrix of at least 2 x 2")
  if not np.isfinite(m).all():
    raise ValueError("m: holds NaN or inf; kernel and performance matrices are finite")
  ranks = stats.rankdata(m, method="average").reshape(m.shape) - 1.0
  z = special.ndtri((ranks + 1.0) / (m.size + 1.0))
  return z / np.abs(z).max()


def performance_matrix(values) -> np.ndarray:
  """P_ij = 1 - |v_i - v_j| for [n] values (validation accuracies in the paper)."""
  v = np.asarray(values, np.float64)
  if v.ndim != 1 or not np.isfinite(v).all():
    raise ValueError(f"values: expected [n] finite numbers, got shape {v.shape}")
  return 1.0 - np.abs(v[:, None] - v[None, :])


def kernel_quality(k, values) -> float:
  """MSE between normal_scores(K) and normal_scores(P) over all n^2 entries; lower is better.

  Args:
    k: [n, n] kernel matrix of n evaluated networks.
    values: [n] their validation metric.
  """
  k = np.asarray(k, np.float64)
  p = performance_matrix(values)
  if k.shape != p.shape:
    raise ValueError(f"k: shape {k.shape}; expected {p.shape} for {p.shape[0]} values")
  return float(np.mean((normal_scores(k) - normal_scores(p)) ** 2))
