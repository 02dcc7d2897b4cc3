"""NAS-Bench-201 lookup task (Dong & Yang 2020): a loader for the benchmark's CSV tables and a
picklable `Task` whose evaluation is one dictionary lookup. Nothing is ever downloaded.

File format (users may point at their own copy): a gzip'd or plain CSV with a header containing
`arch_str`, `<ds>_valid_acc`, `<ds>_test_acc` and, for cifar100/imagenet16, `<ds>_valtest_acc`
(accuracies in %), optionally `index` and `iso_class`; one row per cell, as in
`shared/data/nasbench201/nb201_200epochs.csv.gz`.

Two fidelities (`nb201_task(..., fidelities=(12, 200))`): the 200-epoch table and the 12-epoch
one (`nb201_12epochs.csv.gz`, same rows, beside it), the two training schedules of the
benchmark. The 12-epoch schedule is not a prefix of the 200-epoch one, so a cell promoted from 12
to 200 epochs is trained (and charged its simulated cost, `nb201_evaluate`) afresh.
"""

from __future__ import annotations

import csv
import functools
import gzip
import os
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from nas_jax.search.task import Task, TaskResult

__all__ = [
  "DATASETS",
  "REPORT_METRICS",
  "NB201_FILE",
  "NB201_12_FILE",
  "NB201_CELLS",
  "TIME_COLUMN",
  "MAKE_TABLES",
  "Nb201Table",
  "load_nb201",
  "nb201_task",
  "nb201_evaluate",
  "nb201_costs",
  "fidelity_path",
  "FIDELITIES",
  "resolve",
]

#: The NAS-Bench-201 datasets.
DATASETS = ("cifar10", "cifar100", "imagenet16")
#: The reported accuracy of a cell: the test split ("test") or the valid+test split ("valtest"; CIFAR-10 has test only).
REPORT_METRICS = ("test", "valtest")
#: The table of the 200-epoch trainings, in the data folder.
NB201_FILE = "nb201_200epochs.csv.gz"
#: The table of the 12-epoch trainings, in the data folder.
NB201_12_FILE = "nb201_12epochs.csv.gz"
FIDELITIES = (12.0, 200.0)  # the epochs of the benchmark's two schedules
#: Each dataset's column of training seconds, a query's simulated cost.
TIME_COLUMN = MappingProxyType(
  {
    "cifar10": "train_time_s_cifar10_valid",
    "cifar100": "train_time_s_cifar100",
    "imagenet16": "train_time_s_imagenet16",
  }
)
#: The cells of NAS-Bench-201: 5 ops on each of 6 edges.
NB201_CELLS = 15625
#: What a missing table's error tells the user to do: the tables are made, never downloaded.
MAKE_TABLES = (
  "make the tables from the benchmark's release with python launch/nb201_data.py"
  " --source=NATS-tss-v1_0-3ffb9-simple --out=DIR (docs/nb201_data.md)"
)


class Nb201Table(NamedTuple):
  """One dataset's columns of the NB201 table; arrays are [R] over the R rows.

  Attributes:
    arch_strs: tuple of R cell strings.
    row: dict arch_str -> row number.
    index: [R] int, the benchmark index (row number if the file has no `index` column).
    iso_class: [R] int, or None if the file has no `iso_class` column.
    valid: [R] float, validation accuracy (%), the search objective.
    test: [R] float, the reported accuracy (%): `<ds>_test_acc` or `<ds>_valtest_acc`.
    best_valid, best_test: the table's maxima; best_test is the regret reference (our choice).
    params: [R] float, parameters of the trained network (`params_mb_<ds>` x 10^6), or None if
      the file has no such column.
    train_seconds: [R] float, the benchmark's training seconds of the cell (`train_time_s_...`),
      or None if the file has no such column.
  """

  arch_strs: tuple[str, ...]
  row: dict
  index: np.ndarray
  iso_class: np.ndarray | None
  valid: np.ndarray
  test: np.ndarray
  best_valid: float
  best_test: float
  params: np.ndarray | None = None
  train_seconds: np.ndarray | None = None


