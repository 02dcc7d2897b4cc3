"""The Table 1 experiment of the arc-kernel paper, reproduced on bundled data (arc_kernel.md 5):
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
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.features.otmann import KERNEL_NU_STR, otmann_distances
from nas_jax.features.pairwise import OtmannPair
from nas_jax.spaces import conditional as cond
from nas_jax.surrogates import conditional_models as cm
from nas_jax.surrogates.priors import nasbot_box
from nas_jax.surrogates.surrogate import gp_surrogate
from nas_jax.tasks import conditional_training, datasets

__all__ = ["TABLE_FILE", "DATASETS", "COLUMNS", "half_training", "train_cached", "targets", "otmann_nmse", "nmse_rows"]

TABLE_FILE = "trained.jsonl"
DATASETS = {"digits": "classification", "diabetes": "regression"}
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
  spec = cond.conditional_spec(max_depth)
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
        r = conditional_training.train_points(
          cond.stack_points([points[i] for i in idx]), spec, data, epochs=epochs, key=jax.random.key(seed), chunk=chunk
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
  spec: cond.ConditionalSpec,
  decision: str,
  *,
  n_splits: int,
  n_starts: int = 8,
  steps: int = 200,
) -> list[float]:
  """NMSE of NASBOT's GP (OTMANN kernel of `to_architecture(point)`) on the splits of
  `conditional_models.nmse_table` (a random half for training)."""
  archs = [cond.to_architecture(p, spec, decision) for p in points]
  dist = otmann_distances(archs, solver="exact", nu_str=KERNEL_NU_STR)
  surrogate = gp_surrogate(nasbot_box(len(KERNEL_NU_STR)), n_starts=n_starts, steps=steps, project=True)
  scores = []
  sub = lambda m, rows, cols: jnp.asarray(m[:, rows][:, :, cols])
  for tr, te, k_fit in cm.split_indices(key, len(points), n_splits, int(round(0.5 * len(points)))):
    state = surrogate.fit(
      k_fit, OtmannPair(sub(dist.d, tr, tr), sub(dist.d_bar, tr, tr)), jnp.asarray(y[tr]), jnp.ones(len(tr), bool)
    )
    pred = surrogate.predict(state, OtmannPair(sub(dist.d, te, tr), sub(dist.d_bar, te, tr)))
    scores.append(cm.nmse(y[te], np.asarray(pred.mean).reshape(-1, len(te)).mean(0)))
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
  spec = cond.conditional_spec(max_depth)
  table = {}
  for (name, half), (points, errors) in trained.items():
    u, active = cond.to_unit(cond.stack_points(points), spec)
    for suffix, log_target, col_half in COLUMNS:
      if col_half != half:
        continue
      y = targets(errors, log_target)
      key = jax.random.key(seed)
      row = {
        m: v[:2] for m, v in cm.nmse_table(key, u, active, y, n_splits=n_splits, n_starts=n_starts, steps=steps).items()
      }
      if otmann:
        s = otmann_nmse(
          key,
          points,
          y,
          spec,
          "softmax" if DATASETS[name] == "classification" else "linear",
          n_splits=n_splits,
          n_starts=n_starts,
          steps=steps,
        )
        row["otmann_gp"] = (float(np.mean(s)), float(np.std(s, ddof=1) / np.sqrt(len(s))))
      table[f"{name}{suffix}"] = row
  return table
