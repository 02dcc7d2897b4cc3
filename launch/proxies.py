"""Zero-cost proxy scores of NAS-Bench-201 cells, written as a CSV: column `arch_str`, then one
column per proxy, one row per cell.

  python launch/proxies.py --space=nb201 --dataset=cifar10 --proxies=synflow,params,flops \
    --out=scores.csv [--cells=FILE] [--batch=FILE.npz] [--batch_size=64] [--width=1] [--seed=0] \
    [--chunk_batches=16]

Without --cells every one of the 15,625 cells is scored, in the order of their op codes (cell
number sum_e op_e * 5**e); --cells=FILE scores the cell strings of FILE, one a line, in its order.
--batch=FILE.npz holds `x` [B, H, W, 3] and `y` [B] int, the batch that data-dependent proxies
read. All cells are scored by one compiled program (see nas_jax/proxies/scoring.py).

--out and --cells are checked before any scoring. Rows go to OUT.partial a chunk at a time
(--chunk_batches batches, each appended with an fsync) and the finished table replaces OUT in one
rename, so OUT is never a cut file; rerun the same command after a kill or a full disk and it
keeps the rows of OUT.partial, scores the rest, and writes the table an uninterrupted run writes
(nas_jax/wiring/score_table.py).
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import hashlib
import itertools
import os
import time

from absl import flags
import jax
import numpy as np

from nas_jax.arch.cell import nb201_arch_str, nb201_cell, parse_arch_str
from nas_jax.proxies.scoring import Scorer
from nas_jax.wiring import proxies as proxies_wiring
from nas_jax.wiring import score_table

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
flags.DEFINE_integer(
  "chunk_batches", 16, "Batches scored between two appends to OUT.partial (what a kill loses).", lower_bound=1
)
flags.DEFINE_integer("seed", 0, "Seed of the networks' initialisation.")
flags.DEFINE_integer("channels", 16, "C, the first stage's width (the benchmark's: 16).", lower_bound=1)
flags.DEFINE_integer("cells_per_stage", 5, "N, cells per stage (the benchmark's: 5).", lower_bound=1)


def _check_out(path: str) -> None:
  """--out names a file in an existing, writable folder (checked before any scoring)."""
  folder = os.path.dirname(os.path.abspath(path))
  if os.path.isdir(path):
    raise ValueError(f"--out={path}: is a folder; expected the path of the CSV file to write")
  if not os.path.isdir(folder):
    raise ValueError(f"--out={path}: folder {folder} does not exist; create it first")
  if not os.access(folder, os.W_OK | os.X_OK):
    raise ValueError(f"--out={path}: folder {folder} is not writable")


def _cells(path: str | None) -> list:
  if path is None:
    return [nb201_cell(ops[::-1]) for ops in itertools.product(range(5), repeat=6)]
  with open(path, "rb") as f:
    raw = f.read().splitlines()
  cells, seen = [], {}
  for i, data in enumerate(raw, start=1):
    try:
      line = data.decode("utf-8").strip()
    except UnicodeDecodeError as e:
      raise ValueError(f"--cells={path}, line {i}: not UTF-8 text ({e.reason}); expected one arch_str a line") from None
    if not line:
      continue
    try:
      cell = parse_arch_str(line)
    except ValueError as e:
      raise ValueError(f"--cells={path}, line {i}: {e}") from None
    name = nb201_arch_str(cell)
    if name in seen:
      raise ValueError(f"--cells={path}, line {i}: cell {name} repeats line {seen[name]}; list each cell once")
    seen[name] = i
    cells.append(cell)
  if not cells:
    raise ValueError(f"--cells={path}: no cell strings; expected one arch_str a line")
  return cells


def _digest(batch) -> str | None:
  """sha256 of the batch's x and y (None without one): the partial file's record of the data."""
  if batch is None:
    return None
  h = hashlib.sha256()
  for a in batch:
    h.update(str((a.dtype.str, a.shape)).encode())
    h.update(np.ascontiguousarray(a).tobytes())
  return h.hexdigest()


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
  _check_out(FLAGS.out)
  cells = _cells(FLAGS.cells)
  scorer = Scorer(proxies, spec, batch_size=FLAGS.batch_size, width=FLAGS.width)
  ops, key = np.stack([np.asarray(c.ops) for c in cells]), jax.random.key(FLAGS.seed)

  def score(lo: int, hi: int) -> np.ndarray:
    got = scorer(ops[lo:hi], key, batch)
    return np.stack([got[n] for n in proxies], axis=1)

  # What fixes a cell's scores (width too: a vmapped group may round differently); not
  # batch_size or chunk_batches, which a rerun may change.
  settings = dict(
    space=FLAGS.space,
    dataset=FLAGS.dataset,
    proxies=list(proxies),
    seed=FLAGS.seed,
    channels=FLAGS.channels,
    cells_per_stage=FLAGS.cells_per_stage,
    width=FLAGS.width,
    batch_sha256=_digest(batch),
  )
  start = time.perf_counter()
  kept, scored = score_table.score_into(
    FLAGS.out,
    [nb201_arch_str(c) for c in cells],
    score,
    columns=list(proxies),
    settings=settings,
    chunk=FLAGS.chunk_batches * FLAGS.batch_size,
  )
  seconds = time.perf_counter() - start
  resumed = f"; {kept} kept from {FLAGS.out}{score_table.PARTIAL}" if kept else ""
  print(f"{scored} cells scored in {seconds:.1f} s ({scorer.compiles} compile(s)){resumed}; wrote {FLAGS.out}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["out"])
  _cli.run(main)
