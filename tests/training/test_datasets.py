"""Datasets: the 0.6/0.2/0.2 seeded split, standardisation with training statistics, shapes for
CNNs and MLPs, CSV/NPZ tables, the shapes models are built for, and errors that name the problem."""

import numpy as np
import pytest

from nas_jax.training import datasets


def _write_csv(path, header, rows):
  path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n")
  return str(path)


def test_digits_split_sizes_shapes_and_dtypes():
  cnn, mlp = datasets.digits("cnn"), datasets.digits("mlp")
  assert [len(y) for y in (cnn.y_train, cnn.y_val, cnn.y_test)] == [1078, 359, 360]  # round(0.6 * 1797) ...
  assert cnn.x_train.shape == (1078, 8, 8, 1) and mlp.x_train.shape == (1078, 64)
  assert cnn.x_train.dtype == np.float32 and cnn.y_train.dtype == np.int32
  assert (cnn.task, cnn.num_classes, datasets.input_spec(cnn)[0]) == ("classification", 10, (8, 8, 1))
  np.testing.assert_array_equal(cnn.x_val.reshape(-1, 64), mlp.x_val)  # same split, same scaling
  assert set(np.unique(cnn.y_train)) == set(range(10))


def test_digits_pixels_are_standardised_with_training_statistics():
  data = datasets.digits("mlp")
  std = data.x_train.std(0)
  varying = std > 0  # corner pixels are always 0 in digits and stay 0
  np.testing.assert_allclose(data.x_train.mean(0), 0.0, atol=1e-5)
  np.testing.assert_allclose(std[varying], 1.0, atol=1e-4)
  assert varying.sum() >= 55 and np.all(data.x_train[:, ~varying] == 0)
  assert abs(float(data.x_val.mean())) > 1e-4  # validation data are scaled, not re-standardised


def test_split_depends_on_the_seed_only():
  a, b, c = datasets.digits("mlp", seed=0), datasets.digits("mlp", seed=0), datasets.digits("mlp", seed=1)
  np.testing.assert_array_equal(a.x_train, b.x_train)
  assert not np.array_equal(a.y_train, c.y_train)


def test_diabetes_is_a_standardised_regression_split():
  data = datasets.diabetes()
  assert [len(y) for y in (data.y_train, data.y_val, data.y_test)] == [265, 88, 89]
  assert (data.task, data.num_classes, data.x_train.shape[1]) == ("regression", 0, 10)
  assert data.y_train.dtype == np.float32
  assert data.y_train.mean() == pytest.approx(0.0, abs=1e-5) and data.y_train.std() == pytest.approx(1.0, abs=1e-5)


def test_csv_table_is_split_and_standardised_with_rows_kept_whole(tmp_path):
  n = 100
  ids = np.arange(n)
  path = _write_csv(tmp_path / "t.csv", ["id", "noise", "price"], zip(ids, np.sin(ids), 2 * ids + 5))
  data = datasets.load_table(path, target="price", seed=3)
  assert [len(y) for y in (data.y_train, data.y_val, data.y_test)] == [60, 20, 20]
  assert data.x_train.shape == (60, 2) and data.name == "t.csv"
  np.testing.assert_allclose(data.x_train.mean(0), 0.0, atol=1e-5)
  np.testing.assert_allclose(data.x_train.std(0), 1.0, atol=1e-5)
  assert data.y_train.mean() == pytest.approx(0.0, abs=1e-5) and data.y_train.std() == pytest.approx(1.0, abs=1e-5)
  # price is affine in id, so after standardising both with training statistics they agree row by row.
  for x, y in ((data.x_train, data.y_train), (data.x_val, data.y_val), (data.x_test, data.y_test)):
    np.testing.assert_allclose(x[:, 0], y, atol=1e-5)
  every_id = np.concatenate([data.x_train[:, 0], data.x_val[:, 0], data.x_test[:, 0]])
  assert len(np.unique(every_id.round(4))) == n  # the splits are disjoint and cover the table


@pytest.mark.parametrize("n, sizes", [(9, [5, 2, 2]), (11, [7, 2, 2]), (442, [265, 88, 89])])
def test_split_sizes_round_to_the_nearest_row(tmp_path, n, sizes):
  path = str(tmp_path / "t.npz")
  np.savez(path, x=np.arange(n, dtype=float), y=np.arange(n, dtype=float) % 3)
  data = datasets.load_table(path, target="y")
  assert [len(y) for y in (data.y_train, data.y_val, data.y_test)] == sizes


