"""The NAS-Bench-201 tables of `nas_jax.tasks.tabular`, made from the benchmark's own release.

Two releases hold the 15,625 cells of NAS-Bench-201 (Dong & Yang 2020), trained by its authors:

- the NATS-Bench topology archive, the folder `NATS-tss-v1_0-3ffb9-simple` (the same cells,
  re-released with NATS-Bench), read with the package `nats_bench` in its fast mode, one cell file
  at a time; pure Python, no torch;
- the NAS-Bench-201 files `NAS-Bench-201-v1_0-e61699.pth` and `NAS-Bench-201-v1_1-096897.pth`,
  read with the package `nas_201_api` (PyPI `nas-bench-201`), which needs torch to read a .pth.

Only the packages' API is used, never their pickles: `len(api)` and `api.arch(i)` list the cells,
`query_meta_info_by_index(i, hp)` is a cell's record (its datasets and seeds, and
`get_compute_costs`, which is what `get_cost_info` returns), and `get_more_info(i, dataset, hp,
is_random=False)` gives the accuracies and training seconds, each the mean over the training
seeds. hp "200" makes the 200-epoch table, hp "12" the 12-epoch one. The columns:

| column | benchmark dataset | key of `get_more_info` |
|---|---|---|
| `cifar10_valid_acc` | `cifar10-valid` (trained on the training split) | `valid-accuracy` (x-valid) |
| `cifar10_test_acc` | `cifar10` (trained on training + validation) | `test-accuracy` (ori-test) |
| `<ds>_valid_acc`, `<ds>_test_acc` | `cifar100`, `ImageNet16-120` | `valid-accuracy` (x-valid), `test-accuracy` (x-test) |
| `<ds>_valtest_acc` (200 epochs) | `cifar100`, `ImageNet16-120` | `valtest-accuracy` (ori-test, both halves) |
| `train_time_s_<ds>` | `cifar10-valid`, `cifar100`, `ImageNet16-120` | `train-all-time` |
| `params_mb_<ds>` | `cifar10`, `cifar100`, `ImageNet16-120` | `params` of `get_compute_costs` |

CIFAR-10 is split as the papers report it: validation accuracy of the network trained on the
training split, test accuracy of the one trained on training + validation. `n_seeds` is the fewest
seeds (`get_dataset_seeds`) of the four datasets' 200-epoch records. `iso_class` is the smallest
index of the cells with the same `nas_jax.arch.cell.nb201_iso_key`, which is NATS-Bench's own
rule (`get_unique_str`: the cell's function with `none` edges and dead paths dropped and
`skip_connect` as identity); `nas_201_api` offers no such call, so both releases use the key.

A cell of the release without a record, a dataset or schedule a record lacks, or a value that is
missing or not finite makes the release partial: refused, unless partial tables are asked for.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import pickle
from types import MappingProxyType
from typing import Any, Callable, Iterable, NamedTuple

from nas_jax.arch import cell as cell_lib
from nas_jax.tasks import tabular

__all__ = [
  "NATS_ARCHIVE",
  "NB201_RELEASE_FILES",
  "BENCH_DATASETS",
  "RECORDS",
  "PUBLISHED_CIFAR10",
  "COLUMNS",
  "FILES",
  "Tables",
  "Made",
  "open_release",
  "iso_classes",
  "read_release",
  "missing_line",
  "check_tables",
  "write_tables",
  "make_tables",
]

#: The NATS-Bench topology archive: a folder of a meta file and one file per cell.
NATS_ARCHIVE = "NATS-tss-v1_0-3ffb9-simple"
#: The NAS-Bench-201 v1.0 and v1.1 files (torch .pth).
NB201_RELEASE_FILES = ("NAS-Bench-201-v1_0-e61699.pth", "NAS-Bench-201-v1_1-096897.pth")
#: The benchmark's four training records of a cell ("cifar10" trained on training + validation).
BENCH_DATASETS = ("cifar10-valid", "cifar10", "cifar100", "ImageNet16-120")
#: Our dataset -> (the benchmark dataset of its validation accuracy and training seconds, that of
#: its test accuracies and parameters).
RECORDS = MappingProxyType(
  {
    "cifar10": ("cifar10-valid", "cifar10"),
    "cifar100": ("cifar100", "cifar100"),
    "imagenet16": ("ImageNet16-120", "ImageNet16-120"),
  }
)
#: The best CIFAR-10 validation accuracy and the test accuracy of that cell (Dong & Yang 2020, the
#: "optimal" row of their results table), which a full 200-epoch table must reproduce.
PUBLISHED_CIFAR10 = (91.607, 94.373)
_TOLERANCE = 1e-3
#: The file of each table: {epochs: file name}.
FILES = MappingProxyType({200.0: tabular.NB201_FILE, 12.0: tabular.NB201_12_FILE})


def _specs(fidelity: float) -> tuple[tuple[str, str, str], ...]:
  """(column, benchmark dataset, key of `get_more_info`) of a table's values from `get_more_info`."""
  specs = []
  for ds in tabular.DATASETS:
    valid, test = RECORDS[ds]
    specs += [(f"{ds}_valid_acc", valid, "valid-accuracy"), (f"{ds}_test_acc", test, "test-accuracy")]
    if fidelity == 200.0 and ds != "cifar10":
      specs.append((f"{ds}_valtest_acc", test, "valtest-accuracy"))
  if fidelity == 200.0:
    specs += [(tabular.TIME_COLUMN[ds], RECORDS[ds][0], "train-all-time") for ds in tabular.DATASETS]
  return tuple(specs)


