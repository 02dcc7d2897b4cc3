"""The journal: append/replay round trips, a torn last line skipped and repaired, corrupt lines
named by number, a trial recorded twice refused, fsync on every append, and no interleaving under concurrent writers."""

import dataclasses
import json
import multiprocessing as mp
import os
import sys

import pytest

from nas_jax.search import journal
from nas_jax.search.state import Observation, Status

sys.path.insert(0, os.path.dirname(__file__))
import search_helpers  # noqa: E402  (spawned writers import it by name)


def obs(i, status=Status.OK):
  return Observation(
    trial_id=i,
    arch_json={"kind": "bits", "bits": [i % 2]},
    value=float(i) if status == Status.OK else None,
    status=status,
    error="" if status == Status.OK else "boom",
    seconds=0.1 * i,
    worker="w",
    info={"seed": i},
  )


def test_replay_of_missing_file_is_empty(tmp_path):
  assert journal.replay(tmp_path / "none.jsonl") == []


def test_append_then_replay_round_trips_in_order(tmp_path):
  path = tmp_path / "j.jsonl"
  records = [obs(0), obs(1, Status.FAILED), obs(2, Status.NAN), obs(3, Status.TIMEOUT), obs(4)]
  for r in records:
    journal.append(path, r)
  assert journal.replay(path) == records
  lines = path.read_text().splitlines()
  assert len(lines) == 5 and all(json.loads(l)["schema"] == 1 for l in lines)


def test_torn_last_line_is_skipped_and_truncated_by_the_next_append(tmp_path):
  path = tmp_path / "j.jsonl"
  journal.append(path, obs(0))
  journal.append(path, obs(1))
  full = path.read_bytes()
  path.write_bytes(full[: len(full) - 7])  # a kill in the middle of the second write
  assert journal.replay(path) == [obs(0)]
  journal.append(path, obs(2))
  assert journal.replay(path) == [obs(0), obs(2)]
  assert path.read_bytes().count(b"\n") == 2


def test_torn_first_line_leaves_an_empty_journal(tmp_path):
  path = tmp_path / "j.jsonl"
  path.write_bytes(b'{"schema": 1, "trial_')
  assert journal.replay(path) == []
  journal.append(path, obs(5))
  assert journal.replay(path) == [obs(5)]


def test_corrupt_middle_line_raises_naming_its_number(tmp_path):
  path = tmp_path / "j.jsonl"
  for i in range(3):
    journal.append(path, obs(i))
  lines = path.read_text().splitlines(keepends=True)
  lines[1] = lines[1][:20] + "\n"
  path.write_text("".join(lines))
  with pytest.raises(ValueError, match=r"j\.jsonl:2: .*corrupt journal line"):
    journal.replay(path)


@pytest.mark.parametrize("changed", [False, True])
def test_a_copied_line_raises_naming_both_lines(tmp_path, changed):
  path = tmp_path / "j.jsonl"
  for i in range(8):
    journal.append(path, obs(i))
  copy = json.loads(path.read_text().splitlines()[5])  # sed -n 6p J >> J, maybe edited
  copy["value"] = 1e9 if changed else copy["value"]
  with open(path, "a") as f:
    f.write(json.dumps(copy) + "\n")
  with pytest.raises(ValueError, match=r"j\.jsonl:9: trial 5 is recorded again \(first on line 6\)"):
    journal.replay(path)


def test_wrong_schema_raises_naming_line_and_schema(tmp_path):
  path = tmp_path / "j.jsonl"
  journal.append(path, obs(0))
  line = json.loads(path.read_text())
  with open(path, "a") as f:
    f.write(json.dumps({**line, "schema": 2}) + "\n")
  with pytest.raises(ValueError, match=r":2: .*schema is 2"):
    journal.replay(path)


def test_every_append_fsyncs_the_file(tmp_path, monkeypatch):
  synced = []
  real = os.fsync
  monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
  path = tmp_path / "j.jsonl"
  journal.append(path, obs(0))  # file and, on creation, its directory
  journal.append(path, obs(1))
  assert len(synced) == 3


def test_append_refuses_non_finite_info(tmp_path):
  bad = Observation(
    trial_id=0, arch_json={}, value=1.0, status=Status.OK, error="", seconds=0.0, worker="w", info={"x": float("nan")}
  )
  with pytest.raises(ValueError):
    journal.append(tmp_path / "j.jsonl", bad)
  assert journal.replay(tmp_path / "j.jsonl") == []


def test_concurrent_writers_never_interleave_lines(tmp_path):
  path = str(tmp_path / "j.jsonl")
  ctx = mp.get_context("spawn")
  procs = [ctx.Process(target=search_helpers.journal_writer, args=(path, 1000 * k, 40)) for k in range(2)]
  for p in procs:
    p.start()
  for p in procs:
    p.join(60)
  ids = sorted(o.trial_id for o in journal.replay(path))
  assert ids == list(range(40)) + list(range(1000, 1040))


@pytest.mark.parametrize(
  "field, bad, says",
  [
    ("info", [1], r"observation\.info: \[1\] is a list"),
    ("value", 10**400, r"observation\.value: .* is too large for a float"),
    ("arch_json", "abc", r"observation\.arch_json: 'abc' is a str"),
    ("seconds", "fast", r"observation\.seconds: 'fast'"),
    ("trial_id", 10**15, r"observation\.trial_id: 1000000000000000; expected an integer in \[0, "),
    ("status", "FAILED", r"observation\.value: 1\.0 with status FAILED"),
  ],
)
def test_a_bad_field_in_any_row_is_named_with_its_line(tmp_path, field, bad, says):
  path = tmp_path / "j.jsonl"
  for i in range(3):
    journal.append(path, obs(i))
  lines = path.read_text().splitlines(keepends=True)
  lines[1] = json.dumps({**json.loads(lines[1]), field: bad}) + "\n"
  path.write_text("".join(lines))
  with pytest.raises(ValueError, match=rf"j\.jsonl:2: {says}"):
    journal.replay(path)


