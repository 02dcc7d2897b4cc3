"""The solvers of OTMANN pair problems (NASBOT eq. (5), App. A.1): exact network simplex, or batched
ott-jax Sinkhorn (bounds without a plan: `otmann_bounds`).

Costs of a chunk of pairs are built in one jitted, vmapped call; "exact" then solves each pair's
LP with POT on the host, "sinkhorn" runs the chunk's Sinkhorn problems in the same jitted call.
Both take the pairs (a[ia[p]], b[ib[p]]) of two sets of host features and return d_bar.
"""

from __future__ import annotations

import concurrent.futures
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch.architecture import next_power_of_two, zero_padded
from nas_jax.arch.host_threads import CORES, on_cores
from nas_jax.features import otmann_costs as costs

__all__ = ["SLOTS", "SinkhornConfig", "exact_pairs", "sinkhorn_pairs", "pair_chunks", "chunk_features"]

_EMD_MAX_ITER = 100_000  # POT's default; these LPs need a few hundred pivots at most
# A plan whose cost at another nu is within this of the solver's value there is optimal there too,
# to far below the solver's own accuracy (5e-9 on NB201 pairs: `_solve_lps`).
_PLAN_RTOL = 1e-12
SLOTS = 8  # pair problems are trimmed to a multiple of this many slots, one compile per size
_MIN_THREAD_PAIRS = 16  # fewer pairs per thread than this are not worth the hand-off
_ROUND = 100  # Sinkhorn iterations between two checks for finished problems


class SinkhornConfig(NamedTuple):
  """Settings of the entropic solver; hashable, so static under jit.

  Each problem's masses are divided by tm_a + tm_b (total mass 1, transport cost = d_bar) and
  its costs stay in units of nas_cost, so `epsilon` is relative to the non-assignment cost.

  Attributes:
    epsilon: entropic regularisation, in units of nas_cost.
    momentum: over-relaxation weight of the potential updates (1 = plain Sinkhorn).
    threshold: a problem is done when its 1-norm marginal error falls below it.
    max_iterations: iteration cap per problem; a problem still unconverged there keeps the
      value of its rounded (feasible) plan.
    cap: real-to-real costs are clipped to cap * nas_cost; any cap > 2 leaves d unchanged.
  """

  epsilon: float = 4e-3
  momentum: float = 1.5
  threshold: float = 1e-4
  max_iterations: int = 20000
  cap: float = 3.0


@functools.partial(jax.jit, static_argnames=("kind", "params"))
def _exact_costs(pa, pb, nus, kind, params):
  """Augmented costs (NASBOT eq. (5)) of a chunk of pairs at every nu: [C, n_nu, S+1, S+1]."""
  return jax.vmap(lambda a, b: costs.augmented_problem(a, b, nus, kind, params).cost)(pa, pb)


