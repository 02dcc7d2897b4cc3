"""Auto-Keras benchmarks (issue 11, item 8).

  taskset -c 0,1 python benchmarks/bench_autokeras.py [--parts=a,b,c] [--n=200] [--repeats=3]

(a) `edit_distances` (the layer DP and, for up to 4 skips a network, the skip term in jitted chunks
of pairs; more skips on the host) against a per-pair pure-Python implementation written here the way
the authors' code does it (a Python DP over the width lists, scipy for the skips), on the same
random descriptors of the reference family (the authors' code's family; descriptors of Auto-Keras
Sec. 3.1). Both must agree to 1e-9; pairs per second and the ratio are printed (target >= 20x on 2
CPU cores).

(b) warm start: a parent (G0 at --width) trained --parent_epochs epochs on digits; for each op
type, its child's validation accuracy after one epoch from the morphed weights, against the
parent's final accuracy (target: within 1 point) and against the same child after one epoch from
a random initialisation (the baseline). The parent trained one more epoch from its own weights
with a fresh Adam is printed too: the part of the gap that is the fresh optimizer, not the morph.

(c) seconds per proposal of the Auto-Keras strategy (edit kernel, tree search, code constants)
with --history evaluated networks (random morph chains of the space, scores drawn at random),
the median of --proposals proposals after a first one with compilation (target <= 1 s, issue 23).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before jax: see launch/_env.py

import dataclasses  # noqa: E402
import time  # noqa: E402

from absl import app, flags  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402

import record  # noqa: E402
from nas_jax.arch import main_chain  # noqa: E402
from nas_jax.features.edit_distance import descriptor, edit_distances  # noqa: E402
from nas_jax.search.state import Observation, Status  # noqa: E402
from nas_jax.search.strategies import presets  # noqa: E402
from nas_jax.arch import morphism  # noqa: E402
from nas_jax.spaces import morph_space  # noqa: E402
from nas_jax.models import morph_variables as morph  # noqa: E402
from nas_jax.training import datasets  # noqa: E402
from nas_jax.training import specialised as training  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("n", 200, "Networks; the matrix has n (n - 1) / 2 distinct pairs.")
flags.DEFINE_integer("repeats", 3, "Timed runs of each method; the best is reported.")
flags.DEFINE_integer("seed", 0, "Seed of the random descriptors, networks and training.")
flags.DEFINE_list("parts", ["a", "b", "c"], "Which parts to run.")
flags.DEFINE_integer("width", 64, "(b) Width of the parent G0.")
flags.DEFINE_integer("parent_epochs", 10, "(b) Epochs of the parent.")
flags.DEFINE_integer("history", 100, "(c) Evaluated networks.")
flags.DEFINE_integer("proposals", 5, "(c) Timed proposals after the first.")
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")

_WIDTHS = (16, 32, 64, 128, 256, 512)
_TYPES = ("add", "concat")


def random_networks(n: int, seed: int) -> list[tuple[list[int], list[int], list[tuple[int, int, str]]]]:
  """n (conv widths, dense widths with the classifier, skips) of 3-12 conv blocks, 0-2 hidden
  dense layers and 0-4 skips between conv blocks."""
  rng = np.random.default_rng(seed)
  nets = []
  for _ in range(n):
    conv = [int(w) for w in rng.choice(_WIDTHS, rng.integers(3, 13))]
    dense = [int(w) for w in rng.choice(_WIDTHS, rng.integers(0, 3))] + [10]
    skips = set()
    for _ in range(rng.integers(0, 5)):
      u, v = sorted(rng.choice(np.arange(1, len(conv) + 1), 2, replace=False))
      skips.add((int(u), int(v), _TYPES[rng.integers(2)]))
    nets.append((conv, dense, sorted(skips)))
  return nets


def _layers(a: list[int], b: list[int]) -> float:
  prev = list(range(len(b) + 1))
  for i, x in enumerate(a, 1):
    row = [i] + [0.0] * len(b)
    for j, y in enumerate(b, 1):
      row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + abs(x - y) / max(x, y))
    prev = row
  return prev[-1]


def _skip(s, t) -> float:
  if s[2] != t[2]:
    return 1.0
  return (abs(s[0] - t[0]) + abs((s[1] - s[0]) - (t[1] - t[0]))) / (max(s[0], t[0]) + max(s[1] - s[0], t[1] - t[0]))


def _skips(sa, sb) -> float:
  if not sa or not sb:
    return float(len(sa) + len(sb))
  cost = np.array([[_skip(s, t) for t in sb] for s in sa])
  rows, cols = linear_sum_assignment(cost)
  return float(cost[rows, cols].sum()) + abs(len(sa) - len(sb))


def per_pair(nets) -> np.ndarray:
  """The baseline: d = D_l(conv) + D_l(dense) + D_s for each pair i < j, mirrored."""
  d = np.zeros((len(nets), len(nets)))
  for i in range(len(nets)):
    for j in range(i + 1, len(nets)):
      (ca, da, sa), (cb, db, sb) = nets[i], nets[j]
      d[i, j] = d[j, i] = _layers(ca, cb) + _layers(da, db) + _skips(sa, sb)
  return d


def _best_of(fn, repeats: int) -> tuple[float, np.ndarray]:
  times, out = [], None
  for _ in range(repeats):
    t0 = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - t0)
  return min(times), out


def part_a():
  nets = random_networks(FLAGS.n, FLAGS.seed)
  descs = [descriptor(c, d, s) for c, d, s in nets]
  pairs = FLAGS.n * (FLAGS.n - 1) // 2
  t0 = time.perf_counter()
  edit_distances(descs)
  first = time.perf_counter() - t0
  t_jax, d_jax = _best_of(lambda: edit_distances(descs), FLAGS.repeats)
  t_ref, d_ref = _best_of(lambda: per_pair(nets), FLAGS.repeats)
  np.testing.assert_allclose(d_jax, d_ref, rtol=1e-9, atol=1e-12)
  print(f"(a) edit-distance matrix of {FLAGS.n} networks ({pairs} pairs), best of {FLAGS.repeats}:")
  print(f"    per-pair pure Python: {t_ref:.3f} s ({pairs / t_ref:,.0f} pairs/s)")
  print(
    f"    edit_distances:       {t_jax:.3f} s ({pairs / t_jax:,.0f} pairs/s); first call with compilation {first:.2f} s"
  )
  ratio = t_ref / t_jax
  print(f"    ratio {ratio:.1f}x (target >= 20x: {'met' if ratio >= 20 else 'missed'})")
  return {
    "(a) edit_distances (s)": round(t_jax, 3),
    "(a) per-pair Python DP (s)": round(t_ref, 3),
    "(a) speed-up": f"{ratio:.1f}x",
    "(a) target": f">= 20x: {'met' if ratio >= 20 else 'missed'}",
  }


def part_b():
  data = datasets.digits("autokeras", seed=0)
  g0 = morphism.initial_architectures(width=FLAGS.width)[0]
  key = jax.random.key(FLAGS.seed)
  one = training.TrainConfig(epochs=1, schedule="constant")
  parent = training.evaluate(g0, data, one._replace(epochs=FLAGS.parent_epochs), key, keep_variables=True)
  acc = lambda r: 1.0 - r.val_errors[0]
  # The parent itself trained one more epoch from its weights with a fresh Adam, as a child is:
  # what a fresh optimizer alone costs, morph or not.
  again = training.evaluate(g0, data, one, key, init_variables=parent.variables)
  print(
    f"(b) warm start on digits, parent G0 (width {FLAGS.width}) after {parent.epochs} epochs:"
    f" best validation accuracy {parent.val_accuracy:.4f}; one more epoch with a fresh Adam:"
    f" {acc(again):.4f}"
  )
  print(f"    {'op':<22} {'warm, 1 epoch':>14} {'- parent':>9} {'scratch, 1 epoch':>17}")
  figures = {"(b) parent's validation accuracy": round(parent.val_accuracy, 4)}
  convs = main_chain.chain_view(g0).convs
  for op in (
    morphism.Op("deep", convs[0], kernel=3),
    morphism.Op("wide", convs[0]),
    morphism.Op("add", convs[1], convs[0]),
    morphism.Op("concat", convs[1], convs[0]),
  ):
    child, init = morph.morph(g0, parent.variables, op, key, noise=True)
    warm = training.evaluate(child, data, one, key, init_variables=init)
    cold = training.evaluate(child, data, one, key)
    gap = 100 * (acc(warm) - parent.val_accuracy)
    print(
      f"    {str(op.to_json()):<22} {acc(warm):>14.4f} {gap:>+8.2f}p {acc(cold):>17.4f}"
      f"  {'within 1 point' if abs(gap) <= 1 else 'NOT within 1 point'}"
    )
    figures[f"(b) {op.type}: warm child, scratch child after 1 epoch"] = f"{acc(warm):.4f}, {acc(cold):.4f}"
  return figures


def part_c():
  space = morph_space.morph_space()
  points = space.sample(jax.random.key(FLAGS.seed), FLAGS.history)
  rng = np.random.default_rng(FLAGS.seed)
  obs = [
    Observation(
      trial_id=i,
      arch_json=space.to_json(p),
      value=float(rng.uniform(0.9, 0.99)),
      status=Status.OK,
      error="",
      seconds=1.0,
      worker="bench",
    )
    for i, p in enumerate(points)
  ]
  strategy = presets.autokeras(space, "max")
  state = strategy.update(strategy.init(jax.random.key(FLAGS.seed)), obs)
  times = []
  for i in range(FLAGS.proposals + 1):
    t0 = time.perf_counter()
    _, (point,) = strategy.propose(dataclasses.replace(state, key=jax.random.key(i)), 1, [])
    times.append(time.perf_counter() - t0)
  med = float(np.median(times[1:]))
  print(
    f"(c) one proposal with {FLAGS.history} evaluated networks: first (compiling) {times[0]:.2f} s,"
    f" median of {FLAGS.proposals} more {med:.2f} s (target <= 1 s: {'met' if med <= 1 else 'missed'});"
    f" last chose {len(point.ops)} ops from trial {point.parent_trial}"
  )
  return {
    "(c) one proposal, median (s)": round(med, 2),
    "(c) first proposal, compiling (s)": round(times[0], 2),
    "(c) target": f"<= 1 s: {'met' if med <= 1 else 'missed'}",
  }


def main(argv):
  del argv
  if FLAGS.smoke:
    record.smoke(FLAGS, n=12, repeats=1, width=8, parent_epochs=1, history=6, proposals=1)
  jax.config.update("jax_enable_x64", True)
  print(
    f"backend={jax.default_backend()} jax={jax.__version__} cpus={os.cpu_count()} "
    f"affinity={len(os.sched_getaffinity(0))}"
  )
  figures = {}
  for part, fn in (("a", part_a), ("b", part_b), ("c", part_c)):
    if part in FLAGS.parts:
      figures.update(fn())
  title = f"Auto-Keras: ({') ('.join(FLAGS.parts)}) of edit distances ({FLAGS.n} networks), warm starts, proposals"
  note = (
    "(a) The speed-up is a per-pair Python dynamic programme's time over `edit_distances`' for the same"
    " matrix; times are lower-better."
  )
  record.write("bench_autokeras", title, figures, note=note, direction="higher")


if __name__ == "__main__":
  app.run(main)
