"""Multi-objective NAS on NAS-Bench-201 (issue #21): validation accuracy (max) against parameters
(min), 100 queries a run, every method of `configs/pareto_nb201.py` on CIFAR-10, CIFAR-100 and
ImageNet16-120. The score of a run is the hypervolume of its observations against a stated
reference point, the median cell's validation accuracy and the table's largest network (so the
score counts the better half of the accuracy range, where methods differ), divided by the
hypervolume of the table's true Pareto front (all 15,625 cells), so 1.0 is the whole front.
Random search, run in the same process, is the baseline of each ratio. A method written
`name@ref` is the EHVI method `name` told the benchmark's reference point (`ehvi_ref`): the
region that counts; plain EHVI places its reference 0.1 below the worst observed.

  taskset -c 0,1 python benchmarks/bench_multiobjective.py --data=../shared/data/nasbench201 \\
    --out=runs/bench_mo --seeds=20 --slow=nasbot,nasbot_ehvi --slow_seeds=3

Runs resume from OUT (each has its own workdir), so an interrupted benchmark continues.
"""

import os
import time

from absl import app, flags
import jax
import numpy as np

import record
from nas_jax.acquisition import pareto
from nas_jax.experiments import compare
from nas_jax.search import curves
from nas_jax.search.state import to_score
from nas_jax.tasks import tabular

FLAGS = flags.FLAGS
flags.DEFINE_string("data", "../shared/data/nasbench201", "The NB201 folder (or CSV).")
flags.DEFINE_string("out", "runs/bench_mo", "Output folder (runs resume from it).")
flags.DEFINE_list("methods", ["random", "nsga2", "bananas", "bananas_ehvi"], "Args of configs/pareto_nb201.py.")
flags.DEFINE_list("slow", [], "Methods run with --slow_seeds seeds (NASBOT: minutes a run).")
flags.DEFINE_list("datasets", list(tabular.DATASETS), "NB201 datasets.")
flags.DEFINE_integer("seeds", 20, "Seeds 0 .. seeds-1.", lower_bound=1)
flags.DEFINE_integer("slow_seeds", 3, "Seeds of the --slow methods.", lower_bound=1)
flags.DEFINE_integer("budget", 100, "Queries per run.", lower_bound=1)
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")


def table_front(path: str, dataset: str) -> tuple[dict, float]:
  """(the reference point {"value": the median validation accuracy, "params": the most
  parameters}, the hypervolume of the table's Pareto front against it) for one dataset."""
  table = tabular.load_nb201(path, dataset)
  ref = {"value": float(np.median(table.valid)), "params": float(table.params.max())}
  scores = np.stack([table.valid, to_score(table.params, "min")], axis=1)
  return ref, pareto.hypervolume(scores, np.array([ref["value"], -ref["params"]]))


def main(argv):
  del argv
  if FLAGS.smoke:
    record.require(FLAGS.data, "the NB201 tables")
    scratch = record.smoke(FLAGS, methods=["random+smoke", "nsga2+smoke"], slow=[], datasets=["cifar10"], seeds=1)
    FLAGS.budget, FLAGS.out = 12, os.path.join(scratch, "runs")
  jax.config.update("jax_enable_x64", True)  # the searches as launch/search.py runs them
  path = tabular.resolve(FLAGS.data)
  load0, t0 = os.getloadavg()[0], time.time()
  fronts = {d: table_front(path, d) for d in FLAGS.datasets}
  ratios: dict = {d: {} for d in FLAGS.datasets}
  fast = [m for m in FLAGS.methods if m not in FLAGS.slow]
  for method in fast + FLAGS.slow:  # every fast method on every dataset before the slow ones
    seeds = list(range(FLAGS.slow_seeds if method in FLAGS.slow else FLAGS.seeds))
    for dataset in FLAGS.datasets:
      ref, best = fronts[dataset]
      start = time.time()
      arg, told = method.split("@")[0], method.endswith("@ref")
      overrides = {"task.path": path, "task.dataset": dataset}
      if told:
        overrides["strategy_config.ehvi_ref"] = (ref["value"], ref["params"])
      results = compare.compare(
        [f"configs/pareto_nb201.py:{arg}"],
        seeds,
        FLAGS.budget,
        os.path.join(FLAGS.out, dataset, method),
        overrides=overrides,
        hv_ref=ref,
      )
      (hv,) = results["hypervolume"].values()
      r = ratios[dataset][method] = np.asarray(hv, np.float64)[:, -1] / best
      (mean,), (se,) = curves.mean_stderr(r[:, None])
      print(
        f"{dataset} {method}: hypervolume / front {mean:.4f} ± {se:.4f} over {len(r)} seeds"
        f" ({time.time() - start:.0f} s, load {os.getloadavg()[0]:.1f})",
        flush=True,
      )
  rows = {d: (fronts[d][0], ratios[d]) for d in FLAGS.datasets}
  print(f"\nreference points (median accuracy, most parameters): { {d: r for d, (r, _) in rows.items()} }")
  methods = FLAGS.methods + [m for m in FLAGS.slow if m not in FLAGS.methods]
  table = compare.method_table({d: r for d, (_, r) in rows.items()}, methods, digits=4)
  print("\n".join(table))
  print(
    f"\nload average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; {time.time() - t0:.0f} s in all"
  )
  record.write(
    "bench_multiobjective",
    f"NAS-Bench-201, validation accuracy against parameters: hypervolume / the true front's, {FLAGS.budget} queries",
    {"reference points": str({d: r for d, (r, _) in rows.items()}), "seconds in all": round(time.time() - t0)},
    [record.markdown_table(table, "mean ± standard error over seeds")],
    note="Hypervolume of the front found as a fraction of the true front's; in brackets its ratio to random search's.",
    direction="higher",
  )


if __name__ == "__main__":
  app.run(main)
