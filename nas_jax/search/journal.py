"""The search journal: one JSON object per line (`"schema": 1`), appended with one write and an
fsync under an advisory lock, and replayed on resume. A torn last line (what a kill leaves) is
skipped; a corrupt line with lines after it is an error that names its line number.
"""

from __future__ import annotations

import fcntl
import json
import os

from nas_jax.search.state import Observation

__all__ = ["SCHEMA", "append", "replay"]

SCHEMA = 1
_CHUNK = 1 << 16


def _drop_torn_tail(fd: int) -> None:
  """Truncates an unterminated last line, so the next record starts on a line of its own.

  Called under the lock: such a line was never completed (replay skips it anyway).
  """
  size = os.fstat(fd).st_size
  if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
    return
  end = size
  while end > 0:
    start = max(0, end - _CHUNK)
    cut = os.pread(fd, end - start, start).rfind(b"\n")
    if cut >= 0:
      os.ftruncate(fd, start + cut + 1)
      return
    end = start
  os.ftruncate(fd, 0)


def append(path: str | os.PathLike, obs: Observation) -> None:
  """Appends `obs` as one line, durably: one write, then fsync, under an exclusive flock.

  Args:
    path: the journal file; created (with its directory entry fsynced) if missing.
    obs: the observation; must be JSON-serialisable (NaN and inf are refused).
  """
  line = json.dumps({"schema": SCHEMA, **obs.to_json()}, sort_keys=True, allow_nan=False) + "\n"
  data = line.encode()
  created = not os.path.exists(path)
  fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX)
    _drop_torn_tail(fd)
    view = memoryview(data)
    while view:  # a regular file takes it in one write; the loop only guards a short write
      view = view[os.write(fd, view) :]
    os.fsync(fd)
  finally:
    os.close(fd)  # also releases the lock
  if created:
    dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
      os.fsync(dfd)
    finally:
      os.close(dfd)


def replay(path: str | os.PathLike) -> list[Observation]:
  """The observations recorded in `path`, in the order they were appended.

  Returns [] when the file does not exist. An unterminated last line is skipped.

  Raises:
    ValueError naming `path:line` for a line that is not a schema-1 observation but has lines
    after it (corruption, not a kill), or for a trial id recorded twice (a copied line: which of
    the two values is right cannot be told, and each would spend a budget slot).
  """
  if not os.path.exists(path):
    return []
  with open(path, "rb") as f:
    fcntl.flock(f.fileno(), fcntl.LOCK_SH)
    lines = f.read().split(b"\n")
  out, first_line = [], {}
  for number, raw in enumerate(lines[:-1], start=1):  # lines[-1] is b"" or a torn tail
    try:
      obj = json.loads(raw)
      if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
        got = obj.get("schema") if isinstance(obj, dict) else obj
        raise ValueError(f"schema is {got!r}; this version reads schema {SCHEMA}")
      out.append(Observation.from_json({k: v for k, v in obj.items() if k != "schema"}))
    except (ValueError, TypeError) as e:  # json.JSONDecodeError is a ValueError
      raise ValueError(
        f"{os.fspath(path)}:{number}: corrupt journal line ({e}); only a torn last line is"
        " skipped, so fix or remove this line by hand"
      ) from None
    trial = out[-1].trial_id
    if trial in first_line:
      raise ValueError(
        f"{os.fspath(path)}:{number}: trial {trial} is recorded again (first on line"
        f" {first_line[trial]}); a journal holds each trial once, so remove the copy by hand"
      )
    first_line[trial] = number
  return out
