"""The JSON interchange format of architectures, and every validity rule, checked in plain Python.

Format: `{"kind": "cnn"|"mlp"|"autokeras", "layers": [{"label": "conv3", "units": 64, "stride": 1}, ...],
"edges": [[0, 1], ...]}`; `units` and `stride` are omitted where a layer has none. Any JSON value
gives either a valid Architecture or a ValueError whose message names the field and what is
allowed; nothing here is traced.
"""

from __future__ import annotations

import json
import reprlib
from typing import Any, NamedTuple

import numpy as np

from nas_jax.arch import graph, main_chain
from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture, pad

__all__ = ["Limits", "FLAT", "show", "from_json", "is_valid", "to_json", "graph_json", "host_masses", "image_sizes"]

Role = labels_lib.Role
# Plain ints: IntEnum attribute lookups dominate the validation time of a network otherwise.
_IP, _OP, _RES, _POOL, _FC, _DECISION, _GAP = (
  int(r) for r in (Role.IP, Role.OP, Role.RES, Role.POOL, Role.FC, Role.DECISION, Role.GAP)
)
_IMAGE_ROLES = (int(Role.CONV), _RES, _POOL)
_POOL_STRIDE = 2
FLAT = 0  # image-size code of flattened data (after fc or a decision layer)
# Values quoted in error messages are cut to a readable size: a message never echoes a 10 MB label
# or recurses through a deeply nested input.
_SHOW = reprlib.Repr()  # attributes, not keyword arguments: those need Python 3.12
_SHOW.maxlevel, _SHOW.maxstring, _SHOW.maxother, _SHOW.maxlong = 3, 80, 80, 40
_SHOW.maxlist = _SHOW.maxtuple = _SHOW.maxdict = _SHOW.maxset = 8


def show(value: Any) -> str:
  """`repr(value)` shortened for an error message: strings to 80 characters, 8 items a level,
  3 levels, at most 160 characters in all (the middle cut)."""
  text = _SHOW.repr(value)
  return text if len(text) <= 160 else f"{text[:120]}...{text[-37:]}"


class Limits(NamedTuple):
  """Search-space limits (NASBOT App. B.3)."""

  max_layers: int = 60
  max_edges: int = 200
  max_degree: int = 5
  max_mass: float = 1e8
  min_units: int = 8
  max_units: int = 1024


def _is_int(x) -> bool:
  return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _parse_layer(kind: str, i: int, layer: Any, limits: Limits) -> tuple[int, int, int]:
  where = f"layers[{i}]"
  if not isinstance(layer, dict):
    raise ValueError(f"{where}: {show(layer)} is not an object; expected {{'label': ..., ...}}")
  extra = set(layer) - {"label", "units", "stride"}
  if extra:
    raise ValueError(f"{where}: unknown keys {sorted(extra)}; allowed: label, units, stride")
  if "label" not in layer:
    raise ValueError(f"{where}: missing 'label'")
  name = layer["label"]
  if not isinstance(name, str):
    raise ValueError(f"{where}.label: {show(name)} is not a string")
  table = labels_lib.label_table(kind)
  if name not in table.names:
    raise ValueError(f"{where}.label: {show(name)} is not a {kind} label; allowed: {', '.join(table.names)}")
  lid = table.names.index(name)
  role = Role(int(table.role[lid]))
  units = 0
  if table.has_units[lid]:
    if "units" not in layer:
      raise ValueError(f"{where}.units: missing; a {name} layer needs an integer unit count")
    units = layer["units"]
    if not _is_int(units) or not limits.min_units <= units <= limits.max_units:
      raise ValueError(
        f"{where}.units: {show(units)} is not allowed; expected an integer in [{limits.min_units}, {limits.max_units}]"
      )
  elif "units" in layer:
    raise ValueError(f"{where}.units: a {name} layer has no units; omit 'units'")
  stride = 0
  if table.has_stride[lid]:
    stride = layer.get("stride", 1)
    if not _is_int(stride) or stride not in (1, 2):
      raise ValueError(f"{where}.stride: {show(stride)} is not allowed; a {name} layer has stride 1 or 2")
  elif role == Role.POOL:
    stride = layer.get("stride", _POOL_STRIDE)
    if not _is_int(stride) or stride != _POOL_STRIDE:
      raise ValueError(f"{where}.stride: {show(stride)} is not allowed; pooling layers have stride 2")
  elif "stride" in layer:
    raise ValueError(f"{where}.stride: a {name} layer has no stride; omit 'stride'")
  return lid, units, stride


