"""The Table 1 experiment's plumbing: the resumable table of trained points, half data, log
targets, and NMSE rows over every model (tiny sizes; the real run is launch/kernel_quality.py)."""

import json
import os

import numpy as np
import pytest

from nas_jax.experiments import conditional_experiment as ce
from nas_jax.training import conditional, datasets


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  workdir = str(tmp_path_factory.mktemp("kq"))
  return workdir, ce.train_cached(workdir, n_points=8, epochs=1, names=("diabetes",), log=lambda s: None)


def test_every_point_is_recorded_once_and_read_back(trained, monkeypatch):
  workdir, out = trained
  rows = [json.loads(line) for line in open(os.path.join(workdir, ce.TABLE_FILE))]
  assert len(rows) == 16 and {(r["half"], r["index"]) for r in rows} == {
    (h, i) for h in (False, True) for i in range(8)
  }
  points, errors = out[("diabetes", False)]
  assert len(points) == 8 and np.all(np.isfinite(errors)) and np.all(errors > 0)

  def boom(*args, **kwargs):
    raise AssertionError("a recorded point was trained again")

  monkeypatch.setattr(conditional, "train_points", boom)
  again = ce.train_cached(workdir, n_points=8, epochs=1, names=("diabetes",), log=lambda s: None)
  np.testing.assert_array_equal(again[("diabetes", True)][1], out[("diabetes", True)][1])


def test_a_torn_last_line_is_retrained(trained, tmp_path):
  workdir, out = trained
  lines = open(os.path.join(workdir, ce.TABLE_FILE)).read().splitlines(keepends=True)
  (tmp_path / ce.TABLE_FILE).write_text("".join(lines[:-1]) + lines[-1][:10])
  again = ce.train_cached(str(tmp_path), n_points=8, epochs=1, names=("diabetes",), log=lambda s: None)
  np.testing.assert_allclose(again[("diabetes", True)][1], out[("diabetes", True)][1], rtol=1e-6)


def test_half_training_and_log_targets():
  data = datasets.get_dataset("diabetes", kind="mlp")
  half = ce.half_training(data)
  assert len(half.x_train) == len(data.x_train) // 2 and half.x_val.shape == data.x_val.shape
  np.testing.assert_allclose(ce.targets(np.array([0.0, 1.0]), True), np.log([1e-3, 1.001]))


@pytest.mark.slow  # 4 columns x 7 models x 2 splits of GP fits
def test_nmse_rows_cover_every_column_and_model(trained):
  _, out = trained
  table = ce.nmse_rows(out, n_splits=2, otmann=True, n_starts=2, steps=10)
  assert list(table) == ["diabetes", "diabetes log", "diabetes half", "diabetes log half"]
  for row in table.values():
    assert "hierarchical_gp" in row and "otmann_gp" in row and len(row) == 7
    assert all(np.isfinite(m) and e >= 0 for m, e in row.values())


def test_bad_arguments_are_named(tmp_path):
  with pytest.raises(ValueError, match="datasets: 'mnist' is unknown"):
    ce.train_cached(str(tmp_path), n_points=8, epochs=1, names=("mnist",))
  with pytest.raises(ValueError, match="n_points: 4"):
    ce.train_cached(str(tmp_path), n_points=4, epochs=1)
