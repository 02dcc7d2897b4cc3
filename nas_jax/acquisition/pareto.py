"""Multi-objective utilities on the host (numpy, float64): Pareto fronts, NSGA-II ranking, exact
hypervolume and its improvement, and ParEGO's scalarisation.

Every objective is MAXIMISED: scores [n, m] are n points with m objectives, larger is better in
each (`to_score` negates "min" goals before they get here). A row holding any NaN is a failed
evaluation: it is never on a front, never dominates, and adds no hypervolume. Infinite entries are
rejected (a failure is NaN, not -inf). n = 0 is allowed (an empty front, hypervolume 0).
"""

import numpy as np

__all__ = [
  "crowding_distance",
  "dominates",
  "hypervolume",
  "hypervolume_improvement",
  "non_dominated",
  "normalise",
  "nsga2_order",
  "parego_scalarise",
  "pareto_ranks",
  "simplex_weights",
]


# --- input checks ---------------------------------------------------------------------------------


def _scores(fn: str, scores, name: str = "scores") -> np.ndarray:
  """scores as float64 [n, m], m >= 1, entries finite or NaN."""
  x = np.asarray(scores, dtype=np.float64)
  if x.ndim != 2 or x.shape[1] < 1:
    raise ValueError(f"{fn}: {name} has shape {x.shape}; expected [n, m] with m >= 1")
  if np.isinf(x).any():
    row = int(np.argwhere(np.isinf(x))[0, 0])
    raise ValueError(f"{fn}: {name} holds an infinite value in row {row}; expected finite values or NaN (a failure)")
  return x


def _vector(fn: str, v, name: str, m: int, *, allow_nan: bool = False) -> np.ndarray:
  """v as float64 [m], finite (or NaN where allowed)."""
  x = np.asarray(v, dtype=np.float64)
  if x.shape != (m,):
    raise ValueError(f"{fn}: {name} has shape {x.shape}; expected ({m},) to match the {m} objectives")
  bad = np.isinf(x) if allow_nan else ~np.isfinite(x)
  if bad.any():
    raise ValueError(f"{fn}: {name}={x.tolist()} is not finite; expected finite values")
  return x


def _valid(x: np.ndarray) -> np.ndarray:
  """[n] bool: rows with no NaN."""
  return ~np.isnan(x).any(axis=1)


def _domination_matrix(x: np.ndarray) -> np.ndarray:
  """[n, n] bool, d[i, j] = row i dominates row j; False wherever a row has a NaN.

  O(n^2 m) time, O(n^2 m) temporary memory (NaN compares False, so NaN rows drop out)."""
  ge = (x[:, None, :] >= x[None, :, :]).all(axis=2)
  gt = (x[:, None, :] > x[None, :, :]).any(axis=2)
  return ge & gt


# --- dominance, fronts, NSGA-II -------------------------------------------------------------------


def dominates(a, b) -> bool:
  """a [m] dominates b [m]: a >= b in every objective and a > b in at least one.

  False if either holds a NaN (a failed point neither dominates nor is dominated)."""
  a = np.asarray(a, dtype=np.float64)
  if a.ndim != 1 or a.shape[0] < 1:
    raise ValueError(f"dominates: a has shape {a.shape}; expected [m] with m >= 1")
  b = _vector("dominates", b, "b", a.shape[0], allow_nan=True)
  a = _vector("dominates", a, "a", a.shape[0], allow_nan=True)
  return bool((a >= b).all() and (a > b).any())


def non_dominated(scores) -> np.ndarray:
  """The Pareto front mask of scores [n, m]: [n] bool, True where no other row dominates the row.

  Equal rows do not dominate each other, so every copy of a front point is on the front. NaN rows
  are False. O(n^2 m) time and O(n^2 m) temporary memory.
  """
  x = _scores("non_dominated", scores)
  if x.shape[0] == 0:
    return np.zeros(0, dtype=bool)
  return _valid(x) & ~_domination_matrix(x).any(axis=0)


