"""Points of the conditional space of chain MLPs (Swersky et al. 2013, Sec. 2.1) as padded arrays plus a mask:
the point type, its checks, keys, JSON, unit-cube view and the MLP it builds.

A point holds a network depth, two training parameters and a block of four parameters per layer
up to `max_depth`; layer i's block is active iff depth >= i. Inactive values carry no meaning:
keys, JSON, `to_unit` and training ignore them, and canonical points (`make_point`) hold the
parameter's lower bound there so that equal points have equal arrays. The space over these points
(sampling, mutation, neighbours) is `nas_jax.spaces.conditional`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, NamedTuple, Sequence

import flax.struct
import jax
import numpy as np

from nas_jax.arch.architecture import Architecture
from nas_jax.arch.json_io import show

__all__ = [
  "ACTIVATIONS",
  "SHARED",
  "LAYER_FIELDS",
  "KIND",
  "ConditionalSpec",
  "ConditionalPoint",
  "conditional_spec",
  "is_int",
  "activity",
  "check_point",
  "point_values",
  "make_point",
  "stack_points",
  "canonical_key",
  "key_digest",
  "point_to_json",
  "point_from_json",
  "to_unit",
  "to_architecture",
]


ACTIVATIONS = ("relu", "tanh", "logistic", "elu")  # mlp label names; index = the activation value


#: The `kind` of a conditional point's JSON.
KIND = "conditional"


# (name, lower, upper, integer); SHARED is always active, LAYER_FIELDS repeat per layer.
_SHARED = (("depth", 1, None, True), ("log10_lr", -4.0, -1.0, False), ("log2_batch", 4, 7, True))


_LAYER = (
  ("log2_units", 3, 9, True),
  ("activation", 0, len(ACTIVATIONS) - 1, True),
  ("dropout", 0.0, 0.5, False),
  ("log10_l2", -6.0, -2.0, False),
)


#: The parameters every conditional point has, active at any depth.
SHARED = tuple(f[0] for f in _SHARED)


#: The parameters of each layer, active for the layers up to the point's depth.
LAYER_FIELDS = tuple(f[0] for f in _LAYER)


class ConditionalSpec(NamedTuple):
  """The parameters of the space, P = 3 + 4 max_depth of them.

  Attributes:
    names: [P] parameter names: depth, log10_lr, log2_batch, then layer{i}.<field> per layer.
    lower, upper: [P] float64 bounds (inclusive).
    integer: [P] bool, integer-valued parameters.
    layer: [P] int, 0 for always active, i >= 1 for active iff depth >= i.
    max_depth: the largest depth.
  """

  names: tuple[str, ...]
  lower: np.ndarray
  upper: np.ndarray
  integer: np.ndarray
  layer: np.ndarray
  max_depth: int


@flax.struct.dataclass
class ConditionalPoint:
  """One point (values [P] float32, active [P] bool) or a batch ([n, P] each)."""

  values: jax.Array
  active: jax.Array


def is_int(v: Any) -> bool:
  """Whether `v` is a Python or numpy integer (a bool is not)."""
  return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def conditional_spec(max_depth: int = 3) -> ConditionalSpec:
  """The spec of networks of 1..max_depth layers.

  Layout: 0 depth in [1, max_depth], 1 log10_lr in [-4, -1], 2 log2_batch in [4, 7] (batch
  16..128); then for layer i = 1..max_depth, at 3 + 4 (i - 1): log2_units in [3, 9] (8..512
  units), activation in [0, 3] (an index into ACTIVATIONS), dropout in [0, 0.5], log10_l2 in
  [-6, -2]. Integer-valued: depth, log2_batch, log2_units, activation.
  """
  if not is_int(max_depth) or max_depth < 1:
    raise ValueError(f"max_depth: {show(max_depth)}; expected an integer >= 1")
  max_depth = int(max_depth)
  rows = [(n, lo, max_depth if hi is None else hi, integer, 0) for n, lo, hi, integer in _SHARED]
  rows += [(f"layer{i}.{n}", lo, hi, integer, i) for i in range(1, max_depth + 1) for n, lo, hi, integer in _LAYER]
  names, lower, upper, integer, layer = zip(*rows)
  return ConditionalSpec(
    names,
    np.array(lower, np.float64),
    np.array(upper, np.float64),
    np.array(integer, bool),
    np.array(layer, np.int64),
    max_depth,
  )


def activity(values, spec: ConditionalSpec):
  """Which parameters the depth values[..., 0] activates. values: [..., P]; returns [..., P] bool
  (numpy or jax, as `values`)."""
  return spec.layer <= values[..., :1]


def _fmt(v: float) -> str:
  """6 significant digits; + 0.0 prints -0.0 as 0."""
  return f"{float(v) + 0.0:g}"


def _exact(v: float) -> str:
  """The shortest decimal that gives finite `v` back: as float32 where v is one, else as float64."""
  if v == round(v):
    return str(int(v))
  return str(np.float32(v)) if float(np.float32(v)) == v else repr(float(v))


def _check_value(name: str, v: float, lo: float, hi: float, integer: bool) -> None:
  if not np.isfinite(v):
    raise ValueError(f"{name}: {v} is not finite; expected a number in [{_fmt(lo)}, {_fmt(hi)}]")
  if not lo <= v <= hi:
    raise ValueError(f"{name}: {_exact(v)} is outside [{_fmt(lo)}, {_fmt(hi)}]")
  if integer and v != np.round(v):
    raise ValueError(f"{name}: {_exact(v)} is not an integer; {name} takes the integers {_fmt(lo)}..{_fmt(hi)}")


def _check_row(values: np.ndarray, active: np.ndarray, spec: ConditionalSpec, where: str) -> None:
  for i, name in enumerate(spec.names):
    _check_value(where + name, float(values[i]), spec.lower[i], spec.upper[i], bool(spec.integer[i]))
  wrong = np.flatnonzero(active != activity(values, spec))
  if wrong.size:
    state = "active" if active[wrong[0]] else "inactive"
    raise ValueError(f"{where}{spec.names[wrong[0]]} is marked {state} but depth is {int(values[0])}")


def check_point(point: Any, spec: ConditionalSpec) -> None:
  """Raises unless `point` is a valid point (values [P]) or batch (values [n, P]) of `spec`.

  Every value, active or not, must lie in its bounds (integral for integer parameters), and
  `active` must be what the depth activates.

  Raises:
    TypeError: not a ConditionalPoint.
    ValueError: naming the parameter (and the row of a batch): shapes, dtypes, bounds, integrality, activity.
  """
  if not isinstance(point, ConditionalPoint):
    raise TypeError(f"point: {type(point).__name__} given; expected a ConditionalPoint")
  values, active = np.asarray(point.values), np.asarray(point.active)
  n_params = len(spec.names)
  if values.ndim not in (1, 2) or values.shape[-1] != n_params or active.shape != values.shape:
    raise ValueError(
      f"point: values {values.shape} and active {active.shape}; expected both [{n_params}]"
      f" or both [n, {n_params}] for max_depth={spec.max_depth}"
    )
  if values.dtype != np.float32 or active.dtype != bool:
    raise ValueError(f"point: values {values.dtype} and active {active.dtype}; expected float32 and bool")
  if values.ndim == 1:
    _check_row(values, active, spec, "")
  for r in range(values.shape[0] if values.ndim == 2 else 0):
    _check_row(values[r], active[r], spec, f"points[{r}]: ")


def point_values(point: Any, spec: ConditionalSpec, where: str) -> tuple[np.ndarray, np.ndarray]:
  """(values, active) of one valid point [P]; `where` names the caller in the error."""
  check_point(point, spec)
  if np.ndim(point.values) != 1:
    raise ValueError(f"{where}: values {np.shape(point.values)}; expected one point [P]")
  return np.asarray(point.values), np.asarray(point.active)


def make_point(values: np.ndarray, spec: ConditionalSpec) -> ConditionalPoint:
  """The canonical point of `values` [P]: inactive values set to their lower bounds."""
  active = activity(np.asarray(values, np.float64), spec)
  return ConditionalPoint(np.where(active, values, spec.lower).astype(np.float32), active)


def stack_points(points: Sequence[ConditionalPoint]) -> ConditionalPoint:
  """Stacks n single points into a batch (values, active [n, P])."""
  if not points or any(not isinstance(p, ConditionalPoint) or np.ndim(p.values) != 1 for p in points):
    raise ValueError("points: expected a non-empty sequence of single ConditionalPoints")
  return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *points)


def canonical_key(point: ConditionalPoint, spec: ConditionalSpec) -> str:
  """ "conditional:name=value,..." over the active parameters of one point; continuous values to 6
  significant digits, so float32 noise below that does not make points distinct."""
  values, active = point_values(point, spec, "canonical_key")
  parts = [
    f"{n}={int(v) if integer else _fmt(v)}" for n, v, integer, on in zip(spec.names, values, spec.integer, active) if on
  ]
  return f"{KIND}:" + ",".join(parts)


def key_digest(point: ConditionalPoint, spec: ConditionalSpec) -> int:
  """A 31-bit integer of the canonical key: seeds per-point randomness (jax.random.fold_in)."""
  return int(hashlib.blake2b(canonical_key(point, spec).encode(), digest_size=4).hexdigest(), 16) >> 1


def _json_number(v: float, integer: bool) -> int | float:
  # str() of a float32 is its shortest round-tripping decimal: readable and exact.
  return int(v) if integer else float(str(np.float32(v)))


def point_to_json(point: ConditionalPoint, spec: ConditionalSpec) -> dict:
  """{"kind": "conditional", "params": {name: value}} over the active parameters of one point."""
  values, active = point_values(point, spec, "to_json")
  return {
    "kind": KIND,
    "params": {
      n: _json_number(v, integer) for n, v, integer, on in zip(spec.names, values, spec.integer, active) if on
    },
  }


def point_from_json(obj: Any, spec: ConditionalSpec) -> ConditionalPoint:
  """The canonical point of `point_to_json`'s output; ValueError naming the field otherwise."""
  if not isinstance(obj, Mapping) or set(obj) != {"kind", "params"}:
    raise ValueError(f"point: {show(obj)}; expected an object with keys kind, params")
  if obj["kind"] != KIND:
    raise ValueError(f"kind: {show(obj['kind'])}; this space holds {show(KIND)} points")
  params = obj["params"]
  if not isinstance(params, Mapping):
    raise ValueError(f"params: {show(params)}; expected an object {{name: number}}")
  for name, v in params.items():
    if name not in spec.names:
      raise ValueError(f"params.{name}: unknown parameter; allowed: {', '.join(spec.names)}")
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
      raise ValueError(f"params.{name}: {show(v)} is not a number")
    if not -1e300 < float(min(max(v, -1e301), 1e301)) < 1e300:  # clipped first: float(10**400) overflows
      raise ValueError(f"params.{name}: {show(v)} is out of range; see the space's bounds")
  if "depth" not in params:
    raise ValueError("params.depth: missing; every point needs a depth")
  _check_value("params.depth", float(params["depth"]), 1, spec.max_depth, True)
  values = np.array([params.get(n, lo) for n, lo in zip(spec.names, spec.lower)], np.float64)
  active = activity(values, spec)
  for name, on in zip(spec.names, active):
    if on and name not in params:
      raise ValueError(f"params.{name}: missing; depth {int(values[0])} activates it")
    if name in params and not on:
      raise ValueError(f"params.{name}: given but depth is {int(values[0])}, which leaves it inactive; omit it")
  for i, name in enumerate(spec.names):
    _check_value(f"params.{name}", values[i], spec.lower[i], spec.upper[i], bool(spec.integer[i]))
  return make_point(values, spec)


