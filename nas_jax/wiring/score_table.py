"""The table of proxy scores that `launch/proxies.py` writes and searches read (`proxy_sources`): a
CSV with a column `arch_str`, then one column per proxy, one row per cell.

Writing it survives a kill and a full disk. Rows go first to `OUT.partial`, appended a chunk at
a time (one write, then fsync), and the whole table replaces OUT in one rename
(`training.weights.write_atomic`): OUT is absent, the previous file or the whole new table,
never a cut one. A rerun with the same settings keeps the partial file's rows and scores only
the cells after them; a cell's scores depend on the cell alone (`proxies.scoring`), so the table
equals an uninterrupted run's byte for byte. The partial file's first line records the settings
that fix the scores; a rerun with other settings is refused rather than mixing two tables.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from typing import Callable, Sequence

import numpy as np

from nas_jax.search import locked_dir
from nas_jax.training.weights import write_atomic

__all__ = ["PARTIAL", "format_row", "score_into"]

# OUT + PARTIAL: the rows scored so far, which a rerun resumes from.
PARTIAL = ".partial"


def format_row(fields: Sequence) -> str:
  """One CSV line (the `csv` module's quoting, "\\r\\n" ending) of `fields`: strings as they are,
  numbers as `repr(float(v))`, which reads back to the same float64."""
  buf = io.StringIO()
  csv.writer(buf).writerow([f if isinstance(f, str) else repr(float(f)) for f in fields])
  return buf.getvalue()


def _settings_line(settings: dict) -> str:
  return "# " + json.dumps(settings, sort_keys=True) + "\n"


def _append(path: str, text: str, *, create: bool = False) -> None:
  """Appends `text` to `path` in one write, then fsync; OSError naming `path`."""
  try:
    flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT | os.O_TRUNC if create else 0)
    fd = os.open(path, flags, 0o644)
    try:
      locked_dir.write_all(fd, text.encode())
    finally:
      os.close(fd)
  except OSError as e:
    raise OSError(e.errno, e.strerror, path) from None


def _kept_rows(path: str, settings: dict, header: str, arch_strs: Sequence[str]) -> list[str] | None:
  """The rows of the partial file at `path` that this run keeps (each a CSV line), or None when
  the file is absent or holds less than its two header lines. A last line without its line end
  (what a kill during a write leaves) is dropped, and scored again. ValueError naming the file
  for other settings, another header, or rows that are not these cells' first ones."""
  try:
    with open(path, "rb") as f:
      text = f.read().decode("utf-8")
  except FileNotFoundError:
    return None
  except UnicodeDecodeError as e:
    raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start}); delete it to start over") from None
  lines = text.splitlines(keepends=True)
  if lines and not lines[-1].endswith("\n"):
    lines.pop()
  if len(lines) < 2:
    return None
  if lines[0] != _settings_line(settings):
    try:
      old = json.loads(lines[0][2:])
    except ValueError:
      old = {}
    changed = sorted(k for k in {*settings, *old} if old.get(k) != settings.get(k))
    was = ", ".join(f"{k}={old.get(k)!r}" for k in changed)
    now = ", ".join(f"{k}={settings.get(k)!r}" for k in changed)
    raise ValueError(
      f"{path}: was started with {was}, this run has {now}: rerun with those settings to resume,"
      " or delete the file to start over"
    )
  if lines[1] != header:
    raise ValueError(f"{path}, line 2: header {lines[1].strip()!r}; expected {header.strip()!r}")
  rows = lines[2:]
  width = len(next(csv.reader([header])))
  for i, row in enumerate(rows):
    fields = next(csv.reader([row]), [])
    want = arch_strs[i] if i < len(arch_strs) else None
    if len(fields) != width or fields[0] != want:
      raise ValueError(
        f"{path}, line {i + 3}: holds {fields[:1]} where this run's cell {i + 1} is {want!r} ({width} fields):"
        " rerun with the cells it was started with, or delete the file to start over"
      )
  return rows


def score_into(
  out: str,
  arch_strs: Sequence[str],
  score: Callable[[int, int], np.ndarray],
  *,
  columns: Sequence[str],
  settings: dict,
  chunk: int,
) -> tuple[int, int]:
  """Writes the table of `arch_strs` to `out`, resuming from `out + PARTIAL`.

  Args:
    out: the table's path; its folder must exist.
    arch_strs: [n] the cells' strings, the rows' order.
    score: `(start, stop) -> [stop - start, len(columns)]` scores of cells start..stop-1.
    columns: the proxies' names, the columns after `arch_str`.
    settings: JSON-able values that fix the scores (dataset, proxies, seed, ...): a partial file
      started with others is refused.
    chunk: cells scored per call of `score`, each call's rows appended with one fsync.

  Returns:
    (cells kept from the partial file, cells scored by this call).

  Raises:
    ValueError naming the partial file (other settings or cells); OSError naming the file that
    could not be written (a full disk, a read-only folder). The partial file is created before
    the first score, so an unwritable folder fails before any scoring.
  """
  if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
    raise ValueError(f"chunk: {chunk!r}; expected a positive number of cells")
  partial, header = out + PARTIAL, format_row(["arch_str", *columns])
  rows = _kept_rows(partial, settings, header, arch_strs)
  if rows is None:
    rows = []
    _append(partial, _settings_line(settings) + header, create=True)
  kept = len(rows)
  for start in range(kept, len(arch_strs), chunk):
    stop = min(start + chunk, len(arch_strs))
    values = np.asarray(score(start, stop), np.float64)
    if values.shape != (stop - start, len(columns)):
      raise ValueError(
        f"score: shape {values.shape} for cells {start}..{stop - 1}; expected [{stop - start}, {len(columns)}]"
      )
    new = [format_row([a, *v]) for a, v in zip(arch_strs[start:stop], values)]
    _append(partial, "".join(new))
    rows += new
  write_atomic(out, (header + "".join(rows)).encode())
  with contextlib.suppress(FileNotFoundError):
    os.remove(partial)
  return kept, len(arch_strs) - kept