def _solve_lps(
  cost: np.ndarray,
  ma: np.ndarray,
  mb: np.ndarray,
  na: np.ndarray,
  nb: np.ndarray,
  nus: tuple,
  pool: concurrent.futures.Executor,
) -> np.ndarray:
  """d_bar of each pair and nu by network simplex, on each problem trimmed to its real layers.

  A pair's costs are affine in nu (c_lmm + nu c_str on real layers, NASBOT eq. (5)), so the nus at
  which one plan is optimal form an interval. Each pair is solved at the least and the greatest
  nu; when the plan of the least is optimal at the greatest too (its cost there within
  _PLAN_RTOL of the solver's value), it is optimal at every nu between, and their values are its
  costs there, with no LP. On the pairs of a NASBOT search on NAS-Bench-201 that holds for 79%,
  which saves 40% of the LPs; on mixed CNNs it saves about 16%. The values agree with one solve
  per nu to 4e-16 on CNNs and to 5e-9 on NB201 cells, about the network simplex's own accuracy
  on them: at some nus it returns a value 9e-10 above the cost there of another nu's plan.

  POT's solver releases the GIL, so contiguous blocks of pairs run on one thread per core when
  the problems are large enough to pay for it. The supplies and demands of eq. (5) are made
  here, in float64, from the layer masses: each sink holds the other network's total and both
  sides are divided by tm_a + tm_b. Made in float32 (jax_enable_x64 off), the two sides'
  roundings differ, layers of equal mass stop matching exactly, and d moves by about 1e-7 of the
  total mass, which is far more than 1e-7 of d for similar networks
  (benchmarks/bench_otmann_agreement.py).

  Args:
    cost: [C, n_nu, S+1, S+1] float64 augmented costs, sinks at slots na and nb.
    ma, mb: [C, S] layer masses of each pair's networks, 0 on padded slots.
    na, nb: [C] int real-layer counts.
    nus: the n_nu structural weights of the costs.
    pool: a thread pool of one worker per core, for blocks of pairs.

  Returns:
    [n_nu, C] float64.
  """
  # POT and ott-jax are imported where they are used: at import they load scikit-learn, networkx
  # and matplotlib (most of the package's import time), which every process that never solves a
  # transport problem (workers, CLI checks) would pay.
  from ot.lp.emd_wrap import emd_c

  n, n_nu = cost.shape[:2]
  out = np.empty((n_nu, n))
  lo, hi = int(np.argmin(nus)), int(np.argmax(nus))
  middle = [k for k in range(n_nu) if k not in (lo, hi)]

  # Every pair's supplies and demands, padded: its layer masses, the other network's total in the
  # sink (slot na or nb), zeros after it, and each side divided by its sum (1 within an ulp).
  size, rows = cost.shape[2], np.arange(n)
  supply, demand = np.zeros((n, size)), np.zeros((n, size))
  supply[:, :-1], demand[:, :-1] = ma, mb
  supply[rows, na], demand[rows, nb] = mb.sum(1), ma.sum(1)
  supply /= supply.sum(1, keepdims=True)
  demand /= demand.sum(1, keepdims=True)

  def solve(p: int, k: int) -> np.ndarray:
    """Pair p's LP at nu index k, trimmed to its real layers: writes d_bar, returns the plan."""
    r, c = na[p] + 1, nb[p] + 1
    plan, out[k, p], _, _, status = emd_c(
      supply[p, :r], demand[p, :c], np.ascontiguousarray(cost[p, k, :r, :c]), _EMD_MAX_ITER, 1
    )
    if status != 1:
      raise RuntimeError(f"otmann: the network simplex ended with status {status} (pair {p}, nu index {k})")
    return plan

  def block(pairs: np.ndarray) -> None:
    # The loop does little more than call the solver: for these small problems Python's work per
    # call can be as long as the solve, and it holds the GIL that the other threads need.
    plans = np.zeros((len(pairs), size, size))
    for i, p in enumerate(pairs.tolist()):
      plan = solve(p, lo)
      plans[i, : plan.shape[0], : plan.shape[1]] = plan
      if hi != lo:
        solve(p, hi)
    if not middle:
      return
    used = plans > 0  # costs off a problem's trimmed block are never read

    def plan_cost(sel, k):
      return (plans[sel] * np.where(used[sel], cost[pairs[sel], k], 0.0)).sum((1, 2))

    at_hi = out[hi, pairs]
    kept = plan_cost(slice(None), hi) <= at_hi + _PLAN_RTOL * np.abs(at_hi)
    for k in middle:
      out[k, pairs[kept]] = plan_cost(kept, k)
    for p in pairs[~kept].tolist():
      for k in middle:
        solve(p, k)

  # Threads pay only for problems of more than one block of SLOTS layers: below that, each solve
  # is a few microseconds and two threads handing the GIL to each other are slower than one.
  if n < 2 * _MIN_THREAD_PAIRS or cost.shape[2] <= SLOTS + 1:
    block(np.arange(n))
  else:
    on_cores(block, n, pool)
  return out


