"""OTMANN distance matrices (NASBOT Sec. 3; App. A.1): exact network simplex, batched ott-jax Sinkhorn, or bounds without an LP.

The options are checked and each network's features built once, on the host; a solver value
(`otmann_solver`: exact(), sinkhorn(...), bound(), greedy()) solves the pairs' problems, and the matrices (symmetric, or extended by new rows) are put
together here.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence, Union

import jax
import numpy as np

from nas_jax.arch import kinds, labels
from nas_jax.arch.architecture import Architecture, next_power_of_two, stack, zero_padded
from nas_jax.features import otmann_costs as costs
from nas_jax.features import otmann_solvers as solvers
from nas_jax.features.otmann_solver import Solver, check_solver, exact

__all__ = [
  "check_options",
  "KERNEL_NU_STR",
  "OtmannDistances",
  "otmann_distances",
  "extend_distances",
  "host_features",
  "feature_rows",
  "stack_features",
  "feature_distances",
  "feature_pair_distances",
]

KERNEL_NU_STR = (0.1, 0.2, 0.4, 0.8)  #: the structural weights of the NASBOT kernel (NASBOT Sec. 4; App. B.1)
Archs = Union[Architecture, Sequence[Architecture]]


class OtmannDistances(NamedTuple):
  """d and d_bar = d / (tm_a + tm_b) (NASBOT Sec. 3), numpy float64 [n_a, n_b], with a leading n_nu
  axis when nu_str is a sequence."""

  d: np.ndarray
  d_bar: np.ndarray


def _check(solver: Solver, chunk_size: int) -> None:
  check_solver(solver)
  if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
    raise ValueError(f"chunk_size: {chunk_size!r}; expected a positive integer")


def check_options(*, solver: Solver = exact(), nu_str=KERNEL_NU_STR, params="paper", chunk_size: int = 256) -> None:
  """Checks options of `otmann_distances` before any distance is computed (a search checks them
  at build time, not after its first evaluation); ValueError / TypeError naming the bad one."""
  _check(solver, chunk_size)
  _nu_values(nu_str)
  costs.otmann_params(params)


def _nu_values(nu_str) -> tuple[np.ndarray, bool]:
  """nu_str as [n_nu] float64, and whether it was a single number."""
  try:
    nus = np.asarray(nu_str, dtype=np.float64)
  except (TypeError, ValueError):
    nus = np.array([np.nan])
  if nus.ndim > 1 or nus.size == 0 or not np.all(np.isfinite(nus)) or np.any(nus < 0):
    raise ValueError(f"nu_str: {nu_str!r}; expected a number >= 0 or a non-empty sequence of them")
  return np.atleast_1d(nus), nus.ndim == 0


def _as_batch(archs: Archs, name: str) -> Architecture:
  if isinstance(archs, Architecture):
    if np.ndim(archs.labels) != 2:
      raise ValueError(f"{name}: one Architecture given; pass a list or a batch (labels [B, N])")
    return archs
  if isinstance(archs, (str, bytes)) or not isinstance(archs, Sequence) or not archs:
    raise TypeError(f"{name}: {type(archs).__name__} given; expected a non-empty list of Architecture or a batch")
  return stack(archs)


@functools.partial(jax.jit, static_argnames=("params",))
def _features(batch: Architecture, params: costs.OtmannParams) -> costs.OtmannFeatures:
  return jax.vmap(lambda a: costs.otmann_features(a, params))(batch)


def _slots(n: int) -> int:
  """The smallest multiple of `otmann_solvers.SLOTS` (at least one) that holds n layers."""
  return max(solvers.SLOTS, -(-n // solvers.SLOTS) * solvers.SLOTS)


def host_features(archs: Archs, params: str | costs.OtmannParams = "paper") -> costs.OtmannFeatures:
  """Features of every architecture as numpy arrays, leaves [n, ...] on the smallest multiple of
  `otmann_solvers.SLOTS` slots holding every real layer (the path-length relaxation costs
  O(slots^3)); the batch is padded to a power-of-two count, so growing sets compile O(log n) times."""
  batch, params = _as_batch(archs, "archs"), costs.otmann_params(params)
  mask = np.asarray(batch.mask)
  n, slots = mask.shape
  used = np.flatnonzero(mask.any(0))
  to_n, to_s = next_power_of_two(n, least=8), _slots(used[-1] + 1)

  fit = lambda x: zero_padded(x, (to_n,) + (to_s,) * (np.ndim(x) - 1))
  return jax.tree.map(lambda x: np.asarray(x)[:n], _features(jax.tree.map(fit, batch), params))


def feature_rows(feats: costs.OtmannFeatures) -> list[costs.OtmannFeatures]:
  """The features of each architecture of a batch on its own slot count (a multiple of
  `SLOTS`): a network's features, kept between calls, that `stack_features` batches again."""
  out = []
  for i, n in enumerate(np.asarray(feats.n)):
    s = _slots(int(n))
    out.append(costs.OtmannFeatures(feats.labels[i, :s], feats.masses[i, :s], feats.paths[i, :, :s], feats.n[i]))
  return out


