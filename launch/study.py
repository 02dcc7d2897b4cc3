"""Runs, or resumes, a study: a grid of searches (method, dataset, seed, simulated workers, sync or
async, model time charged or not), each trial one unit of work on this machine's process pool or
a Ray cluster (docs/studies.md).

  python launch/study.py --config=configs/study_nb201.py:smoke --config.workdir=runs/study_smoke \\
    --config.task.path=../shared/data/nasbench201
  python launch/study.py --config=configs/study_nb201.py --config.workdir=runs/study_nb201 \\
    --config.ray_address=HEAD:6379 --record=study_nb201

Rerunning with the same --config.workdir skips finished trials and resumes the others from their
journals; `--stop_after_s=S` stops after S seconds with the results of the trials finished by then
(0: run nothing, rewrite the results). Results: WORKDIR/table.md, WORKDIR/curves_valid.png, WORKDIR/curves_test.png and
WORKDIR/results.json; `--record=NAME` also writes them as a benchmark record that
docs/results.md renders, curves included (`python benchmarks/render_results.py`, then
`python benchmarks/render_figures.py`).
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import _records
import os
import time

from absl import app, flags
import jax
from ml_collections import config_flags

from nas_jax.experiments import study_runner

FLAGS = flags.FLAGS
config_flags.DEFINE_config_file("config", None, "A study config (configs/study_nb201.py[:smoke]).", lock_config=True)
flags.DEFINE_bool("progress", True, "Show one progress bar over the trials.")
flags.DEFINE_float(
  "stop_after_s",
  None,
  "Stop after this many seconds: trials in flight are stopped (a rerun resumes them), and the table,"
  " curves and record hold the trials finished by then.",
  lower_bound=0.0,
)
flags.DEFINE_string("record", "", _records.DOC)
flags.DEFINE_string("record_note", "", "The record's note: what its figures mean, shown under them.")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)  # the searches' GP algebra in float64; workers copy it
  t0 = time.perf_counter()
  results = study_runner.run_study(FLAGS.config, progress=FLAGS.progress, stop_after_s=FLAGS.stop_after_s)
  seconds = time.perf_counter() - t0
  table = os.path.join(FLAGS.config.workdir, study_runner.TABLE)
  if FLAGS.record:
    _records.write_study(FLAGS.record, results, table, seconds, note=FLAGS.record_note)
  grid, ran = results["grid"], results["ran"]
  stopped = f", stopped after {FLAGS.stop_after_s:g} s (rerun to resume)" if results["stopped"] else ""
  print(
    f"study: {grid['finished']} of {grid['trials']} trials finished in {seconds:.0f} s ({len(ran)} run now, on"
    f" {len(set(ran.values()))} workers){stopped}; see {table}"
  )


if __name__ == "__main__":
  flags.mark_flags_as_required(["config"])
  _cli.run(main)
