"""OTMANN distance matrices: per-pair baseline (as kirthevasank/nasbot) vs exact vs batched Sinkhorn.

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_otmann.py [--sizes=100,250,500,1000] [--repeats=5]
All three methods run in this process on the same 60 CNNs (the paper's 10 plus 50 random ones),
at the kernel's four nu_str values; the script asserts that they agree before printing ratios.
Then the exact solver on growing sets of random CNNs (--sizes, at --large_nu): seconds, pairs
per second, the growth against n^2 and the process's peak memory after each size (sizes run in
increasing order, so the peak belongs to the largest so far). --sinkhorn_large=N adds Sinkhorn
on an N x N matrix, cold and warm, --chunk_size pairs a batched call (slow on CPU: about 130
pairs/s per nu_str value; on a GPU a larger chunk fills the device). --authors_code=PATH times
the authors' own code (kirthevasank/nasbot, a Python 3 copy the user makes: `authors_nasbot.py`)
on the same 60 CNNs against the exact solver with their constants (params "nasbot_code"), and
asserts that both agree to 1e-6 relative before printing the ratio.
"""

import argparse
import os
import resource
import statistics
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import ot  # noqa: E402

import authors_nasbot  # noqa: E402
import record  # noqa: E402
from nas_jax.arch import graph, json_io, labels  # noqa: E402
from nas_jax.features import otmann, otmann_costs, otmann_solvers  # noqa: E402
from nas_jax.spaces import pools, random_arch  # noqa: E402
from nas_jax.wiring.names import OTMANN_SOLVERS, solver_of  # noqa: E402

NU = otmann.KERNEL_NU_STR
PARAMS = otmann_costs.OTMANN_PARAMS["paper"]


class _Net:
  """What the original code caches on each network: labels, masses and path lengths (host)."""

  def __init__(self, arch):
    obj = arch.to_json()
    table = labels.label_table("cnn")
    self.labels = np.array([table.names.index(l["label"]) for l in obj["layers"]])
    n = len(self.labels)
    adj = np.zeros((n, n), bool)
    for i, j in obj["edges"]:
      adj[i, j] = True
    order = graph.host_topological_order(adj)
    units = np.array([l.get("units", 0) for l in obj["layers"]])
    self.masses = json_io.host_masses("cnn", self.labels, units, adj, order, PARAMS.mass)
    groups = table.groups[:, self.labels]
    feats = []
    for g in range(groups.shape[0]):  # Algorithm 1 per group, in Python loops as the original
      for parents, walk in ((adj.T, order), (adj, order[::-1])):  # from ip over parents; to op over children
        sp, lp, rw = np.zeros(n), np.zeros(n), np.zeros(n)
        for u in walk:
          ps = np.flatnonzero(parents[u])
          if len(ps):
            w = float(groups[g, u])
            sp[u], lp[u], rw[u] = w + sp[ps].min(), w + lp[ps].max(), w + rw[ps].mean()
        feats += [sp, lp, rw]
    self.paths = np.stack(feats, 1)  # [n, K]


def baseline(nets, label_costs):
  """nn_comparators.OTMANNDistanceComputer: Python loops over pairs i < j, per pair a numpy
  cost matrix, per pair and nu one `ot.emd` on masses normalised to 1 (utils/oper_utils.py)."""
  n = len(nets)
  d = np.zeros((len(NU), n, n))
  for i in range(n):
    for j in range(i + 1, n):
      x, y = nets[i], nets[j]
      lmm = label_costs[np.ix_(x.labels, y.labels)]
      struct = np.abs(x.paths[:, None, :] - y.paths[None, :, :]).mean(-1)
      supply = np.append(x.masses, y.masses.sum())
      demand = np.append(y.masses, x.masses.sum())
      total = supply.sum()
      for k, nu in enumerate(NU):
        cost = np.ones((len(x.labels) + 1, len(y.labels) + 1))
        cost[:-1, :-1] = lmm + nu * struct
        cost[-1, -1] = 0.0
        plan = ot.emd(supply / total, demand / total, cost)
        d[k, i, j] = d[k, j, i] = total * np.sum(plan * cost)
  return d


def timed(fn, repeats):
  """Median wall time of `repeats` calls, and the last result."""
  times, out = [], None
  for _ in range(repeats):
    t = time.perf_counter()
    out = fn()
    times.append(time.perf_counter() - t)
  return statistics.median(times), out


def cold_then_timed(fn, repeats):
  """The first call's wall time (compiles included), then `timed(fn, repeats)`."""
  t = time.perf_counter()
  fn()
  return (time.perf_counter() - t, *timed(fn, repeats))


