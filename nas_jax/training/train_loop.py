"""The one training loop: epochs of a compiled pass, each followed by an evaluation that gives
every network trained (one, or a population's) a Record; early stopping on the Records, each
network's best epoch, and its `EvalResult`. Trainers differ in the passes they hand it:
`specialised` a network's own program, `population` one vmapped over padded networks,
`conditional` a vmapped chunk of conditional points."""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import jax
import numpy as np

from nas_jax.training.datasets import Dataset
from nas_jax.training.train_config import TrainConfig

__all__ = [
  "Record",
  "EvalResult",
  "EvalSplits",
  "Trained",
  "eval_splits",
  "train_epochs",
  "best_epoch",
  "stops",
  "result_of",
]

# One epoch of one network: (validation error, validation loss, test error).
Record = tuple[float, float, float]


class EvalResult(NamedTuple):
  """The outcome of training one network. Errors are 1 - accuracy (classification) or MSE on standardised
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


class EvalSplits(NamedTuple):
  """The validation and test splits as zero-padded batches of one evaluation pass: x [nb, b, ...],
  y [nb, b], valid [nb, b] float32 (1 for real examples); the first n_val_batches batches are the
  validation split's (n_val examples), the rest the test split's (n_test)."""

  x: np.ndarray
  y: np.ndarray
  valid: np.ndarray
  n_val_batches: int
  n_val: int
  n_test: int

  def record(self, loss, err) -> Record:
    """One epoch's Record from `train_steps.eval_sums`' per-batch sums, loss and err: [nb]."""
    loss, err = np.asarray(loss, np.float64), np.asarray(err, np.float64)
    nv = self.n_val_batches
    return float(err[:nv].sum() / self.n_val), float(loss[:nv].sum() / self.n_val), float(err[nv:].sum() / self.n_test)


def eval_splits(dataset: Dataset, train_config: TrainConfig) -> EvalSplits:
  """`dataset`'s validation and test splits, each zero-padded to whole batches of
  `train_config.eval_batch_size` (at most the larger split), one after the other."""
  n_val, n_test = dataset.x_val.shape[0], dataset.x_test.shape[0]
  batch = min(train_config.eval_batch_size, max(n_val, n_test))

  def batches(a):  # [n, ...] -> [ceil(n / batch), batch, ...], zeros after the n
    nb = -(-len(a) // batch)
    return np.concatenate([a, np.zeros((nb * batch - len(a), *a.shape[1:]), a.dtype)]).reshape(nb, batch, *a.shape[1:])

  splits = ((dataset.x_val, dataset.y_val), (dataset.x_test, dataset.y_test))
  parts = [[batches(a) for a in (x, y, np.ones(len(x), np.float32))] for x, y in splits]
  x, y, valid = (np.concatenate(p) for p in zip(*parts))
  return EvalSplits(x, y, valid, len(parts[0][0]), n_val, n_test)


class Trained(NamedTuple):
  """What `train_epochs` returns: the state after the last epoch, per network its Records (those
  it was given, then those trained) and `keep(state, i)` of its best epoch (None without `keep`),
  and the wall time of the training and of the evaluation passes."""

  state: Any
  records: list[list[Record]]
  kept: list[Any]
  train_seconds: float
  eval_seconds: float


def train_epochs(
  run_epoch: Callable[[Any, int], Any],
  evaluate: Callable[[Any], Sequence[Record]],
  state: Any,
  epochs: Iterable[int],
  records: list[list[Record]],
  *,
  stop: Callable[[list[Record]], bool] = lambda records: False,
  keep: Callable[[Any, int], Any] | None = None,
) -> Trained:
  """Trains the networks of `state` (one, or a population) over `epochs`, each epoch followed by
  an evaluation.

  Args:
    run_epoch: (state, epoch) -> the state after training epoch number `epoch`.
    evaluate: state -> each network's Record of the epoch just trained.
    state, epochs: the state before the first of `epochs`, the epoch numbers to train.
    records: per network, the Records of the epochs it trained before (extended in place).
    stop: a network's Records -> whether early stopping ends it. A stopped network's state may
      change on with its population's, but its records are closed; the loop ends when all stopped.
    keep: (state, i) -> what to keep of network i after its best epoch so far (host copies: the
      next epoch may overwrite the state's buffers).
  """
  kept: list[Any] = [None] * len(records)
  running = [i for i, r in enumerate(records) if not stop(r)]
  train_s = eval_s = 0.0
  for epoch in epochs:
    if not running:
      break
    t0 = time.perf_counter()
    state = jax.block_until_ready(run_epoch(state, epoch))
    t1 = time.perf_counter()
    scores = evaluate(state)
    eval_s += time.perf_counter() - t1
    train_s += t1 - t0
    for i in running:
      records[i].append(scores[i])
      if keep is not None and best_epoch([r[0] for r in records[i]]) == len(records[i]):
        kept[i] = keep(state, i)
    running = [i for i in running if not stop(records[i])]
  return Trained(state, records, kept, train_s, eval_s)


def stops(records: list[Record], train_config: TrainConfig) -> bool:
  """Early stopping on the validation loss (Auto-Keras: stop after tau consecutive epochs whose
  loss is greater than best - 1e-4): whether training stops after epochs of these Records.

  An epoch improves when its loss is <= best - min_delta, best being the loss of the last
  improving epoch (inf before the first). As in Auto-Keras and Keras, an epoch that improves by
  less than min_delta leaves best where it is, so a slow descent still counts once it adds up to
  min_delta. A NaN or infinite loss never improves. It stops when the last
  `train_config.patience` epochs (patience >= 1; 0 never stops) all failed to improve by
  `train_config.min_delta`.
  """
  best, stale = math.inf, 0
  for _, loss, _ in records:
    if math.isfinite(loss) and loss <= best - train_config.min_delta:
      best, stale = loss, 0
    else:
      stale += 1
  return train_config.patience > 0 and stale >= train_config.patience


def result_of(
  task: str,
  records: list[Record],
  train_seconds: float,
  eval_seconds: float,
  compile_seconds: float,
  variables: Any = None,
) -> EvalResult:
  """The EvalResult of a network's Records: the best validation epoch's metrics."""
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
