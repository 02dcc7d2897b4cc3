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

--nb201 fits NASBOT's GP on NAS-Bench-201 cells (OTMANN distances from the featurizer NASBOT
uses, CIFAR-10 validation accuracies): a history of --nb201_sizes cells, 10 drawn at random and
then, like a search that has found the good region, 60% from the best fifth of the table and the
rest at random; each prefix is padded to a power of two for Adam (the same fit, up to rounding,
as on the config's `fit_step`: docs/surrogates.md) and to the config's `fit_step` for L-BFGS.
Both fits are scored on the power-of-two padding. At each size and
for --seeds keys it fits by the paper's code's fit (Adam, 16 starts x 200 steps, gp_fit.fit_map,
configs/nasbot_nb201.py:fit16) and by the fitter of configs/nasbot_nb201.py:lbfgs (L-BFGS on the
closed-form gradient of gp_lml), from the same starts: seconds, final log-likelihoods, the ratio
of the times, the least gain in log-likelihood, how many Adam starts end below the
log-likelihood they started from, and the load. It asserts no loss over 0.01. It
also scores the config's schedule: the L-BFGS fit on the first m0 = n - n % refit_every cells,
kept until n, against the Adam fit at n (the default sizes are 6, 6 and 6 evaluations past a
full fit, the most the schedule allows at refit_every = 7). Beside them, the default fit of
configs/nasbot_nb201.py (4 Adam starts, one from the previous full fit's optimum, `bo`'s
chain_fits) against :fit16's 16 random starts, both on the config's `fit_step` padding, the chain
run up to the fit below n: seconds and log-likelihoods (`chained_nb201`).

  taskset -c 0,1 python benchmarks/bench_gp.py --nb201 [--nb201_sizes=62,125,146] [--seeds=3]
    [--path=../shared/data/nasbench201]
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
from nas_jax.arch.architecture import next_power_of_two  # noqa: E402
from nas_jax.features import featurizers, pairwise  # noqa: E402
from nas_jax.tasks import tabular  # noqa: E402
from nas_jax.wiring import config as search_config  # noqa: E402
from nas_jax.wiring import config_files  # noqa: E402
from nas_jax.surrogates import gp, gp_fit, gp_lbfgs, gp_lml, kernels  # noqa: E402

NASBOT_NB201 = os.path.join(record.ROOT, "configs", "nasbot_nb201.py")
FIT_NOTE = "Seconds per GP fit (lower is faster) and the log marginal likelihood each fit reaches (higher is better)."

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
  record.write(
    "bench_gp_fitters", f"NASBOT GP fit, Adam vs L-BFGS, C = {sizes}", figures, note=FIT_NOTE, direction="lower"
  )


def nb201_data(path: str, n: int, seed: int = 0):
  """The OTMANN pair (d, d_bar [n_nu, n, n]) and validation accuracies [n] of n NB201 cells: 10 at
  random, then 60% from the best fifth of the table and the rest at random (module docstring)."""
  config = config_files.load_config(NASBOT_NB201)
  config.task.path = path
  space, _, _ = search_config.build_search(config)
  table = tabular.load_nb201(path, "cifar10")
  rng = np.random.default_rng(seed)
  rows = len(table.arch_strs)
  best_fifth = np.argsort(-table.valid)[: rows // 5]
  chosen = [int(i) for i in rng.choice(rows, 10, replace=False)]
  while len(chosen) < n:
    i = int(rng.choice(best_fifth) if rng.uniform() < 0.6 else rng.integers(rows))
    if i not in chosen:
      chosen.append(i)
  points = [space.from_json({"arch_str": table.arch_strs[i], "kind": "nb201"}) for i in chosen]
  featurizer = featurizers.otmann()(space)
  pair, _ = featurizer.pairs(featurizer.extend(featurizer.init([]), points), points, [])
  return np.asarray(pair.d), np.asarray(pair.d_bar), table.valid[chosen]


def _padded_nb201(d, d_bar, valid, n: int, c: int) -> tuple:
  """(pair, y, mask) of the first n cells padded to c slots."""
  pad = ((0, 0), (0, c - n), (0, c - n))
  pair = pairwise.otmann_pair(np.pad(d[:, :n, :n], pad), np.pad(d_bar[:, :n, :n], pad))
  return pair, jnp.asarray(np.pad(valid[:n], (0, c - n))), jnp.arange(c) < n


def _fit_slots(n: int, step: int) -> int:
  """The slots a search fits n observations on with `fit_step` = step (`point_model.fit`)."""
  return min(next_power_of_two(n, 16), -(-n // step) * step)


def _adam_starts_below(fit: gp_fit.FitResult, key, box, pair, y, mask) -> int:
  """How many of the 16 starts of the Adam fit `fit` (gp_fit.fit_map from `key` on this data)
  end below the log-likelihood they started from."""
  starts = gp_fit.sample_box(key, box, 16)  # the starts fit_map draws from the key
  at_start = jax.vmap(lambda h: gp_lml.log_marginal_likelihood(h, pair, y, mask, project=True))(starts)
  return int(jnp.sum(fit.lml < at_start))


def chained_nb201(d, d_bar, valid, box, sizes: list, seeds: int) -> dict:
  """The chained fit of configs/nasbot_nb201.py:chain (n_starts Adam starts, one from the previous
  full fit's optimum: `bo`'s chain_fits) against its default (16 random starts), both as a search runs
  them (on the observations padded to a multiple of fit_step), at n = each size: the chain of full
  fits on the first k, 2k, ... cells (k = refit_every) is run up to the one below n, untimed, then
  the fit on n is timed (compile apart) and scored. Prints and returns the figures."""
  configs = {arg: config_files.load_config(f"{NASBOT_NB201}{arg}").strategy_config for arg in (":chain", "")}
  new, old = (c.surrogate_config for c in configs.values())
  every, step = configs[":chain"].refit_every, new.fit_step
  assert configs[":chain"].chain_fits and not configs[""].chain_fits, ":chain chains its fits, the default not"
  names = (f"chain: {new.n_starts} starts x {new.fit_steps}, chained", f"default: {old.n_starts} x {old.fit_steps}")
  figures = {}
  for n in sizes:
    data = _padded_nb201(d, d_bar, valid, n, _fit_slots(n, step))
    scored = _padded_nb201(d, d_bar, valid, n, next_power_of_two(n, 16))
    seconds, lml = {name: [] for name in names}, {name: [] for name in names}
    for seed in range(seeds):
      prev = None
      for m in range(every, n, every):  # the chain up to the fit below n (its first link is fresh)
        link = _padded_nb201(d, d_bar, valid, m, _fit_slots(m, step))
        key, fresh = jax.random.fold_in(jax.random.key(seed), m), new.n_starts - (prev is not None)
        fitted = gp_fit.fit_map(key, box, *link, n_starts=fresh, starts=prev, steps=new.fit_steps, project=True)
        prev = jax.tree.map(lambda x: x[None], fitted.hypers)
      key = jax.random.fold_in(jax.random.key(seed), n)
      fits = {
        names[0]: lambda: gp_fit.fit_map(
          key, box, *data, n_starts=new.n_starts - 1, starts=prev, steps=new.fit_steps, project=True
        ),
        names[1]: lambda: gp_fit.fit_map(key, box, *data, n_starts=old.n_starts, steps=old.fit_steps, project=True),
      }
      for name, fit in fits.items():
        jax.block_until_ready(fit())  # the first call compiles
        t0 = time.perf_counter()
        result = jax.block_until_ready(fit())
        seconds[name].append(time.perf_counter() - t0)
        lml[name].append(float(gp.log_marginal_likelihood(result.hypers, *scored, project=True)))
    load = os.getloadavg()
    for name in names:
      med = statistics.median(seconds[name])
      print(
        f"n = {n:3d} (fitted on {len(data[1])}) {name}: median {med:.2f} s, log-likelihood per seed"
        f" {np.round(lml[name], 3).tolist()}"
      )
      figures[f"n={n}, {name}, median (s)"] = round(med, 3)
      figures[f"n={n}, {name}, log-likelihoods"] = [round(v, 4) for v in lml[name]]
    ratio = statistics.median(seconds[names[1]]) / statistics.median(seconds[names[0]])
    print(f"n = {n:3d} default / chain = {ratio:.1f}x; load average {load}")
    figures[f"n={n}, default / chain"] = f"{ratio:.1f}x"
    figures[f"n={n}, chained fit, load average"] = [round(v, 2) for v in load]
  return figures


def compare_nb201(path: str, sizes: list, seeds: int) -> None:
  """The paper's Adam fit against NASBOT's L-BFGS fit on NB201 histories; prints and records."""
  box = gp_fit.Box.create(*kernels.NasbotKernel.bounds(len(NU_STR)))
  d, d_bar, valid = nb201_data(path, max(sizes))
  strategy_config = config_files.load_config(f"{NASBOT_NB201}:lbfgs").strategy_config
  surrogate_config, every = strategy_config.surrogate_config, strategy_config.refit_every
  options, step = surrogate_config.fitter_config.to_dict(), surrogate_config.fit_step
  fitters = {  # each returns a gp_fit.FitResult
    "adam 16x200": lambda k, p, y, m: gp_fit.fit_map(k, box, p, y, m, n_starts=16, steps=200, project=True),
    f"lbfgs {options['n_starts']} starts": lambda k, p, y, m: gp_lbfgs.fit_lbfgs(
      k, box, p, y, m, project=True, **options
    )[0],
  }
  print(f"L-BFGS options of configs/nasbot_nb201.py:lbfgs: {options}, on a multiple of {step} slots")
  adam_name, lbfgs_name = fitters
  print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()}")
  print(f"cpu affinity {len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()} at start")
  figures, least = {}, {}
  for n in sizes:
    c = next_power_of_two(n, 16)  # the search's capacity, where Adam fits; L-BFGS fits on fewer slots
    data = {
      adam_name: _padded_nb201(d, d_bar, valid, n, c),
      lbfgs_name: _padded_nb201(d, d_bar, valid, n, _fit_slots(n, step)),
    }
    seconds = {name: [] for name in fitters}
    lml = {name: [] for name in fitters}
    compile_s = {}
    # The config's schedule: at n observations, the hyper-parameters of the fit on the first m0.
    m0 = n - n % every
    kept_data = _padded_nb201(d, d_bar, valid, m0, _fit_slots(m0, step))
    kept, below = [], []
    for seed in range(seeds):
      key = jax.random.key(seed)
      hypers = fitters[lbfgs_name](key, *kept_data).hypers
      kept.append(float(gp.log_marginal_likelihood(hypers, *data[adam_name], project=True)))
      for name, fit in fitters.items():
        if name not in compile_s:  # the first call compiles (and runs once)
          t0 = time.perf_counter()
          jax.block_until_ready(fit(key, *data[name]))
          compile_s[name] = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = jax.block_until_ready(fit(key, *data[name]))
        seconds[name].append(time.perf_counter() - t0)
        lml[name].append(float(gp.log_marginal_likelihood(result.hypers, *data[adam_name], project=True)))
        if name == adam_name:
          below.append(_adam_starts_below(result, key, box, *data[adam_name]))
    load = os.getloadavg()
    ratio = statistics.median(seconds[adam_name]) / statistics.median(seconds[lbfgs_name])
    gain = np.asarray(lml[lbfgs_name]) - np.asarray(lml[adam_name])
    for name in fitters:
      med = statistics.median(seconds[name])
      print(
        f"n = {n:3d} (C = {c:3d}, fitted on {len(data[name][1])}) {name:16s}: median {med:7.2f} s (first call with compile"
        f" {compile_s[name]:.1f} s), log-likelihood per seed {np.round(lml[name], 3).tolist()}"
      )
      figures[f"n={n} (C={c}), {name}, median (s)"] = round(med, 3)
      figures[f"n={n} (C={c}), {name}, log-likelihoods"] = [round(v, 4) for v in lml[name]]
    print(
      f"n = {n:3d} {adam_name} / {lbfgs_name} = {ratio:.1f}x; log-likelihood gain of L-BFGS per seed"
      f" {np.round(gain, 3).tolist()} (min {gain.min():+.3f}); load average {load}"
    )
    figures[f"n={n} (C={c}), {adam_name} / {lbfgs_name}"] = f"{ratio:.1f}x"
    figures[f"n={n} (C={c}), least log-likelihood gain of L-BFGS"] = round(float(gain.min()), 4)
    kept_gain = np.asarray(kept) - np.asarray(lml[adam_name])
    print(
      f"n = {n:3d} the L-BFGS fit on the first {m0} (refit_every={every}, kept until n): log-likelihood at n"
      f" per seed {np.round(kept, 3).tolist()}, gain over Adam at n {np.round(kept_gain, 3).tolist()}"
    )
    figures[f"n={n} (C={c}), L-BFGS fit on the first {m0}, kept: log-likelihoods at n"] = [round(v, 4) for v in kept]
    figures[f"n={n} (C={c}), least log-likelihood gain of the kept fit over Adam at n"] = round(
      float(kept_gain.min()), 4
    )
    print(f"n = {n:3d} Adam starts (of 16) that end below their starting log-likelihood, per seed: {below}")
    figures[f"n={n} (C={c}), Adam starts ending below their start (of 16), per seed"] = below
    figures[f"n={n} (C={c}), load average"] = [round(v, 2) for v in load]
    least[n] = float(gain.min())
  figures.update(chained_nb201(d, d_bar, valid, box, sizes, seeds))
  title = f"NASBOT GP fit on NB201 cells, Adam vs L-BFGS, and :chain's chained fit, n = {sizes}"
  record.write("bench_gp_nb201", title, figures, note=FIT_NOTE, direction="lower")
  assert min(least.values()) >= -0.01, least


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--n", type=int, default=200)
  parser.add_argument("--starts", type=int, default=16)
  parser.add_argument("--steps", type=int, default=100)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--fitters", action="store_true", help="Adam against L-BFGS instead")
  parser.add_argument("--sizes", default="100,500", help="--fitters: the sizes C")
  parser.add_argument("--lbfgs_starts", type=int, default=4, help="--fitters: L-BFGS starts")
  parser.add_argument("--nb201", action="store_true", help="Adam against L-BFGS on NB201 cells instead")
  parser.add_argument("--nb201_sizes", default="62,125,146", help="--nb201: history sizes n")
  parser.add_argument("--seeds", type=int, default=3, help="--nb201: keys per size")
  parser.add_argument("--path", default="../shared/data/nasbench201", help="--nb201: the NB201 tables")
  parser.add_argument("--smoke", action="store_true", help="a run of seconds; its record goes to a temporary folder")
  args = parser.parse_args()
  if args.smoke:
    record.smoke(args, n=16, starts=2, steps=5, repeats=1)
  if args.nb201:
    compare_nb201(args.path, [int(v) for v in args.nb201_sizes.split(",")], args.seeds)
    return
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
  title = f"GP fit: {args.starts} starts x {args.steps} steps, n = {args.n}"
  record.write("bench_gp", title, figures, note="Seconds per GP fit.", direction="lower")


if __name__ == "__main__":
  main()