def lp_share(archs):
  """Seconds spent inside the network simplex during one exact run: the floor of that solver."""
  spent, solve = [0.0], otmann_solvers._solve_lps

  def clocked(*args):
    t = time.perf_counter()
    out = solve(*args)
    spent[0] += time.perf_counter() - t
    return out

  otmann_solvers._solve_lps = clocked
  try:
    otmann.otmann_distances(archs, nu_str=NU, params=PARAMS)
  finally:
    otmann_solvers._solve_lps = solve
  return spent[0]


def checked_peak_rss(r) -> float:
  """The process's peak RSS in MiB, after checking that a large matrix is finite and symmetric."""
  assert np.all(np.isfinite(r.d)) and np.array_equal(r.d, np.swapaxes(r.d, -1, -2))
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def against_authors(path, archs, repeats, figures):
  """The authors' per-pair code against the exact solver with their constants, on `archs`; adds
  the times and their ratio to `figures`."""
  neural_network, nn_comparators = authors_nasbot.load(path)
  nets = authors_nasbot.networks(neural_network, archs)
  t_theirs, (d, d_bar) = timed(lambda: authors_nasbot.distances(nn_comparators, nets, NU), 1)
  run = lambda: otmann.otmann_distances(archs, nu_str=NU, params="nasbot_code")
  run()
  t_ours, ours = timed(run, repeats)
  off = ~np.eye(len(archs), dtype=bool)
  errors = [(np.abs(np.asarray(a) - b)[:, off] / b[:, off]).max() for a, b in ((ours.d, d), (ours.d_bar, d_bar))]
  assert max(errors) <= 1e-6, f"exact vs the authors' code: max relative error {max(errors):.3g}"
  figures["the authors' code (s)"] = round(t_theirs, 3)
  figures["exact, their constants (s)"] = round(t_ours, 3)
  figures["speed-up"] = f"{t_theirs / t_ours:.1f}x"
  figures["max relative error against the authors' code"] = float(f"{max(errors):.2g}")
  print(
    f"authors' code (kirthevasank/nasbot, one call, per pair): {t_theirs:.2f} s; exact with params nasbot_code"
    f" {t_ours:.3f} s: {t_theirs / t_ours:.1f}x; max relative error d {errors[0]:.1e}, d_bar {errors[1]:.1e}"
    f" ({ours.d.dtype})"
  )


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--sizes", default="100,250,500,1000", help="set sizes of the exact growth run ('' skips it)")
  ap.add_argument("--large_nu", type=float, nargs="+", default=[0.5], help="nu_str values of the large matrices")
  ap.add_argument("--sinkhorn_large", type=int, default=0, help="size of a Sinkhorn matrix (0 skips it)")
  ap.add_argument("--chunk_size", type=int, default=256, help="pairs per batched call of the large Sinkhorn run")
  ap.add_argument("--repeats", type=int, default=5)
  ap.add_argument("--authors_code", default="", help="a Python 3 copy of kirthevasank/nasbot ('' skips it)")
  ap.add_argument("--random", type=int, default=50, help="random CNNs after the 10 pool ones")
  ap.add_argument("--smoke", action="store_true", help="a run of seconds; its record goes to a temporary folder")
  args = ap.parse_args()
  if args.smoke:
    record.smoke(args, random=2, sizes="", repeats=1)
  rng = np.random.default_rng(0)
  archs = pools.initial_pool("cnn") + [random_arch.random_architecture("cnn", rng) for _ in range(args.random)]
  n_pairs = len(archs) * (len(archs) - 1) // 2
  print(
    f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()}, pot {ot.__version__}, "
    f"cpu affinity {sorted(os.sched_getaffinity(0))}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r},"
    f" load average {os.getloadavg()[0]:.1f}"
  )
  sizes = [int(a.mask.sum()) for a in archs]
  print(f"{len(archs)} CNNs ({min(sizes)}-{max(sizes)} layers), {n_pairs} pairs x {len(NU)} nu_str values {NU}")

  m = otmann_costs.label_cost_matrix("cnn", PARAMS.label_costs)
  m = np.where(np.isinf(m), PARAMS.inf_cost, m)
  t_base, d_base = timed(lambda: baseline([_Net(a) for a in archs], m), args.repeats)
  results = {}
  for solver in OTMANN_SOLVERS:
    run = lambda: otmann.otmann_distances(archs, solver=solver_of(solver), nu_str=NU, params=PARAMS)
    first, t, r = cold_then_timed(run, args.repeats)
    results[solver] = (t, r, first)
  exact, sink = results["exact"][1], results["sinkhorn"][1]

  np.testing.assert_allclose(exact.d, d_base, rtol=1e-9, atol=1e-6)
  off = np.broadcast_to(~np.eye(len(archs), dtype=bool), exact.d.shape)
  rel = np.abs(sink.d - exact.d)[off] / exact.d[off]
  assert rel.max() <= 1e-2, f"sinkhorn vs exact: max relative error {rel.max():.3g}"
  assert np.all(sink.d >= exact.d * (1 - 1e-9)), "a rounded Sinkhorn plan is feasible, so d >= exact"
  print(
    f"agreement: exact == baseline (rtol 1e-9); sinkhorn vs exact max rel err {rel.max():.2e}, "
    f"median {np.median(rel):.2e}, never below exact"
  )
  print(f"{'method':30s} {'median s':>9s} {'pairs/s':>10s} {'vs baseline':>11s}")
  print(f"{'baseline (per pair, ot.emd)':30s} {t_base:9.3f} {n_pairs / t_base:10.0f} {1.0:10.2f}x")
  for solver, (t, _, first) in results.items():
    print(
      f"{solver:30s} {t:9.3f} {n_pairs / t:10.0f} {t_base / t:10.2f}x   (first call, with compilation: {first:.2f} s)"
    )
  simplex = lp_share(archs)
  print(f"network simplex alone inside one exact run: {simplex:.3f} s")
  figures = {
    "baseline, per pair (s)": round(t_base, 3),
    **{f"{solver} (s)": round(t, 3) for solver, (t, _, _) in results.items()},
    "exact against the baseline": f"{t_base / results['exact'][0]:.1f}x",
    "Sinkhorn's max relative error": float(f"{rel.max():.2g}"),
    "network simplex alone (s)": round(simplex, 3),
  }
  if args.authors_code:
    against_authors(args.authors_code, archs, args.repeats, figures)

  nu = args.large_nu[0] if len(args.large_nu) == 1 else args.large_nu
  sizes = sorted(int(s) for s in args.sizes.split(",") if s)
  pool = archs + [random_arch.random_architecture("cnn", rng) for _ in range(max(sizes + [0]) - len(archs))]
  first = None
  for n in sizes:
    run = lambda: otmann.otmann_distances(pool[:n], nu_str=nu, params=PARAMS)
    cold, t, r = cold_then_timed(run, 1)
    rss = checked_peak_rss(r)
    first = first or (n, t)
    growth = (t / first[1]) / (n / first[0]) ** 2
    figures[f"exact {n} x {n}, warm (s)"] = round(t, 2)
    figures[f"exact {n} x {n}, peak RSS (MiB)"] = round(rss)
    print(
      f"exact {n}x{n} ({n * (n - 1) // 2} pairs, nu_str {args.large_nu}): {t:.2f} s warm ({cold:.2f} s with"
      f" compiles), {n * (n - 1) / 2 / t:.0f} pairs/s, time / n^2 relative to n={first[0]}: {growth:.2f},"
      f" peak RSS {rss:.0f} MiB"
    )
  if args.sinkhorn_large:
    large = pool[: args.sinkhorn_large] + [
      random_arch.random_architecture("cnn", rng) for _ in range(args.sinkhorn_large - len(pool))
    ]
    n = len(large)
    run = lambda: otmann.otmann_distances(
      large, solver=solver_of("sinkhorn"), nu_str=nu, params=PARAMS, chunk_size=args.chunk_size
    )
    cold, t, r = cold_then_timed(run, 1)
    rss = checked_peak_rss(r)
    print(
      f"sinkhorn {n}x{n} ({n * (n - 1) // 2} pairs, nu_str {args.large_nu}, {args.chunk_size} pairs a call):"
      f" {t:.1f} s warm ({cold:.1f} s with compiles), {n * (n - 1) / 2 / t:.0f} pairs/s, peak RSS {rss:.0f} MiB"
    )
    figures[f"Sinkhorn {n} x {n}, pairs per second"] = round(n * (n - 1) / 2 / t)
  record.write(
    "bench_otmann" + ("_authors" if args.authors_code else "") + record.backend_suffix(),
    f"OTMANN distance matrices of {len(archs)} CNNs x {len(NU)} nu_str: per-pair baseline, exact, Sinkhorn",
    figures,
    note="The speed-up is the authors' code's time over ours; times are lower-better; the relative error is against"
    " the authors' distances (or Sinkhorn's against the exact LP)."
    if args.authors_code
    else "Seconds for the distance matrices; the relative error is Sinkhorn's against the exact LP.",
    direction="higher" if args.authors_code else "lower",
  )


if __name__ == "__main__":
  main()
