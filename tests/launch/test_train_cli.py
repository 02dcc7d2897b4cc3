"""launch/train.py end to end: the MLP pool on diabetes (fast), the `:smoke` CNN run on digits
(slow), a named error for bad pool indices, and the config file's variants."""

import json
import os

import pytest

from nas_jax.wiring.config_files import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "configs", "train_pool.py")


def _train(launch, *flags):
  return launch("launch/train.py", f"--config={CONFIG}:smoke", *flags)


def _get_config(arg=""):
  return load_config(f"{CONFIG}:{arg}" if arg else CONFIG)


def test_mlp_pool_member_on_diabetes_prints_a_row_and_writes_json(launch, tmp_path):
  p = _train(
    launch,
    "--config.kind=mlp",
    "--config.dataset=diabetes",
    "--config.indices=(0,)",
    "--config.epochs=2",
    f"--config.workdir={tmp_path}",
  )
  assert p.returncode == 0, p.stderr[-3000:]
  (row,) = json.loads((tmp_path / "train_pool.json").read_text())["results"]
  assert row["name"] == "M1" and row["epochs"] == 2 and 0 < row["val_error"] < 1.0  # constant predictor: ~1
  assert row["peak_rss_mib"] > 0 and row["compile_seconds"] > 0
  header, line = p.stdout.splitlines()[1:3]
  assert "val MSE" in header and line.split()[:2] == ["M1", f"{row['val_error']:.4f}"]


@pytest.mark.slow
def test_smoke_trains_the_smallest_pool_cnn_on_digits(launch, tmp_path):
  p = _train(launch, f"--config.workdir={tmp_path}")
  assert p.returncode == 0, p.stderr[-3000:]
  (row,) = json.loads((tmp_path / "train_pool.json").read_text())["results"]
  assert row["name"] == "C8" and 1 - row["val_error"] > 0.3  # chance is 0.1
  assert "val acc" in p.stdout and "C8" in p.stdout


def test_bad_indices_are_named_before_training(launch):
  p = _train(launch, "--config.indices=(3,12)")
  assert p.returncode != 0
  assert "config.indices: (3, 12); choose a non-empty subset of 0..9" in p.stderr


def test_config_variants_and_their_command():
  full, smoke = _get_config(), _get_config("smoke")
  assert full.indices == tuple(range(10)) and smoke.indices == (7,)
  assert smoke.epochs == 1 < full.epochs and full.kind == "cnn" and full.dataset == "digits"
  assert "python launch/train.py --config=configs/train_pool.py" in open(CONFIG).read().split('"""')[1]
  with pytest.raises(ValueError, match="arg must be '' or 'smoke'"):
    _get_config("large")
