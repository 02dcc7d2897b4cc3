"""nas_jax.tasks.nb201_release and launch/nb201_data.py on small releases in the benchmark's own
on-disk format, made with the benchmark's packages: their `ArchResults` / `ResultsCount` saved
with `nats_bench.pickle_save` into the NATS-Bench topology folder layout (a meta file and one
file per cell), or, for NAS-Bench-201's .pth, the same records in the dict that file holds."""

import collections
import csv
import gzip
import importlib.util
import itertools
import json
import math
import os
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest

from nas_jax.arch import cell
from nas_jax.tasks import nb201_release, tabular
from tests.conftest import SHARED_DATA

nats_bench = pytest.importorskip("nats_bench", reason="the package nats_bench (extra nb201) is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETS = {
  "cifar10-valid": ("x-valid", "ori-test"),
  "cifar10": ("ori-test",),
  "cifar100": ("x-valid", "x-test", "ori-test"),
  "ImageNet16-120": ("x-valid", "x-test", "ori-test"),
}
CLASSES = {"cifar10-valid": 10, "cifar10": 10, "cifar100": 100, "ImageNet16-120": 120}
CELLS = (
  "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|",
  "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|",
  "|avg_pool_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|",  # cell 1 but for its dead edge 0->1
  "|none~0|+|skip_connect~0|none~1|+|none~0|none~1|nor_conv_1x1~2|",
)
SEEDS = {"200": ((777, 888, 999), (777, 888, 999), (777, 888), (777, 888)), "12": ((111, 777),) * 4}
EPOCHS = {"200": 200, "12": 12}


def acc(index, dataset, setname, hp):
  """The known mean over seeds of a final accuracy: every cell, dataset, split and schedule its own."""
  split = {"x-valid": 0.25, "x-test": 0.5, "ori-test": 0.75}[setname]
  return 40.0 + 10 * index + 2 * list(SETS).index(dataset) + split + (20 if hp == "200" else 0)


def seconds(index, dataset):
  """The known training seconds per epoch."""
  return 1.0 + index + 0.5 * list(SETS).index(dataset)


def params(index, dataset):
  """The known parameters (millions)."""
  return 0.125 + 0.0625 * index + 0.001 * CLASSES[dataset]


def record(pkg, index, hp, datasets=tuple(SETS), nan=False, arch=None, accuracy=acc, epochs=None):
  """The cell's `ArchResults` at `hp`, made of one `ResultsCount` per dataset and seed; the seeds'
  accuracies are spread symmetrically about `accuracy`, so their mean is `accuracy`."""
  epochs, seeds, arch = epochs or EPOCHS[hp], SEEDS[hp][index % 4], arch or CELLS[index]
  info = pkg.ArchResults(index, arch)
  for dataset in datasets:
    for k, seed in enumerate(seeds):
      offset = (k - (len(seeds) - 1) / 2) * 0.5
      config = {"channel": 16, "num_cells": 5, "arch_str": arch, "class_num": CLASSES[dataset]}
      train = {e: 50.0 + offset for e in range(epochs)}
      result = pkg.ResultsCount(dataset, None, train, train, params(index, dataset), 10.0, config, seed, epochs, [0.01])
      times = collections.OrderedDict((e, seconds(index, dataset)) for e in range(epochs))
      result.update_train_info(train, train, train, times)
      keys = [(s, f"{s}@{e}") for s in SETS[dataset] for e in range(epochs)]
      accs = {key: accuracy(index, dataset, s, hp) + offset for s, key in keys}
      if nan and dataset == "cifar100":
        accs[f"x-valid@{epochs - 1}"] = math.nan
      result.update_eval(accs, {key: 1.0 for _, key in keys}, {key: 0.5 for _, key in keys})
      info.update(dataset, seed, result)
  return info


def nats_folder(tmp_path, no_file=(), no_12=(), no_imagenet=(), nan=()):
  """The folder NATS-tss-v1_0-3ffb9-simple holds, for CELLS: cells in `no_file` have no file, those
  in `no_12` no 12-epoch record, those in `no_imagenet` no ImageNet16-120 at 200 epochs, those in
  `nan` a NaN CIFAR-100 validation accuracy at 200 epochs."""
  folder = tmp_path / nb201_release.NATS_ARCHIVE
  folder.mkdir()
  meta = {"meta_archs": list(CELLS), "total_archs": len(CELLS), "arch2infos": None, "evaluated_indexes": set()}
  nats_bench.pickle_save(meta, str(folder / "meta.pickle"))
  for i in range(len(CELLS)):
    if i in no_file:
      continue
    full = tuple(d for d in SETS if not (i in no_imagenet and d == "ImageNet16-120"))
    hps = {"200": record(nats_bench, i, "200", full, nan=i in nan)}
    if i not in no_12:
      hps["12"] = record(nats_bench, i, "12")
    nats_bench.pickle_save(
      collections.OrderedDict((hp, r.state_dict()) for hp, r in hps.items()), str(folder / f"{i:06d}.pickle")
    )
  return str(folder)


