"""The Table 1 experiment of the arc-kernel paper (Swersky et al. 2013, Sec. 3): `nmse_table` scores every model
of `surrogates.conditional_models` on random train/test splits of given points; `nmse_rows`
reproduces the table on bundled data:
random points of the conditional space trained on digits (classification error) and diabetes
(regression MSE), on full and half training data, then the NMSE of every model on held-out halves
of those points, with raw and log targets.

Every trained point is appended to `<workdir>/trained.jsonl` (one fsynced line per point), so an
interrupted run resumes where it stopped; a point is identified by (dataset, half, index), and
point i is the same random point in every run with the same seed.
"""

from __future__ import annotations

import json
import os
from types import MappingProxyType
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import conditional_point as cond_point
from nas_jax.experiments.regret import mean_se
from nas_jax.features.otmann import KERNEL_NU_STR, otmann_distances
from nas_jax.features.pairwise import OtmannPair
from nas_jax.spaces import conditional as cond
from nas_jax.surrogates import conditional_models as cm
from nas_jax.surrogates.priors import nasbot_box
from nas_jax.surrogates.surrogate import gp_surrogate
from nas_jax.training import conditional, datasets
from nas_jax.wiring.names import CONDITIONAL_MODELS, conditional_models_of

__all__ = [
  "TABLE_FILE",
  "DATASETS",
  "COLUMNS",
  "nmse",
  "split_indices",
  "nmse_table",
  "half_training",
  "train_cached",
  "targets",
  "otmann_nmse",
  "nmse_rows",
]

TABLE_FILE = "trained.jsonl"
DATASETS = MappingProxyType({"digits": "classification", "diabetes": "regression"})
# Table 1's columns: "NN" = the error, "log" = its logarithm, "half" = trained on half the data.
COLUMNS = (("", False, False), (" log", True, False), (" half", False, True), (" log half", True, True))
_LOG_FLOOR = 1e-3  # a digits network can reach 0 validation error; log(0) has no place in a GP


