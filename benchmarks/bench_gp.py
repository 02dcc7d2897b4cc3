"""GP hyper-parameter fitting: 16 random starts in one vmap vs a Python loop over the same starts.

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_gp.py [--n=200] [--starts=16] [--repeats=5]
All paths call the same jitted gp_fit.optimise (NASBOT kernel on OTMANN-shaped distances,
n_nu = 4) with the same starts and steps: all starts in one vmap; all starts in one program
but one after another (batch_size=1, lax.map); and one call per start in a Python loop (one
compile, reused). The script asserts that they reach the same likelihoods.
"""

import argparse
import os
import statistics
import time

# OpenBLAS's own threads fight XLA's thread pool on a 2-core machine and slow jax's float64
# LAPACK calls (a Cholesky) many times over; must precede imports.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import record  # noqa: E402
from nas_jax.features import pairwise  # noqa: E402
from nas_jax.surrogates import gp_fit, kernels  # noqa: E402

NU_STR = (0.1, 0.2, 0.4, 0.8)


def make_data(n: int, seed: int = 0):
  """Distances with OTMANN's scales (d in mass units ~1e3, d_bar in [0, 1]) from points in R^5,
  so both kernel terms are PSD, and a smooth noisy target."""
  rng = np.random.default_rng(seed)
  x = rng.uniform(0.0, 1.0, (n, 5))
  dist = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
  d = np.stack([2e3 * (1.0 + nu) * dist for nu in NU_STR])
  d_bar = np.stack([dist / (1.0 + nu) / np.sqrt(5.0) for nu in NU_STR])
  y = np.sin(3.0 * x[:, 0]) + x[:, 1] ** 2 + 0.1 * rng.normal(size=n)
  return pairwise.otmann_pair(d, d_bar), jnp.asarray(y), jnp.ones(n, bool)


def timed(paths: dict, repeats: int) -> tuple[dict, dict]:
  """Median wall time of each path; repeats are interleaved so that load from other processes
  falls on all paths alike. Returns ({name: seconds}, {name: last output})."""
  times, outs = {name: [] for name in paths}, {}
  for _ in range(repeats):
    for name, fn in paths.items():
      t0 = time.perf_counter()
      outs[name] = jax.block_until_ready(fn())
      times[name].append(time.perf_counter() - t0)
  return {name: statistics.median(t) for name, t in times.items()}, outs


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--n", type=int, default=200)
  parser.add_argument("--starts", type=int, default=16)
  parser.add_argument("--steps", type=int, default=100)
  parser.add_argument("--repeats", type=int, default=5)
  args = parser.parse_args()

  pair, y, mask = make_data(args.n)
  box = gp_fit.Box.create(*kernels.NasbotKernel.bounds(len(NU_STR)))
  starts = gp_fit.sample_box(jax.random.key(0), box, args.starts)

  def compile_optimise(starts_, batch_size=None):
    """Ahead-of-time compile, timed on its own; returns the executable and seconds."""
    t0 = time.perf_counter()
    exe = gp_fit.optimise.lower(starts_, box, pair, y, mask, steps=args.steps, batch_size=batch_size).compile()
    return exe, time.perf_counter() - t0

  one = jax.tree.map(lambda x: x[:1], starts)
  exe_vmap, compile_vmap = compile_optimise(starts)
  exe_map, compile_map = compile_optimise(starts, batch_size=1)
  exe_one, compile_one = compile_optimise(one)  # the loop compiles once and reuses it

  def looped():
    outs = [exe_one(jax.tree.map(lambda x: x[i : i + 1], starts), box, pair, y, mask) for i in range(args.starts)]
    return jnp.concatenate([lml for _, lml in outs])

  paths = {
    "vmap (16 at once)": lambda: exe_vmap(starts, box, pair, y, mask)[1],
    "lax.map (batch 1)": lambda: exe_map(starts, box, pair, y, mask)[1],
    "python loop": looped,
  }
  compile_s = dict(zip(paths, (compile_vmap, compile_map, compile_one)))
  for fn in paths.values():  # warm-up
    jax.block_until_ready(fn())
  median, outs = timed(paths, args.repeats)
  lml = {name: np.asarray(out) for name, out in outs.items()}
  for name in paths:
    np.testing.assert_allclose(lml[name], lml["python loop"], rtol=1e-6)
  best = float(np.nanmax(lml["python loop"]))

  print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()}")
  print(
    f"cpu affinity {len(os.sched_getaffinity(0))} cores,"
    f" OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}; n={args.n},"
    f" starts={args.starts}, steps={args.steps}, median of {args.repeats} after warm-up"
  )
  for name in paths:
    print(
      f"{name:18s}: {median[name]:7.3f} s ({args.starts * args.steps / median[name]:6.0f}"
      f" start-steps/s); compile {compile_s[name]:.2f} s"
    )
  loop = median["python loop"]
  print(
    f"ratio loop / vmap = {loop / median['vmap (16 at once)']:.2f}x,"
    f" loop / lax.map = {loop / median['lax.map (batch 1)']:.2f}x;"
    f" best log-likelihood {best:.6f} (all paths agree)"
  )
  figures = {f"{name}, median (s)": round(median[name], 3) for name in paths}
  figures |= {f"{name}, compile (s)": round(compile_s[name], 2) for name in paths}
  figures["loop / vmap"] = f"{loop / median['vmap (16 at once)']:.2f}x"
  record.write("bench_gp", f"GP fit: {args.starts} starts x {args.steps} steps, n = {args.n}", figures)


if __name__ == "__main__":
  main()
