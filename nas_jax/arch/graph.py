"""NASBOT graph quantities on padded architectures: layer masses, path lengths, topological order.

Every function is pure, jit-able and works under `jax.vmap` over a batch. Graph recursions are
solved by N rounds of relaxation over the adjacency matrix: on a DAG, a layer at topological
depth k is exact after k rounds whatever the start, so no host-side sort is needed and the
result does not depend on the order of the layer slots.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture

__all__ = [
  "MassParams",
  "MASS_PARAMS",
  "mass_params",
  "layer_masses",
  "total_mass",
  "path_lengths",
  "PATH_FEATURES",
  "topological_order",
  "adjacency_lists",
  "host_topological_order",
]

Role = labels_lib.Role
PATH_FEATURES = ("sp_ip", "lp_ip", "rw_ip", "sp_op", "lp_op", "rw_op")


class MassParams(NamedTuple):
  """Constants of the layer-mass rules (NASBOT Sec. 3; App. A.3). Hashable, so a static argument.

  Attributes:
    zeta: fraction of the processing mass given to ip, op and (together) the decision layers.
    fc_mass_coeff: multiplier of a CNN fc layer's `units * in` (0.1 in the experiments; Fig. 1
      of the paper was drawn with 1.0).
    res_mass_factor: multiplier of a res layer's `units * in` (the text says 2; every figure and
      the authors' code use 1).
    min_nonproc_mass: floor on the ip/op/decision mass (0 in the text, 100 in the figures).
  """

  zeta: float = 0.1
  fc_mass_coeff: float = 0.1
  res_mass_factor: float = 2.0
  min_nonproc_mass: float = 100.0


#: Layer-mass parameter sets by name. "paper": the rules the paper states (res x2), with the floor
#: its figures use and the text is silent on. "nasbot_code": the authors' code
#: (github.com/kirthevasank/nasbot, nn/neural_network.py: no res doubling).
MASS_PARAMS = MappingProxyType(
  {
    "paper": MassParams(),
    "nasbot_code": MassParams(res_mass_factor=1.0),
  }
)


def mass_params(name_or_params: str | MassParams) -> MassParams:
  """Resolves a preset name ("paper", "nasbot_code") or passes a MassParams through."""
  if isinstance(name_or_params, MassParams):
    return name_or_params
  if name_or_params not in MASS_PARAMS:
    raise ValueError(f"mass params: {name_or_params!r} is unknown; choose one of: {', '.join(MASS_PARAMS)}")
  return MASS_PARAMS[name_or_params]


def _float():
  return jnp.zeros(()).dtype  # float64 under jax_enable_x64, else float32


def _roles(arch: Architecture) -> jax.Array:
  return jnp.asarray(labels_lib.label_table(arch.kind).role)[arch.labels]


def _edges(arch: Architecture) -> jax.Array:
  """[N, N] float adjacency with padded slots cut out."""
  m = arch.mask
  return (arch.adjacency & m[:, None] & m[None, :]).astype(_float())


@functools.partial(jax.jit, static_argnames=("params",))
def layer_masses(arch: Architecture, params: MassParams = MassParams()) -> jax.Array:
  """Layer masses lm(u) (NASBOT Sec. 3; App. A.3).

  Kinds in `labels.CELL_LAYER_KINDS` sum their inputs: in(u) is the smallest parent output, not
  the total, and out(ip) is the ip's units (the cell input's channels) instead of 1.

  Args:
    arch: one architecture (vmap for a batch).
    params: mass constants; `MASS_PARAMS["paper"]` by default.

  Returns:
    [N] float masses, 0 on padded slots.
  """
  n = arch.num_slots
  role = _roles(arch)
  a = _edges(arch)
  units = arch.units.astype(_float())
  is_ip = (role == Role.IP) & arch.mask
  is_pool = (role == Role.POOL) | (role == Role.GAP)  # both pass their input's mass on
  has_units = jnp.asarray(labels_lib.label_table(arch.kind).has_units)[arch.labels]
  summing = arch.kind in labels_lib.CELL_LAYER_KINDS
  ip_out = units if summing else 1.0

  def incoming_of(out):
    if not summing:
      return a.T @ out  # concatenation: channels add up
    # A sum needs equal shapes (NB101 cuts larger summands down); no parent (ip, padding) gives 0.
    smallest = jnp.where(a > 0, out[:, None], jnp.inf).min(0)
    return jnp.where(jnp.isfinite(smallest), smallest, 0.0)

  def body(_, out):
    incoming = incoming_of(out)
    return jnp.where(is_ip, ip_out, jnp.where(has_units, units, jnp.where(is_pool, incoming, 0.0)))

  out = jax.lax.fori_loop(0, n, body, jnp.zeros(n, _float()))
  incoming = incoming_of(out)
  coeff = jnp.select(
    [role == Role.RES, role == Role.FC, has_units],
    [params.res_mass_factor, params.fc_mass_coeff, 1.0],
    0.0,
  )
  proc = jnp.where(is_pool, incoming, coeff * units * incoming) * arch.mask
  m_np = jnp.maximum(params.zeta * proc.sum(), params.min_nonproc_mass)
  is_dec = (role == Role.DECISION) & arch.mask
  n_dec = jnp.maximum(is_dec.sum(), 1)
  ends = ((role == Role.IP) | (role == Role.OP)) & arch.mask
  return proc + jnp.where(ends, m_np, 0.0) + jnp.where(is_dec, m_np / n_dec, 0.0)


def total_mass(arch: Architecture, params: MassParams = MassParams()) -> jax.Array:
  """tm(G) = sum of layer masses; [] float (or [B] under vmap)."""
  return layer_masses(arch, params).sum(-1)


def _relax(pred: jax.Array, is_src: jax.Array, w: jax.Array, mask: jax.Array):
  """Shortest, longest and random-walk weighted lengths from a source, over predecessors.

  Args:
    pred: [N, N] float, pred[p, u] = 1 when p is a predecessor of u in the walk direction.
    is_src: [N] bool, the source layer (length 0).
    w: [G, N] float, weight of each hop into u, one row per layer group.
    mask: [N] bool.

  Returns:
    sp, lp, rw: [G, N] float.
  """
  n = mask.shape[0]
  has_pred = pred.sum(0) > 0
  indeg = jnp.maximum(pred.sum(0), 1.0)
  big = jnp.asarray(1e9, w.dtype)
  fixed = is_src | ~mask | ~has_pred

  def body(_, state):
    sp, lp, rw = state
    edge = pred[None] > 0
    sp_n = w + jnp.where(edge, sp[:, :, None], big).min(1)
    lp_n = w + jnp.where(edge, lp[:, :, None], -big).max(1)
    rw_n = w + (rw @ pred) / indeg
    keep = lambda x: jnp.where(fixed[None], 0.0, x)
    return keep(sp_n), keep(lp_n), keep(rw_n)

  zeros = jnp.zeros_like(w)
  return jax.lax.fori_loop(0, n, body, (zeros, zeros, zeros))


@jax.jit
def path_lengths(arch: Architecture) -> jax.Array:
  """Grouped path-length features (NASBOT Sec. 3; App. A.3, Algorithm 1).

  Group 0 ("all") counts hops; group g counts only hops whose weighted layer is in g: from ip,
  hop p -> u weighs 1[u in g]; towards op, hop u -> c weighs 1[u in g]. Random walks average over
  parents (from ip) and children (to op), as in Algorithm 1.

  Args:
    arch: one architecture (vmap for a batch).

  Returns:
    [G, 6, N] float, G = len(labels.group_names(kind)); features in `PATH_FEATURES` order
    (sp_ip, lp_ip, rw_ip, sp_op, lp_op, rw_op); 0 on padded slots.
  """
  role = _roles(arch)
  a = _edges(arch)
  groups = jnp.asarray(labels_lib.label_table(arch.kind).groups)[:, arch.labels]
  w = (groups & arch.mask[None]).astype(_float())
  from_ip = _relax(a, (role == Role.IP) & arch.mask, w, arch.mask)
  to_op = _relax(a.T, (role == Role.OP) & arch.mask, w, arch.mask)
  return jnp.stack(from_ip + to_op, axis=1)


@jax.jit
def topological_order(arch: Architecture) -> jax.Array:
  """[N] int32 slot indices: real layers in a topological order (by longest hop count from ip,
  ties by slot), then padded slots."""
  depth = path_lengths(arch)[0, 1]
  key = jnp.where(arch.mask, depth, jnp.inf)
  return jnp.argsort(key, stable=True).astype(jnp.int32)


def adjacency_lists(adjacency: np.ndarray) -> tuple[list[list[int]], list[list[int]]]:
  """(parents, children) index lists, ascending, of a dense [n, n] bool adjacency on the host."""
  n = adjacency.shape[0]
  parents, children = [[] for _ in range(n)], [[] for _ in range(n)]
  for u, v in zip(*(x.tolist() for x in np.nonzero(adjacency))):
    children[u].append(v)
    parents[v].append(u)
  return parents, children


def host_topological_order(adjacency: np.ndarray) -> list[int] | None:
  """Kahn's order of a dense [n, n] bool adjacency on the host; None if it has a cycle."""
  parents, children = adjacency_lists(adjacency)
  indeg = [len(p) for p in parents]
  ready = [i for i, d in enumerate(indeg) if d == 0]
  order = []
  while ready:
    u = ready.pop(0)
    order.append(u)
    for v in children[u]:
      indeg[v] -= 1
      if indeg[v] == 0:
        ready.append(v)
  return order if len(order) == len(parents) else None