def _rounded_d_bar(plan, cost, supply, demand, na, nb, nas_cost):
  """d_bar of a feasible plan of eq. (3) made from an approximate transport plan.

  The real-to-real block keeps only pairs with cost < 2 nas_cost (no other pair lowers eq. 3),
  is scaled down row-wise then column-wise until no layer sends or receives more than its mass,
  and then one rank-one fill sends leftover mass along those pairs within the same bounds (it
  cuts the error of the rounded value, benchmarks/bench_otmann.py; a second fill changes
  nothing). The value, nas_cost + sum_ij Z_ij (C_ij - 2 nas_cost) (NASBOT eq. (3) at total mass 1), is
  that of a feasible plan, so it is never below the exact d_bar.

  Args:
    plan: [S+1, S+1] approximate plan of the augmented problem.
    cost: [S+1, S+1] its costs; supply, demand: [S+1] its normalised masses.
    na, nb: [] int real-layer counts.
    nas_cost: the non-assignment cost.

  Returns:
    [] float d_bar.
  """
  rows, cols = jnp.arange(plan.shape[0]) < na, jnp.arange(plan.shape[1]) < nb
  useful = rows[:, None] & cols[None, :] & (cost < 2.0 * nas_cost)
  sa, sb = jnp.where(rows, supply, 0.0), jnp.where(cols, demand, 0.0)
  safe = lambda x: jnp.where(x > 0, x, 1.0)
  z = jnp.where(useful, plan, 0.0)
  z = z * jnp.minimum(1.0, sa / safe(z.sum(1)))[:, None]
  z = z * jnp.minimum(1.0, sb / safe(z.sum(0)))[None, :]
  r, s = jnp.maximum(sa - z.sum(1), 0.0), jnp.maximum(sb - z.sum(0), 0.0)
  reach_a = jnp.where(useful, s[None, :], 0.0).sum(1)  # leftover demand row i could serve
  reach_b = jnp.where(useful, r[:, None], 0.0).sum(0)  # leftover supply column j could take
  # den_ij >= both reaches, so row i gains at most r_i and column j at most s_j: still feasible.
  den = jnp.maximum(reach_a[:, None], reach_b[None, :])
  z = z + jnp.where(useful, r[:, None] * s[None, :] / safe(den), 0.0)
  return nas_cost + jnp.sum(z * (cost - 2.0 * nas_cost))


@functools.partial(jax.jit, static_argnames=("kind", "params", "config"))
def _sinkhorn_round(pa, pb, nu, f, g, kind, params, config):
  """Up to _ROUND Sinkhorn iterations on each of W problems, warm-started from (f, g).

  Sinkhorn runs in float32 log-domain (lse) mode, which cannot underflow at small epsilon and
  runs the same on CPU, GPU and TPU; the rounding and the reported cost use the cost dtype.

  Args:
    pa, pb: features of the two networks of each problem, leaves [W, ...].
    nu: [W] structural weights.
    f, g: [W, S+1] float32 dual potentials (0 to start).

  Returns:
    f, g: [W, S+1] float32; d_bar: [W] float, the cost of the rounded plan; converged: [W] bool.
  """
  from ott.geometry import geometry  # imported here: see `_solve_lps`
  from ott.problems.linear import linear_problem
  from ott.solvers.linear import acceleration
  from ott.solvers.linear import sinkhorn as ott_sinkhorn

  solver = ott_sinkhorn.Sinkhorn(
    threshold=config.threshold, max_iterations=_ROUND, momentum=acceleration.Momentum(value=config.momentum)
  )

  def one(a, b, nu, f, g):
    prob = costs.augmented_problem(a, b, nu, kind, params, cap=config.cap * params.nas_cost)
    sa, sb = prob.supply / prob.supply.sum(), prob.demand / prob.demand.sum()
    a32, b32 = sa.astype(jnp.float32), sb.astype(jnp.float32)
    geom = geometry.Geometry(cost_matrix=prob.cost.astype(jnp.float32), epsilon=config.epsilon * params.nas_cost)
    init = (jnp.where(a32 > 0, f, -jnp.inf), jnp.where(b32 > 0, g, -jnp.inf))  # zero mass: -inf, as ott's own init
    out = solver(linear_problem.LinearProblem(geom, a=a32, b=b32), init=init)
    d_bar = _rounded_d_bar(out.matrix.astype(prob.cost.dtype), prob.cost, sa, sb, a.n, b.n, params.nas_cost)
    return out.f, out.g, d_bar, out.converged

  return jax.vmap(one)(pa, pb, nu, f, g)


