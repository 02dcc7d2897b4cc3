"""launch/proxies.py end to end on a few cells (a narrow, shallow network) and its one-line errors."""

import csv
import os
import subprocess
import sys

import numpy as np
import pytest

from nas_jax.arch.cell import parse_arch_str
from nas_jax.models.nb201_net import Nb201Spec, nb201_flops, nb201_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CELLS = [
  "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|",
  "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|",
  "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|",
]
SMALL = ["--channels=2", "--cells_per_stage=1", "--batch_size=2"]


def _run(*args):
  return subprocess.run(
    [sys.executable, "launch/proxies.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
  )


def test_cli_scores_the_listed_cells_into_the_csv(tmp_path):
  (tmp_path / "cells.txt").write_text("\n".join(CELLS) + "\n")
  out = tmp_path / "scores.csv"
  p = _run("--space=nb201", "--dataset=imagenet16", f"--cells={tmp_path / 'cells.txt'}", f"--out={out}", *SMALL)
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
def test_cli_scores_data_dependent_proxies_on_the_given_batch(tmp_path):
  # A seeded synthetic batch (no dataset here): every data proxy scores each cell, finite, and the
  # all-`none` cell, whose output ignores its input, has no Jacobian to correlate.
  rng = np.random.default_rng(0)
  np.savez(tmp_path / "batch.npz", x=rng.normal(size=(4, 16, 16, 3)).astype(np.float32), y=np.arange(4) % 120)
  (tmp_path / "cells.txt").write_text("\n".join(CELLS) + "\n")
  out = tmp_path / "scores.csv"
  names = "grad_norm,snip,grasp,fisher,jacob_cov"
  p = _run(
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


def test_cli_bad_input_is_one_line(tmp_path):
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
    p = _run(f"--out={out}", *args)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and text in p.stderr, (args, p.stderr)