def _expected(loaded, index, ds, metric, hp):
  valid, test = nb201_release.RECORDS[ds]
  want_test = acc(index, test, "ori-test" if ds == "cifar10" or metric == "valtest" else "x-test", hp)
  np.testing.assert_allclose(loaded.valid[index], acc(index, valid, "x-valid", hp), atol=1e-9)
  np.testing.assert_allclose(loaded.test[index], want_test, atol=1e-9)


def test_a_nats_archive_round_trips_through_the_loader(tmp_path):
  out = tmp_path / "tables"
  made = nb201_release.make_tables(nats_folder(tmp_path), str(out), allow_partial=True)
  assert made.missing == {"the release lists 4 cells of NAS-Bench-201's 15625": ()}
  assert {f: rows for f, (_, rows) in made.written.items()} == {200.0: 4, 12.0: 4}
  for ds in tabular.DATASETS:
    for metric in tabular.REPORT_METRICS:
      full = tabular.load_nb201(str(out), ds, metric)
      short = tabular.load_nb201(str(out / tabular.NB201_12_FILE), ds, "test")
      assert full.arch_strs == short.arch_strs == CELLS and full.index.tolist() == [0, 1, 2, 3]
      assert full.iso_class.tolist() == [0, 1, 1, 3]  # cells 1 and 2 compute the same function
      for i in range(len(CELLS)):
        _expected(full, i, ds, metric, "200")
        _expected(short, i, ds, "test", "12")
        np.testing.assert_allclose(full.params[i], params(i, nb201_release.RECORDS[ds][1]) * 1e6, rtol=1e-12)
        np.testing.assert_allclose(full.train_seconds[i], 200 * seconds(i, nb201_release.RECORDS[ds][0]))
  with gzip.open(out / tabular.NB201_FILE, "rt", newline="") as f:
    rows = list(csv.DictReader(f))
  assert tuple(rows[0]) == nb201_release.COLUMNS[200.0]
  assert [r["n_seeds"] for r in rows] == ["3", "3", "2", "2"]
  assert [rows[0][c] for c in ("op_0_1", "op_0_2", "op_1_2", "op_0_3", "op_1_3", "op_2_3")] == list("333132")
  assert made.best_cifar10 == (acc(3, "cifar10-valid", "x-valid", "200"), acc(3, "cifar10", "ori-test", "200"))


def test_iso_classes_follow_the_benchmarks_own_rule(tmp_path):
  api = nb201_release.open_release(nats_folder(tmp_path))
  unique = [api.get_unique_str(i) for i in range(len(api))]
  by_api = [unique.index(u) for u in unique]  # the smallest index with the same unique string
  assert list(nb201_release.iso_classes(CELLS)) == by_api == [0, 1, 1, 3]


def test_a_partial_release_is_refused_in_one_line_and_written_when_allowed(tmp_path):
  source = nats_folder(tmp_path, no_file=(3,), no_12=(1,), no_imagenet=(2,), nan=(0,))
  out = tmp_path / "tables"
  with pytest.raises(ValueError) as e:
    nb201_release.make_tables(source, str(out))
  line = str(e.value)
  assert "\n" not in line and line.startswith("source: the release is partial: the release lists 4 cells")
  for what in (
    "no 12-epoch record for 1 cell (1)",
    "no ImageNet16-120 at 200 epochs for 1 cell (2)",
    "no record for 1 cell (3)",
    "no finite valid-accuracy of cifar100 at 200 epochs for 1 cell (0)",
    "pass --allow_partial to write the complete cells (1 at 200 epochs, 2 at 12)",
  ):
    assert what in line
  assert not out.exists()
  made = nb201_release.make_tables(source, str(out), allow_partial=True)
  assert tabular.load_nb201(str(out)).arch_strs == (CELLS[1],)
  assert tabular.load_nb201(str(out / tabular.NB201_12_FILE)).arch_strs == (CELLS[0], CELLS[2])
  assert made.written[200.0][1] == 1 and made.written[12.0][1] == 2


