"""A study spread over local processes: the same study (2 methods x 20 seeds of 150 NAS-Bench-201
CIFAR-10 queries, one simulated worker, launch/study.py's runner) on a pool of 2 processes
against 1 process (in the calling process, one trial after another), each in a fresh workdir.
Target: 2 processes take <= 0.6x the time of 1.

  python benchmarks/bench_study.py [--methods=random,re] [--seeds=20] [--budget=150] \
    [--data=../shared/data/nasbench201]

The pool's time includes starting its processes (each imports jax and loads the table once). The
load average is printed and recorded: on a machine whose cores are busy with other work, two
processes cannot halve the time.
"""

import os
import tempfile
import time

# OpenBLAS's own threads fight XLA's thread pool on a 2-core machine; must precede imports.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from absl import app, flags  # noqa: E402
import jax  # noqa: E402
import ml_collections  # noqa: E402

import record  # noqa: E402
from nas_jax.experiments import study_runner  # noqa: E402
from nas_jax.wiring import config_files  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("methods", ["random", "re"], "Methods of configs/study_nb201.py.")
flags.DEFINE_integer("seeds", 20, "Seeds per method.", lower_bound=1)
flags.DEFINE_integer("budget", 150, "Queries per trial.", lower_bound=1)
flags.DEFINE_string(
  "data", os.path.join(os.path.dirname(record.ROOT), "shared", "data", "nasbench201"), "NB201 tables."
)
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")

TARGET = 0.6
STUDY = os.path.join(record.ROOT, "configs", "study_nb201.py")


def study_config(processes: int, workdir: str) -> ml_collections.ConfigDict:
  """configs/study_nb201.py cut to --methods x --seeds on CIFAR-10, one worker, `processes` at once."""
  c = config_files.load_config(STUDY)
  specs = {m: c.methods[m] for m in FLAGS.methods}
  c.methods = ml_collections.ConfigDict({m: os.path.join(record.ROOT, s) for m, s in specs.items()})
  c.datasets, c.workers, c.modes, c.model_time = "cifar10", "1", "async", "free"
  c.seeds, c.budget, c.report_hours = FLAGS.seeds, FLAGS.budget, ""
  c.task.path, c.processes, c.workdir = FLAGS.data, processes, workdir
  return c


def timed(processes: int) -> float:
  with tempfile.TemporaryDirectory(prefix="nas_jax_bench_study_") as workdir:
    t0 = time.perf_counter()
    results = study_runner.run_study(study_config(processes, workdir), progress=False)
    seconds = time.perf_counter() - t0
  ran = results["ran"]
  print(f"{processes} process{'es' if processes > 1 else ''}: {len(ran)} trials in {seconds:.1f} s", flush=True)
  return seconds


def main(argv):
  del argv
  if FLAGS.smoke:
    record.smoke(FLAGS, seeds=2, budget=10)
  if not os.path.exists(os.path.join(FLAGS.data, "nb201_200epochs.csv.gz")):
    record.skip(f"no NAS-Bench-201 table in {FLAGS.data}; make it with launch/nb201_data.py (docs/nb201_data.md)")
  jax.config.update("jax_enable_x64", True)
  unknown = sorted(set(FLAGS.methods) - set(config_files.load_config(STUDY).methods.keys()))
  if unknown:
    raise app.UsageError(f"--methods: {unknown} are not methods of configs/study_nb201.py")
  load_before = [round(x, 2) for x in os.getloadavg()]
  one, two = timed(1), timed(2)
  ratio = two / one
  load = [round(x, 2) for x in os.getloadavg()]
  trials = len(FLAGS.methods) * FLAGS.seeds
  print(
    f"study of {trials} trials ({', '.join(FLAGS.methods)} x {FLAGS.seeds} seeds, {FLAGS.budget} queries):"
    f" 1 process {one:.1f} s, 2 processes {two:.1f} s: {ratio:.2f}x (target <= {TARGET}x:"
    f" {'met' if ratio <= TARGET else 'MISSED'}); load {load_before} before, {load} after (1, 5, 15 min),"
    f" {os.cpu_count()} CPUs"
  )
  title = f"A study of {trials} NB201 trials on 2 local processes against 1"
  figures = {
    "1 process (s)": round(one, 1),
    "2 processes (s)": round(two, 1),
    "2 processes / 1": f"{ratio:.2f}x",
    "load before the run": ", ".join(map(str, load_before)),
  }
  note = (
    f"{', '.join(FLAGS.methods)} x {FLAGS.seeds} seeds of {FLAGS.budget} CIFAR-10 queries, one simulated worker;"
    f" the ratio divides the pool's seconds (its start included) by those of one process; target <= {TARGET}x."
    " Two processes need two idle cores: the load says how busy they were."
  )
  record.write("bench_study", title, figures, note=note, direction="lower")


if __name__ == "__main__":
  app.run(main)
