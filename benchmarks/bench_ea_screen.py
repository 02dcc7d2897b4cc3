"""How often NASBOT's EA screen drops the exact winner, on one NAS-Bench-201 search.

The default EA (`optimizers.ea(screen=k)`) evolves on EI computed from OTMANN's lower bounds and
scores only the k points that ranks best by EI itself. This script runs one search of
`configs/nasbot_nb201.py` (its default, screened) with the optimiser audited: at every model-based
proposal, every candidate the EA met is also scored by exact EI (what the paper's EA would have
scored it), and the round counts as lost for a k when the exact winner among them is not among
the screen's k best. The audit adds the exact LPs of every candidate, so its times are not the
search's. Prints, per k, the loss rate and the mean exact-EI shortfall of the k-screen's pick
(1 - EI(pick) / EI(winner)), and the rank correlation of the screen with exact EI.

  python benchmarks/bench_ea_screen.py [--budget=150] [--seed=0] [--dataset=cifar10]
    [--path=../shared/data/nasbench201]
"""

import os
import sys

# Before jax, as a launch script: one BLAS thread and the persistent compilation cache.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch"))
import _env  # noqa: E402, F401

import tempfile  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
from absl import app, flags  # noqa: E402
from scipy import stats  # noqa: E402

import record  # noqa: E402
from nas_jax.acquisition.acq_optimiser import scored  # noqa: E402
from nas_jax.acquisition.functions import ei  # noqa: E402
from nas_jax.acquisition.optimizers import ea  # noqa: E402
from nas_jax.features.featurizers import otmann  # noqa: E402
from nas_jax.search import loop  # noqa: E402
from nas_jax.search.strategies.bo import bo  # noqa: E402
from nas_jax.search.strategies.initial import random_design  # noqa: E402
from nas_jax.surrogates.point_model import gp  # noqa: E402
from nas_jax.wiring import config as search_config  # noqa: E402
from nas_jax.wiring import config_files  # noqa: E402

FLAGS = flags.FLAGS
KS = (1, 2, 4, 8, 16, 32, 64)
flags.DEFINE_integer("budget", 150, "Queries of the search.", lower_bound=11)
flags.DEFINE_integer("seed", 0, "Seed of the search.")
flags.DEFINE_enum("dataset", "cifar10", ["cifar10", "cifar100", "imagenet16"], "NB201 dataset.")
flags.DEFINE_string("path", "../shared/data/nasbench201", "The NB201 tables' folder.")
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")


def audited(optimiser, rounds: list):
  """`optimiser` whose every call also scores, by exact EI, each candidate its screen met, and
  appends (screen values, exact values) of those candidates not excluded to `rounds`."""

  def maximize(keys, score_fn, ctx, n):
    met, values = {}, {}

    def screen(cands):
      g = scored(ctx.screen_fn, cands)
      for c, v in zip(cands, g):
        met.setdefault(ctx.space.canonical_key(c), c)
        values[ctx.space.canonical_key(c)] = v
      return g

    out = optimiser.maximize(keys, score_fn, ctx._replace(screen_fn=screen), n)
    fresh = [k for k in met if k not in ctx.exclude and np.isfinite(values[k])]
    if fresh:
      exact = scored(score_fn, [met[k] for k in fresh])
      rounds.append((np.array([values[k] for k in fresh]), exact))
    return out

  return optimiser._replace(maximize=maximize)


def _strategy(config, space, goal: str, rounds: list):
  """The search of `config` (configs/nasbot_nb201.py) with its EA audited."""
  sc = config.strategy_config
  return bo(
    space,
    goal,
    featurizer=otmann(),
    surrogate=gp(**sc.surrogate_config),
    acquisition=ei(),
    optimiser=audited(ea(**sc.optimizer_config), rounds),
    initial=random_design(n=sc.n_init),
    refit_every=sc.refit_every,
  )