_OPS = tuple(f"op_{i}_{j}" for i, j in cell_lib.NB201_EDGES)
_PARAMS = tuple(f"params_mb_{ds}" for ds in tabular.DATASETS)
_ACCURACIES = tuple(c for c, _, key in _specs(200.0) if key != "train-all-time")
#: The columns of each table, {epochs: names}, in the order of the tables the loader reads.
COLUMNS = MappingProxyType(
  {
    200.0: (
      "index",
      "arch_str",
      *_OPS,
      *_ACCURACIES,
      "n_seeds",
      "iso_class",
      *_PARAMS,
      *(tabular.TIME_COLUMN[ds] for ds in tabular.DATASETS),
    ),
    12.0: ("index", "arch_str", *(c for c, _, _ in _specs(12.0))),
  }
)


class Tables(NamedTuple):
  """What a release holds, as rows of the two tables.

  Attributes:
    rows: {fidelity (200.0, 12.0): tuple of rows, each a dict column -> value (`COLUMNS`)}, the
      cells complete at that schedule, in index order.
    missing: {what is missing: tuple of the cell indexes it is missing for}; empty when the release
      is complete.
  """

  rows: dict
  missing: dict


class Made(NamedTuple):
  """What `make_tables` did.

  Attributes:
    written: {fidelity: (path, rows)} of the tables written (an empty table is not).
    best_cifar10: (the best CIFAR-10 validation accuracy of the 200-epoch table, the test accuracy
      of that cell).
    missing: what the release lacks, as `Tables.missing`.
  """

  written: dict
  best_cifar10: tuple[float, float]
  missing: dict


def _first_line(e: Exception) -> str:
  text = str(e).strip()
  return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def open_release(source: str) -> Any:
  """The benchmark's API object over `source`.

  Args:
    source: the NATS-Bench topology folder (`NATS_ARCHIVE`) or a NAS-Bench-201 .pth file.

  Raises:
    ValueError, in one line, naming `source` and the package to install when it is missing.
  """
  source = os.fspath(source)
  if os.path.isdir(source):
    try:
      import nats_bench
    except ImportError:
      raise ValueError(
        f"source: {source!r} is a folder, read as the NATS-Bench archive {NATS_ARCHIVE}; that needs the package"
        " nats_bench: pip install 'nas_jax[nb201]'"
      ) from None
    try:
      return nats_bench.create(source, "tss", fast_mode=True, verbose=False)
    except Exception as e:  # a folder without the archive's meta file: bz2, pickle or the package's own errors
      raise ValueError(f"source: {source!r} is not the NATS-Bench archive {NATS_ARCHIVE}: {_first_line(e)}") from None
  if os.path.isfile(source):
    try:
      import nas_201_api
    except ImportError as e:  # nas_201_api imports torch first of all
      raise ValueError(
        f"source: {source!r} is a file, read as a NAS-Bench-201 .pth; that needs the packages nas-bench-201 and"
        f" torch ({e}): pip install nas-bench-201 torch; the NATS-Bench archive {NATS_ARCHIVE} needs neither"
      ) from None
    try:
      return nas_201_api.NASBench201API(source, verbose=False)
    except Exception as e:  # torch.load and the package's asserts raise many kinds on a file that is not the release
      hint = (
        "; torch >= 2.6 loads weights only: set TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 for the benchmark's own file"
        if "weights_only" in str(e) or "Weights only" in str(e)
        else ""
      )
      raise ValueError(
        f"source: {source!r} is not a NAS-Bench-201 release ({', '.join(NB201_RELEASE_FILES)}): {_first_line(e)}{hint}"
      ) from None
  raise ValueError(
    f"source: {source!r} not found; expected the NATS-Bench folder {NATS_ARCHIVE} or a NAS-Bench-201 file"
    f" ({', '.join(NB201_RELEASE_FILES)})"
  )


