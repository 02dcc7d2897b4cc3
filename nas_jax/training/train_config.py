"""How a network trains: the `TrainConfig`, its one check, and the optax transformation it names."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, NamedTuple

import numpy as np
import optax

__all__ = ["TrainConfig", "OPTIMIZERS", "SCHEDULES", "check_config", "make_optimizer"]

OPTIMIZERS = {
  "adam": optax.adam,
  "sgd": optax.sgd,
  "momentum": functools.partial(optax.sgd, momentum=0.9),
}
SCHEDULES = ("constant", "cosine")


class TrainConfig(NamedTuple):
  """How to train a network. The defaults train a pool CNN on digits in seconds on a CPU.

  Attributes:
    epochs: passes over the training split; the validation error is measured after each.
    batch_size: minibatch size; the remainder of each shuffled epoch is dropped.
    learning_rate: initial step size.
    optimizer: a key of `OPTIMIZERS` ("adam", "sgd", "momentum").
    schedule: "constant", or "cosine" (decay to 0 over all steps: the paper's "reduced gradually").
    weight_decay: L2 coefficient added to the gradient (0 = none).
    eval_batch_size: batch size of the (padded) evaluation passes.
    patience: stop after this many consecutive epochs whose validation loss does not beat the
      best by `min_delta` (`train_loop.stops`); 0 trains all `epochs`.
    min_delta: the smallest decrease of the validation loss that counts as an improvement.
  """

  epochs: int = 8
  batch_size: int = 32
  learning_rate: float = 1e-3
  optimizer: str = "adam"
  schedule: str = "cosine"
  weight_decay: float = 0.0
  eval_batch_size: int = 256
  patience: int = 0
  min_delta: float = 1e-4


def _check_number(where: str, value: Any, kinds: tuple[type, ...], what: str, ok: Callable[[Any], bool]) -> None:
  """TypeError unless `value` is one of `kinds` (never a bool); ValueError unless `ok(value)`."""
  if isinstance(value, bool) or not isinstance(value, kinds):
    raise TypeError(f"{where}: {value!r} is a {type(value).__name__}; expected {what}")
  if not ok(value):
    raise ValueError(f"{where}: {value!r}; expected {what}")


def check_config(config: TrainConfig, where: str = "train_config") -> None:
  """TypeError / ValueError unless `config` is a valid TrainConfig: the one check of its fields,
  made where a config enters (a task's factory, a config file's check, a trainer's call). Errors
  name the field as `<where>.<field>`, e.g. "config.task.optimizer" for a config file's."""
  if not isinstance(config, TrainConfig):
    raise TypeError(f"{where} is a {type(config).__name__}; expected a TrainConfig")
  for name in ("epochs", "batch_size", "eval_batch_size"):
    _check_number(f"{where}.{name}", getattr(config, name), (int, np.integer), "an integer >= 1", lambda v: v >= 1)
  _check_number(f"{where}.patience", config.patience, (int, np.integer), "an integer >= 0", lambda v: v >= 0)
  _check_number(
    f"{where}.learning_rate",
    config.learning_rate,
    (int, float),
    "a finite number > 0",
    lambda v: math.isfinite(v) and v > 0,
  )
  for name in ("weight_decay", "min_delta"):
    _check_number(
      f"{where}.{name}",
      getattr(config, name),
      (int, float),
      "a finite number >= 0",
      lambda v: math.isfinite(v) and v >= 0,
    )
  if config.optimizer not in OPTIMIZERS:
    raise ValueError(f"{where}.optimizer: {config.optimizer!r} is unknown; choose one of: {', '.join(OPTIMIZERS)}")
  if config.schedule not in SCHEDULES:
    raise ValueError(f"{where}.schedule: {config.schedule!r} is unknown; choose one of: {', '.join(SCHEDULES)}")


def make_optimizer(config: TrainConfig, total_steps: int) -> optax.GradientTransformation:
  """The optax transformation of `config`: L2 weight decay, then the optimizer with its schedule."""
  lr = config.learning_rate
  if config.schedule == "cosine":
    lr = optax.cosine_decay_schedule(lr, max(total_steps, 1))
  parts = [optax.add_decayed_weights(config.weight_decay)] if config.weight_decay else []
  return optax.chain(*parts, OPTIMIZERS[config.optimizer](lr))