def _parse_edges(edges: Any, n: int, limits: Limits) -> np.ndarray:
  if not isinstance(edges, list):
    raise ValueError(f"edges: {show(edges)} is not a list; expected a list of [from, to] pairs")
  if len(edges) > limits.max_edges:
    raise ValueError(f"edges: {len(edges)} edges; at most {limits.max_edges} are allowed")
  adj = np.zeros((n, n), bool)
  for k, e in enumerate(edges):
    if not (isinstance(e, list) and len(e) == 2 and all(_is_int(v) for v in e)):
      raise ValueError(f"edges[{k}]: {show(e)} is not a pair of layer indices [from, to]")
    i, j = e
    if not (0 <= i < n and 0 <= j < n):
      raise ValueError(f"edges[{k}]: {show(e)} is out of range; layer indices are 0..{n - 1}")
    if i == j:
      raise ValueError(f"edges[{k}]: {show(e)} is a self-loop; an edge must join two different layers")
    if adj[i, j]:
      raise ValueError(f"edges[{k}]: {show(e)} is a duplicate edge")
    adj[i, j] = True
  return adj


def _reach(kids: list[list[int]], start: int) -> np.ndarray:
  seen = np.zeros(len(kids), bool)
  stack = [start]
  while stack:
    u = stack.pop()
    if not seen[u]:
      seen[u] = True
      stack.extend(kids[u])
  return seen


def _check_graph(kind: str, lids: np.ndarray, adj: np.ndarray, limits: Limits) -> list[int]:
  """Structure rules (NASBOT Sec. 2.2, App. B.2; our reading where it is silent); returns a topological order."""
  table = labels_lib.label_table(kind)
  role = table.role[lids]
  names = [table.names[i] for i in lids]
  parents, kids = graph.adjacency_lists(adj)
  for r, name in ((_IP, "ip"), (_OP, "op")):
    where_r = np.flatnonzero(role == r)
    if len(where_r) != 1:
      raise ValueError(f"layers: found {len(where_r)} '{name}' layers {where_r.tolist()}; exactly one is required")
  ip, op = int(np.flatnonzero(role == _IP)[0]), int(np.flatnonzero(role == _OP)[0])
  if parents[ip]:
    raise ValueError(f"layers[{ip}]: the ip layer has parents {parents[ip]}; ip takes none")
  if kids[op]:
    raise ValueError(f"layers[{op}]: the op layer has children {kids[op]}; op feeds none")
  order = graph.host_topological_order(adj)
  if order is None:
    raise ValueError("edges: the graph has a cycle; an architecture must be a DAG")
  on_path = _reach(kids, ip) & _reach(parents, op)
  if not on_path.all():
    bad = int(np.flatnonzero(~on_path)[0])
    raise ValueError(f"layers[{bad}] ({names[bad]}): not on any path from ip to op")
  for u in range(len(lids)):
    for deg, what in ((len(kids[u]), "out"), (len(parents[u]), "in")):
      if deg > limits.max_degree:
        raise ValueError(f"layers[{u}] ({names[u]}): {what}-degree {deg}; at most {limits.max_degree} is allowed")
  decision = np.flatnonzero(role == _DECISION).tolist()
  if not decision:
    raise ValueError(f"layers: no decision layer; a {kind} needs at least one before op")
  if len({names[d] for d in decision}) > 1:
    raise ValueError(f"layers: decision layers mix labels {sorted({names[d] for d in decision})}; use one")
  for d in decision:
    if kids[d] != [op]:
      raise ValueError(f"layers[{d}] ({names[d]}): a decision layer feeds op only; its children are {kids[d]}")
  for p in parents[op]:
    if role[p] != _DECISION:
      raise ValueError(f"layers[{p}] ({names[p]}): feeds op, but only decision layers may")
  return order


