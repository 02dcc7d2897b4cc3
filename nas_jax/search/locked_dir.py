"""Files in a folder held by its open descriptor. A search writes every file of its workdir after
it locked it (summary.json, config.json, the progress plot; the journal through
`journal.append(..., dir_fd=)`) by name in the folder it locked, never by path: after
`rm -rf W; mkdir W` the path W leads to another folder, and the old search must not write there.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

__all__ = ["replaced", "write_all", "write_file", "json_bytes"]


def replaced(path: str | os.PathLike, dir_fd: int) -> bool:
  """Whether `path` no longer leads to the folder open as `dir_fd` (deleted, renamed or replaced).

  The check and a write after it are two system calls: a folder replaced between them still gets
  that one write in the folder held, which the path no longer names."""
  held = os.fstat(dir_fd)
  try:
    now = os.stat(path)
  except FileNotFoundError:
    return True
  return (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino)


def write_all(fd: int, data: bytes) -> None:
  """Writes all of `data` to the open file `fd`, then fsyncs it: on disk when this returns."""
  view = memoryview(data)
  while view:  # a regular file takes it in one write; the loop only guards a short write
    view = view[os.write(fd, view) :]
  os.fsync(fd)


def write_file(folder: str | os.PathLike, dir_fd: int, name: str, data: bytes) -> None:
  """Writes `data` as file `name` of the folder open as `dir_fd`, atomically: a temporary file in
  that folder, fsynced, then renamed over `name`, so readers see the old file or the new one,
  never half of one.

  Args:
    folder: the folder's path, only to name the file in an error.
    dir_fd: the folder, open (`os.open(folder, os.O_RDONLY)`).
    name: the file's name in it.
    data: its new content.

  Raises:
    OSError naming `folder/name` when the write fails (a full disk); the temporary file is removed.
  """
  tmp = f"{name}.tmp"
  try:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)
    try:
      write_all(fd, data)
    finally:
      os.close(fd)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
  except OSError as e:
    with contextlib.suppress(OSError):  # a full disk: no partial file left behind
      os.unlink(tmp, dir_fd=dir_fd)
    raise OSError(e.errno, e.strerror, os.path.join(os.fspath(folder), name)) from None


def json_bytes(obj: Any) -> bytes:
  """`obj` as the indented, key-sorted JSON of a workdir's files."""
  return json.dumps(obj, indent=1, sort_keys=True).encode()