def test_npz_blocks_and_columns_and_classification_labels(tmp_path):
  rng = np.random.default_rng(0)
  path = str(tmp_path / "t.npz")
  np.savez(path, x=rng.normal(size=(50, 3)), extra=rng.normal(size=50), label=np.repeat([3, 7, 9, 7, 3], 10))
  data = datasets.load_table(path, target="label", task="classification")
  assert data.x_train.shape == (30, 4) and data.num_classes == 3
  assert set(np.concatenate([data.y_train, data.y_val, data.y_test])) == {0, 1, 2}  # 3, 7, 9 renumbered
  assert data.y_train.dtype == np.int32


@pytest.mark.parametrize(
  "content, match",
  [
    ("a,b\n1,2\n3,x\n", r"line 3, column 'b': 'x' is not a number"),
    ("a,b\n1,2\n3\n", r"line 3 has 1 fields; the header has 2"),
    ("a,a\n1,2\n", "duplicate column names"),
    ("a,b\n", "no data rows"),
    ("a,b\n1,nan\n2,3\n3,4\n4,5\n5,6\n", "NaN or inf"),
  ],
)
def test_bad_csv_files_are_named_and_explained(tmp_path, content, match):
  path = tmp_path / "bad.csv"
  path.write_text(content)
  with pytest.raises(ValueError, match=match):
    datasets.load_table(str(path), target="a")


def test_table_errors_name_the_argument_and_the_choices(tmp_path):
  path = _write_csv(tmp_path / "t.csv", ["age", "price"], [(i, i) for i in range(10)])
  with pytest.raises(ValueError, match=r"target 'cost' is not a column of .*; available: age, price"):
    datasets.load_table(path, target="cost")
  with pytest.raises(ValueError, match="does not exist"):
    datasets.load_table(str(tmp_path / "missing.csv"), target="price")
  (tmp_path / "t.txt").write_text("a\n1\n")
  with pytest.raises(ValueError, match=r"extension '.txt'; allowed: .csv, .npz"):
    datasets.load_table(str(tmp_path / "t.txt"), target="a")
  with pytest.raises(ValueError, match="task 'ranking' is unknown"):
    datasets.load_table(path, target="price", task="ranking")
  half = _write_csv(tmp_path / "h.csv", ["x", "y"], [(i, i / 2) for i in range(10)])
  with pytest.raises(ValueError, match="non-integer values; classification needs class labels"):
    datasets.load_table(half, target="y", task="classification")
  with pytest.raises(ValueError, match="no feature columns"):
    datasets.load_table(_write_csv(tmp_path / "y.csv", ["y"], [(i,) for i in range(10)]), target="y")
  np.savez(tmp_path / "s.npz", x=np.array(["a", "b"]), y=np.array([1.0, 2.0]))
  with pytest.raises(ValueError, match="entry 'x' has dtype <U1"):
    datasets.load_table(str(tmp_path / "s.npz"), target="y")


def test_get_dataset_resolves_names_and_paths(tmp_path):
  path = _write_csv(tmp_path / "t.csv", ["f", "y"], [(i, i % 3) for i in range(20)])
  assert datasets.get_dataset("digits", kind="cnn").x_train.shape[1:] == (8, 8, 1)
  assert datasets.get_dataset(path, kind="mlp", target="y", task="classification").num_classes == 3
  with pytest.raises(ValueError, match=r"'mnist' is neither a known dataset \(digits, diabetes\)"):
    datasets.get_dataset("mnist", kind="cnn")
  with pytest.raises(ValueError, match="target: empty"):
    datasets.get_dataset(path, kind="mlp")
  with pytest.raises(ValueError, match="digits: kind 'rnn' is unknown"):
    datasets.digits("rnn")
  with pytest.raises(ValueError, match="seed: -1"):
    datasets.diabetes(seed=-1)


def test_input_spec_matches_how_training_builds_the_model():
  assert datasets.input_spec(datasets.digits("cnn")) == ((8, 8, 1), 10)
  assert datasets.input_spec(datasets.digits("mlp")) == ((64,), 10)
  assert datasets.input_spec(datasets.diabetes()) == ((10,), 1)


def test_input_spec_rejects_a_non_dataset():
  with pytest.raises(ValueError, match=r"^data: got a tuple; expected a datasets.Dataset"):
    datasets.input_spec(((8, 8, 1), 10))
