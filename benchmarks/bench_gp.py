"""GP hyper-parameter fitting: 16 random starts in one vmap vs a Python loop over the same starts;
with --fitters, the Adam fit against the L-BFGS fit (gp_lbfgs) at several sizes.

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_gp.py [--n=200] [--starts=16] [--repeats=5]
                 taskset -c 0,1 python benchmarks/bench_gp.py --fitters [--sizes=100,500] [--repeats=1]
All paths call the same jitted gp_fit.optimise (NASBOT kernel on OTMANN-shaped distances,
n_nu = 4) with the same starts and steps: all starts in one vmap; all starts in one program
but one after another (batch_size=1, lax.map); and one call per start in a Python loop (one
compile, reused). The script asserts that they reach the same likelihoods.

--fitters fits the NASBOT GP (project=True, as NASBOT fits it) on the same synthetic OTMANN-scaled
distances at each size by Adam with today's NASBOT settings (16 starts x 200 steps, and the 8 x 100
of the bo configs) and by L-BFGS from --lbfgs_starts starts, all from one key: seconds (compile
apart), the final log-likelihood, the ratios and the load average; it asserts that L-BFGS ends no
lower than the better Adam fit minus 1e-6 relative.
"""

import argparse
import functools
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
from nas_jax.surrogates import gp, gp_fit, gp_lbfgs, kernels  # noqa: E402

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


def compare_fitters(sizes: list, repeats: int, lbfgs_starts: int) -> None:
  """Adam (16 x 200, 8 x 100) against L-BFGS on the NASBOT GP at each size; prints and records."""
  box = gp_fit.Box.create(*kernels.NasbotKernel.bounds(len(NU_STR)))
  key = jax.random.key(0)
  fitters = {
    "adam 16x200": lambda p, y, m: gp_fit.fit_map(key, box, p, y, m, n_starts=16, steps=200, project=True).hypers,
    "adam 8x100": lambda p, y, m: gp_fit.fit_map(key, box, p, y, m, n_starts=8, steps=100, project=True).hypers,
    f"lbfgs {lbfgs_starts} starts": lambda p, y, m: (
      gp_lbfgs.fit_lbfgs(key, box, p, y, m, n_starts=lbfgs_starts, project=True)[0].hypers
    ),
  }
  lbfgs_name = list(fitters)[-1]
  print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()}")
  print(f"cpu affinity {len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()} at start")
  figures = {}
  for n in sizes:
    pair, y, mask = make_data(n)
    compile_s = {}
    for name, fit in fitters.items():  # the first call compiles (and runs once)
      t0 = time.perf_counter()
      jax.block_until_ready(fit(pair, y, mask))
      compile_s[name] = time.perf_counter() - t0
    median, hypers = timed({name: functools.partial(fit, pair, y, mask) for name, fit in fitters.items()}, repeats)
    lml = {name: float(gp.log_marginal_likelihood(h, pair, y, mask, project=True)) for name, h in hypers.items()}
    load = os.getloadavg()
    for name in fitters:
      print(
        f"C = {n:4d} {name:16s}: {median[name]:8.2f} s (first call with compile {compile_s[name]:.1f} s),"
        f" log-likelihood {lml[name]:.6f}"
      )
      figures[f"C={n}, {name} (s)"] = round(median[name], 3)
      figures[f"C={n}, {name}, log-likelihood"] = round(lml[name], 6)
    for name in list(fitters)[:-1]:
      ratio = median[name] / median[lbfgs_name]
      print(f"C = {n:4d} {name} / {lbfgs_name} = {ratio:.1f}x, LML difference {lml[lbfgs_name] - lml[name]:+.2e}")
      figures[f"C={n}, {name} / {lbfgs_name}"] = f"{ratio:.1f}x"
    print(f"C = {n:4d} load average {load}")
    figures[f"C={n}, load average"] = [round(v, 2) for v in load]
    best_adam = max(lml[name] for name in list(fitters)[:-1])
    assert lml[lbfgs_name] >= best_adam - 1e-6 * abs(best_adam), (lml, n)
  record.write("bench_gp_fitters", f"NASBOT GP fit, Adam vs L-BFGS, C = {sizes}", figures)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--n", type=int, default=200)
  parser.add_argument("--starts", type=int, default=16)
  parser.add_argument("--steps", type=int, default=100)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--fitters", action="store_true", help="Adam against L-BFGS instead")
  parser.add_argument("--sizes", default="100,500", help="--fitters: the sizes C")
  parser.add_argument("--lbfgs_starts", type=int, default=4, help="--fitters: L-BFGS starts")
  args = parser.parse_args()
  if args.fitters:
    compare_fitters([int(v) for v in args.sizes.split(",")], args.repeats, args.lbfgs_starts)
    return

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
