"""The simulated workers' own overhead (issue #64): one NAS-Bench-201 trial per method (BANANAS
and RE by default, 150 queries, 4 asynchronous simulated workers) through the search loop, with
the executor's bookkeeping timed: `submit` less the evaluation it runs inline, `wait`,
`start_clock` and `charge`. Prints that time as a fraction of the trial's wall time (target < 1%)
and the simulated hours each trial took, with the load.

  taskset -c 0,1 python benchmarks/bench_simulated.py [--budget=150] [--workers=4] [--methods=bananas,re]
    [--path=../shared/data/nasbench201] [--smoke]
"""

import os
import sys

# Before jax, as a launch script: one BLAS thread and the persistent compilation cache.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch"))
import _env  # noqa: E402, F401

import tempfile  # noqa: E402
import time  # noqa: E402

from absl import app, flags  # noqa: E402
import jax  # noqa: E402

import record  # noqa: E402
from nas_jax.search import loop  # noqa: E402
from nas_jax.search.simulated_executor import SimulatedExecutor  # noqa: E402
from nas_jax.wiring import config as search_config  # noqa: E402
from nas_jax.wiring import config_files  # noqa: E402

FLAGS = flags.FLAGS
CONFIGS = os.path.join(record.ROOT, "configs")
TARGET = 0.01  # the simulator's share of a trial's wall time (issue #64)
flags.DEFINE_integer("budget", 150, "Queries per trial.", lower_bound=11)
flags.DEFINE_integer("workers", 4, "Simulated workers.", lower_bound=1)
flags.DEFINE_list("methods", ["bananas", "re"], "NB201 configs (configs/<method>_nb201.py) to time.")
flags.DEFINE_integer("seed", 0, "Seed of every trial.")
flags.DEFINE_string("path", "../shared/data/nasbench201", "The NB201 tables' folder.")
flags.DEFINE_bool("smoke", False, "A run of seconds (RE, 12 queries) whose record goes to a temporary folder.")


class _Timed(SimulatedExecutor):
  """The simulated executor with its own seconds counted (the inline evaluations left out)."""

  own = 0.0

  def _time(self, method, *args):
    t0 = time.perf_counter()
    out = method(*args)
    self.own += time.perf_counter() - t0
    return out

  def start_clock(self, done, task_name):
    self._time(super().start_clock, done, task_name)

  def charge(self, seconds):
    self._time(super().charge, seconds)

  def submit(self, fn, *args):
    ticket = self._time(super().submit, fn, *args)
    self.own -= self._pending[-1].outcome.seconds  # the evaluation, run inline, is the task's time
    return ticket

  def wait(self, timeout=None):
    return self._time(super().wait, timeout)


def _trial(method: str, workdir: str) -> dict:
  config = config_files.load_config(os.path.join(CONFIGS, f"{method}_nb201.py"))
  config.workdir, config.budget, config.seed, config.task.path = workdir, FLAGS.budget, FLAGS.seed, FLAGS.path
  config.executor, config.num_workers = "simulated", FLAGS.workers
  search_config.check_search_config(config)
  space, task, strategy = search_config.build_search(config)
  executor = _Timed(FLAGS.workers)
  t0 = time.perf_counter()
  key = jax.random.key(FLAGS.seed)
  done = loop.run(
    strategy, task, executor, workdir, space=space, budget=config.budget, key=key, seed=FLAGS.seed, progress=False
  )
  wall = time.perf_counter() - t0
  assert len(done) == FLAGS.budget, len(done)
  return {"wall": wall, "own": executor.own, "hours": max(o.sim_finished_at for o in done) / 3600}


def main(argv):
  del argv
  if FLAGS.smoke:
    record.smoke(FLAGS, budget=12, methods=["re"])
  if not os.path.isdir(FLAGS.path):
    record.skip(f"no NAS-Bench-201 tables in {FLAGS.path!r} (--path)")
  jax.config.update("jax_enable_x64", True)  # as launch/search.py
  load0 = os.getloadavg()[0]
  with tempfile.TemporaryDirectory() as tmp:
    trials = {m: _trial(m, os.path.join(tmp, m)) for m in FLAGS.methods}
  load = os.getloadavg()[0]
  print(
    f"backend={jax.default_backend()} jax={jax.__version__} cpus={os.cpu_count()}"
    f" affinity={len(os.sched_getaffinity(0))} load before={load0:.1f} after={load:.1f}"
  )
  print(f"NB201 cifar10, seed {FLAGS.seed}, {FLAGS.budget} queries on {FLAGS.workers} asynchronous simulated workers")
  figures, worst = {}, 0.0
  for m, t in trials.items():
    share = t["own"] / t["wall"]
    worst = max(worst, share)
    print(
      f"{m}: trial {t['wall']:.2f} s, simulator {t['own'] * 1e3:.1f} ms ({100 * share:.3f}%),"
      f" {t['hours']:.1f} simulated hours"
    )
    figures[f"{m} trial (s)"] = round(t["wall"], 2)
    figures[f"{m} simulator (ms)"] = round(t["own"] * 1e3, 2)
    figures[f"{m} simulator share (%)"] = round(100 * share, 3)
    figures[f"{m} simulated hours"] = round(t["hours"], 2)
  verdict = f"target < {100 * TARGET:g}%: {'met' if worst < TARGET else 'missed'}"
  print(f"largest simulator share {100 * worst:.3f}% ({verdict})")
  figures.update({"target": verdict, "load before the trials": round(load0, 2)})
  title = f"The simulated workers' own time in a {FLAGS.budget}-query NAS-Bench-201 trial ({FLAGS.workers} workers)"
  note = (
    "Seconds the simulated executor spends on its clock (submit less the inline table look-up, wait,"
    " start_clock, charge) as a share of the whole trial's wall time through the search loop."
  )
  record.write(f"bench_simulated{record.backend_suffix()}", title, figures, note=note, direction="lower")


if __name__ == "__main__":
  app.run(main)