def iso_classes(arch_strs: Iterable[str]) -> tuple[int, ...]:
  """[N] the isomorphism class of each cell: the smallest position i of a cell with the same
  `nb201_iso_key` (the benchmark's rule), position i being the cell's index."""
  first: dict[str, int] = {}
  classes = []
  for i, s in enumerate(arch_strs):
    classes.append(first.setdefault(cell_lib.nb201_iso_key(cell_lib.parse_arch_str(s)), i))
  return tuple(classes)


def _finite(x: Any) -> bool:
  return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _record(api: Any, index: int, fidelity: float) -> Any:
  """The cell's `ArchResults` at `fidelity` epochs, or None when the release has none."""
  try:
    return api.query_meta_info_by_index(index, f"{fidelity:g}")
  # nats_bench asserts that the cell's file exists; an unreadable one raises bz2's or pickle's errors
  except (AssertionError, KeyError, ValueError, OSError, EOFError, pickle.UnpicklingError):
    return None


def _cell(api: Any, index: int, fidelity: float, record: Any) -> tuple[dict, list[str]]:
  """(column -> value of the cell's row at `fidelity`, what is missing) from its `record` (None:
  there is none); the row is {} when anything is missing."""
  hp = f"{fidelity:g}"
  if record is None:
    return {}, [f"no {hp}-epoch record"]
  lacking = [f"no {d} at {hp} epochs" for d in BENCH_DATASETS if d not in record.get_dataset_names()]
  if lacking:
    return {}, lacking
  values, missing, infos = {}, [], {}
  for column, dataset, key in _specs(fidelity):
    if dataset not in infos:
      try:
        infos[dataset] = api.get_more_info(index, dataset, hp=hp, is_random=False)
      except (KeyError, ValueError, ZeroDivisionError):  # a record without its evaluation sets
        infos[dataset] = {}
    if _finite(infos[dataset].get(key)):
      values[column] = float(infos[dataset][key])
    else:
      missing.append(f"no finite {key} of {dataset} at {hp} epochs")
  if fidelity == 200.0:
    for ds, column in zip(tabular.DATASETS, _PARAMS):
      try:
        params = record.get_compute_costs(RECORDS[ds][1])["params"]
      except (KeyError, ValueError):  # seeds that disagree on the parameters, without the seed that settles them
        params = None
      if _finite(params):
        values[column] = float(params)
      else:
        missing.append(f"no finite params of {RECORDS[ds][1]}")
    values["n_seeds"] = min(len(record.get_dataset_seeds(d)) for d in BENCH_DATASETS)
  return ({} if missing else values), missing


def read_release(api: Any, progress: Callable[[Iterable], Iterable] | None = None) -> Tables:
  """Both tables from the benchmark's API object (`open_release`).

  Args:
    api: a `nats_bench` topology API or a `nas_201_api.NASBench201API`.
    progress: wraps the iteration over cell indexes (e.g. a progress bar); None: none.

  Returns:
    `Tables`; nothing is checked here but what each cell holds.
  """
  n = len(api)
  arch_strs = tuple(api.arch(i) for i in range(n))
  classes = iso_classes(arch_strs)
  rows = {f: [] for f in FILES}
  missing: dict[str, list[int]] = {}
  if n != tabular.NB201_CELLS:
    missing[f"the release lists {n} cells of NAS-Bench-201's {tabular.NB201_CELLS}"] = []
  for i in progress(range(n)) if progress else range(n):
    ops = cell_lib.parse_arch_str(arch_strs[i]).ops
    head = {"index": i, "arch_str": arch_strs[i], **{c: int(o) for c, o in zip(_OPS, ops)}}
    records = {f: _record(api, i, f) for f in FILES}
    found = {f: _cell(api, i, f, records[f]) for f in FILES}
    lacking = ["no record"] if all(r is None for r in records.values()) else [w for _, ws in found.values() for w in ws]
    for f, (values, _) in found.items():
      if values:
        rows[f].append({**head, "iso_class": classes[i], **values} if f == 200.0 else {**head, **values})
    for what in dict.fromkeys(lacking):
      missing.setdefault(what, []).append(i)
    api.arch2infos_dict.pop(i, None)  # the fast mode keeps every cell it read: all of them would fill the memory
  return Tables(
    rows={f: tuple({c: r[c] for c in COLUMNS[f]} for r in rows[f]) for f in FILES},
    missing={what: tuple(cells) for what, cells in missing.items()},
  )