def summary(rounds: list, ks=KS) -> dict:
  """Per k, the share of rounds whose exact winner is not among the screen's k best, and the mean
  1 - EI(the k-screen's pick) / EI(winner) over rounds with a positive winner; the median
  Spearman correlation of screen and exact EI over rounds of >= 3 candidates."""
  ranks, shortfall = [], {k: [] for k in ks}
  rho = []
  for g, exact in rounds:
    order = np.argsort(-g, kind="stable")  # the screen's ranking, as `ea_maximize` keeps it
    best = int(np.argmax(exact))
    ranks.append(int(np.flatnonzero(order == best)[0]) + 1)
    for k in ks:
      pick = exact[order[:k]].max()
      if exact[best] > 0:
        shortfall[k].append(1.0 - pick / exact[best])
    if len(g) >= 3 and np.ptp(g) > 0 and np.ptp(exact) > 0:
      rho.append(stats.spearmanr(g, exact).correlation)
  ranks = np.array(ranks)
  return {
    "rounds": len(rounds),
    "loss": {k: float(np.mean(ranks > k)) for k in ks},
    "shortfall": {k: float(np.mean(v)) if v else 0.0 for k, v in shortfall.items()},
    "rho": float(np.median(rho)) if rho else float("nan"),
    "worst rank": int(ranks.max()) if len(ranks) else 0,
  }


def main(argv):
  del argv
  spec = os.path.join(record.ROOT, "configs", "nasbot_nb201.py")
  if FLAGS.smoke:
    record.require(FLAGS.path, "the NB201 tables")
    record.smoke(FLAGS, budget=14)
    spec += ":smoke"
  jax.config.update("jax_enable_x64", True)  # as launch/search.py
  load0 = os.getloadavg()[0]
  config = config_files.load_config(spec)
  config.budget, config.seed = FLAGS.budget, FLAGS.seed
  config.task.dataset, config.task.path = FLAGS.dataset, FLAGS.path
  screen_k = int(config.strategy_config.optimizer_config.screen)
  rounds = []
  space, task, _ = search_config.build_search(config)
  with tempfile.TemporaryDirectory() as tmp:
    config.workdir = tmp
    loop.run(
      _strategy(config, space, task.goal, rounds),
      task,
      search_config.make_executor(config),
      tmp,
      space=space,
      budget=config.budget,
      key=jax.random.key(config.seed),
      seed=config.seed,
      progress=False,
    )
  s = summary(rounds)
  load = os.getloadavg()[0]
  print(f"backend={jax.default_backend()} cpus={os.cpu_count()} load before={load0:.1f} after={load:.1f}")
  print(
    f"NB201 {FLAGS.dataset}, seed {FLAGS.seed}, {FLAGS.budget} queries, the search screened with k = {screen_k};"
    f" {s['rounds']} EA rounds audited; median Spearman(screen EI, exact EI) {s['rho']:.3f};"
    f" worst screen rank of an exact winner {s['worst rank']}"
  )
  print(f"{'k':>4s} {'loss rate':>10s} {'mean EI shortfall':>18s}")
  for k in KS:
    print(f"{k:4d} {s['loss'][k]:10.3f} {s['shortfall'][k]:18.4f}")
  figures = {
    "EA rounds audited": s["rounds"],
    f"loss rate at k = {screen_k} (the search's)": round(s["loss"].get(screen_k, float("nan")), 3),
    "median Spearman(screen EI, exact EI)": round(s["rho"], 3),
    "worst screen rank of an exact winner": s["worst rank"],
    "load before": round(load0, 2),
  }
  rows = [[str(k), f"{s['loss'][k]:.3f}", f"{s['shortfall'][k]:.4f}"] for k in KS]
  table = {"title": "", "columns": ["k", "loss rate", "mean EI shortfall"], "rows": rows}
  title = f"NASBOT's EA screen on one {FLAGS.budget}-query NAS-Bench-201 {FLAGS.dataset} search: rounds whose exact winner it drops"
  note = (
    "Loss rate: the share of the EA's rounds in which the candidate with the highest exact EI is not"
    " among the k the screen (EI on OTMANN lower bounds) ranks best; EI shortfall: 1 - EI(best of"
    " those k) / EI(exact winner), averaged over rounds. The search itself ran with the k named."
  )
  record.write("bench_ea_screen", title, figures, [table], note=note, direction="lower")


if __name__ == "__main__":
  app.run(main)
