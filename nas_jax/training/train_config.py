"""How a network trains: the `TrainConfig`, its one check, and the optax transformation it names."""

from __future__ import annotations

import functools
import math
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import optax

__all__ = ["TrainConfig", "OPTIMIZERS", "SCHEDULES", "check_config", "make_optimizer"]

OPTIMIZERS = MappingProxyType(
  {
    "adam": optax.adam,
    "sgd": optax.sgd,
    "momentum": functools.partial(optax.sgd, momentum=0.9),
    "nesterov": functools.partial(optax.sgd, momentum=0.9, nesterov=True),  # NAS-Bench-201's optimizer
  }
)
SCHEDULES = ("constant", "cosine")


class TrainConfig(NamedTuple):
  """How to train a network. The defaults train a pool CNN on digits in seconds on a CPU.

  Attributes:
    epochs: passes over the training split; the validation error is measured after each.
    batch_size: minibatch size; the remainder of each shuffled epoch is dropped.
    learning_rate: initial step size.
    optimizer: a key of `OPTIMIZERS` ("adam", "sgd", "momentum", "nesterov": SGD with Nesterov
      momentum 0.9).
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


# The numeric fields of a TrainConfig, in the order they are checked: (names, types, what is allowed, rule).
_NUMBERS = (
  (("epochs", "batch_size", "eval_batch_size"), (int, np.integer), "an integer >= 1", lambda v: v >= 1),
  (("patience",), (int, np.integer), "an integer >= 0", lambda v: v >= 0),
  (("learning_rate",), (int, float), "a finite number > 0", lambda v: math.isfinite(v) and v > 0),
  (("weight_decay", "min_delta"), (int, float), "a finite number >= 0", lambda v: math.isfinite(v) and v >= 0),
)


def check_config(config: TrainConfig, where: str = "train_config") -> None:
  """TypeError / ValueError unless `config` is a valid TrainConfig: the one check of its fields,
  made where a config enters (a task's factory, a config file's check, a trainer's call). Errors
  name the field as `<where>.<field>`, e.g. "config.task.optimizer" for a config file's; a number
  of the wrong type (a bool never counts as one) is a TypeError."""
  if not isinstance(config, TrainConfig):
    raise TypeError(f"{where} is a {type(config).__name__}; expected a TrainConfig")
  for names, kinds, what, ok in _NUMBERS:
    for name in names:
      value = getattr(config, name)
      if isinstance(value, bool) or not isinstance(value, kinds):
        raise TypeError(f"{where}.{name}: {value!r} is a {type(value).__name__}; expected {what}")
      if not ok(value):
        raise ValueError(f"{where}.{name}: {value!r}; expected {what}")
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
