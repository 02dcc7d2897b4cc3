"""The proxy table's writer (`wiring.score_table.score_into`): a run stopped after a chunk (an
exception, a torn append, a full disk at the rename) leaves OUT absent and OUT.partial with the
rows it scored; the rerun scores only the rest and writes the bytes an uninterrupted run writes.
The scores are a stand-in (a function of the cell's position), so no network is built."""

import errno
import os

import numpy as np
import pytest

from nas_jax.wiring import score_table
from nas_jax.training import weights

CELLS = [f"|cell~{i}|" for i in range(10)]
COLUMNS = ["params", "synflow"]
SETTINGS = dict(dataset="cifar10", proxies=COLUMNS, seed=0)


def _values(start, stop):
  i = np.arange(start, stop, dtype=np.float64)
  return np.stack([1000.0 + i, np.exp(i) / 3.0], axis=1)


class _Calls:
  """The scorer's stand-in: records the cells asked for, and raises once `fail_at` is reached."""

  def __init__(self, fail_at=None):
    self.asked, self.fail_at = [], fail_at

  def __call__(self, start, stop):
    if self.fail_at is not None and start >= self.fail_at:
      raise KeyboardInterrupt("stopped")
    self.asked.append((start, stop))
    return _values(start, stop)


def _write(out, score, chunk=3, settings=SETTINGS, cells=CELLS):
  return score_table.score_into(str(out), cells, score, columns=COLUMNS, settings=settings, chunk=chunk)


@pytest.fixture
def whole(tmp_path):
  """The bytes of an uninterrupted run (chunks of 4 cells: a rerun may use other chunks)."""
  out = tmp_path / "whole" / "scores.csv"
  out.parent.mkdir()
  assert _write(out, _Calls(), chunk=4) == (0, 10)
  assert not os.path.exists(f"{out}.partial") and not os.path.exists(f"{out}.tmp")
  return out.read_bytes()


def test_the_table_is_the_header_then_one_row_a_cell_with_floats_that_read_back(whole):
  lines = whole.decode().split("\r\n")
  assert lines[0] == "arch_str,params,synflow" and lines[-1] == "" and len(lines) == 12
  assert lines[1] == f"{CELLS[0]},1000.0,{1 / 3.0!r}"
  assert float(lines[10].split(",")[2]) == np.exp(9.0) / 3.0


def test_a_run_stopped_after_a_chunk_resumes_to_the_uninterrupted_bytes(tmp_path, whole):
  out = tmp_path / "scores.csv"
  with pytest.raises(KeyboardInterrupt):
    _write(out, _Calls(fail_at=3))
  assert not out.exists()  # never a table of some cells
  partial = (tmp_path / "scores.csv.partial").read_bytes().split(b"\n")
  assert partial[1:-1] == whole.split(b"\n")[:4] and partial[-1] == b""  # the header and one chunk
  again = _Calls()
  assert _write(out, again) == (3, 7)
  assert again.asked == [(3, 6), (6, 9), (9, 10)]  # the kept cells are not scored again
  assert out.read_bytes() == whole and not (tmp_path / "scores.csv.partial").exists()


def test_a_torn_last_row_of_the_partial_file_is_scored_again(tmp_path, whole):
  out = tmp_path / "scores.csv"
  with pytest.raises(KeyboardInterrupt):
    _write(out, _Calls(fail_at=6))
  partial = tmp_path / "scores.csv.partial"
  partial.write_bytes(partial.read_bytes()[:-9])  # what a kill inside a write leaves
  again = _Calls()
  assert _write(out, again) == (5, 5) and again.asked[0] == (5, 8)
  assert out.read_bytes() == whole


def test_a_partial_file_of_other_settings_or_cells_is_refused_naming_it(tmp_path):
  out = tmp_path / "scores.csv"
  with pytest.raises(KeyboardInterrupt):
    _write(out, _Calls(fail_at=3))
  with pytest.raises(ValueError, match=r"scores\.csv\.partial: was started with seed=0, this run has seed=1: rerun"):
    _write(out, _Calls(), settings={**SETTINGS, "seed": 1})
  with pytest.raises(ValueError, match=r"scores\.csv\.partial, line 3: holds \['\|cell~0\|'\] where this run's cell 1"):
    _write(out, _Calls(), cells=CELLS[::-1])
  assert _write(out, _Calls()) == (3, 7)  # the refusals changed nothing


def test_a_full_disk_names_the_file_and_the_rerun_finishes_the_table(tmp_path, whole, monkeypatch):
  out = tmp_path / "scores.csv"
  real_write = os.write

  def full(fd, data):
    if os.readlink(f"/proc/self/fd/{fd}").endswith(".partial") and b"|cell~3|" in bytes(data):
      raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # the second chunk does not fit
    return real_write(fd, data)

  monkeypatch.setattr(os, "write", full)
  with pytest.raises(OSError) as e:
    _write(out, _Calls())
  assert e.value.errno == errno.ENOSPC and e.value.filename == f"{out}.partial"
  monkeypatch.setattr(os, "write", real_write)
  assert _write(out, _Calls()) == (3, 7) and out.read_bytes() == whole


def test_a_full_disk_at_the_final_write_leaves_no_table_and_no_temporary_file(tmp_path, whole, monkeypatch):
  out = tmp_path / "scores.csv"
  real_fsync = os.fsync

  def full(fd):
    if os.readlink(f"/proc/self/fd/{fd}").endswith(".tmp"):
      raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real_fsync(fd)

  monkeypatch.setattr(os, "fsync", full)
  with pytest.raises(OSError) as e:
    _write(out, _Calls())
  assert e.value.errno == errno.ENOSPC and e.value.filename == str(out)
  assert not out.exists() and not (tmp_path / "scores.csv.tmp").exists()
  monkeypatch.setattr(os, "fsync", real_fsync)
  again = _Calls()
  assert _write(out, again) == (10, 0) and again.asked == [] and out.read_bytes() == whole


def test_write_atomic_keeps_the_previous_file_when_the_new_one_does_not_fit(tmp_path, monkeypatch):
  path = tmp_path / "w.bin"
  weights.write_atomic(path, b"old")

  def full(fd):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

  monkeypatch.setattr(os, "fsync", full)
  with pytest.raises(OSError, match="No space left on device") as e:
    weights.write_atomic(path, b"new")
  assert e.value.filename == str(path) and path.read_bytes() == b"old" and os.listdir(tmp_path) == ["w.bin"]
