"""launch/proxies.py end to end on a few cells (a narrow, shallow network) and its one-line errors."""

import csv
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nas_jax.arch.cell import nb201_arch_str, nb201_cell, parse_arch_str
from nas_jax.models.nb201_net import Nb201Spec, nb201_flops, nb201_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CELLS = [
  "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|",
  "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|",
  "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|",
]
SMALL = ["--channels=2", "--cells_per_stage=1", "--batch_size=2"]


def _run(launch, *args):
  return launch("launch/proxies.py", *args)


def test_cli_scores_the_listed_cells_into_the_csv(launch, tmp_path):
  (tmp_path / "cells.txt").write_text("\n".join(CELLS) + "\n")
  out = tmp_path / "scores.csv"
  p = _run(launch, "--space=nb201", "--dataset=imagenet16", f"--cells={tmp_path / 'cells.txt'}", f"--out={out}", *SMALL)
  assert p.returncode == 0, p.stderr[-3000:]
  assert "3 cells scored" in p.stdout and "(1 compile(s))" in p.stdout
  with open(out) as f:
    rows = list(csv.DictReader(f))
  assert list(rows[0]) == ["arch_str", "synflow", "params", "flops"]
  assert [r["arch_str"] for r in rows] == CELLS
  spec = Nb201Spec(channels=2, cells_per_stage=1, num_classes=120, image_size=16)
  for r in rows:
    ops = np.asarray(parse_arch_str(r["arch_str"]).ops)
    assert float(r["params"]) == int(nb201_params(ops, spec)) and float(r["flops"]) == int(nb201_flops(ops, spec))
  assert float(rows[0]["synflow"]) > 0 and float(rows[1]["synflow"]) == 0


@pytest.mark.slow  # six proxies' programs to compile: about two minutes on 2 cores
def test_cli_scores_data_dependent_proxies_on_the_given_batch(launch, tmp_path):
  # A seeded synthetic batch (no dataset here): every data proxy scores each cell, finite, and the
  # all-`none` cell, whose output ignores its input, has no Jacobian to correlate.
  rng = np.random.default_rng(0)
  np.savez(tmp_path / "batch.npz", x=rng.normal(size=(4, 16, 16, 3)).astype(np.float32), y=np.arange(4) % 120)
  (tmp_path / "cells.txt").write_text("\n".join(CELLS) + "\n")
  out = tmp_path / "scores.csv"
  names = "grad_norm,snip,grasp,fisher,jacob_cov"
  p = _run(
    launch,
    "--space=nb201",
    "--dataset=imagenet16",
    f"--cells={tmp_path / 'cells.txt'}",
    f"--batch={tmp_path / 'batch.npz'}",
    f"--proxies={names}",
    f"--out={out}",
    *SMALL,
  )
  assert p.returncode == 0, p.stderr[-3000:]
  with open(out) as f:
    rows = list(csv.DictReader(f))
  assert list(rows[0]) == ["arch_str", *names.split(",")]
  assert all(np.isfinite(float(rows[0][n])) for n in names.split(","))
  assert float(rows[0]["grad_norm"]) > 0 and float(rows[0]["snip"]) > 0


def test_cli_bad_input_is_one_line(launch, tmp_path):
  out = str(tmp_path / "s.csv")
  (tmp_path / "cells.txt").write_text(CELLS[0] + "\n|conv~0|\n")
  for args, text in [
    (
      ["--proxies=synflow,snipx"],
      "proxies: ['synflow', 'snipx'] has unknown ['snipx']; choose from: synflow, synflow_signed, grad_norm,",
    ),
    (["--dataset=mnist"], "dataset: 'mnist' is unknown; choose one of: cifar10, cifar100, imagenet16"),
    ([f"--cells={tmp_path / 'cells.txt'}"], "line 2: arch_str"),
    (["--batch_size=4", "--width=3"], "--width=3: must divide --batch_size=4"),
  ]:
    p = _run(launch, f"--out={out}", *args)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and text in p.stderr, (args, p.stderr)


def _bad_inputs(tmp_path):
  (tmp_path / "latin1.txt").write_bytes(CELLS[0].encode() + b"\n|caf\xe9~0|\n")
  (tmp_path / "twice.txt").write_text("\n".join([CELLS[0], CELLS[1], CELLS[0]]) + "\n")
  return f"--out={tmp_path / 's.csv'}"


@pytest.mark.parametrize(
  "case",
  [
    "no folder",
    "not utf-8",
    "a folder",
    "a cell twice",
  ],
)
def test_out_and_cells_are_checked_before_any_scoring(launch, tmp_path, case):
  # The default proxies and all 15,625 cells unless --cells says otherwise: scoring first would
  # take half an hour, so a quick one-line exit shows that the check came first.
  good = _bad_inputs(tmp_path)
  args, text = {
    "no folder": ([f"--out={tmp_path / 'none' / 's.csv'}"], f"--out={tmp_path / 'none' / 's.csv'}: folder "),
    "not utf-8": (
      [good, f"--cells={tmp_path / 'latin1.txt'}"],
      f"--cells={tmp_path / 'latin1.txt'}, line 2: not UTF-8",
    ),
    "a folder": ([f"--out={tmp_path}"], f"--out={tmp_path}: is a folder; expected the path of the CSV file to write"),
    "a cell twice": ([good, f"--cells={tmp_path / 'twice.txt'}"], f"twice.txt, line 3: cell {CELLS[0]} repeats line 1"),
  }[case]
  p = _run(launch, *args)
  assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and text in p.stderr, p.stderr
  assert not p.stdout and not list(tmp_path.glob("**/*.partial"))


@pytest.mark.slow  # three runs of the script: under a minute on 2 cores
def test_a_scorer_killed_mid_run_resumes_to_the_table_of_an_uninterrupted_run(launch, tmp_path):
  # The first 2,000 cells in code order, one cell a chunk while the run is killed (an append and
  # an fsync each), then the rerun scores the rest in the default chunks: the table equals one
  # written in a single run, byte for byte.
  codes = [[(c // 5**e) % 5 for e in range(6)] for c in range(2000)]
  (tmp_path / "cells.txt").write_text("".join(nb201_arch_str(nb201_cell(ops)) + "\n" for ops in codes))
  common = [f"--cells={tmp_path / 'cells.txt'}", "--proxies=params,flops", "--channels=2", "--cells_per_stage=1"]
  whole = tmp_path / "whole.csv"
  assert _run(launch, *common, f"--out={whole}").returncode == 0
  out, partial = tmp_path / "s.csv", tmp_path / "s.csv.partial"
  p = subprocess.Popen(
    [sys.executable, "launch/proxies.py", *common, f"--out={out}", "--batch_size=1", "--chunk_batches=1"],
    cwd=ROOT,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
  )
  try:
    while p.poll() is None and (not partial.exists() or partial.read_bytes().count(b"\n") < 12):
      time.sleep(0.002)
    p.send_signal(signal.SIGKILL)
  finally:
    p.wait(timeout=60)
  assert p.returncode == -signal.SIGKILL and not out.exists(), "the run finished before it was killed"
  kept = partial.read_bytes().count(b"\n") - 2  # complete rows after the settings and the header
  assert 10 <= kept < 2000
  again = _run(launch, *common, f"--out={out}")
  assert again.returncode == 0, again.stderr[-3000:]
  assert f"{2000 - kept} cells scored" in again.stdout and f"{kept} kept from {partial}" in again.stdout
  assert out.read_bytes() == whole.read_bytes() and not partial.exists()
