"""The training loop's records: an epoch's (validation error, validation loss, test error), the
best epoch among them, early stopping on them, and the `EvalResult` they give."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from nas_jax.training import early_stopping
from nas_jax.training.train_config import TrainConfig

__all__ = ["EvalResult", "best_epoch", "epoch_record", "stops", "result_of"]


class EvalResult(NamedTuple):
  """The outcome of `evaluate`. Errors are 1 - accuracy (classification) or MSE on standardised
  targets (regression); lower is better. Metrics with NaN mean training diverged.

  Attributes:
    task: "classification" or "regression".
    val_error: the minimum validation error over epochs: the paper's score.
    val_loss: validation loss at the best epoch (cross-entropy, or MSE).
    test_error: test error of the parameters of the best epoch.
    best_epoch: 1-based epoch of `val_error`; 0 when every epoch gave NaN.
    epochs: epochs trained: fewer than the config's when early stopping ended training.
    train_seconds: wall time of the training epochs, without compilation or evaluation.
    eval_seconds: wall time of the evaluation passes.
    compile_seconds: wall time of initialisation and of compiling the epoch and the evaluation.
    val_errors: the validation error after each trained epoch.
    variables: with `keep_variables`, the host numpy {"params", "batch_stats"} of the best epoch
      (None when every epoch gave NaN); else None.
  """

  task: str
  val_error: float
  val_loss: float
  test_error: float
  best_epoch: int
  epochs: int
  train_seconds: float
  eval_seconds: float
  compile_seconds: float
  val_errors: tuple[float, ...]
  variables: Any = None

  @property
  def val_accuracy(self) -> float:
    """1 - val_error for classification; NaN for regression."""
    return 1.0 - self.val_error if self.task == "classification" else math.nan

  @property
  def seconds_per_epoch(self) -> float:
    return self.train_seconds / self.epochs


def best_epoch(val_errors: list[float]) -> int:
  """1-based epoch of the smallest validation error, the earliest on ties; NaN epochs never win;
  0 when every epoch is NaN."""
  finite = [(e, k) for k, e in enumerate(val_errors, start=1) if not math.isnan(e)]
  return min(finite)[1] if finite else 0


def epoch_record(loss, err, n_val_batches: int, n_val: int, n_test: int) -> tuple[float, float, float]:
  """(validation error, validation loss, test error) of one epoch from `train_steps.eval_sums`'
  per-batch sums over the validation batches and then the test batches."""
  loss, err = np.asarray(loss, np.float64), np.asarray(err, np.float64)
  nv = n_val_batches
  return float(err[:nv].sum() / n_val), float(loss[:nv].sum() / n_val), float(err[nv:].sum() / n_test)


def stops(records: list[tuple[float, float, float]], train_config: TrainConfig) -> bool:
  """Whether early stopping ends training after these epochs' records (their validation losses)."""
  return early_stopping.should_stop([r[1] for r in records], train_config.patience, train_config.min_delta)


def result_of(
  task: str,
  records: list[tuple[float, float, float]],
  train_seconds: float,
  eval_seconds: float,
  compile_seconds: float,
  variables: Any = None,
) -> EvalResult:
  """The EvalResult of the epochs' `epoch_record`s: the best validation epoch's metrics."""
  best = best_epoch([r[0] for r in records])
  val_error, val_loss, test_error = records[best - 1] if best else (math.nan,) * 3
  return EvalResult(
    task=task,
    val_error=float(val_error),
    val_loss=float(val_loss),
    test_error=float(test_error),
    best_epoch=best,
    epochs=len(records),
    train_seconds=train_seconds,
    eval_seconds=eval_seconds,
    compile_seconds=compile_seconds,
    val_errors=tuple(float(r[0]) for r in records),
    variables=variables,
  )
