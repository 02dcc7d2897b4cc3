"""Auto-Keras benchmarks (issue 11, item 8). Part (a): the edit-distance matrix of 200 networks.

  taskset -c 0,1 python benchmarks/bench_autokeras.py [--n=200] [--repeats=3]

(a) `edit_distances` (the layer DP as one lax.scan per pair, vmapped over pairs; the skip term by
scipy's assignment) against a per-pair pure-Python implementation written here the way the
authors' code does it (a Python DP over the width lists, scipy for the skips), on the same
random descriptors of the reference family (spec autokeras.md 1.4-1.5). Both must agree to
1e-9; pairs per second and the ratio are printed (target >= 20x on 2 CPU cores). Parts (b),
warm-start accuracy, and (c), seconds per proposal, need the morphism and the Auto-Keras
strategy, which are still to be built.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before jax: see launch/_env.py

import time  # noqa: E402

from absl import app, flags  # noqa: E402
import jax  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402

from nas_jax.features.edit_distance import descriptor, edit_distances  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("n", 200, "Networks; the matrix has n (n - 1) / 2 distinct pairs.")
flags.DEFINE_integer("repeats", 3, "Timed runs of each method; the best is reported.")
flags.DEFINE_integer("seed", 0, "Seed of the random descriptors.")

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


def main(argv):
  del argv
  jax.config.update("jax_enable_x64", True)
  nets = random_networks(FLAGS.n, FLAGS.seed)
  descs = [descriptor(c, d, s) for c, d, s in nets]
  pairs = FLAGS.n * (FLAGS.n - 1) // 2
  t0 = time.perf_counter()
  edit_distances(descs)
  first = time.perf_counter() - t0
  t_jax, d_jax = _best_of(lambda: edit_distances(descs), FLAGS.repeats)
  t_ref, d_ref = _best_of(lambda: per_pair(nets), FLAGS.repeats)
  np.testing.assert_allclose(d_jax, d_ref, rtol=1e-9, atol=1e-12)
  print(f"backend={jax.default_backend()} jax={jax.__version__} cpus={os.cpu_count()} "
        f"affinity={len(os.sched_getaffinity(0))}")
  print(f"(a) edit-distance matrix of {FLAGS.n} networks ({pairs} pairs), best of {FLAGS.repeats}:")
  print(f"    per-pair pure Python: {t_ref:.3f} s ({pairs / t_ref:,.0f} pairs/s)")
  print(f"    edit_distances:       {t_jax:.3f} s ({pairs / t_jax:,.0f} pairs/s); first call with"
        f" compilation {first:.2f} s")
  ratio = t_ref / t_jax
  print(f"    ratio {ratio:.1f}x (target >= 20x: {'met' if ratio >= 20 else 'missed'})")


if __name__ == "__main__":
  app.run(main)