def resolve(path: str) -> str:
  """The absolute path of the table file: `path` itself, or `NB201_FILE` in the folder `path`."""
  path = os.fspath(path)
  if os.path.isdir(path):
    path = os.path.join(path, NB201_FILE)
  if not os.path.isfile(path):
    raise FileNotFoundError(
      f"path: {path!r} not found; pass the NB201 CSV (e.g. {NB201_FILE}) or its folder; {MAKE_TABLES}"
    )
  return os.path.abspath(path)


@functools.lru_cache(maxsize=8)
def _load(path: str, dataset: str, report_metric: str) -> Nb201Table:
  opener = gzip.open if path.endswith(".gz") else open
  try:
    with opener(path, "rt", newline="") as f:
      rows = list(csv.DictReader(f))
  except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:  # gzip.BadGzipFile is an OSError
    raise ValueError(
      f"path: {path!r} is not a readable CSV{' (gzip)' if opener is gzip.open else ''} table: {e}"
    ) from None
  valid_col = f"{dataset}_valid_acc"
  test_col = f"{dataset}_test_acc" if report_metric == "test" or dataset == "cifar10" else (f"{dataset}_valtest_acc")
  header = set(rows[0]) if rows else set()
  missing = [c for c in ("arch_str", valid_col, test_col) if c not in header]
  if missing:
    raise ValueError(f"path: {path!r} lacks columns {missing}; see nas_jax.tasks.tabular docs")
  arch_strs = tuple(r["arch_str"] for r in rows)
  params_col, time_col = f"params_mb_{dataset}", TIME_COLUMN[dataset]
  try:
    valid, test = np.array([float(r[valid_col]) for r in rows]), np.array([float(r[test_col]) for r in rows])
    params = np.array([float(r[params_col]) * 1e6 for r in rows]) if params_col in header else None
    seconds = np.array([float(r[time_col]) for r in rows]) if time_col in header else None
  except (TypeError, ValueError) as e:
    raise ValueError(
      f"path: {path!r}: {valid_col}, {test_col}, {params_col} or {time_col} holds a non-number ({e})"
    ) from None
  return Nb201Table(
    arch_strs=arch_strs,
    row={s: i for i, s in enumerate(arch_strs)},
    index=np.array([int(r.get("index", i)) for i, r in enumerate(rows)]),
    iso_class=np.array([int(r["iso_class"]) for r in rows]) if "iso_class" in header else None,
    valid=valid,
    test=test,
    best_valid=float(valid.max()),
    best_test=float(test.max()),
    params=params,
    train_seconds=seconds,
  )


def load_nb201(path: str, dataset: str = "cifar10", report_metric: str = "test") -> Nb201Table:
  """Reads (once per process, cached) one dataset of the NB201 table.

  Args:
    path: the CSV file, or a folder holding `nb201_200epochs.csv.gz`.
    dataset: "cifar10", "cifar100" or "imagenet16".
    report_metric: "test" (`<ds>_test_acc`, NB201 convention) or "valtest" (the whole original
      test set, the BANANAS authors' code). Identical for cifar10.

  Raises:
    FileNotFoundError if path is missing; ValueError for a bad dataset, metric or header.
  """
  if dataset not in DATASETS:
    raise ValueError(f"dataset: {dataset!r} is unknown; allowed: {', '.join(DATASETS)}")
  if report_metric not in REPORT_METRICS:
    raise ValueError(f"report_metric: {report_metric!r}; allowed: {', '.join(REPORT_METRICS)}")
  return _load(resolve(path), dataset, report_metric)


def fidelity_path(path: str, fidelity: float) -> str:
  """The table of `fidelity` epochs (12 or 200): the 200-epoch table `path` itself, or the
  12-epoch file beside it (`NB201_12_FILE`)."""
  if fidelity == FIDELITIES[-1]:
    return path
  other = os.path.join(os.path.dirname(path), NB201_12_FILE)
  if not os.path.isfile(other):
    raise FileNotFoundError(
      f"path: {other!r} not found; the {fidelity:g}-epoch fidelity reads it beside {path!r}; {MAKE_TABLES}"
    )
  return other


