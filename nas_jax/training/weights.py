"""Trained network weights on disk: Flax variable trees as msgpack files.

A search may be killed (kill -9) at any moment, so a file is written beside its destination and
renamed onto it: a reader sees either no file (or the previous one) or a complete one.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Mapping

import flax.serialization
import jax
import numpy as np

__all__ = ["save_variables", "load_variables", "write_atomic"]


def save_variables(path: str | os.PathLike, variables: Any) -> None:
  """Writes `variables` to `path` atomically, creating its directory.

  Args:
    path: the destination file; `path + ".tmp"` is used while writing.
    variables: nested dicts of numpy or jax arrays, e.g. {"params": ..., "batch_stats": ...}
      (`EvalResult.variables`) or a FrozenDict; leaves are copied to the host.

  Raises:
    TypeError: `variables` is not a mapping.
  """
  if not isinstance(variables, Mapping):
    raise TypeError(f"variables: got {type(variables).__name__}; expected a dict such as {{'params': ...}}")
  # to_state_dict turns FrozenDicts into the plain dicts that msgpack accepts.
  data = flax.serialization.msgpack_serialize(flax.serialization.to_state_dict(jax.tree.map(np.asarray, variables)))
  write_atomic(path, data)


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
  """Writes `data` to `path` (creating its directory) through `path + ".tmp"` and a rename: a
  reader sees the previous file or the whole new one, never a part. A failed write (a full disk)
  removes the temporary file and raises OSError naming `path`."""
  path = os.fspath(path)
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  tmp = path + ".tmp"
  try:
    with open(tmp, "wb") as f:
      f.write(data)
      f.flush()
      os.fsync(f.fileno())  # the bytes are on disk before the rename makes them visible
    os.replace(tmp, path)
  except OSError as e:
    with contextlib.suppress(OSError):
      os.remove(tmp)
    raise OSError(e.errno, e.strerror, path) from None


def load_variables(path: str | os.PathLike) -> dict[str, Any]:
  """Reads a tree written by `save_variables`: nested dicts of numpy arrays, dtypes kept.

  Raises:
    FileNotFoundError: there is no file at `path`.
    ValueError: the file is truncated or corrupt, or does not hold a dict.
  """
  path = os.fspath(path)
  try:
    with open(path, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    raise FileNotFoundError(f"load_variables: {path}: no such file (save_variables writes them)") from None
  try:
    tree = flax.serialization.msgpack_restore(data)
  except (ValueError, TypeError) as e:  # msgpack's errors on cut or altered bytes
    raise ValueError(f"load_variables: {path} ({len(data)} bytes) is truncated or corrupt: {e}") from e
  if not isinstance(tree, dict):
    raise ValueError(f"load_variables: {path} holds a {type(tree).__name__}; expected a dict of variables")
  return tree