def pareto_ranks(scores) -> np.ndarray:
  """Fast non-dominated sorting (Deb et al. 2002, NSGA-II): [n] int, 0 = the first (Pareto) front.

  Rank r + 1 is the front of what remains after removing ranks 0..r. NaN rows get rank
  max(valid ranks) + 1, or n if every row has a NaN (worse than any possible valid rank).
  O(n^2 m) time, O(n^2 m) temporary memory.
  """
  x = _scores("pareto_ranks", scores)
  n = x.shape[0]
  ranks = np.full(n, -1, dtype=np.int64)
  valid = _valid(x)
  if not valid.any():
    ranks[:] = n
    return ranks
  dom = _domination_matrix(x)
  count = dom.sum(axis=0)  # n_p: how many rows dominate p
  front = valid & (count == 0)
  r = 0
  while front.any():
    ranks[front] = r
    count = count - dom[front].sum(axis=0)  # remove this front: S_p of each p in it
    count[front] = -1  # assigned
    front = valid & (count == 0)
    r += 1
  ranks[~valid] = r
  return ranks


def _crowding(x: np.ndarray) -> np.ndarray:
  """Crowding distance [k] of one front x [k, m] (finite rows)."""
  k, m = x.shape
  if k <= 2:
    return np.full(k, np.inf)
  dist = np.zeros(k)
  for j in range(m):
    order = np.argsort(x[:, j], kind="stable")
    v = x[order, j]
    span = v[-1] - v[0]
    if span > 0:
      dist[order[1:-1]] += (v[2:] - v[:-2]) / span
    dist[order[0]] = np.inf
    dist[order[-1]] = np.inf
  return dist


def crowding_distance(scores) -> np.ndarray:
  """NSGA-II crowding distance (Deb et al. 2002) within each front of `pareto_ranks`: [n] float.

  Per objective the front is sorted (stable, so ties keep row order), its two ends get inf, and each
  interior point adds (next - previous) / (front max - front min); an objective that is constant on
  the front adds 0. A front of <= 2 points is all inf. Of equal rows at an end only the first (or
  last) in sorted order is the boundary. NaN rows get NaN.
  """
  x = _scores("crowding_distance", scores)
  ranks = pareto_ranks(x)
  valid = _valid(x)
  out = np.full(x.shape[0], np.nan)
  for r in np.unique(ranks[valid]):
    idx = np.flatnonzero(valid & (ranks == r))
    out[idx] = _crowding(x[idx])
  return out


def nsga2_order(scores) -> np.ndarray:
  """Row indices best first: [n] int. By rank ascending, then crowding distance descending, then
  row index ascending (deterministic). NaN rows come last, in index order."""
  x = _scores("nsga2_order", scores)
  n = x.shape[0]
  if n == 0:
    return np.zeros(0, dtype=np.int64)
  ranks = pareto_ranks(x)
  crowd = np.nan_to_num(crowding_distance(x), nan=0.0, posinf=np.inf)
  return np.lexsort((np.arange(n), -crowd, ranks)).astype(np.int64)


# --- hypervolume ----------------------------------------------------------------------------------


def _hv2(p: np.ndarray, ref: np.ndarray) -> float:
  """2-D sweep, O(n log n): p [n, 2] all strictly above ref (dominated rows and copies allowed)."""
  order = np.lexsort((-p[:, 1], -p[:, 0]))  # x descending
  x, y = p[order, 0], p[order, 1]
  width = x - np.append(x[1:], ref[0])
  height = np.maximum.accumulate(y) - ref[1]
  return float(np.sum(width * height))


def _hv(p: np.ndarray, ref: np.ndarray) -> float:
  """Exact hypervolume of p [n, m], every row strictly above ref [m]."""
  n, m = p.shape
  if n == 0:
    return 0.0
  if m == 1:
    return float(p[:, 0].max() - ref[0])
  if m == 2:
    return _hv2(p, ref)
  # HSO (While et al. 2006): slice along the last objective. Between consecutive distinct values
  # z_i > z_{i+1} (z_n = ref) the cross-section is the (m-1)-D region dominated by the points with
  # last objective >= z_i.
  order = np.argsort(-p[:, -1], kind="stable")
  p = p[order]
  z = p[:, -1]
  depth = z - np.append(z[1:], ref[-1])
  total = 0.0
  for i in np.flatnonzero(depth > 0):
    total += depth[i] * _hv(p[: i + 1, :-1], ref[:-1])
  return total