def _row(table: Nb201Table, arch_json: Any) -> int:
  """The row of the cell `arch_json` names; ValueError naming `arch_json` when the table has none."""
  arch_str = arch_json.get("arch_str") if isinstance(arch_json, dict) else None
  if arch_str not in table.row:
    raise ValueError(f"arch_json: {arch_json!r}; expected {{'kind': 'nb201', 'arch_str': <a row>}}")
  return table.row[arch_str]


def nb201_evaluate(
  arch_json: Any, seed: int, fidelity: float | None = None, *, path: str, dataset: str, report_metric: str
) -> TaskResult:
  """Looks a cell up: value = validation accuracy (%), test_value = reported accuracy (%), at
  `fidelity` epochs (12 or 200; None: 200).

  The table holds means over training seeds, so `seed` does not change the result. info holds
  the benchmark `index`, `regret` (best test overall at 200 epochs - this test) and
  `valid_regret`, and `cost_s`, the simulated training seconds (the 200-epoch run's, times
  fidelity / 200) when the table records them; the curve is the one point (fidelity, value).
  """
  del seed  # the tabular oracle is deterministic (each row holds means over seeds)
  fidelity = FIDELITIES[-1] if fidelity is None else float(fidelity)
  if fidelity not in FIDELITIES:
    raise ValueError(f"fidelity: {fidelity!r}; NAS-Bench-201 has the epochs {', '.join(f'{f:g}' for f in FIDELITIES)}")
  full = load_nb201(path, dataset, report_metric)
  table = load_nb201(fidelity_path(path, fidelity), dataset, report_metric)
  r, full_r = _row(table, arch_json), _row(full, arch_json)
  info = {
    "index": int(table.index[r]),
    "regret": full.best_test - float(table.test[r]),
    "valid_regret": full.best_valid - float(table.valid[r]),
  }
  if full.train_seconds is not None:
    info["cost_s"] = float(full.train_seconds[full_r]) * fidelity / FIDELITIES[-1]
  return TaskResult(
    value=float(table.valid[r]), test_value=float(table.test[r]), info=info, curve=((fidelity, float(table.valid[r])),)
  )


def nb201_costs(arch_json: Any, *, path: str, dataset: str) -> dict[str, float]:
  """{"params": the cell's network's parameter count on `dataset`}, from the table's
  `params_mb_<dataset>` column (the only cost NAS-Bench-201 records before training)."""
  table = load_nb201(path, dataset)
  if table.params is None:
    raise ValueError(f"path: {path!r} has no params_mb_{dataset} column; parameter costs need it")
  return {"params": float(table.params[_row(table, arch_json)])}


def nb201_task(path: str, dataset: str = "cifar10", report_metric: str = "test", fidelities: tuple = ()) -> Task:
  """A `Task` (goal "max" on validation accuracy, test_value = reported accuracy) on the table.

  Args:
    path, dataset, report_metric: as `load_nb201`.
    fidelities: () (the 200-epoch table only) or (12, 200): both schedules, for multi-fidelity
      schedulers; the 12-epoch table is read from beside the 200-epoch one.

  The tables are loaded here, so a missing, malformed or partial file fails at construction.
  """
  table_path = resolve(path)
  fidelities = tuple(float(f) for f in fidelities)
  if fidelities not in ((), FIDELITIES):
    raise ValueError(f"fidelities: {fidelities!r}; NAS-Bench-201 offers () or (12, 200) epochs")
  for fidelity in fidelities or FIDELITIES[-1:]:
    n = len(load_nb201(fidelity_path(table_path, fidelity), dataset, report_metric).row)
    if n != NB201_CELLS:  # a search proposes any cell: a partial table would fail its trials
      raise ValueError(f"path: {table_path!r} holds {n} distinct cells; a search needs all {NB201_CELLS} of NB201")
  evaluate = functools.partial(nb201_evaluate, path=table_path, dataset=dataset, report_metric=report_metric)
  return Task(name=f"nb201_{dataset}", goal="max", evaluate=evaluate, fidelities=fidelities)
