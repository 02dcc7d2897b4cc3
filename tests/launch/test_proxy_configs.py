"""The zero-cost proxy variants of the NB201 configs (`:zc_*` tokens): each loads, passes
`check_search_config` with a proxy CSV, and one runs end to end through launch/search.py.
The proxy CSV is written from the NB201 table's parameter counts (a real proxy: `params`)."""

import csv
import gzip
import json
import os
import subprocess
import sys

import pytest

from nas_jax.search import journal, loop
from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files
from tests.conftest import SHARED_DATA

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(SHARED_DATA, "nasbench201", "nb201_200epochs.csv.gz")
VARIANTS = [
  "re_nb201.py:smoke+zc_warmup",
  "re_nb201.py:smoke+zc_prescreen",
  "bananas_nb201.py:smoke+zc_warmup+zc_prescreen+zc_feature",
  "nasbot_nb201.py:smoke+zc_warmup+zc_prescreen+zc_prior",
]


@pytest.fixture(scope="module")
def params_csv(tmp_path_factory):
  if not os.path.exists(TABLE):
    pytest.skip(f"NAS-Bench-201 table not found at {TABLE}; it is never downloaded")
  path = tmp_path_factory.mktemp("proxy") / "nb201_cifar10.csv"
  with gzip.open(TABLE, "rt") as f, open(path, "w", newline="") as out:
    w = csv.writer(out)
    w.writerow(["arch_str", "params"])
    w.writerows([r["arch_str"], r["params_mb_cifar10"]] for r in csv.DictReader(f))
  return str(path).replace("cifar10", "{dataset}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_proxy_variant_checks_with_its_parts_on(variant, params_csv, tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", variant))
  c.task.path, c.proxy.path, c.proxy.column, c.workdir = os.path.dirname(TABLE), params_csv, "params", str(tmp_path)
  config_lib.check_search_config(c)
  tokens = variant.split(":")[1].split("+")
  assert (c.proxy.warmup_k > 0) == ("zc_warmup" in tokens) and (c.proxy.prescreen > 0) == ("zc_prescreen" in tokens)
  assert c.proxy.feature == ("zc_feature" in tokens) and c.proxy.prior_mean == ("zc_prior" in tokens)


def test_configs_without_a_proxy_token_have_no_proxy_section():
  for name in ("re_nb201.py", "bananas_nb201.py:paper", "nasbot_nb201.py:warm"):
    assert "proxy" not in config_files.load_config(os.path.join(ROOT, "configs", name))


@pytest.mark.slow
def test_a_warmed_up_prescreened_search_runs_from_the_command_line(params_csv, tmp_path):
  cmd = [
    sys.executable,
    "launch/search.py",
    "--config=configs/re_nb201.py:smoke+zc_warmup+zc_prescreen",
    f"--config.workdir={tmp_path / 'run'}",
    f"--config.task.path={os.path.dirname(TABLE)}",
    f"--config.proxy.path={params_csv}",
    "--config.proxy.column=params",
    "--config.proxy.seconds_per_score=0.01",
    "--noprogress",
  ]
  p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert p.returncode == 0, p.stderr[-3000:]
  done = journal.replay(tmp_path / "run" / loop.JOURNAL)
  notes = [o.info["strategy"] for o in done]
  assert json.loads((tmp_path / "run" / loop.SUMMARY).read_text())["n_evaluated"] == len(done) == 15
  assert [n.get("origin") for n in notes[:10]] == ["zc_warmup"] * 10
  # the warm-up's 1,000 cells are charged on the first proposal, the prescreened mutants after
  assert notes[0]["proxy_scored"] == 1000 and notes[0]["proxy_s"] == pytest.approx(10.0)
  assert sum(n.get("proxy_scored", 0) for n in notes) > 1000


@pytest.mark.slow
def test_the_nb201_table_reports_the_proxy_cost_beside_the_queries(params_csv, tmp_path):
  cmd = [
    sys.executable,
    "launch/nb201_table.py",
    f"--out={tmp_path}",
    f"--data={os.path.dirname(TABLE)}",
    "--datasets=cifar10",
    "--seeds=2",
    "--budget=12",
    "--configs=configs/random_nb201.py,configs/re_nb201.py:zc_warmup",
    f"--proxy_path={params_csv}",
    "--proxy_column=params",
    "--proxy_seconds=0.5",
  ]
  p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert p.returncode == 0, p.stderr[-3000:]
  out = json.loads((tmp_path / "regrets.json").read_text())
  assert out["proxy"] == {"random_nb201": [[0, 0.0]] * 2, "re_nb201-zc_warmup": [[1000, 500.0]] * 2}
  table = (tmp_path / "table.md").read_text()
  assert "| random | 2 | 12 |" in table and "| RE + zero-cost warm-up | 2 | 12 + 1000 (500 s) |" in table
  q = out["regrets"]["cifar10"]["re_nb201-zc_warmup"]["queries"]
  assert q["n"] == 2 and 0 <= q["reached"] <= 2


@pytest.mark.slow
@pytest.mark.parametrize(
  "variant, parts",
  [
    (VARIANTS[2], {"featurizer": "trunc_path+params", "optimizer": "mutation+prescreen", "surrogate": "ensemble"}),
    (VARIANTS[3], {"featurizer": "otmann", "optimizer": "ea+prescreen", "surrogate": "gp+prior_mean"}),
  ],
)
def test_the_model_based_proxy_presets_search_with_their_parts(variant, parts, params_csv, tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", variant))
  c.task.path, c.proxy.path, c.proxy.column, c.workdir = os.path.dirname(TABLE), params_csv, "params", str(tmp_path)
  done = config_lib.search_from_config(c, progress=False)
  notes = [o.info["strategy"] for o in done]
  assert len(done) == c.budget and [n["origin"] for n in notes[:10]] == ["zc_warmup"] * 10
  modelled = [n for n in notes if n["origin"] not in ("zc_warmup", "sample")]
  assert modelled and all({k: n[k] for k in parts} == parts for n in modelled)
