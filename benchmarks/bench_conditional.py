"""Arc kernel and conditional BO: (a) the Gram matrix of n random conditional points, jitted vs a
numpy loop over pairs (the paper's formulas, Swersky et al. 2013 Sec. 2.2, written here); (b) one
conditional_bo proposal (GP fit plus acquisition optimisation) with 200 observed points, against a
target of 1 s; (c) the acquisition optimisers at an equal budget of acquisition evaluations:
gradient ascent on the continuous parameters vs mutation only, on a history of real digits results
when --trained names launch/kernel_quality.py's table.

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_conditional.py [--n=2000] [--history=200] \
  [--trained=runs/kernel_quality/trained.jsonl] [--parts=a,b,c]
Both paths of (a) get the same points and hyper-parameters; the script asserts that they agree
to 1e-9. (b) times propose(state, 1, []) from a state holding `--history` random points with
random values, split into the GP fit and the acquisition optimisation as the notes record them.
"""

import dataclasses
import json
import math
import os
import statistics
import time

# OpenBLAS's own threads fight XLA's thread pool on a 2-core machine; must precede imports.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from absl import app, flags  # noqa: E402
import jax  # noqa: E402

import numpy as np  # noqa: E402

import record  # noqa: E402
from nas_jax.arch import conditional_point as cond_point  # noqa: E402
from nas_jax.features import featurizers  # noqa: E402
from nas_jax.features.pairwise import ArcPair  # noqa: E402
from nas_jax.search.state import Observation, Status  # noqa: E402
from nas_jax.search.strategies.presets import conditional_bo  # noqa: E402
from nas_jax.spaces import conditional as cond  # noqa: E402
from nas_jax.surrogates.kernels import ArcKernel  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("n", 2000, "(a) Points of the Gram matrix.")
flags.DEFINE_integer("max_depth", 3, "Most hidden layers of the chain MLPs.")
flags.DEFINE_integer("history", 200, "(b) Observed points.")
flags.DEFINE_enum("kernel", "arc", ["arc", "poor_man"], "(b) The GP's kernel.")
flags.DEFINE_integer("repeats", 3, "Timed runs after a warm-up.")
flags.DEFINE_list("parts", ["a", "b", "c"], "Which parts to run.")
flags.DEFINE_string(
  "trained",
  "runs/kernel_quality/trained.jsonl",
  "(c) Trained points of launch/kernel_quality.py (digits, full data); random values when the file is absent.",
)
flags.DEFINE_integer("c_history", 100, "(c) Observed points.")
flags.DEFINE_integer("c_keys", 8, "(c) Proposals per optimiser (one per key).")
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")

TARGET_RATIO = 50.0
TARGET_PROPOSAL_S = 1.0


def loop_gram(u, active, variance, omega, rho) -> np.ndarray:
  """k(x, x') = variance exp(-d^2 / 2) per pair (Swersky et al. 2013, Sec. 2.2), d_i by cases, as a Python
  loop over pairs with numpy over parameters; the Gram matrix is symmetric, so j >= i only."""
  n = len(u)
  out = np.empty((n, n))
  for i in range(n):
    for j in range(i, n):
      both, one = active[i] & active[j], active[i] ^ active[j]
      angle = math.pi * rho * (u[i] - u[j])
      d2 = np.where(both, 2.0 * omega**2 * (1.0 - np.cos(angle)), np.where(one, omega**2, 0.0)).sum()
      out[i, j] = out[j, i] = variance * math.exp(-0.5 * d2)
  return out


def median_seconds(fn, repeats: int):
  """(median seconds over repeats after one warm-up call, last output)."""
  out = jax.block_until_ready(fn())
  times = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn())
    times.append(time.perf_counter() - t0)
  return statistics.median(times), out


