"""Which program trains a network: its own compiled one ("specialised", `training.evaluate`), the
shared padded one ("padded", `padded_training`), or the cheaper of the two by an estimate ("auto").

The padded program is compiled once per padding in a process but does the arithmetic of the whole
padding; the specialised one does only the network's arithmetic but compiles for every network.
Compiling the padded program costs about what compiling one specialised MLP does, so it pays only
when later networks reuse it. `auto` therefore trains the first network of each padding in a
process specialised, and a later one padded when the padded program's extra arithmetic, in seconds
at a multiply-accumulate rate measured once per process on the default device (times
`TRAINING_EFFICIENCY`), costs less than a specialised compile (`SPECIALISED_COMPILE_SECONDS`). Both
constants were measured by benchmarks/bench_padded.py.
"""

from __future__ import annotations

import collections
import functools
import time

import jax
import jax.numpy as jnp

from nas_jax.arch.architecture import Architecture
from nas_jax.tasks import padded_mlp, padded_training, training
from nas_jax.tasks.datasets import Dataset

__all__ = [
  "TRAINERS",
  "SPECIALISED_COMPILE_SECONDS",
  "TRAINING_EFFICIENCY",
  "allowed",
  "choose",
  "evaluate",
  "macs_per_second",
]

TRAINERS = ("specialised", "padded", "auto")
# Compiling one pool MLP's epoch and evaluation for diabetes: 1.1-1.7 s on the 2-core CPU of
# benchmarks/bench_padded.py (jax 0.10, quiet machine). A lower bound elsewhere: bigger inputs
# and networks compile longer.
SPECIALISED_COMPILE_SECONDS = 1.2
# A padded training step of a pool MLP reaches 20-27% of a lone [256, 512] x [512, 512] product's
# rate on that CPU (22-29 GMAC/s against 109: the backward pass, Adam on every padded parameter);
# 0.15 leaves a margin, so that auto errs towards the specialised program.
TRAINING_EFFICIENCY = 0.15
# How many networks of each padding `evaluate` has trained in this process (a worker's history).
_SEEN: collections.Counter = collections.Counter()


def allowed(kind: str) -> tuple[str, ...]:
  """The trainers a network kind can use: all for mlp, not "padded" for the others."""
  return TRAINERS if kind == "mlp" else tuple(t for t in TRAINERS if t != "padded")


@functools.lru_cache(maxsize=1)
def macs_per_second() -> float:
  """Multiply-accumulates per second of a float32 [256, 512] x [512, 512] product on the default
  device: the shape of a padded slot's step, timed once per process (best of five)."""
  a, b = jnp.ones((256, 512), jnp.float32), jnp.ones((512, 512), jnp.float32)
  product = jax.jit(jnp.matmul)
  product(a, b).block_until_ready()
  best = float("inf")
  for _ in range(5):
    t0 = time.perf_counter()
    product(a, b).block_until_ready()
    best = min(best, time.perf_counter() - t0)
  return 256 * 512 * 512 / best


def choose(
  trainer: str, arch: Architecture, dataset: Dataset, train_config: training.TrainConfig, *, seen: int = 1
) -> str:
  """The trainer that trains `arch`: "specialised" or "padded".

  "padded" needs an mlp (the padded model covers mlp layer graphs); "auto" picks "padded" for an
  mlp when `seen` (networks of its padding trained before in this process) is at least 1 and the
  padded program's extra multiply-accumulates over all epochs (forward and backward, 3x the
  forward) take less time than `SPECIALISED_COMPILE_SECONDS`.

  Raises:
    ValueError: an unknown trainer, or "padded" for a network that is not an mlp.
  """
  if trainer not in TRAINERS:
    raise ValueError(f"trainer: {trainer!r} is unknown; choose one of: {', '.join(TRAINERS)}")
  if arch.kind != "mlp":
    if trainer == "padded":
      raise ValueError(
        f"trainer: 'padded' trains mlp networks; this is a {arch.kind} network (use specialised or auto)"
      )
    return "specialised"
  if trainer != "auto":
    return trainer
  if seen < 1:
    return "specialised"
  padding = padded_mlp.padding_for([arch])
  num_inputs, num_outputs = padded_training.data_widths(dataset)
  _, layout = padded_mlp.encode(arch, padding, num_inputs, num_outputs)
  extra = padded_mlp.macs(padding, num_inputs, num_outputs) - padded_mlp.layout_macs(layout)
  examples = (dataset.x_train.shape[0] // train_config.batch_size) * train_config.batch_size
  seconds = 3 * extra * examples * train_config.epochs / (macs_per_second() * TRAINING_EFFICIENCY)
  return "padded" if seconds < SPECIALISED_COMPILE_SECONDS else "specialised"


def evaluate(
  trainer: str, arch: Architecture, dataset: Dataset, train_config: training.TrainConfig, key: jax.Array
) -> tuple[training.EvalResult, str]:
  """Trains `arch` with the trainer `choose` picks, given the networks of its padding this process
  trained before; returns the result and that trainer's name."""
  padding = padded_mlp.padding_for([arch]) if arch.kind == "mlp" else None
  chosen = choose(trainer, arch, dataset, train_config, seen=_SEEN[padding])
  _SEEN[padding] += 1
  if chosen == "padded":
    return padded_training.evaluate(arch, dataset, train_config, key), chosen
  return training.evaluate(arch, dataset, train_config, key), chosen
