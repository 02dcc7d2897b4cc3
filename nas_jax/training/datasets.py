"""Datasets for training networks: scikit-learn's bundled digits and diabetes, user tables and user images.

Nothing is downloaded. Every dataset is split 0.6/0.2/0.2 with a seed and standardised with
training statistics (NASBOT Sec. 5).
"""

from __future__ import annotations

import csv
import os
import zipfile
from typing import NamedTuple

import numpy as np

__all__ = ["Dataset", "TASKS", "input_spec", "digits", "diabetes", "load_table", "load_images", "get_dataset"]

#: The task types a dataset can have.
TASKS = ("classification", "regression")
_SPLIT = (0.6, 0.2)  # train, validation; the test split takes the rest


class Dataset(NamedTuple):
  """A split, standardised dataset, as host numpy arrays.

  Attributes:
    x_train, x_val, x_test: [n, H, W, C] float32 images (for CNNs) or [n, D] float32 features.
    y_train, y_val, y_test: [n] int32 class ids in [0, num_classes) (classification) or [n]
      float32 standardised targets (regression).
    task: "classification" or "regression".
    num_classes: number of classes; 0 for regression.
    name: where the data came from, for messages.
  """

  x_train: np.ndarray
  y_train: np.ndarray
  x_val: np.ndarray
  y_val: np.ndarray
  x_test: np.ndarray
  y_test: np.ndarray
  task: str
  num_classes: int
  name: str


def input_spec(data: Dataset) -> tuple[tuple[int, ...], int]:
  """(one example's input shape, num_outputs): the shapes every model of `data` is built for, with
  `num_outputs` the class count for classification and 1 for regression.

  Returns:
    E.g. ((8, 8, 1), 10) for cnn digits, ((64,), 10) for mlp digits, ((10,), 1) for diabetes.
  """
  if not isinstance(data, Dataset):
    raise ValueError(f"data: got a {type(data).__name__}; expected a datasets.Dataset")
  return tuple(int(d) for d in data.x_train.shape[1:]), max(int(data.num_classes), 1)


def _standardise(train: np.ndarray, *others: np.ndarray) -> list[np.ndarray]:
  """Per-column (z - mean) / std with training statistics; a constant column gets std 1."""
  mean, std = train.mean(0), train.std(0)
  std = np.where(std > 0, std, 1.0)
  return [((z - mean) / std).astype(np.float32) for z in (train, *others)]


def _split(x: np.ndarray, y: np.ndarray, *, task: str, num_classes: int, seed: int, name: str) -> Dataset:
  """Shuffles with `seed`, splits 0.6/0.2/0.2 and standardises x (and y for regression).

  Args:
    x: [n, D] features.
    y: [n] class ids or regression targets.
  """
  n = x.shape[0]
  if n < 5:
    raise ValueError(f"{name}: {n} rows; at least 5 are needed for a 0.6/0.2/0.2 split")
  perm = np.random.default_rng(seed).permutation(n)
  n_train, n_val = int(round(_SPLIT[0] * n)), int(round(_SPLIT[1] * n))
  parts = np.split(perm, [n_train, n_train + n_val])
  xs = _standardise(*(x[p].astype(np.float64) for p in parts))
  if task == "regression":
    ys = _standardise(*(y[p].astype(np.float64) for p in parts))
  else:
    ys = [y[p].astype(np.int32) for p in parts]
  return Dataset(xs[0], ys[0], xs[1], ys[1], xs[2], ys[2], task=task, num_classes=num_classes, name=name)


def _check_seed(seed) -> int:
  if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
    raise ValueError(f"seed: {seed!r}; expected a non-negative integer")
  return int(seed)


def digits(kind: str = "cnn", *, seed: int = 0) -> Dataset:
  """scikit-learn's 1797 handwritten 8x8 digits, 10 classes.

  Args:
    kind: "cnn" and "autokeras" give [n, 8, 8, 1] images, "mlp" flat [n, 64] vectors.
    seed: seed of the split.

  Returns:
    A classification Dataset; pixels standardised per position with training statistics.
  """
  if kind not in ("cnn", "mlp", "autokeras"):
    raise ValueError(f"digits: kind {kind!r} is unknown; allowed: cnn, mlp, autokeras")
  raw = _sklearn_datasets().load_digits()
  data = _split(raw.data, raw.target, task="classification", num_classes=10, seed=_check_seed(seed), name="digits")
  if kind == "mlp":
    return data
  image = lambda z: z.reshape(-1, 8, 8, 1)
  return data._replace(x_train=image(data.x_train), x_val=image(data.x_val), x_test=image(data.x_test))