def image_sizes(kind: str, lids: np.ndarray, strides: np.ndarray, adj: np.ndarray) -> np.ndarray:
  """Downsampling factor of each layer's output (1 = input resolution, `FLAT` once flattened).

  Checks the CNN rules on the way: images concatenated at a layer share one size, and conv, res
  and pooling layers need images. MLPs are `FLAT` everywhere.

  Args:
    kind: "cnn" or "mlp"; lids, strides: [n] int; adj: [n, n] bool, a DAG.

  Returns:
    [n] int64.

  Raises:
    ValueError naming the first layer that breaks a rule.
  """
  size = np.full(len(lids), FLAT, np.int64)
  if kind != "cnn":
    return size
  table = labels_lib.label_table(kind)
  parents, _ = graph.adjacency_lists(adj)
  for u in graph.host_topological_order(adj):
    role, name = int(table.role[lids[u]]), table.names[lids[u]]
    if role == _IP:
      size[u] = 1
      continue
    incoming = {int(size[p]) for p in parents[u]}
    if len(incoming) > 1:
      desc = ", ".join(f"{p}: {'flat' if size[p] == FLAT else f'1/{size[p]}'}" for p in parents[u])
      raise ValueError(
        f"layers[{u}] ({name}): parents give images of different sizes ({desc}); a concatenation needs one size"
      )
    (s,) = incoming
    if role in _IMAGE_ROLES:
      if s == FLAT:
        raise ValueError(
          f"layers[{u}] ({name}): its input is already flattened by an fc or decision layer; {name} needs an image"
        )
      size[u] = s * strides[u]
  return size


def host_masses(
  kind: str, lids: np.ndarray, units: np.ndarray, adj: np.ndarray, order: list[int], params: graph.MassParams
) -> np.ndarray:
  """Layer masses in plain numpy along a topological order (the reference for `graph.layer_masses`)."""
  table = labels_lib.label_table(kind)
  roles = table.role[lids].tolist()
  has_units = table.has_units[lids].tolist()
  coeff = {_RES: params.res_mass_factor, _FC: params.fc_mass_coeff}
  parents, _ = graph.adjacency_lists(adj)
  out, mass = [0.0] * len(lids), [0.0] * len(lids)
  for u in order:
    incoming = sum(out[p] for p in parents[u])
    if roles[u] == _IP:
      out[u] = 1.0
    elif roles[u] in (_POOL, _GAP):
      out[u] = mass[u] = incoming
    elif has_units[u]:
      out[u], mass[u] = float(units[u]), coeff.get(roles[u], 1.0) * float(units[u]) * incoming
  m_np = max(params.zeta * sum(mass), params.min_nonproc_mass)
  n_dec = max(roles.count(_DECISION), 1)
  ends = {_IP: m_np, _OP: m_np, _DECISION: m_np / n_dec}
  return np.array([ends.get(r, m) for r, m in zip(roles, mass)])


