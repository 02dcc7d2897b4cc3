"""NASBOT's structure modifiers 5-9 (NASBOT App. B.2, Table 6) as host-side graph edits.

Each is a `graph_edit.Edit`: its eligible sites, and the edit at one site. `modifiers.py` draws,
validates and registers them; the choices the paper leaves open are documented per edit.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.host_graph import HostGraph
from nas_jax.arch.json_io import Limits
from nas_jax.spaces.graph_edit import FLAT, Edit, append_layers, image_sizes, reachability

__all__ = ["STRUCTURE_EDITS", "swap_targets", "DUP_MIN_NODES", "DUP_STOP_PROB", "WEDGE_STRIDE2_PROB"]

Role = labels_lib.Role
# dup_path stopping rule (paper silent; the authors' code): a path of at least 4 layers, then stop with
# probability 0.2 after each further step, or at op.
DUP_MIN_NODES = 4
DUP_STOP_PROB = 0.2
# A wedged conv/res layer gets stride 2 with this probability (paper silent; the authors' code).
WEDGE_STRIDE2_PROB = 0.05
_FRAMEWORK = (Role.IP, Role.OP, Role.DECISION)


def _processing(g: HostGraph) -> np.ndarray:
  """[n] bool, the processing layers (not ip, op or decision)."""
  return ~np.isin(g.roles, _FRAMEWORK)


def _input_sizes(g: HostGraph, size: np.ndarray) -> np.ndarray:
  """[n] image size entering each layer (the size of any parent; -1 for ip)."""
  first_parent = np.argmax(g.adj, axis=0)
  has_parent = g.adj.any(axis=0)
  return np.where(has_parent, size[first_parent], -1)


# --- 5. dup_path ---------------------------------------------------------------------------------


def _dup_sites(g: HostGraph, limits: Limits) -> list[tuple]:
  if g.n >= limits.max_layers:
    return []
  # A walk from a decision layer reaches op at once and would copy nothing (k = 2).
  return [(int(u),) for u in np.flatnonzero(~np.isin(g.roles, (Role.OP, Role.DECISION)))]


def _dup_apply(g: HostGraph, site: tuple, rng: np.random.Generator, limits: Limits):
  """Walks u1 -> u2 -> ... -> uk over uniform random children and copies u2..u_{k-1} as a
  parallel branch u1 -> ~u2 -> ... -> ~u_{k-1} -> uk (k - 2 layers, k - 1 edges). Copies keep
  labels, units and strides, so the branch meets uk with the image size of u_{k-1}."""
  roles = g.roles
  path = [site[0]]
  while roles[path[-1]] != Role.OP:
    path.append(int(rng.choice(np.flatnonzero(g.adj[path[-1]]))))
    if len(path) >= DUP_MIN_NODES and rng.random() < DUP_STOP_PROB:
      break
  # Cut a walk whose copies would not fit under max_layers; the cut path is still a path.
  path = path[: limits.max_layers - g.n + 2]
  copies = path[1:-1]
  out = append_layers(g, g.labels[copies], g.units[copies], g.strides[copies])
  chain = [path[0], *range(g.n, g.n + len(copies)), path[-1]]
  out.adj[chain[:-1], chain[1:]] = True
  return out


# --- 6. remove_layer -----------------------------------------------------------------------------


def _remove_sites(g: HostGraph, limits: Limits) -> list[tuple]:
  del limits  # eligibility does not depend on the limits; validation checks the result
  return [(int(x),) for x in np.flatnonzero(_processing(g))]


def _remove_apply(g: HostGraph, site: tuple, rng: np.random.Generator, limits: Limits):
  """Deletes layer x; a parent whose only child was x gets an edge to a random child of x, and a
  child whose only parent was x gets an edge from a random parent of x (Table 6)."""
  del limits
  x = site[0]
  parents, children = np.flatnonzero(g.adj[:, x]), np.flatnonzero(g.adj[x])
  adj = g.adj.copy()
  for p in parents[g.adj[parents].sum(axis=1) == 1]:
    adj[p, rng.choice(children)] = True
  for c in children[g.adj[:, children].sum(axis=0) == 1]:
    adj[rng.choice(parents), c] = True
  keep = np.arange(g.n) != x
  return HostGraph(g.kind, g.labels[keep], g.units[keep], g.strides[keep], adj[keep][:, keep])


# --- 7. skip -------------------------------------------------------------------------------------


def _pools_needed(g: HostGraph) -> np.ndarray:
  """[n, n] int: avg-pool layers a skip u -> v needs (0 if sizes match), -1 if impossible.

  A CNN skip from a larger image to a smaller one goes through log2(ratio) stride-2 avg-pools
  (App. B.2, Fig. 8); from a smaller image, or between flat and image data, it is impossible.
  """
  size = image_sizes(g)
  s_u, s_v = size[:, None], _input_sizes(g, size)[None, :]
  down = (s_u != FLAT) & (s_v != FLAT) & (s_v > s_u)
  ratio = np.log2(np.where(down, s_v, 1) / np.where(down, s_u, 1))
  return np.where(s_u == s_v, 0, np.where(down, np.rint(ratio).astype(int), -1))


def _skip_sites(g: HostGraph, limits: Limits) -> list[tuple]:
  """Pairs (u, v), u before v in some topological order (v does not reach u), (u, v) not in E,
  whose new edge keeps both degrees within the limit and fits the pools it needs."""
  roles, adj = g.roles, g.adj
  # op's parents must be decision layers and a decision layer feeds op only (NASBOT Sec. 2.2).
  out_ok = ~np.isin(roles, (Role.OP, Role.DECISION)) & (adj.sum(1) < limits.max_degree)
  in_ok = ~np.isin(roles, (Role.IP, Role.OP)) & (adj.sum(0) < limits.max_degree)
  pools = _pools_needed(g)
  ok = out_ok[:, None] & in_ok[None, :] & ~adj & ~reachability(adj).T & ~np.eye(g.n, dtype=bool)
  ok &= (pools >= 0) & (g.n + pools <= limits.max_layers)
  return [((int(u), int(v)),) for u, v in zip(*np.nonzero(ok))]


def _skip_apply(g: HostGraph, site: tuple, rng: np.random.Generator, limits: Limits):
  """Adds u -> v, through a chain of stride-2 avg-pools when u's image is larger."""
  del rng, limits
  u, v = site[0]
  k = int(_pools_needed(g)[u, v])
  pool = labels_lib.label_id(g.kind, "avg-pool") if k else 0
  out = append_layers(g, [pool] * k, [0] * k, [2] * k)
  chain = [u, *range(g.n, g.n + k), v]
  out.adj[chain[:-1], chain[1:]] = True
  return out


