"""launch/nb201_table.py end to end on two datasets with tiny budgets, and its flag errors."""

import json
import os

import pytest

from tests.conftest import SHARED_DATA

DATA = os.path.join(SHARED_DATA, "nasbench201")


def test_table_has_both_regrets_per_dataset_and_method(launch, tmp_path):
  if not os.path.isdir(DATA):
    pytest.skip(f"NAS-Bench-201 tables not found at {DATA}")
  p = launch(
    "launch/nb201_table.py",
    f"--out={tmp_path}",
    f"--data={DATA}",
    "--datasets=cifar10,imagenet16",
    "--seeds=2",
    "--budget=5",
    "--configs=configs/random_nb201.py,configs/re_nb201.py",
    "--slow=configs/re_nb201.py",
    "--slow_seeds=1",
  )
  assert p.returncode == 0, p.stderr[-3000:]
  regrets = json.loads((tmp_path / "regrets.json").read_text())["regrets"]
  assert sorted(regrets) == ["cifar10", "imagenet16"]
  assert regrets["cifar10"]["random_nb201"]["n"] == 2 and regrets["imagenet16"]["re_nb201"]["n"] == 1
  for ds, gap in (("cifar10", 0.0), ("imagenet16", 1.1111)):
    r = regrets[ds]["random_nb201"]
    assert r["regret"][0] - r["regret_bv"][0] == pytest.approx(gap, abs=1e-3)
  table = (tmp_path / "table.md").read_text()
  assert "| random | 2 | 5 | – |" in table and "| regularised evolution | 1 | 5 | – |" in table  # no model: no fit
  assert json.loads((tmp_path / "regrets.json").read_text())["model_seconds"]["random_nb201"] == [[0.0, 0.0]] * 4
  # A row's run is the run launch/search.py makes of its config (in float64: in float32 the
  # random cells drawn differ, and a GP's algebra would too).
  alone = tmp_path / "alone"
  search = ["launch/search.py", "--config=configs/random_nb201.py", f"--config.workdir={alone}"]
  search += ["--config.seed=1", "--config.budget=5", f"--config.task.path={DATA}", "--noprogress"]
  p = launch(*search)
  assert p.returncode == 0, p.stderr[-3000:]
  cells = lambda path: [json.loads(line)["arch_json"] for line in path.read_text().splitlines()]
  in_table = tmp_path / "cifar10" / "random_nb201" / "random_nb201" / "seed1" / "journal.jsonl"
  assert cells(in_table) == cells(alone / "journal.jsonl")


@pytest.mark.parametrize(
  "flags, message",
  [
    (["--datasets=mnist"], "--datasets: ['mnist'] unknown"),
    (["--slow=configs/nope.py"], "--slow: ['configs/nope.py'] are not in --configs"),
    (["--data=/nonexistent"], "--data: '/nonexistent' has no nb201_200epochs.csv.gz"),
  ],
)
def test_bad_flags_are_one_line(launch, tmp_path, flags, message):
  p = launch("launch/nb201_table.py", f"--out={tmp_path}", *flags)
  assert p.returncode == 2 and p.stderr.strip().splitlines()[-1].startswith(f"nb201_table.py: error: {message}")