def bench_gram(space, spec, n: int, repeats: int) -> dict:
  u, active = cond_point.to_unit(cond_point.stack_points(space.sample(jax.random.key(0), n)), spec)
  rng = np.random.default_rng(0)
  p = len(spec.names)
  variance, omega, rho = 1.3, rng.uniform(0.5, 3.0, p), rng.uniform(0.1, 1.0, p)
  kernel = ArcKernel.create(variance, omega, rho)
  pair = ArcPair(*(jax.numpy.asarray(x) for x in (u, active, u, active)))
  gram = jax.jit(lambda k, pr: k(pr))
  t_jax, k_jax = median_seconds(lambda: gram(kernel, pair), repeats)
  t_loop, k_loop = median_seconds(lambda: loop_gram(u, active, variance, omega, rho), max(1, repeats // 3))
  err = float(np.abs(np.asarray(k_jax) - k_loop).max())
  np.testing.assert_allclose(np.asarray(k_jax), k_loop, rtol=0, atol=1e-9)
  ratio = t_loop / t_jax
  print(
    f"(a) arc Gram of {n} points, P={p}: jit {t_jax * 1e3:.1f} ms, numpy pair loop {t_loop:.2f} s;"
    f" ratio {ratio:.0f}x (target >= {TARGET_RATIO:.0f}x: {'met' if ratio >= TARGET_RATIO else 'MISSED'});"
    f" max |difference| {err:.1e}"
  )
  return {
    "(a) arc Gram, jit (ms)": round(t_jax * 1e3, 1),
    "(a) numpy pair loop (s)": round(t_loop, 2),
    "(a) ratio": f"{ratio:.0f}x",
  }


def bench_proposal(space, n_history: int, kernel: str, repeats: int) -> dict:
  points = space.initial() + space.sample(jax.random.key(1), n_history - len(space.initial()))
  values = np.random.default_rng(1).uniform(0.02, 0.3, n_history)  # validation errors, goal "min"
  obs = [
    Observation(
      trial_id=i, arch_json=space.to_json(q), value=float(v), status=Status.OK, error="", seconds=1.0, worker="bench"
    )
    for i, (q, v) in enumerate(zip(points, values))
  ]
  strategy = conditional_bo(space, "min", featurizer=getattr(featurizers, kernel)())
  state = strategy.update(strategy.init(jax.random.key(0)), obs)
  runs = []
  for _ in range(repeats + 1):  # the first run compiles; the others repeat its work exactly
    t0 = time.perf_counter()
    proposed, (point,) = strategy.propose(state, 1, [])
    runs.append((time.perf_counter() - t0, strategy.notes(proposed, point)))
  runs = runs[1:]
  total = statistics.median(t for t, _ in runs)
  fit = statistics.median(notes["seconds"]["fit"] for _, notes in runs)
  acq = statistics.median(notes["seconds"]["acquisition"] for _, notes in runs)
  evals = runs[0][1]["n_acq_evals"]
  print(
    f"(b) one {kernel} proposal with {n_history} observed points: {total:.2f} s (fit {fit:.2f} s,"
    f" acquisition {acq:.2f} s, {evals} acquisition evaluations; target <= {TARGET_PROPOSAL_S:.0f} s:"
    f" {'met' if total <= TARGET_PROPOSAL_S else 'MISSED'}), median of {repeats} after a warm-up"
  )
  return {f"(b) one {kernel} proposal (s)": round(total, 2), "(b) of which fit (s)": round(fit, 2)}


def _history(space, n: int) -> list:
  """n observations: digits points of --trained with their validation errors, else random ones."""
  if os.path.exists(FLAGS.trained):
    rows = [json.loads(line) for line in open(FLAGS.trained)]
    rows = [r for r in rows if r["dataset"] == "digits" and not r["half"]][:n]
    pairs = [(space.from_json(r["point"]), r["val_error"]) for r in rows]
    source = f"{len(pairs)} digits points of {FLAGS.trained}"
  else:
    pairs = list(zip(space.sample(jax.random.key(1), n), np.random.default_rng(1).uniform(0.02, 0.3, n)))
    source = f"{n} random points with random values ({FLAGS.trained} is absent)"
  obs = [
    Observation(
      trial_id=i, arch_json=space.to_json(q), value=float(v), status=Status.OK, error="", seconds=1.0, worker="bench"
    )
    for i, (q, v) in enumerate(pairs)
  ]
  # The initial points as failed trials: observed (never proposed again) but not in the GP, so
  # that every timed call proposes through the acquisition.
  obs += [
    Observation(
      trial_id=len(obs) + i,
      arch_json=space.to_json(q),
      value=None,
      status=Status.FAILED,
      error="not trained (benchmark)",
      seconds=0.0,
      worker="bench",
    )
    for i, q in enumerate(space.initial())
  ]
  return obs, source


def bench_optimisers(space, repeats_keys: int) -> dict:
  obs, source = _history(space, FLAGS.c_history)
  reached = {}
  for optimizer in ("gradient", "mutation"):
    strategy = conditional_bo(space, "min", gradient=optimizer == "gradient")
    state = strategy.update(strategy.init(jax.random.key(0)), obs)
    reached[optimizer] = []
    for k in range(repeats_keys):
      proposed, (point,) = strategy.propose(dataclasses.replace(state, key=jax.random.key(k)), 1, [])
      notes = strategy.notes(proposed, point)
      reached[optimizer].append((notes["acquisition"], notes["n_acq_evals"]))
  g, m = (np.array([a for a, _ in reached[o]]) for o in ("gradient", "mutation"))
  evals = {o: reached[o][0][1] for o in reached}
  se = lambda x: np.std(x, ddof=1) / np.sqrt(len(x))
  print(
    f"(c) EI of the proposal, arc kernel, history of {source}, {repeats_keys} keys:"
    f" gradient {g.mean():.4g} ± {se(g):.2g} ({evals['gradient']} evaluations),"
    f" mutation only {m.mean():.4g} ± {se(m):.2g} ({evals['mutation']} evaluations);"
    f" gradient >= mutation for {int(np.sum(g >= m))} of {repeats_keys} keys"
  )
  return {
    "(c) EI reached, gradient": f"{g.mean():.4g} ± {se(g):.2g}",
    "(c) EI reached, mutation only": f"{m.mean():.4g} ± {se(m):.2g}",
  }


def main(argv):
  del argv
  if FLAGS.smoke:
    record.smoke(FLAGS, n=20, max_depth=1, history=8, repeats=1, c_history=8, c_keys=2, trained="")
  jax.config.update("jax_enable_x64", True)
  print(
    f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()};"
    f" {os.cpu_count()} cpus, affinity {len(os.sched_getaffinity(0))} cores,"
    f" OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}"
  )
  space = cond.conditional_space(max_depth=FLAGS.max_depth)
  spec = cond_point.conditional_spec(FLAGS.max_depth)
  figures = {}
  if "a" in FLAGS.parts:
    figures.update(bench_gram(space, spec, FLAGS.n, FLAGS.repeats))
  if "b" in FLAGS.parts:
    figures.update(bench_proposal(space, FLAGS.history, FLAGS.kernel, FLAGS.repeats))
  if "c" in FLAGS.parts:
    figures.update(bench_optimisers(space, FLAGS.c_keys))
  title = f"Arc kernel and conditional BO: Gram of {FLAGS.n} points, a proposal with {FLAGS.history} observed"
  note = "Seconds: (a) the Gram matrix, jitted and by a loop over pairs, (b) one proposal; (c) compares optimisers."
  record.write("bench_conditional", title, figures, note=note, direction="lower")


if __name__ == "__main__":
  app.run(main)
