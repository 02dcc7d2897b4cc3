"""Regret of NAS-Bench-201 searches (nas_jax.experiments.regret): by hand on small runs, and the
oracle's regrets on the tables where ../shared/data has them."""

import os

import numpy as np
import pytest

from nas_jax.experiments import regret
from nas_jax.tasks import tabular
from tests.conftest import SHARED_DATA

FOLDER = os.path.join(SHARED_DATA, "nasbench201")
BEST = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|"
needs_tables = pytest.mark.skipif(not os.path.isdir(FOLDER), reason=f"NAS-Bench-201 tables not found at {FOLDER}")


def _one_cell_table(tmp_path):
  f = tmp_path / "mine.csv"
  f.write_text(f"arch_str,cifar10_valid_acc,cifar10_test_acc\n{BEST},50.0,60.0\n")
  return tabular.load_nb201(str(f))  # best validation accuracy 50


@needs_tables
def test_oracle_regrets():
  for dataset, expected in (("cifar10", 0.0), ("cifar100", 0.0), ("imagenet16", 1.1111)):
    t = tabular.load_nb201(FOLDER, dataset)
    b = int(np.argmax(t.valid))
    assert regret.regret_curve([t.valid[b]], [t.test[b]], t.best_test)[0] == pytest.approx(expected, abs=1e-4)


def test_regret_curve_follows_the_incumbent_with_ties_to_the_earlier():
  curve = regret.regret_curve([80.0, 90.0, 90.0, 85.0], [81.0, 91.0, 99.0, 95.0], 100.0)
  assert curve.tolist() == [19.0, 9.0, 9.0, 9.0]
  with pytest.raises(ValueError, match="expected \\[q\\]"):
    regret.regret_curve([80.0, 90.0], [81.0], 100.0)


@needs_tables
def test_regret_summary_reads_both_references_by_hand():
  for dataset, gap in (("cifar10", 0.0), ("imagenet16", 1.1111)):  # best test - test of the best-valid cell
    t = tabular.load_nb201(FOLDER, dataset)
    assert t.best_test - regret.best_valid_test(t) == pytest.approx(gap, abs=1e-4)
    runs = [[40.0, t.best_test - 1.0], [30.0, t.best_test - 3.0]]  # the last entry of each run counts
    s = regret.regret_summary(runs, t)
    assert s["n"] == 2 and s["regret"] == pytest.approx((2.0, 1.0))  # s.e. = std(ddof 1) / sqrt(2)
    assert s["regret_bv"][0] == pytest.approx(2.0 - gap, abs=1e-4)
  with pytest.raises(ValueError, match="test_runs"):
    regret.regret_summary([[float("nan")]], t)


def test_queries_to_optimum_counts_to_the_first_best_validation_by_hand(tmp_path):
  t = _one_cell_table(tmp_path)
  runs = [[10.0, 50.0, 50.0], [10.0, 20.0, 50.0], [10.0, 20.0, 30.0]]
  assert regret.queries_to_optimum(runs, t) == {"median": 3.0, "reached": 2, "n": 3}
  assert regret.queries_to_optimum(runs[1:] + [[1.0, 2.0, 3.0]], t)["median"] == float("inf")  # most never reach it
  with pytest.raises(ValueError, match="value_runs"):
    regret.queries_to_optimum([], t)


def test_paired_difference_by_hand():
  """new - old = [-0.1, 0.2, 0.0, 0.3]: mean 0.1, squared deviations 0.1 in all, so the sample std
  is sqrt(0.1 / 3) and the s.e. sqrt(0.1 / 3) / 2 = 0.0913: the mean exceeds one s.e., so the new
  runs fail the rule; 0.05 lower they pass."""
  old = np.array([0.5, 0.1, 0.3, 0.0])
  new = old + np.array([-0.1, 0.2, 0.0, 0.3])
  p = regret.paired_difference(old, new)
  assert (p["n"], p["wins"], p["losses"], p["ties"], p["passes"]) == (4, 1, 2, 1, False)
  np.testing.assert_allclose([p["mean"], p["se"]], [0.1, np.sqrt(0.1 / 3) / 2], rtol=1e-12)
  assert regret.paired_difference(old, new - 0.05)["passes"]  # mean 0.05 <= s.e. 0.0913
  one = regret.paired_difference([0.2], [0.2])  # one seed: no spread, an equal value passes
  assert (one["se"], one["ties"], one["passes"]) == (0.0, 1, True)
  with pytest.raises(ValueError, match=r"paired_difference: old \(2,\) and new \(3,\)"):
    regret.paired_difference([0.1, 0.2], [0.1, 0.2, 0.3])
