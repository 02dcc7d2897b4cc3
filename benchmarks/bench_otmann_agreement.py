"""OTMANN against the authors' code (kirthevasank/nasbot) on four network families, at 7 nu_str.

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_otmann_agreement.py --authors_code=PATH [--count=60]
PATH is a Python 3 copy of the authors' repository (`authors_nasbot.py` says how to make one).
Families: the 60 CNNs of `bench_otmann.py` (the paper's 10 and 50 random ones); CNNs made by
chains of the authors' own modifiers from their example CNNs; nas_jax's MLP pool and random MLPs;
MLPs made by the authors' modifiers from their example regression MLPs (several linear layers,
skip edges, every activation). For each family, every pair i < j at each nu_str is solved by the
authors' `OTMANNDistanceComputer` and by the exact solver with params "nasbot_code", once with
jax_enable_x64 on (float64 costs) and once with it off (float32 costs), and the script prints the
largest relative disagreement of d, and of d_bar. It counts the authors' network simplex runs that
stopped at POT's iteration cap (their code ignores POT's warning), and solves the worst pair's LP
a third way, by scipy's HiGHS on the authors' own cost matrix and masses, to say which side is the
LP optimum. It asserts float64 agreement to 1e-6 (relative; an absolute 1e-9 of the pair's total
mass where d is 0) and records the figures.
"""

import argparse
import os
import time
import warnings

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import ot  # noqa: E402
from scipy import optimize  # noqa: E402

import authors_nasbot  # noqa: E402
import record  # noqa: E402
from nas_jax.arch import json_io  # noqa: E402
from nas_jax.features import otmann  # noqa: E402
from nas_jax.spaces import pools, random_arch  # noqa: E402

NU = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
TOLERANCE = 1e-6


def families(neural_network, count: int, seed: int) -> dict:
  """{name: (nas_jax Architectures, the authors' networks of the same graphs)}."""
  rng = np.random.default_rng(seed)
  ours = {
    "bench_otmann's 60 CNNs": pools.initial_pool("cnn")
    + [random_arch.random_architecture("cnn", rng) for _ in range(50)],
    "nas_jax MLPs (pool + random)": pools.initial_pool("mlp")
    + [random_arch.random_architecture("mlp", rng) for _ in range(count - len(pools.initial_pool("mlp")))],
  }
  out = {name: (archs, authors_nasbot.networks(neural_network, archs)) for name, archs in ours.items()}
  for kind, name in (("cnn", "CNNs by the authors' modifiers"), ("mlp", "MLPs by the authors' modifiers")):
    # Their modifiers, run without their constraint checker, also make CNNs whose branches join
    # images of different sizes: those are dropped (nas_jax rejects them as their checker would).
    valid = [
      n
      for n in authors_nasbot.modified_networks(kind, 3 * count, seed)
      if json_io.is_valid(authors_nasbot.to_json(n), authors_nasbot.LIMITS)
    ]
    nets = valid[:count]
    out[name] = ([json_io.from_json(authors_nasbot.to_json(n), limits=authors_nasbot.LIMITS) for n in nets], nets)
  return out


def ours(archs, x64: bool) -> otmann.OtmannDistances:
  """The exact solver with the authors' constants, with jax_enable_x64 set to x64 for the call."""
  jax.config.update("jax_enable_x64", x64)
  try:
    return otmann.otmann_distances(archs, nu_str=NU, params="nasbot_code")
  finally:
    jax.config.update("jax_enable_x64", True)


def theirs(nn_comparators, nets) -> tuple[otmann.OtmannDistances, int, float]:
  """The authors' matrices, how many of their LPs stopped at POT's iteration cap, and seconds."""
  t = time.perf_counter()
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    d, d_bar = authors_nasbot.distances(nn_comparators, nets, NU)
  capped = sum("numItermax" in str(w.message) for w in caught)
  return otmann.OtmannDistances(d, d_bar), capped, time.perf_counter() - t


def disagreement(a: np.ndarray, b: np.ndarray, scale: np.ndarray) -> tuple[float, tuple]:
  """Largest |a - b| / max(b, 1e-9 scale) over off-diagonal entries [n_nu, n, n], and where:
  (nu index, i, j). scale [n, n]: the pair's total mass (for d) or 1 (for d_bar), so that pairs at
  distance 0 (two copies of a network) are held to 1e-9 of it, not to their rounding noise."""
  n = a.shape[-1]
  off = ~np.eye(n, dtype=bool)
  rel = np.where(off[None], np.abs(a - b) / np.maximum(b, 1e-9 * scale[None]), 0.0)
  return float(rel.max()), np.unravel_index(rel.argmax(), rel.shape)


