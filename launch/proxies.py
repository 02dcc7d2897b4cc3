"""Zero-cost proxy scores of NAS-Bench-201 cells, written as a CSV: column `arch_str`, then one
column per proxy, one row per cell.

  python launch/proxies.py --space=nb201 --dataset=cifar10 --proxies=synflow,params,flops \
    --out=scores.csv [--cells=FILE] [--batch=FILE.npz] [--batch_size=64] [--width=1] [--seed=0]

Without --cells every one of the 15,625 cells is scored, in the order of their op codes (cell
number sum_e op_e * 5**e); --cells=FILE scores the cell strings of FILE, one a line, in its order.
--batch=FILE.npz holds `x` [B, H, W, 3] and `y` [B] int, the batch that data-dependent proxies
read. All cells are scored by one compiled program (see nas_jax/proxies/scoring.py).
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import csv
import itertools
import time

from absl import flags
import jax
import numpy as np

from nas_jax.arch.cell import nb201_arch_str, nb201_cell, parse_arch_str
from nas_jax.proxies.scoring import Scorer
from nas_jax.wiring import proxies as proxies_wiring

FLAGS = flags.FLAGS
flags.DEFINE_enum("space", "nb201", ["nb201"], "The search space whose cells are scored.")
flags.DEFINE_string("dataset", "cifar10", f"One of {', '.join(proxies_wiring.NB201_DATASETS)}: classes and input size.")
flags.DEFINE_list("proxies", ["synflow", "params", "flops"], f"Proxies, from: {', '.join(proxies_wiring.PROXIES)}.")
flags.DEFINE_string("out", None, "Output CSV.")
flags.DEFINE_string("cells", None, "A file of cell strings, one a line; default: all cells.")
flags.DEFINE_string("batch", None, "An .npz with x [B, H, W, 3] and y [B] for data-dependent proxies.")
flags.DEFINE_integer("batch_size", 64, "Cells per call of the compiled program.", lower_bound=1)
flags.DEFINE_integer(
  "width", 1, "Cells vmapped side by side within a call (on a CPU: 1 for synflow, 4 for synflow_signed).", lower_bound=1
)
flags.DEFINE_integer("seed", 0, "Seed of the networks' initialisation.")
flags.DEFINE_integer("channels", 16, "C, the first stage's width (the benchmark's: 16).", lower_bound=1)
flags.DEFINE_integer("cells_per_stage", 5, "N, cells per stage (the benchmark's: 5).", lower_bound=1)


def _cells(path: str | None) -> list:
  if path is None:
    return [nb201_cell(ops[::-1]) for ops in itertools.product(range(5), repeat=6)]
  with open(path) as f:
    lines = [(i, line.strip()) for i, line in enumerate(f, start=1) if line.strip()]
  if not lines:
    raise ValueError(f"--cells={path}: no cell strings; expected one arch_str a line")
  cells = []
  for i, line in lines:
    try:
      cells.append(parse_arch_str(line))
    except ValueError as e:
      raise ValueError(f"--cells={path}, line {i}: {e}") from None
  return cells


def _batch(path: str | None, spec):
  if path is None:
    return None
  with np.load(path) as f:
    if "x" not in f or "y" not in f:
      raise ValueError(f"--batch={path}: has {sorted(f.files)}; expected arrays x and y")
    x, y = f["x"], f["y"]
  want = (spec.image_size, spec.image_size, 3)
  if x.ndim != 4 or x.shape[1:] != want or y.shape != x.shape[:1]:
    raise ValueError(f"--batch={path}: x {x.shape}, y {y.shape}; expected x [B, {', '.join(map(str, want))}], y [B]")
  return x.astype(np.float32), y.astype(np.int32)


def main(argv):
  if len(argv) > 1:
    _cli.fail(f"unexpected arguments {argv[1:]}; every option is a --flag")
  if FLAGS.batch_size % FLAGS.width:
    _cli.fail(f"--width={FLAGS.width}: must divide --batch_size={FLAGS.batch_size}")
  spec = proxies_wiring.nb201_spec_of(FLAGS.dataset, FLAGS.channels, FLAGS.cells_per_stage)
  proxies = proxies_wiring.proxies_of(FLAGS.proxies)
  batch = _batch(FLAGS.batch, spec)
  needs = [n for n, p in proxies.items() if p.needs_data]
  if needs and batch is None:
    _cli.fail(f"--proxies: {needs} read data; pass --batch=FILE.npz")
  cells = _cells(FLAGS.cells)
  scorer = Scorer(proxies, spec, batch_size=FLAGS.batch_size, width=FLAGS.width)
  start = time.perf_counter()
  scores = scorer(np.stack([np.asarray(c.ops) for c in cells]), jax.random.key(FLAGS.seed), batch)
  seconds = time.perf_counter() - start
  with open(FLAGS.out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["arch_str", *proxies])
    for i, c in enumerate(cells):
      w.writerow([nb201_arch_str(c), *(repr(float(scores[n][i])) for n in proxies)])
  print(f"{len(cells)} cells scored in {seconds:.1f} s ({scorer.compiles} compile(s)); wrote {FLAGS.out}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["out"])
  _cli.run(main)