def to_unit(points: ConditionalPoint, spec: ConditionalSpec) -> tuple[np.ndarray, np.ndarray]:
  """The arc kernel's inputs (`ArcPair`): values rescaled by their bounds.

  Args:
    points: a batch, values and active [n, P].

  Returns:
    u: [n, P] float64 in [0, 1], (value - lower) / (upper - lower), 0 where inactive;
    active: [n, P] bool.
  """
  check_point(points, spec)
  values, active = np.asarray(points.values, np.float64), np.asarray(points.active)
  if values.ndim != 2:
    raise ValueError(f"points: values {values.shape}; to_unit takes a batch [n, P] (see stack_points)")
  span = spec.upper - spec.lower  # 0 for depth when max_depth is 1: a constant maps to 0
  return np.where(active & (span > 0), (values - spec.lower) / np.where(span > 0, span, 1.0), 0.0), active


def to_architecture(point: ConditionalPoint, spec: ConditionalSpec, decision: str = "softmax") -> Architecture:
  """The point's network as an mlp layer graph: ip -> D dense layers -> decision -> op.

  Layer i has 2**log2_units units and its activation's label. The learning rate, batch size,
  dropout and L2 weight are training settings the layer graph cannot represent; they are dropped.

  Args:
    point: one point.
    decision: "softmax" (classification) or "linear" (regression).
  """
  if decision not in ("softmax", "linear"):
    raise ValueError(f"decision: {show(decision)}; allowed: softmax, linear")
  values, _ = point_values(point, spec, "to_architecture")
  at = {n: v for n, v in zip(spec.names, values)}
  hidden = [
    {"label": ACTIVATIONS[int(at[f"layer{i}.activation"])], "units": 2 ** int(at[f"layer{i}.log2_units"])}
    for i in range(1, int(values[0]) + 1)
  ]
  layers = [{"label": "ip"}, *hidden, {"label": decision}, {"label": "op"}]
  return Architecture.from_json(
    {"kind": "mlp", "layers": layers, "edges": [[i, i + 1] for i in range(len(layers) - 1)]}
  )