def highs(nn_comparators, x1, x2, nu) -> float:
  """d of the pair's LP (eq. 5) by HiGHS on the authors' own cost matrix and masses."""
  comp = nn_comparators.get_default_otmann_distance("cnn" if x1.nn_class == "cnn" else "mlp-reg", 1.0)
  cost = comp.get_ot_cost_matrix(
    comp.get_mislabel_cost_matrix(x1, x2), comp.get_struct_cost_matrix(x1, x2), 1.0, nu, 1.0
  )
  supply = np.append(x1.layer_masses, sum(x2.layer_masses))
  demand = np.append(x2.layer_masses, sum(x1.layer_masses))
  total = supply.sum()
  r, c = cost.shape
  rows = np.kron(np.eye(r), np.ones(c))  # sum_j Z_ij = supply_i
  cols = np.kron(np.ones(r), np.eye(c))  # sum_i Z_ij = demand_j
  eq = np.vstack([rows, cols])[:-1]  # one equation is implied by the others
  rhs = np.concatenate([supply, demand])[:-1] / total
  opts = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
  res = optimize.linprog(cost.ravel(), A_eq=eq, b_eq=rhs, bounds=(0, None), method="highs", options=opts)
  if res.status != 0:
    raise RuntimeError(f"HiGHS: {res.message}")
  return total * res.fun


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--authors_code", default="", help="a Python 3 copy of kirthevasank/nasbot (required)")
  ap.add_argument("--count", type=int, default=60, help="networks per family (the first is fixed at 60)")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--smoke", action="store_true", help="a run of seconds; its record goes to a temporary folder")
  args = ap.parse_args()
  if args.smoke:
    if not args.authors_code:
      record.skip("no --authors_code=PATH, the authors' code this compares with (see benchmarks/authors_nasbot.py)")
    record.smoke(args, count=12)
  elif not args.authors_code:
    ap.error(
      "--authors_code=PATH is required: a Python 3 copy of kirthevasank/nasbot (see benchmarks/authors_nasbot.py)"
    )
  neural_network, nn_comparators = authors_nasbot.load(args.authors_code)
  print(
    f"jax {jax.__version__}, backend {jax.default_backend()}, pot {ot.__version__},"
    f" cpu affinity {sorted(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}; nu_str {NU}"
  )
  header = (
    f"{'family':32s} {'nets':>4s} {'layers':>7s} {'d, float64':>10s} {'d_bar, f64':>10s} {'d, float32':>10s}"
    f" {'capped':>6s} {'theirs s':>8s}"
  )
  print(header)
  rows, figures, worst = [], {}, {}
  for name, (archs, nets) in families(neural_network, args.count, args.seed).items():
    ref, capped, seconds = theirs(nn_comparators, nets)
    tm = np.array([a.sum() for a in (n.layer_masses for n in nets)])
    scale = tm[:, None] + tm[None, :]
    f64, f32 = ours(archs, True), ours(archs, False)
    e64, at64 = disagreement(f64.d, ref.d, scale)
    e64_bar, _ = disagreement(f64.d_bar, ref.d_bar, np.ones_like(scale))
    e32, at32 = disagreement(f32.d, ref.d, scale)
    sizes = [len(n.layer_labels) for n in nets]
    print(
      f"{name:32s} {len(nets):4d} {min(sizes):3d}-{max(sizes):<3d} {e64:10.1e} {e64_bar:10.1e} {e32:10.1e}"
      f" {capped:6d} {seconds:8.1f}"
    )
    rows.append([name, len(nets), f"{min(sizes)}-{max(sizes)}", f"{e64:.1e}", f"{e64_bar:.1e}", f"{e32:.1e}", capped])
    worst[name] = (nets, at64, at32, ref, f64, f32)
    assert e64 <= TOLERANCE and e64_bar <= TOLERANCE, f"{name}: float64 disagreement {max(e64, e64_bar):.3g}"
  print("\nthe worst pair of each family, solved a third way (HiGHS on the authors' costs and masses):")
  for name, (nets, at64, at32, ref, f64, f32) in worst.items():
    for label, (k, i, j), mine in (("float64", at64, f64), ("float32", at32, f32)):
      lp = highs(nn_comparators, nets[i], nets[j], NU[k])
      off = lambda x: abs(x - lp) / max(lp, 1e-300)
      print(
        f"  {name}, {label}: nets {i}, {j} at nu_str {NU[k]}: HiGHS {lp:.12g}, the authors {ref.d[k, i, j]:.12g}"
        f" ({off(ref.d[k, i, j]):.1e} off), ours {mine.d[k, i, j]:.12g} ({off(mine.d[k, i, j]):.1e} off)"
      )
  figures["nu_str values"] = ", ".join(map(str, NU))
  figures["max relative disagreement of d, float64 costs"] = float(f"{max(float(r[3]) for r in rows):.2g}")
  figures["max relative disagreement of d, float32 costs (jax_enable_x64 off)"] = float(
    f"{max(float(r[5]) for r in rows):.2g}"
  )
  figures["the authors' LPs stopped at POT's iteration cap"] = sum(r[6] for r in rows)
  columns = ["family", "networks", "layers", "d, float64", "d_bar, float64", "d, float32", "capped LPs"]
  record.write(
    "bench_otmann_agreement",
    f"OTMANN against the authors' code on four network families x {len(NU)} nu_str: max relative disagreement",
    figures,
    [{"title": "max relative disagreement per family", "columns": columns, "rows": rows}],
    note="Largest relative difference between nas_jax's OTMANN distances and the authors' code's.",
    direction="lower",
  )


if __name__ == "__main__":
  main()