def missing_line(missing: dict) -> str:
  """What a partial release lacks, in one line, with the first cells of each kind."""
  parts = []
  for what, cells in missing.items():
    shown = ", ".join(str(i) for i in cells[:3]) + (", ..." if len(cells) > 3 else "")
    parts.append(f"{what} for {len(cells)} cell{'s' * (len(cells) != 1)} ({shown})" if cells else what)
  return "; ".join(parts)


def check_tables(tables: Tables, allow_partial: bool = False) -> tuple[float, float]:
  """Checks the tables before they are written; returns (best CIFAR-10 validation accuracy, test
  accuracy of that cell) of the 200-epoch table.

  Every value is finite (`read_release` keeps only such rows). A partial release is refused
  unless `allow_partial`; a 200-epoch table of all 15,625 cells must reproduce
  `PUBLISHED_CIFAR10` within 0.001.

  Raises:
    ValueError in one line naming what is missing or what differs.
  """
  if tables.missing and not allow_partial:
    raise ValueError(
      f"source: the release is partial: {missing_line(tables.missing)}; pass --allow_partial to write the"
      f" complete cells ({len(tables.rows[200.0])} at 200 epochs, {len(tables.rows[12.0])} at 12)"
    )
  full = tables.rows[200.0]
  if not full:
    raise ValueError(f"source: no cell of the release is complete at 200 epochs: {missing_line(tables.missing)}")
  bad = [
    (r["index"], c)
    for rows in tables.rows.values()
    for r in rows
    for c, v in r.items()
    if c != "arch_str" and not _finite(v)
  ]
  if bad:
    raise ValueError(f"source: cell {bad[0][0]} has a non-finite {bad[0][1]}")
  best = max(full, key=lambda r: r["cifar10_valid_acc"])  # the first of ties
  found = (best["cifar10_valid_acc"], best["cifar10_test_acc"])
  if len(full) == tabular.NB201_CELLS and any(abs(a - b) > _TOLERANCE for a, b in zip(found, PUBLISHED_CIFAR10)):
    raise ValueError(
      f"source: the best CIFAR-10 validation accuracy is {found[0]:.4f} with test accuracy {found[1]:.4f}"
      f" (cell {best['index']}); NAS-Bench-201 publishes {PUBLISHED_CIFAR10[0]} and {PUBLISHED_CIFAR10[1]}"
    )
  return found


def write_tables(tables: Tables, out: str) -> dict:
  """Writes each non-empty table as gzip'd CSV into the folder `out` (made if needed), each file
  whole or not at all; returns {fidelity: (path, rows)}. The bytes depend on the rows only."""
  os.makedirs(out, exist_ok=True)
  written = {}
  for fidelity, rows in tables.rows.items():
    if not rows:
      continue
    path = os.path.join(out, FILES[fidelity])
    with open(path + ".tmp", "wb") as raw:
      with gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as z:
        with io.TextIOWrapper(z, encoding="utf-8", newline="") as f:
          writer = csv.DictWriter(f, fieldnames=COLUMNS[fidelity])
          writer.writeheader()
          writer.writerows(rows)
    os.replace(path + ".tmp", path)
    written[fidelity] = (path, len(rows))
  return written


def make_tables(
  source: str, out: str, allow_partial: bool = False, progress: Callable[[Iterable], Iterable] | None = None
) -> Made:
  """Reads the release at `source`, checks its tables and writes them into `out`: the function
  of `launch/nb201_data.py`.

  Args:
    source: the NATS-Bench topology folder or a NAS-Bench-201 .pth file (`open_release`).
    out: the folder of `nb201_200epochs.csv.gz` and `nb201_12epochs.csv.gz`.
    allow_partial: write the complete cells of a partial release instead of refusing it.
    progress: as `read_release`.

  Raises:
    ValueError in one line (`open_release`, `check_tables`); nothing is written then.
  """
  tables = read_release(open_release(source), progress)
  best = check_tables(tables, allow_partial)
  return Made(written=write_tables(tables, out), best_cifar10=best, missing=tables.missing)