# --- 8. swap_label -------------------------------------------------------------------------------


def swap_targets(kind: str) -> dict[int, tuple[int, ...]]:
  """Label id -> the label ids a `swap_label` may turn it into (our natural reading of NASBOT Table 6).

  CNN: conv/res k -> conv/res with the same or a neighbouring kernel (|dk| = 2), max-pool <->
  avg-pool; fc has no compatible label. MLP: an activation -> any other activation (rectifiers
  and sigmoids alike). Units and strides carry over: every swap keeps whether a layer has them.
  """
  t = labels_lib.label_table(kind)
  out = {}
  for a, role in enumerate(t.role):
    if role in (Role.CONV, Role.RES):
      ok = np.isin(t.role, (Role.CONV, Role.RES)) & (np.abs(t.kernel - t.kernel[a]) <= 2)
    elif role in (Role.POOL, Role.ACT):
      ok = t.role == role
    else:
      continue
    ok[a] = False
    out[a] = tuple(int(b) for b in np.flatnonzero(ok))
  return out


def _swap_sites(g: HostGraph, limits: Limits) -> list[tuple]:
  del limits
  targets = swap_targets(g.kind)
  return [(int(x), b) for x in np.flatnonzero(_processing(g)) for b in targets.get(int(g.labels[x]), ())]