def sinkhorn_pairs(fa, fb, ia, ib, nus, kind, params, chunk_size, config) -> np.ndarray:
  """d_bar [n_nu, P] of the pairs (a[ia[p]], b[ib[p]]) by rounds of batched Sinkhorn.

  Iteration counts are heavy-tailed (most problems need < 100, a few thousands) and a vmapped
  loop runs as long as its slowest member, so each round runs _ROUND iterations on the problems
  still active, then drops the converged ones. Problems are grouped by trimmed size (a multiple
  of SLOTS covering both networks) and run chunk_size * n_nu at a time, or in narrower chunks as
  fewer are left: three compiled widths per size.
  """
  n_nu = len(nus)
  pair, nu = np.repeat(np.arange(len(ia)), n_nu), np.tile(nus, len(ia))
  size = np.repeat(-(-np.maximum(fa.n[ia], fb.n[ib]) // SLOTS) * SLOTS, n_nu)
  f = np.zeros((len(pair), size.max() + 1), np.float32)
  g = np.zeros_like(f)
  d_bar = np.empty(len(pair))
  # The last few problems of a size can take thousands of iterations: a third, tail width keeps
  # them from paying for a narrow chunk of copies every round.
  wide = chunk_size * n_nu
  narrow, tail = max(1, wide // 16), max(1, wide // 256)
  active = np.arange(len(pair))
  for _ in range(-(-config.max_iterations // _ROUND)):
    left = []
    for s in np.unique(size[active]):
      todo = active[size[active] == s]
      width = wide if len(todo) > wide // 2 else narrow if len(todo) > 2 * tail else tail
      for start in range(0, len(todo), width):
        sel = todo[start : start + width]
        idx = np.concatenate([sel, np.full(width - len(sel), sel[0])])
        out = _sinkhorn_round(
          _take(fa, ia[pair[idx]], s),
          _take(fb, ib[pair[idx]], s),
          nu[idx],
          f[idx, : s + 1],
          g[idx, : s + 1],
          kind,
          params,
          config,
        )
        f[sel, : s + 1], g[sel, : s + 1], d_bar[sel], ok = (np.asarray(x)[: len(sel)] for x in out)
        left.append(sel[~ok])
    active = np.concatenate(left)
    if not len(active):
      break
  return d_bar.reshape(len(ia), n_nu).T


def _take(feats: costs.OtmannFeatures, idx: np.ndarray, slots: int) -> costs.OtmannFeatures:
  """Features of architectures idx on exactly `slots` slots: trimmed (real layers come first) or
  padded with zero-mass slots."""

  def fit(x: np.ndarray) -> np.ndarray:
    x = x[idx]
    return zero_padded(x, x.shape[:-1] + (slots,))

  return feats._replace(labels=fit(feats.labels), masses=fit(feats.masses), paths=fit(feats.paths), n=feats.n[idx])


def exact_pairs(fa, fb, ia, ib, nus, kind, params, chunk_size) -> np.ndarray:
  """d_bar [n_nu, P] of the pairs (a[ia[p]], b[ib[p]]) by network simplex.

  Pairs are grouped by trimmed size (a multiple of SLOTS covering both networks) so the cost
  tensors moved to the host stay small; each chunk is padded, by repeating its first pair, to a
  power of two <= chunk_size, so that few shapes are ever compiled. The next chunk's costs are
  dispatched before this chunk's LPs are solved, so XLA builds them while the host solves. The
  LPs of the call share one thread pool, which ends with the call.
  """
  out = np.empty((len(nus), len(ia)))
  chunks = pair_chunks(fa, fb, ia, ib, chunk_size)

  def dispatch(sel, s):
    pa, pb = chunk_features(fa, fb, ia, ib, sel, s, chunk_size)
    return sel, pa, pb, _exact_costs(pa, pb, nus, kind, params)

  ahead = dispatch(*chunks[0]) if chunks else None
  with concurrent.futures.ThreadPoolExecutor(CORES, thread_name_prefix="otmann-lp") as pool:
    for k in range(len(chunks)):
      sel, pa, pb, cost = ahead
      ahead = dispatch(*chunks[k + 1]) if k + 1 < len(chunks) else None
      cost, ma, mb = (np.asarray(x, np.float64)[: len(sel)] for x in (cost, pa.masses, pb.masses))
      out[:, sel] = _solve_lps(cost, ma, mb, pa.n[: len(sel)], pb.n[: len(sel)], nus, pool)
  return out


def pair_chunks(fa, fb, ia, ib, chunk_size: int) -> list[tuple[np.ndarray, int]]:
  """The pairs in chunks of at most chunk_size, (pair indices, trimmed slot count), grouped by
  trimmed size (a multiple of SLOTS covering both networks) so each chunk's tensors stay small."""
  size = -(-np.maximum(fa.n[ia], fb.n[ib]) // SLOTS) * SLOTS
  chunks = []
  for s in np.unique(size):
    group = np.flatnonzero(size == s)
    chunks += [(group[start : start + chunk_size], s) for start in range(0, len(group), chunk_size)]
  return chunks


def chunk_features(fa, fb, ia, ib, sel: np.ndarray, slots: int, chunk_size: int) -> tuple:
  """The features of a chunk's pairs on `slots` slots, padded by repeating its first pair to a power
  of two <= chunk_size, so that few shapes are ever compiled."""
  width = min(chunk_size, next_power_of_two(len(sel)))
  idx = np.concatenate([sel, np.full(width - len(sel), sel[0])])
  return _take(fa, ia[idx], slots), _take(fb, ib[idx], slots)
