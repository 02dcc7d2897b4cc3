"""The NAS-Bench-201 table: every method on CIFAR-10, CIFAR-100 and ImageNet16-120 over seeds,
mean ± standard error of the test regret at the budget (spec bananas.md 11.2), both against the
best test accuracy and against the test accuracy of the best-validation cell.

  python launch/nb201_table.py --out=runs/nb201_table --seeds=20 --budget=150 \
    --slow=configs/nasbot_nb201.py --slow_seeds=10

Each (dataset, config, seed) run has its own workdir under OUT/<dataset>/, so rerunning resumes
and finished runs are replayed; OUT/table.md holds the table, OUT/regrets.json the numbers.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import _records
import json
import os

from absl import flags

from nas_jax.experiments import compare
from nas_jax.tasks import tabular

FLAGS = flags.FLAGS
METHODS = (
  "configs/random_nb201.py",
  "configs/re_nb201.py",
  "configs/ls_nb201.py",
  "configs/bananas_nb201.py",
  "configs/bananas_nb201.py:paper",
  "configs/gp_nb201.py",
  "configs/nasbot_nb201.py",
)
NAMES = {
  "random_nb201": "random",
  "re_nb201": "regularised evolution",
  "ls_nb201": "local search",
  "bananas_nb201": "BANANAS (code preset)",
  "bananas_nb201-paper": "BANANAS (paper preset)",
  "gp_nb201": "GP-BO (Hamming on path encodings)",
  "nasbot_nb201": "NASBOT (OTMANN GP + EI + EA)",
  "nasbot_nb201-warm": "NASBOT, warm GP refits (refit_every=10)",
}
flags.DEFINE_list("configs", list(METHODS), "Config specs, path.py[:arg].")
flags.DEFINE_list("datasets", list(tabular.DATASETS), "NB201 datasets.")
flags.DEFINE_integer("seeds", 20, "Seeds 0 .. seeds-1 for every config but --slow ones.", lower_bound=1)
flags.DEFINE_list("slow", [], "Configs run with --slow_seeds seeds (those whose trials take far longer, e.g. NASBOT).")
flags.DEFINE_integer("slow_seeds", 10, "Seeds for the --slow configs.", lower_bound=1)
flags.DEFINE_integer("budget", 150, "Queries per run.", lower_bound=1)
flags.DEFINE_string("data", "../shared/data/nasbench201", "Folder of nb201_200epochs.csv.gz.")
flags.DEFINE_string("out", None, "Output folder.")
flags.DEFINE_string("record", "", _records.DOC)


def main(argv):
  if len(argv) > 1:
    _cli.fail(f"unexpected arguments {argv[1:]}; every option is a --flag")
  bad = [d for d in FLAGS.datasets if d not in tabular.DATASETS]
  if bad:
    _cli.fail(f"--datasets: {bad} unknown; allowed: {', '.join(tabular.DATASETS)}")
  unknown_slow = [s for s in FLAGS.slow if s not in FLAGS.configs]
  if unknown_slow:
    _cli.fail(f"--slow: {unknown_slow} are not in --configs")
  if not os.path.isfile(os.path.join(FLAGS.data, tabular.NB201_FILE)):
    _cli.fail(f"--data: {FLAGS.data!r} has no {tabular.NB201_FILE}; point it at the NB201 table folder")
  regrets = {}
  for ds in FLAGS.datasets:
    table = tabular.load_nb201(os.path.join(FLAGS.data, tabular.NB201_FILE), ds)
    regrets[ds] = {}
    for spec in FLAGS.configs:
      seeds = range(FLAGS.slow_seeds if spec in FLAGS.slow else FLAGS.seeds)
      out = os.path.join(FLAGS.out, ds)
      results = compare.compare(
        [spec],
        list(seeds),
        FLAGS.budget,
        os.path.join(out, compare.run_name(spec)),
        overrides={"task.dataset": ds, "task.path": FLAGS.data},
      )
      name = compare.run_name(spec)
      regrets[ds][name] = tabular.regret_summary(results["test_runs"][name], table)
      r = regrets[ds][name]
      print(f"{ds} {name}: regret {r['regret'][0]:.3f} ± {r['regret'][1]:.3f} over {r['n']} seeds", flush=True)
  with open(os.path.join(FLAGS.out, "regrets.json"), "w") as f:
    json.dump({"budget": FLAGS.budget, "regrets": regrets}, f, indent=1)
  names = list(dict.fromkeys(n for ds in regrets.values() for n in ds))
  lines = [
    "| method | seeds | " + " | ".join(f"{ds} regret | {ds} regret (best-valid cell)" for ds in regrets) + " |",
    "|---|---|" + "---|---|" * len(regrets),
  ]
  for n in names:
    cells = [
      f"{regrets[ds][n]['regret'][0]:.3f} ± {regrets[ds][n]['regret'][1]:.3f} | "
      f"{regrets[ds][n]['regret_bv'][0]:.3f} ± {regrets[ds][n]['regret_bv'][1]:.3f}"
      for ds in regrets
    ]
    seeds = regrets[next(iter(regrets))][n]["n"]
    lines.append(f"| {NAMES.get(n, n)} | {seeds} | " + " | ".join(cells) + " |")
  with open(os.path.join(FLAGS.out, "table.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))
  if FLAGS.record:
    title = f"NAS-Bench-201 test regret after {FLAGS.budget} queries (lower is better)"
    _records.write_table(FLAGS.record, title, os.path.join(FLAGS.out, "table.md"), {"datasets": ", ".join(regrets)})


if __name__ == "__main__":
  flags.mark_flags_as_required(["out"])
  _cli.run(main)
