"""The NAS-Bench-201 table: every method on CIFAR-10, CIFAR-100 and ImageNet16-120 over seeds,
mean ± standard error of the test regret at the budget (our harness's regret), both against the
best test accuracy and against the test accuracy of the best-validation cell, the median number
of queries to the best validation accuracy, what a zero-cost proxy cost beside the queries, and
the seconds a median run's strategy spent fitting its model and optimising the acquisition (over
all datasets' runs; the rest of a run is table look-ups and the journal).

  python launch/nb201_table.py --out=runs/nb201_table --seeds=20 --budget=150

Configs with a proxy (`:zc_*` variants, docs/proxies_search.md) read the CSV of --proxy_path
(`{dataset}` in it stands for each dataset), column --proxy_column, each score costing
--proxy_seconds; "proxy cells" is the mean number of distinct cells it scored per run.

Each (dataset, config, seed) run has its own workdir under OUT/<dataset>/, so rerunning resumes
and finished runs are replayed; OUT/table.md holds the table, OUT/regrets.json the numbers.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import _records
import json
import os

from absl import flags
import jax
import numpy as np

from nas_jax.experiments import compare, regret
from nas_jax.tasks import tabular
from nas_jax.wiring import config_files

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
  "nasbot_nb201-every1": "NASBOT, Adam fit at every evaluation",
  "nasbot_nb201-lbfgs": "NASBOT, L-BFGS fit every 7 evaluations",
  "nasbot_nb201-warm": "NASBOT, Adam fit every 10 with warm refits",
  "nasbot_nb201-chain": "NASBOT, chained fits (4 starts)",
  "nasbot_nb201-zc_warmup+zc_prescreen+zc_prior": "NASBOT + warm-up + prescreen + prior mean",
  "re_nb201-zc_warmup": "RE + zero-cost warm-up",
  "re_nb201-zc_prescreen": "RE + prescreened children",
  "re_nb201-zc_warmup+zc_prescreen": "RE + warm-up + prescreen",
  "bananas_nb201-zc_warmup": "BANANAS + zero-cost warm-up",
  "bananas_nb201-zc_prescreen": "BANANAS + prescreened mutants",
  "bananas_nb201-zc_feature": "BANANAS + proxy feature",
  "bananas_nb201-zc_warmup+zc_prescreen+zc_feature": "BANANAS + warm-up + prescreen + feature",
}
flags.DEFINE_list("configs", list(METHODS), "Config specs, path.py[:arg].")
flags.DEFINE_list("datasets", list(tabular.DATASETS), "NB201 datasets.")
flags.DEFINE_integer("seeds", 20, "Seeds 0 .. seeds-1 for every config but --slow ones.", lower_bound=1)
flags.DEFINE_list("slow", [], "Configs run with --slow_seeds seeds (those whose trials take far longer, e.g. NASBOT).")
flags.DEFINE_integer("slow_seeds", 10, "Seeds for the --slow configs.", lower_bound=1)
flags.DEFINE_integer("budget", 150, "Queries per run.", lower_bound=1)
flags.DEFINE_string("data", "../shared/data/nasbench201", "Folder of nb201_200epochs.csv.gz.")
flags.DEFINE_string("out", None, "Output folder.")
flags.DEFINE_string("proxy_path", "", "Proxy CSV of the configs with a proxy ({dataset}: each dataset); '': theirs.")
flags.DEFINE_string("proxy_column", "", "The proxy's column in --proxy_path; '': the configs' own.")
flags.DEFINE_float("proxy_seconds", None, "Seconds one proxy score costs; unset: the configs' own.")
flags.DEFINE_string("record", "", _records.DOC)
flags.DEFINE_string(
  "record_note", "", "A line the record keeps about how the runs were made (e.g. the load they shared)."
)


def _proxy_overrides(spec: str) -> dict:
  """The --proxy_* overrides for a config with a proxy section; {} for one without."""
  if "proxy" not in config_files.load_config(spec):
    return {}
  given = {
    "proxy.path": FLAGS.proxy_path,
    "proxy.column": FLAGS.proxy_column,
    "proxy.seconds_per_score": FLAGS.proxy_seconds,
  }
  return {k: v for k, v in given.items() if v not in ("", None)}


def _queries(q: dict, budget: int) -> str:
  """The median queries to the optimum, with how many runs reached it."""
  median = f"{q['median']:.0f}" if q["median"] != float("inf") else f">{budget}"
  return f"{median} ({q['reached']}/{q['n']})"


def main(argv):
  if len(argv) > 1:
    _cli.fail(f"unexpected arguments {argv[1:]}; every option is a --flag")
  jax.config.update("jax_enable_x64", True)  # each run as launch/search.py runs it (GP algebra in float64)
  bad = [d for d in FLAGS.datasets if d not in tabular.DATASETS]
  if bad:
    _cli.fail(f"--datasets: {bad} unknown; allowed: {', '.join(tabular.DATASETS)}")
  unknown_slow = [s for s in FLAGS.slow if s not in FLAGS.configs]
  if unknown_slow:
    _cli.fail(f"--slow: {unknown_slow} are not in --configs")
  if not os.path.isfile(os.path.join(FLAGS.data, tabular.NB201_FILE)):
    _cli.fail(f"--data: {FLAGS.data!r} has no {tabular.NB201_FILE}; point it at the NB201 table folder")
  regrets, proxy, model = {}, {}, {}
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
        overrides={"task.dataset": ds, "task.path": FLAGS.data, **_proxy_overrides(spec)},
      )
      name = compare.run_name(spec)
      regrets[ds][name] = regret.regret_summary(results["test_runs"][name], table)
      regrets[ds][name]["queries"] = regret.queries_to_optimum(results["runs"][name], table)
      proxy.setdefault(name, []).extend(results["proxy"][name])
      model.setdefault(name, []).extend(results["model_seconds"][name])
      r = regrets[ds][name]
      print(f"{ds} {name}: regret {r['regret'][0]:.3f} ± {r['regret'][1]:.3f} over {r['n']} seeds", flush=True)
  with open(os.path.join(FLAGS.out, "regrets.json"), "w") as f:
    json.dump({"budget": FLAGS.budget, "regrets": regrets, "proxy": proxy, "model_seconds": model}, f, indent=1)
  names = list(dict.fromkeys(n for ds in regrets.values() for n in ds))
  heads = (f"{ds} regret | {ds} regret (best-valid cell) | {ds} queries to val. optimum" for ds in regrets)
  lines = [
    "| method | seeds | queries + proxy cells (proxy s) | fit s + acquisition s (medians per run) | "
    + " | ".join(heads)
    + " |",
    "|---|---|---|---|" + "---|---|---|" * len(regrets),
  ]
  for n in names:
    cells = [
      f"{regrets[ds][n]['regret'][0]:.3f} ± {regrets[ds][n]['regret'][1]:.3f} | "
      f"{regrets[ds][n]['regret_bv'][0]:.3f} ± {regrets[ds][n]['regret_bv'][1]:.3f} | "
      f"{_queries(regrets[ds][n]['queries'], FLAGS.budget)}"
      for ds in regrets
    ]
    seeds = regrets[next(iter(regrets))][n]["n"]
    scored, secs = (sum(x) / len(proxy[n]) for x in zip(*proxy[n]))
    cost = f"{FLAGS.budget} + {scored:.0f} ({secs:.3g} s)" if scored else f"{FLAGS.budget}"
    fit, acquisition = np.median(model[n], axis=0)
    model_s = f"{fit:.0f} + {acquisition:.0f}" if fit + acquisition else "–"
    lines.append(f"| {NAMES.get(n, n)} | {seeds} | {cost} | {model_s} | " + " | ".join(cells) + " |")
  with open(os.path.join(FLAGS.out, "table.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines))
  if FLAGS.record:
    title = f"NAS-Bench-201 test regret after {FLAGS.budget} queries (lower is better)"
    if list(FLAGS.configs) != list(METHODS):  # a table of other methods than the default's says which
      title += ": " + ", ".join(NAMES.get(n, n) for n in names)
    figures = {"datasets": ", ".join(regrets)}
    if FLAGS.record_note:
      figures["runs"] = FLAGS.record_note
    if proxy and any(scored for runs in proxy.values() for scored, _ in runs):
      title += f", with the zero-cost proxy {FLAGS.proxy_column or '(of the configs)'}"
      figures["proxy"] = f"column {FLAGS.proxy_column or '(configs)'} of {FLAGS.proxy_path or '(configs)'}"
      figures["proxy seconds per score"] = "(configs)" if FLAGS.proxy_seconds is None else f"{FLAGS.proxy_seconds:g}"
    note = (
      "Test regret after the queries, in accuracy points: the space's best test accuracy minus the incumbent's"
      " (the cell with the best validation accuracy found); mean ± standard error over seeds. `(best-valid cell)`"
      " measures against the test accuracy of the cell with the best validation accuracy instead."
    )
    _records.write_table(
      FLAGS.record, title, os.path.join(FLAGS.out, "table.md"), figures, note=note, direction="lower"
    )


if __name__ == "__main__":
  flags.mark_flags_as_required(["out"])
  _cli.run(main)