def from_json(
  obj: Any, *, pad_to: int | None = None, limits: Limits | None = None, mass_params: graph.MassParams | str = "paper"
) -> Architecture:
  """Validated Architecture from the interchange JSON (dict, or a JSON string).

  Args:
    obj: the JSON value.
    pad_to: N; defaults to the number of layers.
    limits: search-space limits; `Limits()` (the paper's) by default.
    mass_params: the mass rules used for the `max_mass` limit.

  Raises:
    ValueError naming the field, the bad value and what is allowed.
  """
  limits = Limits() if limits is None else limits
  if isinstance(obj, (str, bytes)):
    try:
      obj = json.loads(obj)
    except json.JSONDecodeError as e:
      raise ValueError(f"architecture: not valid JSON ({e})") from None
  if not isinstance(obj, dict):
    raise ValueError(f"architecture: {type(obj).__name__} given; expected an object with keys kind, layers, edges")
  missing = {"kind", "layers", "edges"} - set(obj)
  extra = set(obj) - {"kind", "layers", "edges"}
  if missing or extra:
    raise ValueError(f"architecture: keys {sorted(map(str, obj))}; expected exactly kind, layers, edges")
  kind = obj["kind"]
  if kind not in labels_lib.JSON_KINDS:
    raise ValueError(
      f"kind: {show(kind)} is unknown; allowed: {', '.join(labels_lib.JSON_KINDS)}"
      " (cell kinds are built by nas_jax.arch.cell)"
    )
  layers = obj["layers"]
  if not isinstance(layers, list) or not layers:
    raise ValueError(f"layers: {show(layers)} is not a non-empty list of layer objects")
  if len(layers) > limits.max_layers:
    raise ValueError(f"layers: {len(layers)} layers; at most {limits.max_layers} are allowed")
  n = len(layers)
  if pad_to is not None and (not _is_int(pad_to) or pad_to < n):
    raise ValueError(f"pad_to: {show(pad_to)} is less than the number of layers ({n})")
  parsed = np.array([_parse_layer(kind, i, l, limits) for i, l in enumerate(layers)], np.int32).reshape(n, 3)
  lids, units, strides = parsed.T
  adj = _parse_edges(obj["edges"], n, limits)
  if kind == main_chain.KIND:
    main_chain.check_arrays(lids, adj)
    order = graph.host_topological_order(adj)
  else:
    order = _check_graph(kind, lids, adj, limits)
    image_sizes(kind, lids, strides, adj)
  tm = host_masses(kind, lids, units, adj, order, graph.mass_params(mass_params)).sum()
  if tm > limits.max_mass:
    raise ValueError(f"architecture: total mass {tm:.6g} exceeds the limit {limits.max_mass:.6g}")
  arch = Architecture(labels=lids, units=units, strides=strides, adjacency=adj, mask=np.ones(n, bool), kind=kind)
  return pad(arch, n if pad_to is None else pad_to)


def is_valid(obj: Any, limits: Limits | None = None) -> bool:
  """Whether `from_json(obj, limits=limits)` accepts `obj`."""
  try:
    from_json(obj, limits=limits)
  except ValueError:
    return False
  return True


def to_json(arch: Architecture) -> dict[str, Any]:
  """Interchange JSON of one architecture: layers in slot order, edges sorted."""
  if np.ndim(arch.labels) != 1:
    raise ValueError(
      f"to_json: expected one architecture (labels [N]), got shape {np.shape(arch.labels)}; use unstack()"
    )
  n = int(np.asarray(arch.mask).sum())
  lids, units, strides = (np.asarray(x)[:n] for x in (arch.labels, arch.units, arch.strides))
  return graph_json(arch.kind, lids, units, strides, np.asarray(arch.adjacency)[:n, :n])


def graph_json(kind: str, lids: np.ndarray, units: np.ndarray, strides: np.ndarray, adj: np.ndarray) -> dict:
  """Interchange JSON of n layers given as host arrays (lids, units, strides [n] int; adj [n, n]
  bool), unvalidated: layers in slot order, edges sorted."""
  table = labels_lib.label_table(kind)
  layers = []
  for lid, u, s in zip(lids.tolist(), units.tolist(), strides.tolist()):
    layer = {"label": table.names[lid]}
    if table.has_units[lid]:
      layer["units"] = u
    if table.has_stride[lid]:
      layer["stride"] = s
    layers.append(layer)
  edges = [[int(i), int(j)] for i, j in zip(*np.nonzero(adj))]
  return {"kind": kind, "layers": layers, "edges": edges}
