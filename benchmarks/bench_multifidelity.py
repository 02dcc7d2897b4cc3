"""Multi-fidelity NAS on NAS-Bench-201 (issue #20) at equal simulated time: every method of
`configs/multifidelity_nb201.py` on CIFAR-10, CIFAR-100 and ImageNet16-120. An evaluation costs
the table's training seconds (12 epochs: the 200-epoch run's, scaled by epochs); a run's clock is
the sum of its evaluations' costs, one after another (one worker). Each method is compared at T =
100 times the dataset's mean 200-epoch training time, by the test regret of its incumbent: the
best validation accuracy among its 200-epoch evaluations (a 12-epoch value is not comparable).
Random search, run in the same process, is the baseline of each ratio.

  taskset -c 0,1 python benchmarks/bench_multifidelity.py --data=../shared/data/nasbench201 \\
    --out=runs/bench_mf --seeds=20 --slow=asha_bananas,hyperband_bananas,bananas --slow_seeds=10

Runs resume from OUT (each has its own workdir), so an interrupted benchmark continues.
"""

import os
import time

from absl import app, flags
import jax
import numpy as np

import record
from nas_jax.experiments import compare
from nas_jax.search import curves
from nas_jax.tasks import tabular

FLAGS = flags.FLAGS
flags.DEFINE_string("data", "../shared/data/nasbench201", "The NB201 folder (or CSV).")
flags.DEFINE_string("out", "runs/bench_mf", "Output folder (runs resume from it).")
flags.DEFINE_list(
  "methods",
  ["random", "re", "ls", "asha_random", "sh_random", "hyperband_random", "asha_re"],
  "Args of configs/multifidelity_nb201.py.",
)
flags.DEFINE_list("slow", [], "Methods run with --slow_seeds seeds (model-based samplers: a minute or more a run).")
flags.DEFINE_list("datasets", list(tabular.DATASETS), "NB201 datasets.")
flags.DEFINE_integer("seeds", 20, "Seeds 0 .. seeds-1.", lower_bound=1)
flags.DEFINE_integer("slow_seeds", 10, "Seeds of the --slow methods.", lower_bound=1)
flags.DEFINE_float("full_trainings", 100.0, "T in average 200-epoch trainings of the dataset.", lower_bound=1.0)
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")


def main(argv):
  del argv
  if FLAGS.smoke:
    record.require(FLAGS.data, "the NB201 tables")
    scratch = record.smoke(FLAGS, methods=["random+smoke", "asha_random+smoke"], slow=[], datasets=["cifar10"], seeds=1)
    FLAGS.out = os.path.join(scratch, "runs")
  jax.config.update("jax_enable_x64", True)  # the searches as launch/search.py runs them
  path = tabular.resolve(FLAGS.data)
  load0, t0 = os.getloadavg()[0], time.time()
  regrets: dict = {d: {} for d in FLAGS.datasets}
  fast = [m for m in FLAGS.methods if m not in FLAGS.slow]
  for method in fast + FLAGS.slow:  # every fast method on every dataset before the slow ones
    seeds = list(range(FLAGS.slow_seeds if method in FLAGS.slow else FLAGS.seeds))
    for dataset in FLAGS.datasets:
      table = tabular.load_nb201(path, dataset)
      sim_time = FLAGS.full_trainings * float(table.train_seconds.mean())
      start = time.time()
      results = compare.compare(
        [f"configs/multifidelity_nb201.py:{method}"],
        seeds,
        None,  # each method's own budget (configs/multifidelity_nb201.py)
        os.path.join(FLAGS.out, dataset, method),
        overrides={"task.path": path, "task.dataset": dataset},
        sim_time=sim_time,
      )
      (name,) = results["runs"]
      test = np.asarray(compare.at_simulated_time(results, "test_runs")[name], np.float64)
      ends = np.array([s[-1] for s in results["sim_seconds"][name]], np.float64)
      short = int(np.sum(ends < sim_time))  # runs whose budget ended before T keep their last incumbent
      r = regrets[dataset][method] = table.best_test - test
      (mean,), (se,) = curves.mean_stderr(r[:, None])
      print(
        f"{dataset} {method}: regret at {sim_time:.0f} simulated s {mean:.3f} ± {se:.3f} over {len(r)} seeds"
        f"{f' ({short} ended before it)' if short else ''} ({time.time() - start:.0f} s, load {os.getloadavg()[0]:.1f})",
        flush=True,
      )
  table = compare.method_table(regrets, FLAGS.methods + [m for m in FLAGS.slow if m not in FLAGS.methods])
  print("\n".join(table))
  print(
    f"\nload average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; {time.time() - t0:.0f} s in all"
  )
  record.write(
    "bench_multifidelity",
    f"NAS-Bench-201 at equal simulated time ({FLAGS.full_trainings:g} average 200-epoch trainings): test regret",
    {"seconds in all": round(time.time() - t0), "load average at the start": round(load0, 2)},
    [record.markdown_table(table, "mean ± standard error over seeds (lower is better)")],
    note="Test regret of the incumbent at equal simulated time, mean ± standard error over seeds.",
    direction="lower",
  )


if __name__ == "__main__":
  app.run(main)