def diabetes(*, seed: int = 0) -> Dataset:
  """scikit-learn's diabetes regression set: 442 patients, 10 features, standardised target."""
  raw = _sklearn_datasets().load_diabetes()
  return _split(raw.data, raw.target, task="regression", num_classes=0, seed=_check_seed(seed), name="diabetes")


def _sklearn_datasets():
  """scikit-learn's datasets module, imported when a set is loaded: it brings scipy.stats (half a
  second), which every launch script and spawned worker would otherwise pay at start."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top

  return datasets


def _read_csv(path: str) -> dict[str, np.ndarray]:
  """A CSV with a header row -> {column name: [n] float64}."""
  with open(path, newline="") as f:
    rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
  if len(rows) < 2:
    raise ValueError(f"load_table: {path!r} has no data rows; expected a header row then numeric rows")
  header = [h.strip() for h in rows[0]]
  if len(set(header)) != len(header):
    raise ValueError(f"load_table: {path!r} has duplicate column names in its header {header}")
  values = np.empty((len(rows) - 1, len(header)))
  for i, row in enumerate(rows[1:], start=2):
    if len(row) != len(header):
      raise ValueError(f"load_table: {path!r} line {i} has {len(row)} fields; the header has {len(header)}")
    for j, cell in enumerate(row):
      try:
        values[i - 2, j] = float(cell)
      except ValueError:
        raise ValueError(
          f"load_table: {path!r} line {i}, column {header[j]!r}: {cell!r} is not a number; every cell must be numeric"
        ) from None
  return {h: values[:, j] for j, h in enumerate(header)}


def _read_npz(path: str) -> dict[str, np.ndarray]:
  """An .npz of [n] columns or [n, d] feature blocks -> {name: array}."""
  with np.load(path, allow_pickle=False) as f:
    arrays = {k: f[k] for k in f.files}
  for k, a in arrays.items():
    if a.ndim not in (1, 2) or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
      raise ValueError(
        f"load_table: {path!r} entry {k!r} has dtype {a.dtype} and shape {a.shape};"
        " entries must be numeric [n] columns or [n, d] blocks"
      )
  if not arrays:
    raise ValueError(f"load_table: {path!r} holds no arrays")
  lengths = {k: a.shape[0] for k, a in arrays.items()}
  if len(set(lengths.values())) > 1:
    raise ValueError(f"load_table: {path!r} entries have different row counts {lengths}; all need the same n")
  return arrays


def load_table(path: str, *, target: str, task: str = "regression", seed: int = 0) -> Dataset:
  """Features and one target column from a CSV or NPZ file the user provides.

  A CSV has a header row of column names and numeric cells. An NPZ holds [n] columns and/or
  [n, d] feature blocks under any names (e.g. `np.savez(path, x=x, y=y)`). Every column or block
  other than `target` is a feature.

  Args:
    path: a .csv or .npz file.
    target: the name of the [n] target column.
    task: "regression" (target standardised) or "classification" (integer class labels,
      renumbered 0..K-1 in sorted order).
    seed: seed of the 0.6/0.2/0.2 split.

  Returns:
    A Dataset with [n, D] float32 features.

  Raises:
    ValueError: missing or unsupported file, unknown target (listing the columns), non-numeric
      or non-finite data, a non-integer classification target, no feature columns.
  """
  if task not in TASKS:
    raise ValueError(f"load_table: task {task!r} is unknown; allowed: {', '.join(TASKS)}")
  seed = _check_seed(seed)
  if not os.path.isfile(path):
    raise ValueError(f"load_table: path {path!r} does not exist or is not a file")
  ext = os.path.splitext(path)[1].lower()
  readers = {".csv": _read_csv, ".npz": _read_npz}
  if ext not in readers:
    raise ValueError(f"load_table: {path!r} has extension {ext!r}; allowed: {', '.join(readers)}")
  columns = readers[ext](path)
  if target not in columns:
    raise ValueError(f"load_table: target {target!r} is not a column of {path!r}; available: {', '.join(columns)}")
  y = np.asarray(columns.pop(target), np.float64)
  if y.ndim != 1:
    raise ValueError(f"load_table: target {target!r} has shape {y.shape}; it must be one [n] column")
  if not columns:
    raise ValueError(f"load_table: {path!r} has no feature columns besides the target {target!r}")
  x = np.concatenate([np.asarray(a, np.float64).reshape(len(y), -1) for a in columns.values()], axis=1)
  for what, a in (("features", x), (f"target {target!r}", y)):
    if not np.isfinite(a).all():
      raise ValueError(f"load_table: {path!r} {what} contain NaN or inf; clean the data first")
  num_classes = 0
  if task == "classification":
    if not np.array_equal(y, np.round(y)):
      raise ValueError(f"load_table: target {target!r} has non-integer values; classification needs class labels")
    classes, y = np.unique(y, return_inverse=True)
    num_classes = len(classes)
  return _split(x, y, task=task, num_classes=num_classes, seed=seed, name=os.path.basename(path))


def load_images(path: str, *, seed: int = 0) -> Dataset:
  """Labelled images the user provides: an .npz holding `x` [n, H, W, C] (numeric) and `y` [n]
  integer class labels (renumbered 0..K-1 in sorted order), e.g. `np.savez(path, x=x, y=y)`; split
  0.6/0.2/0.2 with `seed` and standardised per pixel position with training statistics, as
  `digits` is.

  Returns:
    A classification Dataset with [n, H, W, C] float32 images.

  Raises:
    ValueError naming the file and what is wrong: missing, not an .npz, no `x` or `y`, shapes,
    non-finite pixels, non-integer labels.
  """
  seed = _check_seed(seed)
  if not os.path.isfile(path) or os.path.splitext(path)[1].lower() != ".npz":
    raise ValueError(
      f"load_images: {path!r} is not an existing .npz file; expected one holding x [n, H, W, C] and y [n]"
    )
  try:
    with np.load(path, allow_pickle=False) as f:
      arrays = {k: f[k] for k in f.files}
  except (OSError, ValueError, zipfile.BadZipFile) as e:
    raise ValueError(f"load_images: {path!r} is not a readable .npz file ({e})") from None
  x, y = arrays.get("x"), arrays.get("y")
  if x is None or y is None:
    raise ValueError(f"load_images: {path!r} holds {sorted(arrays)}; expected x [n, H, W, C] and y [n]")
  if x.ndim != 4 or y.ndim != 1 or len(x) != len(y) or not np.issubdtype(x.dtype, np.number):
    raise ValueError(
      f"load_images: {path!r} holds x {x.shape} {x.dtype} and y {y.shape}; expected x [n, H, W, C] and y [n]"
    )
  if not np.isfinite(x).all():
    raise ValueError(f"load_images: {path!r} x contains NaN or inf; clean the images first")
  if not np.issubdtype(y.dtype, np.number) or not np.array_equal(y, np.round(y)):
    raise ValueError(f"load_images: {path!r} y holds non-integer values; expected class labels")
  classes, labels = np.unique(y, return_inverse=True)
  name = os.path.basename(path)
  data = _split(x.reshape(len(x), -1), labels, task="classification", num_classes=len(classes), seed=seed, name=name)
  image = lambda z: z.reshape(-1, *x.shape[1:])
  return data._replace(x_train=image(data.x_train), x_val=image(data.x_val), x_test=image(data.x_test))


def get_dataset(name: str, *, kind: str, seed: int = 0, target: str = "", task: str = "regression") -> Dataset:
  """Resolves a config's dataset string: "digits", "diabetes", or a path to a .csv/.npz table.

  Args:
    name: "digits", "diabetes" or a file path.
    kind: "cnn", "autokeras" or "mlp" (shapes digits as images or vectors).
    seed: split seed.
    target, task: for tables only (see `load_table`).
  """
  if name == "digits":
    return digits(kind, seed=seed)
  if name == "diabetes":
    return diabetes(seed=seed)
  if not os.path.isfile(name):
    raise ValueError(f"dataset: {name!r} is neither a known dataset (digits, diabetes) nor an existing file")
  if not target:
    raise ValueError(f"target: empty; a table ({name!r}) needs the name of its target column")
  return load_table(name, target=target, task=task, seed=seed)