def half_training(data: datasets.Dataset, seed: int = 0) -> datasets.Dataset:
  """The dataset with a random half of its training split (validation and test unchanged)."""
  keep = np.sort(np.random.default_rng(seed).permutation(len(data.x_train))[: len(data.x_train) // 2])
  return data._replace(x_train=data.x_train[keep], y_train=data.y_train[keep])


def _read(path: str) -> dict:
  done = {}
  if os.path.exists(path):
    with open(path) as f:
      for line in f:
        if line.endswith("\n"):  # a torn last line (a killed run) is retrained
          row = json.loads(line)
          done[(row["dataset"], row["half"], row["index"])] = row
  return done


def _append(path: str, rows: list) -> None:
  with open(path, "a") as f:
    for row in rows:
      f.write(json.dumps(row, sort_keys=True) + "\n")
    f.flush()
    os.fsync(f.fileno())


def train_cached(
  workdir: str,
  *,
  n_points: int,
  epochs: int,
  seed: int = 0,
  names: Sequence[str] = tuple(DATASETS),
  max_depth: int = 3,
  chunk: int = 32,
  log=print,
) -> dict:
  """Trains (or reads back) n_points random points per (dataset, half).

  Returns:
    {(dataset, half): (points: list[ConditionalPoint], val_error [n] float64)}.
  """
  for name in names:
    if name not in DATASETS:
      raise ValueError(f"datasets: {name!r} is unknown; allowed: {', '.join(DATASETS)}")
  if isinstance(n_points, bool) or not isinstance(n_points, int) or n_points < 8:
    raise ValueError(f"n_points: {n_points!r}; expected an integer >= 8 (the splits need points on both sides)")
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, TABLE_FILE)
  done = _read(path)
  spec = cond_point.conditional_spec(max_depth)
  out = {}
  for name in names:
    space = cond.conditional_space(max_depth=max_depth, task=DATASETS[name])
    points = space.sample(jax.random.key(seed), n_points)
    full = datasets.get_dataset(name, kind="mlp", seed=0)
    for half in (False, True):
      data = half_training(full, seed) if half else full
      todo = [i for i in range(n_points) if (name, half, i) not in done]
      for start in range(0, len(todo), chunk):
        idx = todo[start : start + chunk]
        r = conditional.train_points(
          cond_point.stack_points([points[i] for i in idx]),
          spec,
          data,
          epochs=epochs,
          key=jax.random.key(seed),
          chunk=chunk,
        )
        rows = [
          {
            "dataset": name,
            "half": half,
            "index": i,
            "point": space.to_json(points[i]),
            "val_error": float(v),
            "test_error": float(t),
          }
          for i, v, t in zip(idx, r.val_error, r.test_error)
        ]
        _append(path, rows)
        done.update({(name, half, row["index"]): row for row in rows})
        log(f"{name}{' half' if half else ''}: {len(done)} points trained in all ({r.seconds:.1f} s for {len(idx)})")
      out[(name, half)] = (points, np.array([done[(name, half, i)]["val_error"] for i in range(n_points)]))
  return out


def targets(errors: np.ndarray, log_target: bool) -> np.ndarray:
  """The regression target: the error, or log(error + 1e-3)."""
  return np.log(errors + _LOG_FLOOR) if log_target else errors


def otmann_nmse(
  key,
  points: list,
  y: np.ndarray,
  spec: cond_point.ConditionalSpec,
  decision: str,
  *,
  n_splits: int,
  n_starts: int = 8,
  steps: int = 200,
) -> list[float]:
  """NMSE of NASBOT's GP (OTMANN kernel of `to_architecture(point)`) on the splits of
  `nmse_table` (a random half for training)."""
  archs = [cond_point.to_architecture(p, spec, decision) for p in points]
  dist = otmann_distances(archs, nu_str=KERNEL_NU_STR)
  surrogate = gp_surrogate(nasbot_box(len(KERNEL_NU_STR)), n_starts=n_starts, steps=steps, project=True)
  scores = []
  sub = lambda m, rows, cols: jnp.asarray(m[:, rows][:, :, cols])
  for tr, te, k_fit in split_indices(key, len(points), n_splits, int(round(0.5 * len(points)))):
    state = surrogate.fit(
      k_fit, OtmannPair(sub(dist.d, tr, tr), sub(dist.d_bar, tr, tr)), jnp.asarray(y[tr]), jnp.ones(len(tr), bool)
    )
    pred = surrogate.predict(state, OtmannPair(sub(dist.d, te, tr), sub(dist.d_bar, te, tr)))
    scores.append(nmse(y[te], np.asarray(pred.mean).reshape(-1, len(te)).mean(0)))
  return scores


def nmse_rows(
  trained: dict,
  *,
  n_splits: int = 5,
  seed: int = 0,
  max_depth: int = 3,
  otmann: bool = True,
  n_starts: int = 8,
  steps: int = 200,
) -> dict:
  """{column name: {model: (mean, stderr)}} over every (dataset, half) and raw/log target."""
  spec = cond_point.conditional_spec(max_depth)
  fit = dict(n_splits=n_splits, n_starts=n_starts, steps=steps)
  table = {}
  for (name, half), (points, errors) in trained.items():
    u, active = cond_point.to_unit(cond_point.stack_points(points), spec)
    decision = "softmax" if DATASETS[name] == "classification" else "linear"
    for suffix, log_target, col_half in COLUMNS:
      if col_half != half:
        continue
      y = targets(errors, log_target)
      key = jax.random.key(seed)
      row = {m: v[:2] for m, v in nmse_table(key, u, active, y, **fit).items()}
      if otmann:
        s = otmann_nmse(key, points, y, spec, decision, **fit)
        row["otmann_gp"] = (float(np.mean(s)), float(np.std(s, ddof=1) / np.sqrt(len(s))))
      table[f"{name}{suffix}"] = row
  return table


def nmse(y_true, y_pred) -> float:
  """Mean squared error over the variance of y_true (ddof 0): [m], [m] -> float.

  Predicting the mean of y_true everywhere scores exactly 1. Raises ValueError on shapes or
  on y_true without variance.
  """
  y_true, y_pred = np.asarray(y_true, np.float64), np.asarray(y_pred, np.float64)
  if y_true.ndim != 1 or y_pred.shape != y_true.shape:
    raise ValueError(f"y_pred: shape {y_pred.shape}; expected y_true's shape, a 1-d [m]")
  var = y_true.var()
  if not var > 0:
    raise ValueError(f"y_true: variance {var}; NMSE needs finite targets that vary")
  return float(np.mean((y_true - y_pred) ** 2) / var)


def _summary(scores: list[float]) -> tuple[float, float, list[float]]:
  """(mean, standard error (0 for one value), scores) of per-split scores."""
  return (*mean_se(scores), list(scores))


def split_indices(
  key: jax.Array, n: int, n_splits: int, n_train: int
) -> list[tuple[np.ndarray, np.ndarray, jax.Array]]:
  """The splits of `nmse_table`: per split s, a permutation from fold_in(key, s) cut into n_train
  training and n - n_train test indices, and the split's fitting key. Other models (e.g. an
  OTMANN GP on the same points) use it to be scored on the very same splits."""
  out = []
  for s in range(n_splits):
    k_perm, k_fit = jax.random.split(jax.random.fold_in(key, s))
    perm = np.asarray(jax.random.permutation(k_perm, n))
    out.append((perm[:n_train], perm[n_train:], k_fit))
  return out


def nmse_table(
  key: jax.Array,
  u,
  active,
  y,
  *,
  n_splits: int = 5,
  models: Sequence[str] = tuple(CONDITIONAL_MODELS),
  train_fraction: float = 0.5,
  n_starts: int = 8,
  steps: int = 200,
) -> dict[str, tuple[float, float, list[float]]]:
  """Table 1 of the paper: test NMSE of every model over random train/test splits.

  Split s is a random permutation from fold_in(key, s); every model sees the same splits and
  the same fit key, so a model's scores do not depend on which other models are listed.

  Args:
    key: PRNG key; u: [n, P] float in [0, 1]; active: [n, P] bool; y: [n] float.
    n_splits: number of splits; models: names from `wiring.names.CONDITIONAL_MODELS`.
    train_fraction: share of the points in each training set (the paper: a random half).
    n_starts, steps: the GP fits (cm.fit_predict).

  Returns:
    {model: (mean NMSE, standard error, [n_splits] NMSE per split)}.

  Raises:
    ValueError on bad data, an unknown model, n_splits < 1, or a train_fraction that leaves
    fewer than 2 training or 2 test points.
  """
  chosen = conditional_models_of(models, "models")
  u, active = cm.check_points("u", u, "active", active)
  y = cm.check_targets("y", y, len(u))
  if not isinstance(n_splits, (int, np.integer)) or n_splits < 1:
    raise ValueError(f"n_splits: {n_splits!r}; expected an int >= 1")
  n_train = int(round(train_fraction * len(y)))
  if not 2 <= n_train <= len(y) - 2:
    raise ValueError(
      f"train_fraction: {train_fraction} gives {n_train} of {len(y)} points for training;"
      " training and test sets need at least 2 points each"
    )
  scores: dict[str, list[float]] = {name: [] for name in models}
  for tr, te, k_fit in split_indices(key, len(y), n_splits, n_train):
    for name, model in chosen.items():
      pred = cm.fit_predict(
        model,
        k_fit,
        u[tr],
        active[tr],
        y[tr],
        u[te],
        active[te],
        n_starts=n_starts,
        steps=steps,
      )
      scores[name].append(nmse(y[te], pred))
  return {name: _summary(values) for name, values in scores.items()}
