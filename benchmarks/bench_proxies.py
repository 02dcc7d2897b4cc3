"""Zero-cost proxies of NAS-Bench-201 cells: the one-compile masked scorer against scoring each
cell's specialised network on its own (its own jit, as peers run one PyTorch model at a time), and
with --rho the Spearman rank correlation of each proxy with the table's accuracies.

Speed: --speed_cells cells drawn uniformly (seed 0), synflow in float64 on the --dataset network;
the masked scorer's compile is timed on its own, then its cells per second over all of them; the
baseline compiles and runs each specialised network (compile included, the cost of scoring an
unseen network that way; its second call is timed too). The two must agree to 1e-8.

Rho: --rho_cells cells drawn uniformly (0 = all 15,625), scored for each dataset by synflow,
params and flops; rho against `<ds>_valid_acc` (the paper's Table 1 uses final validation
accuracy: synflow 0.737 / 0.763 / 0.751) and the test accuracy.

  taskset -c 0,1 python benchmarks/bench_proxies.py [--speed_cells=8] [--rho] [--rho_cells=0]
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before jax: see launch/_env.py

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

FLAGS = flags.FLAGS
flags.DEFINE_integer("speed_cells", 8, "Cells in the speed comparison.", lower_bound=1)
flags.DEFINE_string("dataset", "cifar10", "The network of the speed comparison.")
flags.DEFINE_bool("rho", False, "Also score cells on the three datasets and report Spearman rho.")
flags.DEFINE_integer("rho_cells", 0, "Cells drawn uniformly for rho; 0 = all 15,625.", lower_bound=0)
flags.DEFINE_integer("batch_size", 16, "Cells per call of the scorer.", lower_bound=1)
flags.DEFINE_string("data", "../shared/data/nasbench201", "Folder of the NB201 table.")

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
    }
  )
  print(figures, flush=True)


def _rho(figures: dict) -> list:
  rows = []
  for ds in tabular.DATASETS:
    table = tabular.load_nb201(os.path.join(FLAGS.data, tabular.NB201_FILE), ds)
    n = len(table.arch_strs)
    idx = (
      np.arange(n)
      if FLAGS.rho_cells == 0
      else np.sort(np.random.default_rng(0).choice(n, FLAGS.rho_cells, replace=False))
    )
    ops = np.stack([np.asarray(parse_arch_str(table.arch_strs[i]).ops) for i in idx])
    scorer = Scorer(
      wiring.proxies_of(["synflow", "params", "flops"]), wiring.nb201_spec_of(ds), batch_size=FLAGS.batch_size
    )
    t = time.perf_counter()
    scores = scorer(ops, jax.random.key(0))
    figures[f"{ds}: {len(idx)} cells scored (s)"] = round(time.perf_counter() - t, 1)
    for name, s in scores.items():
      row = [ds, name, len(idx)]
      for acc in (table.valid[idx], table.test[idx]):
        row.append(round(float(stats.spearmanr(s, acc).statistic), 3))
      row.append(PUBLISHED[ds] if name == "synflow" else "")
      rows.append(row)
      print(row, flush=True)
  return rows


def main(argv):
  del argv
  figures = {"backend": jax.default_backend(), "device": str(jax.devices()[0])}
  _speed(figures)
  tables = []
  if FLAGS.rho:
    rows = _rho(figures)
    title = "Spearman rho of each proxy over the scored cells" + (
      "" if FLAGS.rho_cells == 0 else f" (a uniform sample of {FLAGS.rho_cells})"
    )
    tables.append(
      {
        "title": title,
        "columns": ["dataset", "proxy", "cells", "rho (valid)", "rho (test)", "published (valid)"],
        "rows": rows,
      }
    )
  figures["load average at the end (1, 5, 15 min)"] = [round(x, 2) for x in os.getloadavg()]
  record.write("bench_proxies", "Zero-cost proxies of NAS-Bench-201 cells: one compile for all cells", figures, tables)


if __name__ == "__main__":
  app.run(main)