def _rows(n, best_valid=91.607, best_test=94.373):
  rows = tuple({"index": i, "arch_str": "x", "cifar10_valid_acc": 80.0, "cifar10_test_acc": 85.0} for i in range(n))
  rows[7].update(cifar10_valid_acc=best_valid, cifar10_test_acc=best_test)
  return rows


def test_a_full_table_must_hold_the_published_best_cifar10_cell():
  full = nb201_release.Tables({200.0: _rows(15625), 12.0: _rows(15625)}, {})
  assert nb201_release.check_tables(full) == (91.607, 94.373)
  off = nb201_release.Tables({200.0: _rows(15625, best_test=94.0), 12.0: ()}, {})
  with pytest.raises(ValueError, match=r"^source: the best CIFAR-10 validation accuracy is 91.6070 with test accuracy"):
    nb201_release.check_tables(off)
  nan = _rows(10)
  nan[3]["cifar10_test_acc"] = math.inf
  with pytest.raises(ValueError, match="cell 3 has a non-finite cifar10_test_acc"):
    nb201_release.check_tables(nb201_release.Tables({200.0: nan, 12.0: ()}, {}))


def test_the_shared_tables_pass_the_full_checks():
  path = os.path.join(SHARED_DATA, "nasbench201")
  if not os.path.isdir(path):
    pytest.skip(f"NAS-Bench-201 tables not found at {path}")
  tables = {}
  for fidelity, name in nb201_release.FILES.items():
    with gzip.open(os.path.join(path, name), "rt", newline="") as f:
      reader = csv.DictReader(f)
      assert tuple(reader.fieldnames) == nb201_release.COLUMNS[fidelity]  # the layout written is the one shared
      tables[fidelity] = tuple({c: v if c == "arch_str" else float(v) for c, v in r.items()} for r in reader)
  best = nb201_release.check_tables(nb201_release.Tables(tables, {}))
  assert best == pytest.approx((91.6067, 94.3733), abs=1e-4)
  arch_strs = [r["arch_str"] for r in tables[200.0]]
  assert list(nb201_release.iso_classes(arch_strs)) == [int(r["iso_class"]) for r in tables[200.0]]


def _unpickle(path, map_location=None):
  with open(path, "rb") as f:
    return pickle.load(f)


def _pickle(obj, path):
  with open(path, "wb") as f:
    pickle.dump(obj, f)


@pytest.fixture
def nas_201_api(monkeypatch):
  """The package nas_201_api, importable: with torch if it is installed, else with a stand-in torch
  whose `load` unpickles (the package imports torch first of all and reads a .pth with torch.load)."""
  if importlib.util.find_spec("nas_201_api") is None:
    pytest.skip("the package nas-bench-201 is not installed")
  for name in [m for m in sys.modules if m.startswith("nas_201_api")]:
    monkeypatch.delitem(sys.modules, name)
  try:
    import torch

    save = torch.save
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")  # torch >= 2.6 would refuse the release's dict
  except ImportError:
    fake = types.ModuleType("torch")
    fake.load = _unpickle
    monkeypatch.setitem(sys.modules, "torch", fake)
    save = _pickle
  import nas_201_api

  yield nas_201_api, save
  for name in [m for m in sys.modules if m.startswith("nas_201_api")]:
    del sys.modules[name]  # bound to this test's torch; monkeypatch would put it back


def test_a_nas_bench_201_file_gives_the_same_tables(tmp_path, nas_201_api):
  pkg, save = nas_201_api
  arch2infos = {
    i: {"less": record(pkg, i, "12").state_dict(), "full": record(pkg, i, "200").state_dict()}
    for i in range(len(CELLS))
  }
  path = str(tmp_path / nb201_release.NB201_RELEASE_FILES[1])
  save({"meta_archs": list(CELLS), "arch2infos": arch2infos, "evaluated_indexes": set(range(len(CELLS)))}, path)
  from_pth = nb201_release.read_release(nb201_release.open_release(path))
  from_nats = nb201_release.read_release(nb201_release.open_release(nats_folder(tmp_path)))
  assert from_pth == from_nats and len(from_pth.rows[200.0]) == len(CELLS)
  (tmp_path / "other.pth").write_bytes(b"not a release")
  with pytest.raises(ValueError, match=r"^source: '.*other.pth' is not a NAS-Bench-201 release \(NAS-Bench-201-v1_0"):
    nb201_release.open_release(str(tmp_path / "other.pth"))