def stack_features(rows: Sequence[costs.OtmannFeatures]) -> costs.OtmannFeatures:
  """Rows of `feature_rows` as one batch, padded with zero-mass slots to the widest; the same
  arrays as `host_features` of their architectures (padding slots carry nothing)."""
  s = max(len(r.labels) for r in rows)

  def stacked(xs: list) -> np.ndarray:
    # Slices into one zero array: a search stacks its train rows once per EA generation, and a
    # np.pad per row would cost more than the copies.
    out = np.zeros((len(xs),) + xs[0].shape[:-1] + (s,), np.result_type(*xs))
    for o, x in zip(out, xs):
      o[..., : x.shape[-1]] = x
    return out

  return costs.OtmannFeatures(
    stacked([r.labels for r in rows]),
    stacked([r.masses for r in rows]),
    stacked([r.paths for r in rows]),
    np.stack([r.n for r in rows]),
  )


def otmann_distances(
  archs_a: Archs,
  archs_b: Archs | None = None,
  *,
  solver: Solver = exact(),
  nu_str=0.5,
  params: str | costs.OtmannParams = "paper",
  chunk_size: int = 256,
) -> OtmannDistances:
  """OTMANN distances between two sets of architectures (NASBOT Sec. 3), or within one set.

  Args:
    archs_a: a list of Architecture or a batch (labels [n_a, N]), all of one kind.
    archs_b: the same for the columns; None gives the symmetric matrix of `archs_a`: pairs
      i < j are solved and mirrored, the diagonal is 0.
    solver: a solver value of `otmann_solver`: exact() (POT network simplex, the reference),
      sinkhorn(epsilon=...) (ott-jax, batched), bound() (a lower bound, no LP) or greedy() (a
      greedy plan's cost, an upper bound; no LP; `otmann_bounds`).
    nu_str: structural weight: a number (Fig. 1 uses 0.5) or a sequence (the kernel uses
      `KERNEL_NU_STR`).
    params: a preset name in `otmann_costs.OTMANN_PARAMS` or an OtmannParams.
    chunk_size: pairs per jitted call; bounds memory.

  Returns:
    OtmannDistances of numpy float64 arrays [n_a, n_b], or [n_nu, n_a, n_b] if nu_str is a
    sequence.

  Costs are float64 when jax_enable_x64 is on (tests and the CLI turn it on); without it they are
  built in float32 before the float64 LP.

  Raises:
    ValueError / TypeError naming the bad argument.
  """
  _check(solver, chunk_size)
  _nu_values(nu_str)
  params = costs.otmann_params(params)
  batch_a = _as_batch(archs_a, "archs_a")
  batch_b = batch_a if archs_b is None else _as_batch(archs_b, "archs_b")
  if kinds.of(batch_a) != kinds.of(batch_b):
    raise ValueError(f"archs_b: kind {batch_b.kind!r} differs from archs_a's {batch_a.kind!r}; compare one kind")
  fa = host_features(batch_a, params)
  fb = None if archs_b is None else host_features(batch_b, params)
  return feature_distances(fa, fb, batch_a.kind, solver=solver, nu_str=nu_str, params=params, chunk_size=chunk_size)


