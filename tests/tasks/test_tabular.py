"""NAS-Bench-201 lookup (Dong & Yang 2020): README facts, the Task, the format check."""

import os
import pickle

import numpy as np
import pytest

from nas_jax.search.task import Task
from nas_jax.tasks import tabular
from tests.conftest import SHARED_DATA

FOLDER = os.path.join(SHARED_DATA, "nasbench201")
BEST = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|"


@pytest.fixture(scope="module", autouse=True)
def data():
  if not os.path.isdir(FOLDER):
    pytest.skip(f"NAS-Bench-201 tables not found at {FOLDER}")


@pytest.mark.parametrize(
  "dataset, best_valid, test_of_best, best_test",
  [
    ("cifar10", 91.6067, 94.3733, 94.3733),
    ("cifar100", 73.4933, 73.5133, 73.5133),
    ("imagenet16", 46.7333, 46.2000, 47.3111),
  ],
)
def test_readme_optima(dataset, best_valid, test_of_best, best_test):
  t = tabular.load_nb201(FOLDER, dataset)
  assert len(t.arch_strs) == 15625
  b = int(np.argmax(t.valid))
  assert t.valid[b] == pytest.approx(best_valid, abs=1e-4)
  assert t.test[b] == pytest.approx(test_of_best, abs=1e-4)
  assert t.best_test == pytest.approx(best_test, abs=1e-4)


def test_cifar10_means_and_best_cell():
  t = tabular.load_nb201(FOLDER)
  assert t.valid.mean() == pytest.approx(83.6869, abs=1e-3)
  assert t.test.mean() == pytest.approx(87.0629, abs=1e-3)
  assert t.arch_strs[int(np.argmax(t.valid))] == BEST and t.index[t.row[BEST]] == 6111


def test_valtest_metric_for_imagenet16():
  t = tabular.load_nb201(FOLDER, "imagenet16", "valtest")
  assert t.best_test == pytest.approx(46.8833, abs=1e-4)
  assert t.test[int(np.argmax(t.valid))] == pytest.approx(46.4667, abs=1e-4)


def test_task_evaluates_by_lookup_and_pickles():
  task = tabular.nb201_task(FOLDER)
  assert isinstance(task, Task) and task.goal == "max"
  r = pickle.loads(pickle.dumps(task)).evaluate({"kind": "nb201", "arch_str": BEST}, 0)
  assert r.value == pytest.approx(91.6067, abs=1e-4)
  assert r.test_value == pytest.approx(94.3733, abs=1e-4)
  assert r.info["index"] == 6111 and r.info["regret"] == pytest.approx(0.0, abs=1e-9)


def test_task_rejects_unknown_cells():
  task = tabular.nb201_task(FOLDER)
  with pytest.raises(ValueError, match="arch_json"):
    task.evaluate({"kind": "nb201", "arch_str": "|x~0|"}, 0)


def test_bad_arguments_are_named(tmp_path):
  with pytest.raises(ValueError, match="dataset"):
    tabular.load_nb201(FOLDER, "mnist")
  with pytest.raises(FileNotFoundError, match="path"):
    tabular.nb201_task(str(tmp_path / "missing"))
  bad = tmp_path / "t.csv"
  bad.write_text("arch_str,x\n|a|,1\n")
  with pytest.raises(ValueError, match="lacks columns"):
    tabular.load_nb201(str(bad))


def test_unreadable_and_partial_tables_are_named(tmp_path):
  fake = tmp_path / "nb201_200epochs.csv.gz"
  fake.write_text("not gzip")
  with pytest.raises(ValueError, match=r"is not a readable CSV \(gzip\) table"):
    tabular.load_nb201(str(fake))
  few = tmp_path / "few.csv"
  few.write_text(f"arch_str,cifar10_valid_acc,cifar10_test_acc\n{BEST},50.0,60.0\n")
  with pytest.raises(ValueError, match="holds 1 distinct cells; a search needs all 15625"):
    tabular.nb201_task(str(few))
  words = tmp_path / "words.csv"  # another file: tables are cached by path
  words.write_text(f"arch_str,cifar10_valid_acc,cifar10_test_acc\n{BEST},fifty,60.0\n")
  with pytest.raises(ValueError, match="holds a non-number"):
    tabular.load_nb201(str(words))


def test_own_file_in_the_documented_format(tmp_path):
  f = tmp_path / "mine.csv"
  f.write_text(f"arch_str,cifar10_valid_acc,cifar10_test_acc\n{BEST},50.0,60.0\n")
  t = tabular.load_nb201(str(f))
  assert t.best_test == 60.0 and t.iso_class is None and t.index.tolist() == [0]