def test_a_missing_package_or_a_wrong_source_is_named(tmp_path, monkeypatch):
  empty = tmp_path / "empty"
  empty.mkdir()
  with pytest.raises(
    ValueError, match=r"^source: '.*empty' is not the NATS-Bench archive NATS-tss-v1_0-3ffb9-simple: "
  ):
    nb201_release.open_release(str(empty))
  monkeypatch.setitem(sys.modules, "nats_bench", None)
  with pytest.raises(ValueError, match=r"needs the package nats_bench: pip install 'nas_jax\[nb201\]'$"):
    nb201_release.open_release(nats_folder(tmp_path))
  (tmp_path / "x.pth").write_bytes(b"")
  monkeypatch.setitem(sys.modules, "nas_201_api", None)
  with pytest.raises(
    ValueError, match=r"needs the packages nas-bench-201 and torch .*: pip install nas-bench-201 torch"
  ):
    nb201_release.open_release(str(tmp_path / "x.pth"))


def _cli(launch, *flags):
  return launch("launch/nb201_data.py", "--noprogress", *flags)


def test_the_launch_script_refuses_a_partial_release_and_writes_it_when_allowed(launch, tmp_path):
  source, out = nats_folder(tmp_path, no_file=(3,)), tmp_path / "tables"
  p = _cli(launch, f"--source={source}", f"--out={out}")
  assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr[-2000:]
  assert (
    p.stderr.startswith("nb201_data.py: error: source: the release is partial:")
    and "no record for 1 cell (3)" in p.stderr
  )
  p = _cli(launch, f"--source={source}", f"--out={out}", "--allow_partial")
  assert p.returncode == 0, p.stderr[-2000:]
  assert f"wrote {out / tabular.NB201_FILE}: 3 rows" in p.stdout and "partial release: " in p.stdout
  with pytest.raises(ValueError, match=r"^source: '.*nope' not found; expected the NATS-Bench folder NATS-tss"):
    nb201_release.make_tables(str(tmp_path / "nope"), str(out))


def full_accuracy(index, dataset, setname, hp):
  """Accuracies of a release of all 15,625 cells whose cell 7 is the published best on CIFAR-10."""
  if index == 7 and (dataset, setname) in (("cifar10-valid", "x-valid"), ("cifar10", "ori-test")):
    return nb201_release.PUBLISHED_CIFAR10[dataset == "cifar10"]
  return 50.0 + (index % 997) * 0.04 + 0.25 * list(SETS).index(dataset)


@pytest.mark.slow
def test_a_full_release_passes_the_checks_and_a_search_runs_on_its_tables(tmp_path):
  """All 15,625 cells (one-epoch records, through the package's dict form of the release): the
  published best cell is found, and an NB201 config's smoke search runs on the tables written."""
  arch_strs = [cell.nb201_arch_str(cell.nb201_cell(ops)) for ops in itertools.product(range(5), repeat=6)]
  infos = {
    i: {hp: record(nats_bench, i, hp, arch=s, accuracy=full_accuracy, epochs=1).state_dict() for hp in ("12", "200")}
    for i, s in enumerate(arch_strs)
  }
  release = {"meta_archs": arch_strs, "arch2infos": infos, "evaluated_indexes": set(infos)}
  tables = nb201_release.read_release(nats_bench.create(release, "tss", fast_mode=False, verbose=False))
  assert not tables.missing and {f: len(r) for f, r in tables.rows.items()} == {200.0: 15625, 12.0: 15625}
  assert nb201_release.check_tables(tables) == nb201_release.PUBLISHED_CIFAR10
  out = tmp_path / "tables"
  nb201_release.write_tables(tables, str(out))
  assert len(set(tabular.load_nb201(str(out)).iso_class)) == 6466  # the benchmark's classes
  search = ["launch/search.py", "--config=configs/random_nb201.py:smoke", f"--config.workdir={tmp_path / 'w'}"]
  search += [f"--config.task.path={out}", "--noprogress"]
  p = subprocess.run([sys.executable, *search], cwd=ROOT, capture_output=True, text=True)
  assert p.returncode == 0, p.stderr[-3000:]
  summary = json.loads((tmp_path / "w" / "summary.json").read_text())
  assert summary["n_evaluated"] == 15 and 50.0 <= summary["best_value"] <= nb201_release.PUBLISHED_CIFAR10[0]
