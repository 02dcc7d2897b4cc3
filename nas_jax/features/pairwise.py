"""Pairwise inputs a kernel consumes: what is computed once per pair of point sets.

Hyper-parameter fitting re-evaluates a kernel hundreds of times on the same points, so anything
that does not depend on hyper-parameters (distances, normalised values) lives here.
"""

from typing import Union

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
  "typed_dataclass",
  "ArcPair",
  "DistancePair",
  "OtmannPair",
  "Pairwise",
  "VectorPair",
  "arc_pair",
  "hamming",
  "on_device",
  "otmann_pair",
  "sq_euclidean",
  "vector_pair",
]


def _pad_axis(x: jax.Array, axis: int, size: int) -> jax.Array:
  if size < x.shape[axis]:
    raise ValueError(f"pad: size {size} is less than the current size {x.shape[axis]}")
  widths = [(0, 0)] * x.ndim
  widths[axis] = (0, size - x.shape[axis])
  if isinstance(x, jax.core.Tracer):
    return jnp.pad(x, widths)
  # On the host: an eager jnp.pad compiles a program per (shape, widths), and a search pads a
  # new train-by-candidates shape at almost every call, so those compiles would add up.
  return on_device(np.pad(np.asarray(x), widths))


def on_device(x) -> jax.Array:
  """x as a jax array: a jax array (or tracer) as it is, anything else copied from the host. Not
  jnp.asarray: in jax 0.10 that stages a numpy array through a program compiled per shape, and
  a search's pairs take a new shape at almost every call."""
  return x if isinstance(x, jax.Array) else jax.device_put(np.asarray(x))


def typed_dataclass(cls):
  """flax.struct.dataclass plus a static `pytree_type` field holding the class name.

  jax 0.10's PyTreeDef equality ignores a dataclass node's class and field names, so two classes
  with alike leaves (ExpSquared and Matern52, or two Pairwise types) had equal structures, and a
  jitted function's cache could hand one's compiled trace to the other when their hashes
  collided (seen as a flaky GP test). The static field makes the structures differ. Used by
  the Pairwise types and the kernels, which meet in the same jitted GP functions.
  """
  cls.__annotations__ = {**cls.__annotations__, "pytree_type": str}
  cls.pytree_type = flax.struct.field(pytree_node=False, default=cls.__name__, repr=False)
  return flax.struct.dataclass(cls)


@typed_dataclass
class VectorPair:
  """Raw feature vectors, for kernels with ARD length-scales: x1: [n1, D], x2: [n2, D] float."""

  x1: jax.Array
  x2: jax.Array

  @property
  def shape(self) -> tuple[int, int]:
    return self.x1.shape[0], self.x2.shape[0]

  def pad(self, n1: int, n2: int) -> "VectorPair":
    """Zero rows appended so that the pair is [n1, n2]; padded points must be masked out."""
    return VectorPair(_pad_axis(self.x1, 0, n1), _pad_axis(self.x2, 0, n2))


@typed_dataclass
class DistancePair:
  """Precomputed squared distances for isotropic kernels: sq_dist: [n1, n2] float, >= 0."""

  sq_dist: jax.Array

  @property
  def shape(self) -> tuple[int, int]:
    return self.sq_dist.shape

  def pad(self, n1: int, n2: int) -> "DistancePair":
    return DistancePair(_pad_axis(_pad_axis(self.sq_dist, 0, n1), 1, n2))


@typed_dataclass
class OtmannPair:
  """OTMANN distances (NASBOT Sec. 3) for several nu_str: d, d_bar: [n_nu, n1, n2] float, >= 0."""

  d: jax.Array
  d_bar: jax.Array

  @property
  def shape(self) -> tuple[int, int]:
    return self.d.shape[1], self.d.shape[2]

  def pad(self, n1: int, n2: int) -> "OtmannPair":
    return OtmannPair(*(_pad_axis(_pad_axis(x, 1, n1), 2, n2) for x in (self.d, self.d_bar)))


@typed_dataclass
class ArcPair:
  """Conditional parameters for the arc kernel (Swersky et al. 2013, Sec. 2.2).

  u1: [n1, P], u2: [n2, P] float: values rescaled to [0, 1] by their bounds, 0 where inactive;
  active1: [n1, P], active2: [n2, P] bool.
  """

  u1: jax.Array
  active1: jax.Array
  u2: jax.Array
  active2: jax.Array

  @property
  def shape(self) -> tuple[int, int]:
    return self.u1.shape[0], self.u2.shape[0]

  def pad(self, n1: int, n2: int) -> "ArcPair":
    return ArcPair(
      _pad_axis(self.u1, 0, n1),
      _pad_axis(self.active1, 0, n1),
      _pad_axis(self.u2, 0, n2),
      _pad_axis(self.active2, 0, n2),
    )


