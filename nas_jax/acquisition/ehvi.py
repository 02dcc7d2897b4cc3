"""Expected hypervolume improvement (Emmerich et al. 2006), by Monte Carlo over the surrogate's
predictive distribution of the value, for objectives whose other columns are known before
evaluation (parameters, FLOPs, ...: `Space.costs`), so that only the value is uncertain.

All objectives are scores (higher is better). Columns are mapped to [0, 1] by the observed
minimum and maximum (a hypervolume in raw units would let the parameter count, ~10^5, drown the
accuracy, ~1). The reference point is the caller's, when it knows the region that matters (e.g.
accuracy above a floor), else 0.1 below the worst observed score of every objective, BoTorch's
default rule for an unknown nadir, which values any extension of the front, however poor.
"""

from __future__ import annotations

import jax
import numpy as np

from nas_jax.acquisition import pareto
from nas_jax.acquisition.functions import with_pending
from nas_jax.surrogates.surrogate import Predictive

__all__ = ["REF_MARGIN", "ehvi"]

REF_MARGIN = 0.1  # the reference point, below the worst observed normalised score


def ehvi(
  pred: Predictive,
  pred_pending: Predictive,
  known: np.ndarray,
  observed: np.ndarray,
  key: jax.Array,
  *,
  n_samples: int = 64,
  ref: np.ndarray | None = None,
) -> np.ndarray:
  """EHVI of m candidates, [m] float64 >= 0 (the normalised hypervolume each is expected to add).

  Args:
    pred, pred_pending: the surrogate's value predictions at the candidates (mean, std [m] or
      [H, m] over H hyper-parameter samples), by the model of the observations and by the one
      also holding the pending points (`functions.with_pending`: mean of the first, std of the
      second, as every acquisition of nas_jax hallucinates pending points).
    known: [m, k] the candidates' scores of the k known objectives.
    observed: [n, 1 + k] the observed scores (value first); rows with NaN are ignored.
    key: the Monte Carlo draws' key.
    n_samples: value draws per candidate (common random numbers across candidates).
    ref: [1 + k] the reference point's scores, or None for the default (module docstring).
  """
  p = with_pending(pred, pred_pending)
  mean, std = np.asarray(p.mean, np.float64), np.asarray(p.std, np.float64)
  mean, std = mean.reshape(-1, mean.shape[-1]), std.reshape(-1, std.shape[-1])  # [H, m]
  m, k = mean.shape[1], observed.shape[1] - 1
  known = np.asarray(known, np.float64).reshape(m, k)
  rows = observed[~np.isnan(observed).any(axis=1)]
  if len(rows) == 0:
    raise ValueError("ehvi: no observed point has every objective; it needs at least one")
  lo, hi = rows.min(axis=0), rows.max(axis=0)
  span = np.where(hi > lo, hi - lo, 1.0)
  front = (rows[pareto.non_dominated(rows)] - lo) / span
  ref = np.full(k + 1, -REF_MARGIN) if ref is None else (np.asarray(ref, np.float64).reshape(k + 1) - lo) / span
  z = np.asarray(jax.random.normal(key, (n_samples,)), np.float64)
  hyper = np.arange(n_samples) % mean.shape[0]  # draw s uses hyper-parameter sample s mod H
  values = mean[hyper] + std[hyper] * z[:, None]  # [S, m]
  points = np.empty((n_samples, m, k + 1))
  points[..., 0] = values
  points[..., 1:] = known[None]
  points = (points - lo) / span
  gain = pareto.hypervolume_improvement(points.reshape(-1, k + 1), front, ref)
  return gain.reshape(n_samples, m).mean(axis=0)
