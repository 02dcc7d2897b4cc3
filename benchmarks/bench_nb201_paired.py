"""Paired NAS-Bench-201 comparison of two table runs of one config: per dataset, the test regret
at the budget of each seed run in both (`launch/nb201_table.py --out` folders), the paired
difference new - old, its mean and standard error, and issue #65's rule: the new runs pass when
the mean difference is no more than one standard error of the paired difference above zero
(`regret.paired_difference`).
Beside it, each side's mean ± s.e. of the regret, the median queries to the table's best
validation accuracy (how many runs reached it) and the median seconds a run spent fitting its
model.

Each side is one or more table folders (comma-separated), read as
OUT/<dataset>/<name>/<name>/seed<s>/journal.jsonl (`--new_name`: the new side's config, if it has
another name); a seed counts when both sides have its run with at least --budget evaluations, so
the script compares the finished seeds of runs still going.

  python benchmarks/bench_nb201_paired.py --old=runs/old_cifar10,runs/old_cifar100,runs/old_imagenet16 \\
    --new=runs/new [--name=nasbot_nb201] [--budget=150] [--data=../shared/data/nasbench201]
"""

import os
import sys

# Before jax, as a launch script: one BLAS thread and the persistent compilation cache.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch"))
import _env  # noqa: E402, F401

import glob  # noqa: E402
import re  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402

import record  # noqa: E402
from nas_jax.experiments import compare, regret  # noqa: E402
from nas_jax.search import journal, loop  # noqa: E402
from nas_jax.tasks import tabular  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("old", [], "Table --out folders of the baseline runs.")
flags.DEFINE_list("new", [], "Table --out folders of the runs compared with them.")
flags.DEFINE_string("name", "nasbot_nb201", "The config's run folder name (compare.run_name).")
flags.DEFINE_string("new_name", "", "The new side's run folder name; '': --name.")
flags.DEFINE_list("datasets", list(tabular.DATASETS), "Datasets to compare (those with paired seeds).")
flags.DEFINE_integer("budget", 150, "Queries at which the regret is read.", lower_bound=1)
flags.DEFINE_string("data", "../shared/data/nasbench201", "Folder of the NB201 table.")
flags.DEFINE_string("record", "bench_nb201_paired", "Record name ('' for none).")
flags.DEFINE_string("record_note", "", "A line the record keeps about how the runs were made (code, load).")
flags.DEFINE_boolean("smoke", False, "Two tiny tables (random search, regularised evolution) of two seeds, compared.")


def seed_runs(folders: list, dataset: str, name: str, budget: int) -> dict:
  """{seed: observations} of the runs with at least `budget` evaluations in the folders (the
  first folder that has a seed wins)."""
  runs = {}
  for folder in folders:
    for path in sorted(glob.glob(os.path.join(folder, dataset, name, name, "seed*", loop.JOURNAL))):
      seed = int(re.fullmatch(r"seed(\d+)", os.path.basename(os.path.dirname(path))).group(1))
      if seed not in runs:
        observations = journal.replay(path)
        if len(observations) >= budget:
          runs[seed] = observations
  return runs


def side(runs: list, table, budget: int) -> dict:
  """Per-seed regrets at the budget and the summaries of one side's runs (in seed order)."""
  curves = [compare.run_curves(obs, "max", budget) for obs in runs]
  regrets = np.array([table.best_test - test[-1] for _, test in curves])
  queries = regret.queries_to_optimum([best for best, _ in curves], table)
  fit = float(np.median([compare.model_seconds(obs[:budget])[0] for obs in runs]))
  mean, se = regret.mean_se(regrets)
  return {"regrets": regrets, "mean": mean, "se": se, "queries": queries, "fit_s": fit}


def _queries(q: dict) -> str:
  median = f"{q['median']:.0f}" if np.isfinite(q["median"]) else ">budget"
  return f"{median} ({q['reached']}/{q['n']})"


