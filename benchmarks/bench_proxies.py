"""Zero-cost proxies of NAS-Bench-201 cells: the one-compile masked scorer against scoring each
cell's specialised network on its own (its own jit, as peers run one PyTorch model at a time), and
with --rho the Spearman rank correlation of each proxy with the table's accuracies.

Speed: --speed_cells cells drawn uniformly (seed 0), in float64 on the --dataset network. The
masked scorer's compile is timed on its own, then its cells per second over all of them, for
synflow (reverse mode, one cell at a time) and synflow_signed (one JVP, --signed_width cells
vmapped); the baseline compiles and runs each specialised network's synflow (compile included, the
cost of scoring an unseen network that way; its second call is timed too). Masked and specialised
synflow must agree to 1e-8. Then synflow and synflow_signed of --agree_cells cells: their largest
relative difference and their Spearman rho.

Rho: for each dataset, the scores of every proxy in --scores (a CSV of launch/proxies.py, with
`{dataset}` in the path; its command goes in --scores_command for the record), or else of
--rho_cells cells drawn uniformly (0 = all 15,625) scored here by synflow_signed, params and flops;
rho against `<ds>_valid_acc` (the paper's Table 1 uses final validation accuracy: synflow 0.737 /
0.763 / 0.751) and the test accuracy.

  taskset -c 0,1 python benchmarks/bench_proxies.py [--speed_cells=16] [--rho] [--rho_cells=0]
      [--scores=runs/proxies/nb201_{dataset}.csv --scores_command="python launch/proxies.py ..."]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before jax: see launch/_env.py

import csv  # noqa: E402
import time  # noqa: E402

from absl import app, flags  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

import record  # noqa: E402
from nas_jax.arch.cell import parse_arch_str  # noqa: E402
from nas_jax.proxies.data_free import synflow  # noqa: E402
from nas_jax.proxies.nb201_nets import nb201_specialised_proxy_net  # noqa: E402
from nas_jax.proxies.scoring import Scorer, cell_codes  # noqa: E402
from nas_jax.tasks import tabular  # noqa: E402
from nas_jax.wiring import proxies as wiring  # noqa: E402
from nas_jax.wiring.proxy_sources import read_proxy_column  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer(
  "speed_cells", 16, "Cells in the speed comparison (best a multiple of --batch_size).", lower_bound=1
)
flags.DEFINE_string("dataset", "cifar10", "The network of the speed comparison.")
flags.DEFINE_bool("rho", False, "Also score cells on the three datasets and report Spearman rho.")
flags.DEFINE_integer("rho_cells", 0, "Cells drawn uniformly for rho; 0 = all 15,625.", lower_bound=0)
flags.DEFINE_integer("batch_size", 16, "Cells per call of the scorer.", lower_bound=1)
flags.DEFINE_integer("signed_width", 4, "Cells vmapped together by synflow_signed's scorer.", lower_bound=1)
flags.DEFINE_integer("agree_cells", 64, "Cells scored by both synflows to compare them.", lower_bound=2)
flags.DEFINE_string("scores", None, "A CSV of launch/proxies.py per dataset ({dataset} in the path) for rho.")
flags.DEFINE_string("scores_command", "", "The command that wrote --scores, for the record.")
flags.DEFINE_string("data", "../shared/data/nasbench201", "Folder of the NB201 table.")
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")

PUBLISHED = {"cifar10": 0.737, "cifar100": 0.763, "imagenet16": 0.751}


def _speed(figures: dict) -> None:
  spec = wiring.nb201_spec_of(FLAGS.dataset)
  ops = np.random.default_rng(0).integers(0, 5, (FLAGS.speed_cells, 6)).astype(np.int32)
  key = jax.random.key(0)
  scorer = Scorer(wiring.proxies_of(["synflow"]), spec, batch_size=FLAGS.batch_size)
  t = time.perf_counter()
  scorer(ops[:1], key)
  compile_s = time.perf_counter() - t
  t = time.perf_counter()
  masked = scorer(ops, key)["synflow"]
  masked_s = time.perf_counter() - t
  signed_scorer = Scorer(
    wiring.proxies_of(["synflow_signed"]), spec, batch_size=FLAGS.batch_size, width=FLAGS.signed_width
  )
  signed_scorer(ops[:1], key)
  t = time.perf_counter()
  signed_scorer(ops, key)
  signed_s = time.perf_counter() - t
  single, second = [], []
  with jax.enable_x64(True):
    t = time.perf_counter()
    for o, code in zip(ops, cell_codes(ops)):
      f = jax.jit(lambda k, cell=tuple(int(v) for v in o): synflow(nb201_specialised_proxy_net(cell, k, spec)))
      single.append(float(f(jax.random.fold_in(key, code))))
      t2 = time.perf_counter()
      jax.block_until_ready(f(jax.random.fold_in(key, code)))
      second.append(time.perf_counter() - t2)
    single_s = time.perf_counter() - t - sum(second)
  np.testing.assert_allclose(masked, single, rtol=1e-8)
  n = len(ops)
  figures.update(
    {
      f"cells in the speed comparison ({FLAGS.dataset})": n,
      "masked scorer: compile (s)": round(compile_s, 2),
      "masked scorer: compiles for all cells": scorer.compiles,
      "masked scorer: cells per second": round(n / masked_s, 3),
      "specialised one at a time, compile included: cells per second": round(n / single_s, 3),
      "specialised one at a time, compiled (second call): cells per second": round(n / sum(second), 3),
      "speed-up of the masked scorer over one at a time (compile included)": round(single_s / masked_s, 2),
      f"masked scorer, synflow_signed ({FLAGS.signed_width} cells vmapped): cells per second": round(n / signed_s, 3),
      "speed-up of synflow_signed over synflow, both masked": round(masked_s / signed_s, 2),
      "speed-up of masked synflow_signed over specialised synflow one at a time (compile included)": round(
        single_s / signed_s, 2
      ),
    }
  )
  print(figures, flush=True)
  ops = np.random.default_rng(1).integers(0, 5, (FLAGS.agree_cells, 6)).astype(np.int32)
  full, signed = scorer(ops, key)["synflow"], signed_scorer(ops, key)["synflow_signed"]
  flowing = full > 0
  figures.update(
    {
      f"synflow against synflow_signed ({FLAGS.agree_cells} cells, {flowing.sum()} with flow): largest relative"
      " difference": float(np.max(1 - signed[flowing] / full[flowing])),
      "synflow against synflow_signed: Spearman rho": round(float(stats.spearmanr(full, signed).statistic), 6),
    }
  )
  print(figures, flush=True)


def _scores(ds: str, table, figures: dict) -> tuple[np.ndarray, dict]:
  """(the table's rows, proxy name -> score per row) for `ds`: read from --scores, or scored here."""
  if FLAGS.scores:
    path = FLAGS.scores.replace("{dataset}", ds)
    with open(path, newline="") as f:
      names = [n for n in next(csv.reader(f)) if n != "arch_str"]
    columns = {n: read_proxy_column(path, n) for n in names}
    idx = np.array([i for i, a in enumerate(table.arch_strs) if a in columns[names[0]]])
    return idx, {n: np.array([c[table.arch_strs[i]] for i in idx]) for n, c in columns.items()}
  n = len(table.arch_strs)
  idx = (
    np.arange(n)
    if FLAGS.rho_cells == 0
    else np.sort(np.random.default_rng(0).choice(n, FLAGS.rho_cells, replace=False))
  )
  ops = np.stack([np.asarray(parse_arch_str(table.arch_strs[i]).ops) for i in idx])
  scorer = Scorer(
    wiring.proxies_of(["synflow_signed", "params", "flops"]),
    wiring.nb201_spec_of(ds),
    batch_size=FLAGS.batch_size,
    width=FLAGS.signed_width,
  )
  t = time.perf_counter()
  scores = scorer(ops, jax.random.key(0))
  figures[f"{ds}: {len(idx)} cells scored (s)"] = round(time.perf_counter() - t, 1)
  return idx, scores


def _rho(figures: dict) -> list:
  rows = []
  for ds in tabular.DATASETS:
    table = tabular.load_nb201(os.path.join(FLAGS.data, tabular.NB201_FILE), ds)
    idx, scores = _scores(ds, table, figures)
    for name, s in scores.items():
      row = [ds, name, len(idx)]
      for acc in (table.valid[idx], table.test[idx]):
        row.append(round(float(stats.spearmanr(s, acc).statistic), 3))
      row.append(PUBLISHED[ds] if name.startswith("synflow") else "")
      rows.append(row)
      print(row, flush=True)
  return rows


def main(argv):
  del argv
  if FLAGS.smoke:  # rho only where the table is
    rho = os.path.exists(FLAGS.data)
    record.smoke(FLAGS, speed_cells=2, batch_size=2, signed_width=2, agree_cells=2, rho=rho, rho_cells=4)
  figures = {"backend": jax.default_backend(), "device": str(jax.devices()[0])}
  _speed(figures)
  tables = []
  if FLAGS.rho:
    rows = _rho(figures)
    title = "Spearman rho of each proxy over the scored cells" + (
      "" if FLAGS.scores or FLAGS.rho_cells == 0 else f" (a uniform sample of {FLAGS.rho_cells})"
    )
    if FLAGS.scores:
      figures["rho: scores read from"] = FLAGS.scores
      figures["rho: scores written by"] = FLAGS.scores_command
    tables.append(
      {
        "title": title,
        "columns": ["dataset", "proxy", "cells", "rho (valid)", "rho (test)", "published (valid)"],
        "rows": rows,
      }
    )
  figures["load average at the end (1, 5, 15 min)"] = [round(x, 2) for x in os.getloadavg()]
  title = "Zero-cost proxies of NAS-Bench-201 cells: one compile for all cells"
  note = "Spearman rank correlation of each proxy's scores with the cells' accuracies, and cells scored per second."
  record.write("bench_proxies", title, figures, tables, note=note, direction="higher")


if __name__ == "__main__":
  app.run(main)
