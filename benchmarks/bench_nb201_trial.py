"""Wall time of one NAS-Bench-201 trial of NASBOT against one of BANANAS (issue #50): the same
seed, dataset and budget (150 queries by default), both through the search loop with their
configs (`configs/nasbot_nb201.py`, `configs/bananas_nb201.py`), one after the other in this
process. Prints NASBOT's time / BANANAS' time (target <= 3), where NASBOT's time went (the engine
times the GP fit and the EA of each proposal; the rest is the table look-ups, the journal and the
distances of each new evaluation to the earlier ones) and each trial's test regret.

Compiled programs come from the persistent compilation cache when an earlier run left them
(launch/_env.py); each trial's first model-based proposal, which compiles what the cache lacks,
is printed on its own.

  taskset -c 0,1 python benchmarks/bench_nb201_trial.py [--budget=150] [--seed=0] [--dataset=cifar10]
    [--nasbot=every1] [--path=../shared/data/nasbench201]
"""

import os
import sys

# Before jax, as a launch script: one BLAS thread and the persistent compilation cache.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch"))
import _env  # noqa: E402, F401

import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from absl import app, flags  # noqa: E402
import jax  # noqa: E402

import record  # noqa: E402
from nas_jax.search import loop  # noqa: E402
from nas_jax.wiring import config as search_config  # noqa: E402
from nas_jax.wiring import config_files  # noqa: E402

FLAGS = flags.FLAGS
CONFIGS = os.path.join(record.ROOT, "configs")
TARGET = 3.0  # NASBOT's trial time / BANANAS' (issue #50)
flags.DEFINE_integer("budget", 150, "Queries per trial.", lower_bound=11)
flags.DEFINE_integer("seed", 0, "Seed of both trials.")
flags.DEFINE_enum("dataset", "cifar10", ["cifar10", "cifar100", "imagenet16"], "NB201 dataset.")
flags.DEFINE_string(
  "nasbot", "", "Argument of configs/nasbot_nb201.py's get_config ('', 'screen', 'every1', 'lbfgs' or 'warm')."
)
flags.DEFINE_string("path", "../shared/data/nasbench201", "The NB201 tables' folder.")
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")


def _trial(config, workdir: str) -> dict:
  """Runs one search in workdir; its wall seconds, the engine's own seconds and the regret."""
  config.workdir, config.budget, config.seed = workdir, FLAGS.budget, FLAGS.seed
  config.task.dataset, config.task.path = FLAGS.dataset, FLAGS.path
  t0 = time.perf_counter()
  done = search_config.search_from_config(config, progress=False)
  wall = time.perf_counter() - t0
  seconds = [o.info["strategy"]["seconds"] for o in done if "seconds" in o.info.get("strategy", {})]
  with open(os.path.join(workdir, loop.SUMMARY)) as f:
    best = json.load(f)["best_trial_id"]
  (regret,) = [o.info["task"]["regret"] for o in done if o.trial_id == best]
  return {
    "wall": wall,
    "fit": sum(s["fit"] for s in seconds),
    "acquisition": sum(s["acquisition"] for s in seconds),
    "first": seconds[0]["fit"] + seconds[0]["acquisition"] if seconds else 0.0,
    "proposals": len(seconds),
    "regret": regret,
    "n": len(done),
  }


def main(argv):
  del argv
  if FLAGS.smoke:  # both configs' own smoke settings, over 12 queries
    record.require(FLAGS.path, "the NB201 tables")
    record.smoke(FLAGS, budget=12, nasbot="smoke")
  jax.config.update("jax_enable_x64", True)  # as launch/search.py
  load0 = os.getloadavg()[0]
  with tempfile.TemporaryDirectory() as tmp:
    nasbot_spec = os.path.join(CONFIGS, "nasbot_nb201.py") + (f":{FLAGS.nasbot}" if FLAGS.nasbot else "")
    nasbot_config = config_files.load_config(nasbot_spec)
    screen = int(nasbot_config.strategy_config.optimizer_config.get("screen", 0))
    nasbot = _trial(nasbot_config, os.path.join(tmp, "nasbot"))
    bananas_spec = os.path.join(CONFIGS, "bananas_nb201.py") + (":smoke" if FLAGS.smoke else "")
    bananas = _trial(config_files.load_config(bananas_spec), os.path.join(tmp, "bananas"))
  assert nasbot["n"] == bananas["n"] == FLAGS.budget, (nasbot["n"], bananas["n"])
  ratio = nasbot["wall"] / bananas["wall"]
  verdict = f"target <= {TARGET:g}: {'met' if ratio <= TARGET else 'missed'}"
  load = os.getloadavg()[0]
  print(
    f"backend={jax.default_backend()} jax={jax.__version__} cpus={os.cpu_count()}"
    f" affinity={len(os.sched_getaffinity(0))} load before={load0:.1f} after={load:.1f}"
  )
  print(
    f"NB201 {FLAGS.dataset}, seed {FLAGS.seed}, {FLAGS.budget} queries; NASBOT config {FLAGS.nasbot or 'default'}"
    f" (EA screen k = {screen or 'none, the paper'})"
  )
  n = nasbot
  print(
    f"NASBOT: {n['wall']:.1f} s (GP fits {n['fit']:.1f} s, EA {n['acquisition']:.1f} s over {n['proposals']}"
    f" proposals, of which the first {n['first']:.1f} s; the rest {n['wall'] - n['fit'] - n['acquisition']:.1f} s);"
    f" regret {n['regret']:.3f}"
  )
  print(f"BANANAS: {bananas['wall']:.1f} s; regret {bananas['regret']:.3f}")
  print(f"NASBOT / BANANAS: {ratio:.2f}x ({verdict})")
  name = f"bench_nb201_trial{record.backend_suffix()}"
  title = f"One {FLAGS.budget}-query NAS-Bench-201 {FLAGS.dataset} trial: NASBOT against BANANAS"
  figures = {
    "NASBOT trial (s)": round(n["wall"], 1),
    "of which GP fits (s)": round(n["fit"], 1),
    "of which EA (s)": round(n["acquisition"], 1),
    "of which the first model-based proposal, with compiles (s)": round(n["first"], 1),
    "BANANAS trial (s)": round(bananas["wall"], 1),
    "NASBOT / BANANAS": round(ratio, 2),
    "target": verdict,
    "NASBOT regret": round(n["regret"], 3),
    "BANANAS regret": round(bananas["regret"], 3),
    "NASBOT config": FLAGS.nasbot or "default",
    "NASBOT EA screen k (0: the paper's EA)": screen,
    "load before the trials": round(load0, 2),
  }
  note = "Wall time of one 150-query trial and its parts; the regrets are the CIFAR-10 test regret each trial reached."
  record.write(name, title, figures, note=note, direction="lower")


if __name__ == "__main__":
  app.run(main)
