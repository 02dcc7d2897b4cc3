"""Checkpoints of a training run paused after some epochs (multi-fidelity training): the
`Checkpoint` that `specialised.train_until` continues, its file tagged with the run it belongs to,
and the device state restored from it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.training import train_steps, weights

__all__ = ["Checkpoint", "capture", "save", "load", "restore_state"]


class Checkpoint(NamedTuple):
  """A run of `evaluate` paused after some epochs: all that `train_until` needs to continue it
  exactly as if it had never paused.

  Attributes:
    state: the `train_steps.TrainState` (params, batch_stats, optimizer state with its step count,
      which drives the schedule) as a Flax state dict (`flax.serialization.to_state_dict`) of host
      numpy arrays: nested dicts, as msgpack stores them.
    records: the `train_loop.Record` of each epoch trained, in order; their number is the epochs done.
  """

  state: Any
  records: tuple[tuple[float, float, float], ...]

  @property
  def epochs(self) -> int:
    return len(self.records)


def capture(state: train_steps.TrainState, records) -> Checkpoint:
  """The Checkpoint of a device TrainState after the epochs of `records` (copied to the host)."""
  return Checkpoint(flax.serialization.to_state_dict(jax.device_get(state)), tuple(records))


def save(path: str, checkpoint: Checkpoint, meta: str) -> None:
  """Writes `checkpoint` to `path` atomically (`weights.save_variables`), tagged with `meta` (a
  string that names the run, e.g. its architecture, seed, data and config as JSON), as the tree
  {"meta": [len(meta utf-8)] uint8, "records": [epochs, 3] float64, "state": checkpoint.state}."""
  records = np.asarray(checkpoint.records, np.float64).reshape(-1, 3)
  weights.save_variables(
    path, {"meta": np.frombuffer(meta.encode(), np.uint8), "records": records, "state": checkpoint.state}
  )


def load(path: str, meta: str) -> Checkpoint | None:
  """The Checkpoint `save` wrote at `path` when it is tagged `meta`; None when there is none, or it
  is unreadable, corrupt, malformed or another run's (which then trains from scratch). The state is
  checked against the network only when `train_until` uses it."""
  try:
    tree = weights.load_variables(path)
  except (OSError, ValueError):  # none, unreadable, truncated or corrupt
    return None
  if set(tree) != {"meta", "records", "state"}:
    return None
  tag, records = np.asarray(tree["meta"]), np.asarray(tree["records"])
  if tag.dtype != np.uint8 or tag.tobytes() != meta.encode():
    return None
  if records.dtype != np.float64 or records.ndim != 2 or records.shape[1] != 3 or not records.shape[0]:
    return None
  if not isinstance(tree["state"], dict):
    return None
  return Checkpoint(tree["state"], tuple(tuple(float(v) for v in r) for r in records))


def restore_state(abstract: train_steps.TrainState, state: Any) -> train_steps.TrainState | None:
  """The device TrainState of a checkpoint's state dict when it has the structure, shapes and
  dtypes of `abstract` (`jax.eval_shape`s); None when it does not."""
  try:
    restored = flax.serialization.from_state_dict(abstract, state)
  except (ValueError, KeyError, TypeError):
    return None
  if jax.tree.structure(restored) != jax.tree.structure(abstract):
    return None
  for leaf, want in zip(jax.tree.leaves(restored), jax.tree.leaves(abstract)):
    if not isinstance(leaf, np.ndarray) or leaf.shape != want.shape or leaf.dtype != want.dtype:
      return None
  return jax.tree.map(jnp.array, restored)  # copies: the state is donated to the first epoch