def _smoke_tables(scratch: str) -> tuple[list, list]:
  """Two tables of two seeds on CIFAR-10 at --budget, as nb201_table.py lays them out: random
  search (old) and regularised evolution (new), neither with a model to fit."""
  overrides = {"task.dataset": "cifar10", "task.path": FLAGS.data}
  for side_name, name in (("old", FLAGS.name), ("new", FLAGS.new_name)):
    spec = os.path.join(record.ROOT, "configs", f"{name}.py")
    compare.compare(
      [spec], [0, 1], FLAGS.budget, os.path.join(scratch, side_name, "cifar10", name), overrides=overrides
    )
  return [os.path.join(scratch, "old")], [os.path.join(scratch, "new")]


def main(argv):
  del argv
  jax.config.update("jax_enable_x64", True)  # the smoke's searches as launch/search.py runs them
  if FLAGS.smoke:
    record.require(os.path.join(FLAGS.data, tabular.NB201_FILE), "the NB201 table")
    scratch = record.smoke(FLAGS, budget=15, name="random_nb201", new_name="re_nb201", datasets=["cifar10"])
    FLAGS.old, FLAGS.new = _smoke_tables(scratch)
  if not FLAGS.old or not FLAGS.new:
    raise app.UsageError("--old and --new: give the table --out folders of both sides")
  figures, rows = {}, []
  for ds in FLAGS.datasets:
    old = seed_runs(FLAGS.old, ds, FLAGS.name, FLAGS.budget)
    new = seed_runs(FLAGS.new, ds, FLAGS.new_name or FLAGS.name, FLAGS.budget)
    seeds = sorted(set(old) & set(new))
    if not seeds:
      print(f"{ds}: no seed with {FLAGS.budget} evaluations on both sides (old {sorted(old)}, new {sorted(new)})")
      continue
    table = tabular.load_nb201(os.path.join(FLAGS.data, tabular.NB201_FILE), ds)
    a, b = (side([runs[s] for s in seeds], table, FLAGS.budget) for runs in (old, new))
    p = regret.paired_difference(a["regrets"], b["regrets"])
    verdict = "passes" if p["passes"] else "fails"
    print(
      f"{ds}: {p['n']} paired seeds; regret old {a['mean']:.3f} ± {a['se']:.3f}, new {b['mean']:.3f} ± {b['se']:.3f};"
      f" new - old {p['mean']:+.4f} ± {p['se']:.4f} ({p['wins']} better, {p['losses']} worse, {p['ties']} equal):"
      f" {verdict}; queries to the val. optimum old {_queries(a['queries'])}, new {_queries(b['queries'])};"
      f" fit s per run (median) old {a['fit_s']:.1f}, new {b['fit_s']:.1f}"
    )
    figures[f"{ds}: new - old regret (mean ± s.e.)"] = f"{p['mean']:+.4f} ± {p['se']:.4f}"
    figures[f"{ds}: rule"] = f"{verdict} ({p['n']} seeds)"
    rows.append(
      [ds, p["n"], f"{a['mean']:.3f} ± {a['se']:.3f}", f"{b['mean']:.3f} ± {b['se']:.3f}"]
      + [f"{p['mean']:+.4f} ± {p['se']:.4f}", f"{p['wins']}/{p['losses']}/{p['ties']}", verdict]
      + [_queries(a["queries"]), _queries(b["queries"]), f"{a['fit_s']:.1f}", f"{b['fit_s']:.1f}"]
    )
  if not rows:
    raise app.UsageError(f"no dataset of {FLAGS.datasets} has paired seeds of {FLAGS.name!r} in --old and --new")
  if FLAGS.record:
    columns = ["dataset", "seeds", "regret old", "regret new", "new - old", "better/worse/equal", "rule"]
    columns += ["queries old", "queries new", "fit s old", "fit s new"]
    note = (
      "Test regret after the budget (accuracy points), per seed run in both folders; new - old is the paired"
      " difference, mean ± standard error; the rule (issue #65) passes when that mean is at most one standard"
      " error. Queries: the median to the table's best validation accuracy (runs that reached it / runs). "
      + FLAGS.record_note
    ).strip()
    title = f"NAS-Bench-201 {FLAGS.name}, paired new - old test regret at {FLAGS.budget} queries"
    table = {"title": title, "columns": columns, "rows": rows}
    record.write(FLAGS.record, title, figures, [table], note=note, direction="lower")


if __name__ == "__main__":
  app.run(main)
