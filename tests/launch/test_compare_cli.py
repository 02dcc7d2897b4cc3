"""launch/compare.py end to end on the synthetic smoke configs, with explicit seeds."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from nas_jax.experiments import compare

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _compare(configs, out, *flags):
  """Runs launch/compare.py on smoke configs with a budget of 3."""
  cmd = [sys.executable, "launch/compare.py", f"--configs={configs}", "--budget=3", f"--out={out}", *flags]
  return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_compare_cli_writes_table_curves_and_results(tmp_path):
  out = tmp_path / "cmp"
  p = _compare("configs/random_synthetic.py:smoke,configs/ea_synthetic.py:smoke", out, "--seed_list=3,5")
  assert p.returncode == 0, p.stderr[-3000:]
  results = json.loads((out / compare.RESULTS).read_text())
  assert sorted(results["runs"]) == ["ea_synthetic-smoke", "random_synthetic-smoke"]
  assert all(np.shape(r) == (2, 3) for r in results["runs"].values())
  assert sorted(os.listdir(out / "ea_synthetic-smoke")) == ["seed3", "seed5"]
  assert "| ea_synthetic-smoke | 2/2 |" in (out / compare.TABLE).read_text()
  assert (out / compare.CURVES).exists()


def test_compare_cli_requires_its_flags(launch):
  p = launch("launch/compare.py", "--configs=configs/ea_synthetic.py")
  assert p.returncode != 0 and "--out" in p.stderr


@pytest.mark.slow
def test_compare_cli_takes_a_hypervolume_reference(tmp_path):
  out, flags = tmp_path / "mo", ("--seeds=1", "--set=objectives=params")
  p = _compare("configs/random_synthetic.py:smoke", out, *flags, "--hv_ref=value=0,params=1e9")
  assert p.returncode == 0, p.stderr[-3000:]
  results = json.loads((out / compare.RESULTS).read_text())
  assert results["hv_ref"] == {"value": 0.0, "params": 1e9}
  assert "reference point {'value': 0.0, 'params': 1000000000.0}" in (out / compare.TABLE).read_text()
  bad = _compare("configs/random_synthetic.py:smoke", tmp_path / "bad", *flags, "--hv_ref=value")
  assert bad.returncode != 0 and "--hv_ref: 'value'; expected name=number" in bad.stderr


@pytest.mark.slow
def test_compare_cli_tables_schedulers_at_equal_simulated_time(tmp_path):
  out = tmp_path / "mf"
  flags = ("--seeds=1", "--set=task.fidelities=1,3,9", "--set=scheduler=asha", "--sim_time=5")
  p = _compare("configs/random_synthetic.py:smoke", out, *flags)
  assert p.returncode == 0, p.stderr[-3000:]
  assert "best value at 5 simulated s" in (out / compare.TABLE).read_text()
