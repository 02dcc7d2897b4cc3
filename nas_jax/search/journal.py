"""The search journal: one JSON object per line (`"schema": 1`), appended with one write and an
fsync under an advisory lock, and replayed on resume. A torn last line (what a kill leaves) is
skipped, a complete last row that lacks only its newline is kept, and blank lines are ignored;
any other line that is not a valid observation is an error that names its line number.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import re
from typing import Any, Callable

from nas_jax.search import locked_dir
from nas_jax.search.state import Observation

__all__ = ["SCHEMA", "MAX_DEPTH", "append", "replay", "load_json"]

#: The version of the journal's rows (`"schema"` of each row).
SCHEMA = 1
#: How deeply a row may nest arrays and objects. A search's rows nest a few levels; Python's JSON
#: parser recurses once per level, so a corrupt row nested 100,000 deep would overflow its stack.
MAX_DEPTH = 64
_CHUNK = 1 << 16
# A JSON string, or the unterminated one at the end of a torn row: its brackets are text.
_STRING = re.compile(rb'"(?:[^"\\]|\\.?)*(?:"|\Z)')
_BRACKETS = bytes(range(256)).translate(None, b"[]{}")  # every byte but the brackets


def _too_deep(raw: bytes) -> bool:
  """Whether `raw` nests JSON arrays and objects deeper than MAX_DEPTH (counted without parsing)."""
  if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:  # it cannot nest deeper than it opens
    return False
  brackets = _STRING.sub(b"", raw).translate(None, _BRACKETS)
  return max(itertools.accumulate(1 if b in b"[{" else -1 for b in brackets), default=0) > MAX_DEPTH


def _is_json(raw: bytes) -> bool:
  """Whether `raw` parses as JSON: a row cut short by a kill never does (an object's closing
  brace comes last), so a last line that parses lacks only its newline. A line nested deeper than
  MAX_DEPTH counts as complete: a torn row nests no deeper than the row it was cut from, so it is
  corrupt, not torn, and `_parse` refuses it."""
  if _too_deep(raw):
    return True
  try:
    json.loads(raw)
  except ValueError:
    return False
  return True


def _end_last_line(fd: int) -> None:
  """Ends an unterminated last line, so the next record starts on a line of its own: a complete
  row gets its newline, a torn one (never completed; replay skips it) is truncated.

  Called under the lock.
  """
  size = os.fstat(fd).st_size
  if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
    return
  end, cut = size, 0
  while end > 0:
    start = max(0, end - _CHUNK)
    found = os.pread(fd, end - start, start).rfind(b"\n")
    if found >= 0:
      cut = start + found + 1
      break
    end = start
  if _is_json(os.pread(fd, size - cut, cut)):
    os.write(fd, b"\n")
  else:
    os.ftruncate(fd, cut)


def append(path: str | os.PathLike, obs: Observation, *, dir_fd: int | None = None) -> None:
  """Appends `obs` as one line, durably: one write, then fsync, under an exclusive flock.

  Args:
    path: the journal file; created (with its directory entry fsynced) if missing.
    obs: the observation; must be JSON-serialisable (NaN and inf are refused).
    dir_fd: an open descriptor of `path`'s directory: the file is then opened by its name in that
      directory, so a row never lands in another directory that took the name since.

  Raises:
    OSError naming `path` when the write fails (a full disk, a read-only filesystem).
  """
  line = json.dumps({"schema": SCHEMA, **obs.to_json()}, sort_keys=True, allow_nan=False) + "\n"
  data = line.encode()
  name = os.path.basename(path) if dir_fd is not None else path
  try:
    created = False
    try:
      fd = os.open(name, os.O_RDWR | os.O_APPEND, dir_fd=dir_fd)
    except FileNotFoundError:
      fd, created = os.open(name, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644, dir_fd=dir_fd), True
    try:
      fcntl.flock(fd, fcntl.LOCK_EX)
      _end_last_line(fd)
      locked_dir.write_all(fd, data)
    finally:
      os.close(fd)  # also releases the lock
    if created:
      dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY) if dir_fd is None else os.dup(dir_fd)
      try:
        os.fsync(dfd)
      finally:
        os.close(dfd)
  except OSError as e:
    if e.filename is not None:
      raise
    raise OSError(e.errno, e.strerror, os.fspath(path)) from None


def load_json(path: str | os.PathLike) -> Any:
  """The content of a JSON file of a workdir (search.json, config.json, summary.json), held to
  the journal's nesting limit.

  Raises:
    ValueError naming `path` for a file that is not JSON or nests deeper than MAX_DEPTH.
  """
  with open(path, "rb") as f:
    raw = f.read()
  if _too_deep(raw):
    raise ValueError(f"{os.fspath(path)}: arrays and objects nested deeper than {MAX_DEPTH} levels")
  try:
    return json.loads(raw)
  except ValueError as e:
    raise ValueError(f"{os.fspath(path)}: not valid JSON ({e})") from None


def _parse(raw: bytes, parse_arch: Callable[[Any], Any] | None) -> Observation:
  """One journal line as an Observation (ValueError/TypeError naming the field otherwise)."""
  if _too_deep(raw):
    raise ValueError(f"arrays and objects nested deeper than {MAX_DEPTH} levels; a row nests a few")
  obj = json.loads(raw)
  if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
    got = obj.get("schema") if isinstance(obj, dict) else obj
    raise ValueError(f"schema is {got!r}; this version reads schema {SCHEMA}")
  obs = Observation.from_json({k: v for k, v in obj.items() if k != "schema"})
  if parse_arch is not None:
    try:
      parse_arch(obs.arch_json)
    except (ValueError, TypeError) as e:
      raise ValueError(f"arch_json: {e}") from None
  return obs


def replay(path: str | os.PathLike, parse_arch: Callable[[Any], Any] | None = None) -> list[Observation]:
  """The observations recorded in `path`, in the order they were appended.

  Returns [] when the file does not exist. An unterminated last line that does not parse as
  JSON (a kill in the middle of a write) is skipped; one that does is a complete row and is read
  as any other. Blank lines are ignored.

  Args:
    path: the journal file.
    parse_arch: the space's `from_json`; when given, every row's `arch_json` must be a point of it.

  Raises:
    ValueError naming `path:line` and the field for a line that is not a valid schema-1
    observation (corruption, not a kill; the fields are checked by `Observation.from_json`; a
    line nested deeper than MAX_DEPTH is refused before it is parsed), or
    for a trial id recorded twice (a copied line: which of the two values is right cannot be
    told, and each would spend a budget slot).
  """
  if not os.path.exists(path):
    return []
  with open(path, "rb") as f:
    fcntl.flock(f.fileno(), fcntl.LOCK_SH)
    lines = f.read().split(b"\n")
  if not _is_json(lines[-1]):
    lines[-1] = b""  # a torn tail, or b"" after the last newline
  out, first_line = [], {}
  for number, raw in enumerate(lines, start=1):
    if not raw.strip():
      continue
    try:
      out.append(_parse(raw, parse_arch))
    except (ValueError, TypeError) as e:  # json.JSONDecodeError is a ValueError
      raise ValueError(
        f"{os.fspath(path)}:{number}: {e} (a corrupt journal line: only a torn last line is"
        " skipped, so fix or remove this line by hand)"
      ) from None
    trial = out[-1].trial_id
    if trial in first_line:
      raise ValueError(
        f"{os.fspath(path)}:{number}: trial {trial} is recorded again (first on line"
        f" {first_line[trial]}); a journal holds each trial once, so remove the copy by hand"
      )
    first_line[trial] = number
  return out