def _contributing(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
  """Rows of x that add volume: no NaN and strictly above ref in every objective."""
  keep = _valid(x)
  keep[keep] = (x[keep] > ref).all(axis=1)
  return x[keep]


def _reduce(p: np.ndarray) -> np.ndarray:
  """The distinct non-dominated rows of p (finite rows)."""
  if p.shape[0] <= 1:
    return p
  return np.unique(p[~_domination_matrix(p).any(axis=0)], axis=0)


def hypervolume(scores, ref) -> float:
  """Exact volume of the region dominated by the rows of scores [n, m] and dominating ref [m]: the
  union of the boxes [ref, x] (maximisation). Rows with a NaN, or not strictly above ref in every
  objective, add nothing; n = 0 gives 0.

  m = 1: max(x - ref, 0). m = 2: a sweep in x, O(n log n). m >= 3: dominated rows are dropped
  (O(n^2 m)), then HSO, hypervolume by slicing objectives (While et al. 2006), recursing on the last
  objective down to the 2-D sweep: O(n^(m-1) log n) time, fine for n <= ~200 with m <= 4.
  """
  x = _scores("hypervolume", scores)
  m = x.shape[1]
  ref = _vector("hypervolume", ref, "ref", m)
  p = _contributing(x, ref)
  if m >= 3:
    p = _reduce(p)
  return _hv(p, ref)


def _staircase(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """The 2-D front of p [k, 2] as (a ascending, b descending), both strict, k' <= k."""
  order = np.lexsort((-p[:, 1], -p[:, 0]))  # a descending, ties b descending
  a, b = p[order, 0], p[order, 1]
  before = np.maximum.accumulate(np.concatenate([[-np.inf], b[:-1]]))
  keep = b > before
  return a[keep][::-1], b[keep][::-1]


def _hvi2(x: np.ndarray, front: np.ndarray, ref: np.ndarray) -> np.ndarray:
  """2-D improvement of each row of x [k, 2] over front [p, 2] (rows above ref): O((k + p) log p).

  With the front as a staircase a_0 < ... < a_{p-1}, b_0 > ... > b_{p-1}, its height is
  h(u) = b_i on (A_i, a_i] (A_0 = ref_0, A_i = a_{i-1}) and ref_1 beyond a_{p-1}; G(t) is the
  integral of h - ref_1 from ref_0 to t. For a point (x0, x1) the improvement is the integral over
  (ref_0, x0) of (x1 - max(h, ref_1))_+, and h < x1 exactly for u > u* = A_c, c = #{b_i >= x1}:
  so it is (x0 - u*)_+ (x1 - ref_1) - (G(x0) - G(u*)).
  """
  a, b = _staircase(front)
  p = a.shape[0]
  r0, r1 = ref
  A = np.concatenate([[r0], a])  # [p + 1] left ends of the intervals
  h = np.concatenate([b, [r1]]) - r1  # [p + 1] heights above ref_1
  C = np.concatenate([[0.0], np.cumsum((a - A[:-1]) * h[:-1])])  # [p + 1], C_i = G(A_i)
  x0 = np.maximum(x[:, 0], r0)
  x1 = np.maximum(x[:, 1], r1)
  i = np.searchsorted(a, x0, side="left")  # interval of x0
  g_x0 = C[i] + (x0 - A[i]) * h[i]
  c = p - np.searchsorted(b[::-1], x1, side="left")  # #{b_i >= x1}
  u = A[c]
  out = np.where(x0 > u, (x0 - u) * (x1 - r1) - (g_x0 - C[c]), 0.0)
  out = np.maximum(out, 0.0)  # rounding
  return np.where(_valid(x), out, 0.0)


def hypervolume_improvement(points, front, ref) -> np.ndarray:
  """HV(front + {point_i}) - HV(front) for each row of points [k, m] separately: [k] float, >= 0.

  front [p, m] and ref [m] as in `hypervolume`; NaN rows of points improve by 0, NaN rows of front
  are ignored. m = 1: (x - max(ref, front max))_+, vectorised. m = 2: vectorised over k with the
  front as a staircase and its prefix areas, O((k + p) log p) and O(k) memory (the inner loop of
  Monte Carlo expected hypervolume improvement). m >= 3: a Python loop over k, each
  vol([ref, x]) - HV({min(f, x) : f in front}) by HSO.
  """
  x = _scores("hypervolume_improvement", points, "points")
  m = x.shape[1]
  f = _scores("hypervolume_improvement", front, "front")
  if f.shape[1] != m:
    raise ValueError(f"hypervolume_improvement: front has shape {f.shape}; expected [p, {m}] to match points")
  ref = _vector("hypervolume_improvement", ref, "ref", m)
  f = _contributing(f, ref)
  valid = _valid(x)
  if m == 1:
    top = max(ref[0], f[:, 0].max()) if f.shape[0] else ref[0]
    return np.where(valid, np.maximum(np.nan_to_num(x[:, 0], nan=top) - top, 0.0), 0.0)
  if m == 2:
    return _hvi2(x, f, ref)
  f = _reduce(f)
  out = np.zeros(x.shape[0])
  for i in np.flatnonzero(valid & (x > ref).all(axis=1)):
    box = float(np.prod(x[i] - ref))
    clipped = _contributing(np.minimum(f, x[i]), ref)
    out[i] = max(box - _hv(_reduce(clipped), ref), 0.0)
  return out


# --- scalarisation (ParEGO) -----------------------------------------------------------------------


def normalise(scores, lo=None, hi=None) -> np.ndarray:
  """Each column affinely to [0, 1]: (x - lo) / (hi - lo), [n, m] float.

  lo, hi [m]: by default the column min and max over the rows with no NaN; given bounds need not
  contain the data (values outside map outside [0, 1], unclipped) but need lo <= hi. A column with
  hi == lo (constant) maps to 0. NaN entries stay NaN; with no valid row and no bounds, all NaN.
  """
  x = _scores("normalise", scores)
  n, m = x.shape
  valid = _valid(x)
  if lo is None:
    lo = x[valid].min(axis=0) if valid.any() else np.full(m, np.nan)
  else:
    lo = _vector("normalise", lo, "lo", m)
  if hi is None:
    hi = x[valid].max(axis=0) if valid.any() else np.full(m, np.nan)
  else:
    hi = _vector("normalise", hi, "hi", m)
  if (hi < lo).any():
    raise ValueError(f"normalise: lo={lo.tolist()}, hi={hi.tolist()}; expected lo <= hi in every column")
  span = hi - lo
  with np.errstate(invalid="ignore"):
    out = np.where(span > 0, (x - lo) / np.where(span > 0, span, 1.0), 0.0)
  out[np.isnan(x) | np.isnan(span)] = np.nan
  return out


def parego_scalarise(scores, weights, rho: float = 0.05) -> np.ndarray:
  """ParEGO's augmented Chebyshev scalarisation, mirrored for maximisation: [n] float, larger is
  better. min_j(w_j f_j) + rho * sum_j(w_j f_j) with f = normalise(scores); NaN rows stay NaN.

  Knowles (2006) minimises max_j(w_j c_j) + rho * sum_j(w_j c_j) over costs c normalised to [0, 1].
  Putting c = -s turns max into -min and the sum into its negative, so minimising his form is
  maximising this one; we then normalise the scores s (not the costs) to [0, 1], so the Chebyshev
  term is the weighted distance from the worst point (0) in each objective, which the search pushes
  up, rather than the weighted distance to the ideal (0 in costs), which it pushes down. Either way
  every Pareto point with f > 0 is the best for some weights (w_j proportional to 1 / f_j), and with
  rho > 0 a dominating point scores strictly higher for every w > 0.
  weights [m]: non-negative, summing to 1 (see `simplex_weights`); rho >= 0.
  """
  x = _scores("parego_scalarise", scores)
  w = _vector("parego_scalarise", weights, "weights", x.shape[1])
  if (w < 0).any() or abs(w.sum() - 1.0) > 1e-9:
    raise ValueError(f"parego_scalarise: weights={w.tolist()}; expected non-negative values summing to 1 (within 1e-9)")
  if not (np.isfinite(rho) and rho >= 0):
    raise ValueError(f"parego_scalarise: rho={rho!r}; expected a finite value >= 0")
  wf = normalise(x) * w
  out = wf.min(axis=1) + rho * wf.sum(axis=1)
  out[~_valid(x)] = np.nan
  return out


def simplex_weights(rng: np.random.Generator, m: int) -> np.ndarray:
  """Weights [m] drawn uniformly on the simplex {w >= 0, sum w = 1}: Dirichlet(1, ..., 1).

  ParEGO draws from a lattice of s + 1 levels per objective; we draw uniformly instead (no lattice
  size to choose, and the same distribution in the limit of a fine lattice)."""
  if not isinstance(rng, np.random.Generator):
    raise ValueError(f"simplex_weights: rng is a {type(rng).__name__}; expected a numpy.random.Generator")
  if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
    raise ValueError(f"simplex_weights: m={m!r}; expected an int >= 1")
  w = rng.dirichlet(np.ones(int(m)))
  return w / w.sum()