def _swap_apply(g: HostGraph, site: tuple, rng: np.random.Generator, limits: Limits):
  del rng, limits
  x, new = site
  labels = g.labels.copy()
  labels[x] = new
  return g._replace(labels=labels)


# --- 9. wedge_layer ------------------------------------------------------------------------------


def _wedge_labels(g: HostGraph) -> tuple[tuple[int, ...], tuple[int, ...]]:
  """(labels allowed after an image, labels allowed after flat data) for a wedged layer."""
  t = labels_lib.label_table(g.kind)
  proc = np.flatnonzero(~np.isin(t.role, _FRAMEWORK))
  if g.kind != "cnn":
    return tuple(proc.tolist()), tuple(proc.tolist())
  # In a CNN, after an fc layer (flat data) only fc can follow (our reading of Table 6).
  return tuple(proc.tolist()), (labels_lib.label_id("cnn", "fc"),)


def _wedge_sites(g: HostGraph, limits: Limits) -> list[tuple]:
  """(edge, label) pairs; edges into op (from a decision layer) are never split (our reading of Table 6)."""
  if g.n >= limits.max_layers:
    return []
  roles, size = g.roles, image_sizes(g)
  after_image, after_flat = _wedge_labels(g)
  sites = []
  fc = labels_lib.label_id("cnn", "fc") if g.kind == "cnn" else -1
  for u, v in zip(*np.nonzero(g.adj)):
    if roles[v] == Role.OP:
      continue
    opts = after_flat if size[u] == FLAT else after_image
    # An fc on an image flattens it: only an fc or a decision layer may take that.
    drop_fc = size[u] != FLAT and roles[v] not in (Role.FC, Role.DECISION)
    sites += [((int(u), int(v)), lab) for lab in opts if not (drop_fc and lab == fc)]
  return sites


def _nearest_units(g: HostGraph, u: int, v: int, limits: Limits) -> int:
  """Mean units of the endpoints that have them; else of the nearest unit layers (undirected
  hops from u and v); else the geometric middle of the allowed range. Rounded and clipped."""
  has, und = g.has_units, g.adj | g.adj.T
  seen = np.zeros(g.n, bool)
  level = np.zeros(g.n, bool)
  level[[u, v]] = True
  while level.any() and not (level & has).any():
    seen |= level
    level = und[level].any(axis=0) & ~seen
  found = level & has
  mean = g.units[found].mean() if found.any() else np.sqrt(limits.min_units * limits.max_units)
  return int(np.clip(np.rint(mean), limits.min_units, limits.max_units))


def _wedge_apply(g: HostGraph, site: tuple, rng: np.random.Generator, limits: Limits):
  """Replaces u -> v by u -> w -> v; w's units are the mean of its neighbours' (Table 6)."""
  (u, v), lab = site
  t = labels_lib.label_table(g.kind)
  units = _nearest_units(g, u, v, limits) if t.has_units[lab] else 0
  if t.role[lab] == Role.POOL:
    stride = 2
  elif t.has_stride[lab]:
    stride = 2 if rng.random() < WEDGE_STRIDE2_PROB else 1
  else:
    stride = 0
  out = append_layers(g, [lab], [units], [stride])
  out.adj[u, v] = False
  out.adj[[u, g.n], [g.n, v]] = True
  return out


STRUCTURE_EDITS = MappingProxyType(
  {
    "dup_path": Edit(_dup_sites, _dup_apply, "no start layer, or {max_layers} layers already"),
    "remove_layer": Edit(_remove_sites, _remove_apply, "no processing layer to remove"),
    "skip": Edit(_skip_sites, _skip_apply, "no pair (u, v) can take a new edge within the limits"),
    "swap_label": Edit(_swap_sites, _swap_apply, "no processing layer with a compatible label"),
    "wedge_layer": Edit(_wedge_sites, _wedge_apply, "no edge to split, or {max_layers} layers already"),
  }
)