#: Any of the pair types a featurizer gives a surrogate.
Pairwise = Union[VectorPair, DistancePair, OtmannPair, ArcPair]


def _matrix(name: str, x, dim: int | None = None) -> np.ndarray:
  x = np.asarray(x, dtype=float)
  if x.ndim != 2:
    raise ValueError(f"{name}: shape {x.shape} is not 2-d; expected [n, D]")
  if dim is not None and x.shape[1] != dim:
    raise ValueError(f"{name}: shape {x.shape} has D={x.shape[1]}; expected D={dim}")
  if not np.all(np.isfinite(x)):
    raise ValueError(f"{name}: contains non-finite values; padded rows must be finite too")
  return x


def vector_pair(x1, x2=None) -> VectorPair:
  """Pair of vector sets. x1: [n1, D]; x2: [n2, D], defaults to x1. Raises ValueError."""
  x1 = _matrix("x1", x1)
  x2 = x1 if x2 is None else _matrix("x2", x2, x1.shape[1])
  return VectorPair(on_device(x1), on_device(x2))


def sq_euclidean(x1, x2=None) -> DistancePair:
  """Squared Euclidean distances [n1, n2] of x1: [n1, D] and x2: [n2, D] (default x1)."""
  x1 = _matrix("x1", x1)
  x2 = x1 if x2 is None else _matrix("x2", x2, x1.shape[1])
  return DistancePair(on_device(((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1)))


def hamming(x1, x2=None) -> DistancePair:
  """Hamming distances [n1, n2] of binary encodings x1: [n1, D] and x2: [n2, D] (default x1).

  For 0/1 vectors the Hamming distance equals the squared Euclidean one, so ExpSquared on this
  pair is the isotropic Hamming kernel exp(-d_H / (2 l^2)).
  """
  x1 = _matrix("x1", x1)
  x2 = x1 if x2 is None else _matrix("x2", x2, x1.shape[1])
  for name, x in (("x1", x1), ("x2", x2)):
    if not np.all((x == 0) | (x == 1)):
      raise ValueError(f"{name}: has entries other than 0 and 1; hamming() needs binary encodings")
  return DistancePair(on_device((x1[:, None, :] != x2[None, :, :]).sum(-1).astype(float)))


def otmann_pair(d, d_bar) -> OtmannPair:
  """Wraps OTMANN distances d, d_bar: [n_nu, n1, n2], e.g. from features.otmann.

  Raises ValueError on shapes, negative or non-finite entries (padding must be finite too).
  """
  d, d_bar = np.asarray(d, dtype=float), np.asarray(d_bar, dtype=float)
  for name, x in (("d", d), ("d_bar", d_bar)):
    if x.ndim != 3:
      raise ValueError(f"{name}: shape {x.shape} is not 3-d; expected [n_nu, n1, n2]")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
      raise ValueError(f"{name}: has negative or non-finite entries; distances must be >= 0")
  if d.shape != d_bar.shape:
    raise ValueError(f"d_bar: shape {d_bar.shape} differs from d's {d.shape}; they must match")
  return OtmannPair(on_device(d), on_device(d_bar))


def _unit_values(name: str, values, active, lower: np.ndarray, upper: np.ndarray):
  values = np.asarray(values, dtype=float)
  active = np.asarray(active)
  if values.ndim != 2 or values.shape[1] != lower.shape[0]:
    raise ValueError(f"values{name}: shape {values.shape}; expected [n, P] with P={lower.shape[0]}")
  if active.shape != values.shape or active.dtype != bool:
    raise ValueError(f"active{name}: {active.dtype} of shape {active.shape}; expected bool {values.shape}")
  u = np.where(active, (values - lower) / (upper - lower), 0.0)
  if not np.all(np.isfinite(u)):
    raise ValueError(f"values{name}: an active value is not finite")
  return on_device(u), on_device(active)


def arc_pair(values1, active1, values2=None, active2=None, *, lower, upper) -> ArcPair:
  """Pair for the arc kernel. values: [n, P] float; active: [n, P] bool; lower, upper: [P].

  Inactive values are ignored (set to 0), so they can never change a kernel value. values2 and
  active2 default to values1 and active1. Raises ValueError on shapes or on lower >= upper.
  """
  lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
  if lower.ndim != 1 or lower.shape != upper.shape:
    raise ValueError(f"lower, upper: shapes {lower.shape}, {upper.shape}; expected both [P]")
  if not np.all(lower < upper):
    raise ValueError(f"lower, upper: {lower}, {upper}; need lower < upper for every parameter")
  if (values2 is None) != (active2 is None):
    raise ValueError("values2, active2: give both or neither")
  u1, a1 = _unit_values("1", values1, active1, lower, upper)
  if values2 is None:
    return ArcPair(u1, a1, u1, a1)
  u2, a2 = _unit_values("2", values2, active2, lower, upper)
  return ArcPair(u1, a1, u2, a2)
