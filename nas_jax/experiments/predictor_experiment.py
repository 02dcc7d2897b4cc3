"""The BANANAS predictor experiment (BANANAS Table 1, on NB201): train the meta
neural network ensemble on n random cells per encoding; report train and held-out MAE.
"""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.features import encodings
from nas_jax.surrogates import ensemble

__all__ = ["predictor_mae"]


def predictor_mae(
  key: jax.Array,
  cells: Sequence[Any],
  errors: Any,
  *,
  encoding_names: Sequence[str] = ("adj_onehot", "path", "trunc_path", "path_iso"),
  train_sizes: Sequence[int] = (20, 100, 200),
  n_test: int = 500,
  n_fits: int = 3,
  n_members: int = 5,
  epochs: int = 150,
) -> dict:
  """MAE (val error, percentage points) of the ensemble mean, per encoding and training size.

  For each of n_fits repetitions: draw disjoint random train (largest size) and test sets;
  smaller training sets are prefixes of the largest. Every (encoding, size) is fitted with its
  own keys; each size is padded to the largest, so one compile serves all sizes.

  Args:
    key: PRNG key (splits, then per-fit ensemble keys).
    cells: the R cells of the table; errors: [R] val errors (%).
    encoding_names: names from `encodings.ENCODINGS`.
    train_sizes: n values; n_test: held-out cells; n_fits: repetitions averaged.
    n_members, epochs: the ensemble (BANANAS Sec. 4 and its code: 5 members, 150 epochs; Table 1 notebook: 200).

  Returns:
    {encoding: {n: {"train": mean MAE, "test": mean MAE, "test_std": std over fits}}}.
  """
  errors = np.asarray(errors, np.float64)
  n_max = max(train_sizes)
  if n_max + n_test > len(cells):
    raise ValueError(f"predictor_mae: max(train_sizes) + n_test = {n_max + n_test} > {len(cells)} cells")
  k_split, k_fit = jax.random.split(key)
  splits = [
    np.asarray(jax.random.permutation(jax.random.fold_in(k_split, f), len(cells)))[: n_max + n_test]
    for f in range(n_fits)
  ]
  out: dict = {}
  for e_i, name in enumerate(encoding_names):
    x_all = np.asarray(encodings.encode(name, cells))
    out[name] = {}
    for n in train_sizes:
      train, test = [], []
      for f, idx in enumerate(splits):
        tr, te = idx[:n_max], idx[n_max:]
        mask = np.arange(n_max) < n
        y = np.where(mask, errors[tr], 0.0)
        fit_key = jax.random.fold_in(jax.random.fold_in(k_fit, e_i), 1000 * f + n)
        state = ensemble.fit_ensemble(
          fit_key,
          jnp.asarray(x_all[tr]),
          jnp.asarray(y),
          jnp.asarray(mask),
          n_members=n_members,
          epochs=epochs,
        )
        pred_tr = np.asarray(ensemble.predict_members(state, jnp.asarray(x_all[tr[:n]]))).mean(0)
        pred_te = np.asarray(ensemble.predict_members(state, jnp.asarray(x_all[te]))).mean(0)
        train.append(np.abs(pred_tr - errors[tr[:n]]).mean())
        test.append(np.abs(pred_te - errors[te]).mean())
      out[name][n] = {"train": float(np.mean(train)), "test": float(np.mean(test)), "test_std": float(np.std(test))}
  return out