def feature_distances(
  fa: costs.OtmannFeatures,
  fb: costs.OtmannFeatures | None,
  kind: str,
  *,
  solver: Solver = exact(),
  nu_str=0.5,
  params: str | costs.OtmannParams = "paper",
  chunk_size: int = 256,
) -> OtmannDistances:
  """`otmann_distances` of architectures given by their `host_features` (made with the same
  params), for callers that keep each network's features between calls; fb None: the symmetric
  matrix of fa. kind: the architectures' kind."""
  _check_features("feature_distances", kind, fa=fa, **({} if fb is None else {"fb": fb}))
  symmetric = fb is None
  fb = fa if symmetric else fb
  n_a, n_b = len(fa.n), len(fb.n)
  ia, ib = np.triu_indices(n_a, 1) if symmetric else (x.ravel() for x in np.indices((n_a, n_b)))
  nus, scalar = _nu_values(nu_str)
  options = dict(solver=solver, nu_str=nus, params=params, chunk_size=chunk_size)
  pairs = feature_pair_distances(fa, fb, ia, ib, kind, **options)
  d, d_bar = np.zeros((len(nus), n_a, n_b)), np.zeros((len(nus), n_a, n_b))
  for full, part in ((d, pairs.d), (d_bar, pairs.d_bar)):
    full[:, ia, ib] = part
    if symmetric:
      full[:, ib, ia] = part
  return OtmannDistances(d[0], d_bar[0]) if scalar else OtmannDistances(d, d_bar)


def _check_features(where: str, kind: str, **features) -> None:
  for name, f in features.items():
    if not isinstance(f, costs.OtmannFeatures):
      raise TypeError(f"{where}: {name} is a {type(f).__name__}; expected OtmannFeatures (host_features)")
  if kind not in labels.KINDS:
    raise ValueError(f"{where}: kind={kind!r}; allowed: {', '.join(labels.KINDS)}")


def feature_pair_distances(
  fa: costs.OtmannFeatures,
  fb: costs.OtmannFeatures,
  ia,
  ib,
  kind: str,
  *,
  solver: Solver = exact(),
  nu_str=0.5,
  params: str | costs.OtmannParams = "paper",
  chunk_size: int = 256,
) -> OtmannDistances:
  """`feature_distances` of the pairs (a[ia[p]], b[ib[p]]) alone: d, d_bar [P] (or [n_nu, P]),
  for callers that need a few entries of a matrix (e.g. a candidate against train points it was
  not compared with yet)."""
  _check_features("feature_pair_distances", kind, fa=fa, fb=fb)
  _check(solver, chunk_size)
  nus, scalar = _nu_values(nu_str)
  params = costs.otmann_params(params)
  ia, ib = np.asarray(ia, np.int64), np.asarray(ib, np.int64)
  if ia.shape != ib.shape or ia.ndim != 1:
    raise ValueError(f"feature_pair_distances: ia and ib have shapes {ia.shape} and {ib.shape}; expected one [P] each")
  d_bar = np.zeros((len(nus), len(ia)))
  if len(ia):
    d_bar = solver.pairs(fa, fb, ia, ib, nus, kind, params, chunk_size)
  d = d_bar * (fa.masses.sum(-1, dtype=np.float64)[ia] + fb.masses.sum(-1, dtype=np.float64)[ib])
  return OtmannDistances(d[0], d_bar[0]) if scalar else OtmannDistances(d, d_bar)


def extend_distances(old: OtmannDistances, archs_old: Archs, archs_new: Archs, **kwargs) -> OtmannDistances:
  """The symmetric matrix of archs_old + archs_new, computing only the new rows and columns.

  Args:
    old: `otmann_distances(archs_old, **kwargs)`, [n_old, n_old] or [n_nu, n_old, n_old].
    archs_old, archs_new: lists of Architecture or batches, of one kind.
    **kwargs: the keyword arguments of `otmann_distances` that produced `old`.

  Returns:
    OtmannDistances [n, n] (or [n_nu, n, n]) with n = n_old + n_new; the old block is `old`.
  """
  if not isinstance(old, OtmannDistances):
    raise TypeError(f"old: {type(old).__name__} given; expected the OtmannDistances of archs_old")
  n_old = np.shape(_as_batch(archs_old, "archs_old").labels)[0]
  nus, scalar = _nu_values(kwargs.get("nu_str", 0.5))
  expected = (n_old, n_old) if scalar else (len(nus), n_old, n_old)
  if old.d.shape != expected or old.d_bar.shape != expected:
    raise ValueError(
      f"old: distances of shape {old.d.shape}; {n_old} old architectures and nu_str"
      f" {kwargs.get('nu_str', 0.5)!r} need {expected}"
    )
  cross = otmann_distances(archs_new, archs_old, **kwargs)
  new = otmann_distances(archs_new, **kwargs)

  def join(o, c, n):
    return np.concatenate([np.concatenate([o, np.swapaxes(c, -1, -2)], -1), np.concatenate([c, n], -1)], -2)

  return OtmannDistances(join(old.d, cross.d, new.d), join(old.d_bar, cross.d_bar, new.d_bar))