def test_an_arch_json_the_space_cannot_read_is_named_with_its_line(tmp_path):
  def parse_bits(arch_json):
    if arch_json.get("kind") != "bits":
      raise ValueError(f"kind: {arch_json.get('kind')!r}; this space holds bits")

  path = tmp_path / "j.jsonl"
  for i in range(3):
    journal.append(path, obs(i))
  lines = path.read_text().splitlines(keepends=True)
  lines[2] = json.dumps({**json.loads(lines[2]), "arch_json": {}}) + "\n"
  path.write_text("".join(lines))
  assert len(journal.replay(path)) == 3  # without the space, any object passes
  with pytest.raises(ValueError, match=r"j\.jsonl:3: arch_json: kind: None; this space holds bits"):
    journal.replay(path, parse_bits)


def test_a_complete_last_row_without_its_newline_is_kept_and_ended_by_the_next_append(tmp_path):
  path = tmp_path / "j.jsonl"
  journal.append(path, obs(0))
  journal.append(path, obs(1))
  path.write_bytes(path.read_bytes()[:-1])  # a kill between the row and its newline, or an editor
  assert journal.replay(path) == [obs(0), obs(1)]
  journal.append(path, obs(2))
  assert journal.replay(path) == [obs(0), obs(1), obs(2)]
  assert path.read_bytes().count(b"\n") == 3


def test_blank_lines_are_ignored(tmp_path):
  path = tmp_path / "j.jsonl"
  journal.append(path, obs(0))
  with open(path, "a") as f:
    f.write("\n")  # a trailing blank line, as an editor leaves
  assert journal.replay(path) == [obs(0)]
  journal.append(path, obs(1))
  assert journal.replay(path) == [obs(0), obs(1)]


def test_a_failed_write_names_the_journal(tmp_path, monkeypatch):
  def full(fd, data):
    raise OSError(28, "No space left on device")

  monkeypatch.setattr(os, "write", full)
  with pytest.raises(OSError, match="No space left on device") as e:
    journal.append(tmp_path / "j.jsonl", obs(0))
  assert e.value.filename == str(tmp_path / "j.jsonl")


DEEP = b"[" * 100_000 + b"]" * 100_000  # issue 67: Python's JSON parser overflowed on such a row


@pytest.mark.parametrize("where", ["middle", "last", "last, torn", "last, no newline"])
def test_a_row_nested_deeper_than_the_limit_is_named_with_its_line(tmp_path, where):
  path = tmp_path / "j.jsonl"
  for i in range(2):
    journal.append(path, obs(i))
  row = b'{"schema": 1, "info": ' + DEEP + b"}"
  if where == "middle":
    journal.append(path, obs(2))
    lines = path.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join([lines[0], row, *lines[1:]]))  # line 2
  else:  # a torn deep row is no row a search wrote: corrupt too, not skipped as a kill's tail
    tail = {"last": row + b"\n", "last, torn": row[:150_000], "last, no newline": row}[where]
    path.write_bytes(path.read_bytes() + tail)  # line 3
  line = 2 if where == "middle" else 3
  with pytest.raises(ValueError, match=rf"j\.jsonl:{line}: arrays and objects nested deeper than 64 levels") as e:
    journal.replay(path)
  assert len(str(e.value).splitlines()) == 1


def test_nesting_up_to_the_limit_and_brackets_in_strings_are_read(tmp_path):
  path = tmp_path / "j.jsonl"
  nested = json.loads("[" * (journal.MAX_DEPTH - 2) + "]" * (journal.MAX_DEPTH - 2))  # + the row and info
  texts = '[{"\\"[[[' * 50  # brackets (and an escaped quote) inside a string are text, not nesting
  records = [
    dataclasses.replace(obs(0), info={"deep": nested}),
    dataclasses.replace(obs(1, Status.FAILED), error=texts),
  ]
  for r in records:
    journal.append(path, r)
  assert journal.replay(path) == records
  path.write_bytes(path.read_bytes() + b'{"schema": 1, "error": "' + b"[" * 200)  # a torn row cut inside its text
  assert journal.replay(path) == records
  journal.append(path, obs(2))  # truncates the torn row
  assert journal.replay(path) == [*records, obs(2)]


def test_a_workdirs_json_files_are_held_to_the_same_limit(tmp_path):
  path = tmp_path / "summary.json"
  path.write_bytes(b'{"n_evaluated": 3, "best_arch": {"layers": [[1, 2], [3]]}}')
  assert journal.load_json(path) == {"n_evaluated": 3, "best_arch": {"layers": [[1, 2], [3]]}}
  path.write_bytes(b'{"n_evaluated": ' + DEEP + b"}")
  with pytest.raises(ValueError, match=rf"^{path}: arrays and objects nested deeper than 64 levels$"):
    journal.load_json(path)
  path.write_bytes(b'{"n_evaluated": 3')
  with pytest.raises(ValueError, match=rf"^{path}: not valid JSON \("):
    journal.load_json(path)
