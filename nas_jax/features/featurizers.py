"""The featurizers of nas_jax, each built by its own constructor with its own options.

A constructor returns a featurizer part: a function `space -> Featurizer` that reads what it needs
of the space (`Space.layer_graph`, `Space.conditional_spec`, the points themselves) and says in one
line when the space does not offer it.

otmann        OTMANN distances d, d_bar at several nu_str (NASBOT) of the points' layer graphs
              (any space with `layer_graph`: layer graphs, the Auto-Keras family's networks, the
              conditional space's chain MLPs, NB201/NB101 cells). Networks met twice are solved once.
edit          Auto-Keras' edit distance, Bourgain-embedded (anchors fixed by the train size).
encoding      one of BANANAS' cell encodings (0/1 vectors for path, trunc_path, path_iso,
              adj_onehot; also the ensemble's inputs).
arc           the arc kernel's (unit values, activity) of conditional points.
poor_man      the poor man's embedding: unit values, inactive ones at -1 (also vectors).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import conditional_point as cond_point
from nas_jax.arch.cell import Cell
from nas_jax.arch.host_graph import canonical_key as arch_key
from nas_jax.features import bourgain, encodings
from nas_jax.features import edit_distance as ed
from nas_jax.features.featurizer import (
  by_identity,
  Featurizer,
  arc_to_pair,
  distance_featurizer,
  otmann_to_pair,
  vector_featurizer,
  vector_to_pair,
)
from nas_jax.features.otmann import (
  KERNEL_NU_STR,
  check_options,
  feature_pair_distances,
  feature_rows,
  host_features,
  stack_features,
)
from nas_jax.features.otmann_costs import OtmannFeatures
from nas_jax.features.otmann_solver import Solver, bound, exact
from nas_jax.features.otmann_store import OtmannStore
from nas_jax.features.pairwise import ArcPair, DistancePair, OtmannPair, VectorPair, sq_euclidean

__all__ = ["BINARY_ENCODINGS", "POOR_MAN_FILL", "FeaturizerPart", "otmann", "edit", "encoding", "arc", "poor_man"]

# A featurizer part: the featurizer of a space's points, built on that space.
FeaturizerPart = Callable[[Any], Featurizer]
_ANCHOR_SEED = 123  # Auto-Keras' code reseeds with 123 on every embedding: anchors depend on n only
POOR_MAN_FILL = -1.0  # Swersky et al. 2013, Sec. 3: the paper's value for inactive parameters
# Encodings whose vectors are 0/1 (a Hamming kernel counts their mismatches); adj_code, adj_cont are not.
BINARY_ENCODINGS = ("path", "trunc_path", "path_iso", "adj_onehot")


def _needs(space: Any, field: str, name: str, what: str) -> Any:
  """The space's `field`, or a ValueError saying that featurizer `name` needs it."""
  value = getattr(space, field)
  if value is None:
    raise ValueError(f"featurizer {name!r} reads {what} (Space.{field}); the {space.name!r} space has none")
  return value


def _probe(space: Any) -> Any:
  """One point of the space, to learn what its points are (a random one: a space's initial pool
  may be empty within its limits)."""
  return space.sample(jax.random.key(0), 1)[0]


class OtmannItem(NamedTuple):
  """What the OTMANN featurizer keeps of a point: its network's canonical key and kind, the
  network's host features (`otmann.feature_rows`), built once per point, and the point's key."""

  key: str
  kind: str
  features: OtmannFeatures
  point_key: Any


def otmann(
  *, nu_str=KERNEL_NU_STR, solver: Solver = exact(), params: str = "paper", chunk_size: int = 256
) -> FeaturizerPart:
  """OTMANN distances (d, d_bar) [n_nu, n, n] -> OtmannPair; options of `otmann_distances` (solver:
  a value of `otmann_solver`, e.g. sinkhorn(epsilon=1e-2)). Its `screen` gives uncached candidates
  OTMANN's lower bound instead (`otmann_solver.bound()`), no LP."""
  check_options(solver=solver, nu_str=nu_str, params=params, chunk_size=chunk_size)
  nus = tuple(float(v) for v in np.atleast_1d(nu_str))
  return lambda space: _otmann(space, nus, solver, params, chunk_size)


def _otmann(space: Any, nus: tuple, solver: Solver, params: str, chunk_size: int) -> Featurizer:
  to_arch = _needs(space, "layer_graph", "otmann", "a layer-graph view of the points")
  kind = to_arch(_probe(space)).kind  # one kind of network per space
  # The featurizer's own: pairs solved and points featurized, a pair of networks solved once.
  store = OtmannStore(len(nus), by_network=True)

  def prepare(points: list) -> list:
    point_keys = [space.canonical_key(p) for p in points]
    known = [store.item(p) for p in point_keys]
    todo = [i for i, k in enumerate(known) if k is None]
    archs = {i: to_arch(points[i]) for i in todo}
    rows = iter(feature_rows(host_features(list(archs.values()), params)) if todo else ())
    for i in todo:
      known[i] = (arch_key(archs[i]), next(rows))
    return [OtmannItem(k, kind, f, p) for p, (k, f) in zip(point_keys, known)]

  def solve(codes: np.ndarray) -> np.ndarray:
    # Each pair is solved with the network of the smaller key as the source: an LP and its
    # transpose agree only to ~1e-13, so a pair has one value whichever side meets it first
    # (and a matrix built in one call is exactly symmetric).
    lo, hi = store.split(codes)
    nets, local = np.unique(np.concatenate([lo, hi]), return_inverse=True)
    i, j = local[: len(codes)], local[len(codes) :]
    flip = store.keys(lo) > store.keys(hi)
    src, dst = np.where(flip, j, i), np.where(flip, i, j)
    feats = stack_features([store.network_features(n) for n in nets.tolist()])
    out = feature_pair_distances(
      feats, feats, src, dst, kind, solver=solver, nu_str=nus, params=params, chunk_size=chunk_size
    )
    return np.stack([out.d.T, out.d_bar.T], 1)  # [P, 2, n_nu]

  def dist_pairs(a: list, b: list, ia: np.ndarray, ib: np.ndarray) -> tuple:
    store.make_room(len(ia))
    items = a + b
    ids = store.point_ids([x.point_key for x in items], [x.key for x in items], [x.features for x in items])
    i, j = ids[ia], ids[len(a) + ib]
    codes, inverse = np.unique(store.codes(i, j), return_inverse=True)
    lo, hi = store.split(codes)
    rows = store.rows(codes)
    same = store.keys(lo) == store.keys(hi)
    new = (rows < 0) & ~same
    if new.any():
      store.put(codes[new], solve(codes[new]))
      rows[new] = store.rows(codes[new])
    values = np.zeros((len(codes), 2, len(nus)))  # one network: distance 0, as OTMANN's
    values[rows >= 0] = store.values(rows[rows >= 0])
    return values[inverse, 0].T, values[inverse, 1].T

  def dist(a: list, b: list) -> tuple:
    ia, ib = (x.ravel() for x in np.indices((len(a), len(b))))
    return tuple(x.reshape(len(nus), len(a), len(b)) for x in dist_pairs(a, b, ia, ib))

  def bound_pairs(a: list, b: list, ia: np.ndarray, ib: np.ndarray) -> tuple:
    # Bounds are cheap and never stored: the screen's memo keeps those of recent candidates.
    feats = stack_features([x.features for x in a + b])
    out = feature_pair_distances(
      feats, feats, ia, len(a) + ib, kind, solver=bound(), nu_str=nus, params=params, chunk_size=chunk_size
    )
    return out.d, out.d_bar

  return distance_featurizer(
    "otmann",
    space.canonical_key,
    prepare,
    dist,
    otmann_to_pair,
    OtmannPair,
    len(nus),
    dist_pairs=dist_pairs,
    screen_pairs=bound_pairs,
  )


def edit(
  *,
  num_classes: int = 10,
  lam: float = 1.0,
  layer_match: str = "separate",
  bourgain_repeat: str = "intended",
) -> FeaturizerPart:
  """Auto-Keras' edit distances, embedded by Bourgain anchors drawn for the train size n (spec
  4.3-4.4): DistancePairs of squared distances between the coordinates (exp(-rho) reads them).
  It reads the networks of the Auto-Keras family (`Space.layer_graph` of a morph space)."""
  if layer_match not in ed.LAYER_MATCHES:
    raise ValueError(f"edit featurizer: layer_match={layer_match!r}; allowed: {', '.join(ed.LAYER_MATCHES)}")
  if bourgain_repeat not in bourgain.BOURGAIN_REPEATS:
    raise ValueError(
      f"edit featurizer: bourgain_repeat={bourgain_repeat!r}; allowed: {', '.join(bourgain.BOURGAIN_REPEATS)}"
    )

  def dist(a: list, b: list) -> tuple:
    return (ed.edit_distances(ed.stack_descriptors(a), ed.stack_descriptors(b), lam=lam, layer_match=layer_match),)

  @by_identity  # the same train distances for every batch of candidates of a search's proposal
  def train_embedding(d_train: tuple) -> tuple[Callable, np.ndarray, DistancePair]:
    (dt,) = d_train
    n = dt.shape[0]
    if n > 1:
      anchors = bourgain.bourgain_anchors(jax.random.key(_ANCHOR_SEED), n, repeat=bourgain_repeat)
      embed = lambda d: bourgain.bourgain_embed(d, anchors)
    else:
      embed = lambda d: np.asarray(d, float)[:, :1]
    phi = embed(dt)
    return embed, phi, sq_euclidean(phi)

  def to_pair(d_train: tuple, d_cross: tuple) -> tuple[DistancePair, DistancePair]:
    embed, phi, train = train_embedding(d_train)
    (dc,) = d_cross
    return train, sq_euclidean(embed(dc) if len(dc) else phi[:0], phi)

  def build(space: Any) -> Featurizer:
    to_arch = _needs(space, "layer_graph", "edit", "the points' networks")
    prepare = lambda pts: [ed.arch_descriptor(to_arch(p), num_classes) for p in pts]
    prepare([_probe(space)])  # a ValueError now when the networks are not of the Auto-Keras family
    return distance_featurizer("edit", space.canonical_key, prepare, dist, to_pair, DistancePair, None)

  return build


def encoding(name: str) -> FeaturizerPart:
  """BANANAS' cell encoding `name` (`encodings.ENCODINGS`) as a vector featurizer of cells."""
  if name not in encodings.ENCODINGS:
    raise ValueError(f"encoding: {name!r} is unknown; allowed: {', '.join(encodings.ENCODINGS)}")

  def build(space: Any) -> Featurizer:
    probe = _probe(space)
    if not isinstance(probe, Cell):
      raise ValueError(f"featurizer {name!r} encodes cells; the {space.name!r} space holds {type(probe).__name__}s")
    dim = encodings.encoding_size(name, probe.kind)
    encode = lambda pts: (np.asarray(encodings.encode(name, list(pts)), np.float64),)
    return vector_featurizer(
      name, space.canonical_key, encode, vector_to_pair, VectorPair, dim, binary=name in BINARY_ENCODINGS
    )

  return build


def _unit_values(spec: cond_point.ConditionalSpec) -> Callable:
  """`values [m, P] -> (u, active)`, `conditional.to_unit` as a traceable function of raw values."""
  lower, span, layer = jnp.asarray(spec.lower), jnp.asarray(spec.upper - spec.lower), jnp.asarray(spec.layer)

  def unit(values):
    active = layer <= values[:, :1]
    return jnp.where(active & (span > 0), (values - lower) / jnp.where(span > 0, span, 1.0), 0.0), active

  return unit


def arc() -> FeaturizerPart:
  """(u, active) [n, P] of conditional points -> ArcPair (Swersky et al. 2013, Sec. 2.2)."""
  return _arc


def _arc(space: Any) -> Featurizer:
  spec = _needs(space, "conditional_spec", "arc", "conditional parameters")
  encode = lambda pts: cond_point.to_unit(cond_point.stack_points(list(pts)), spec)
  return vector_featurizer(
    "arc",
    space.canonical_key,
    encode,
    arc_to_pair,
    ArcPair,
    len(spec.names),
    encode_values=_unit_values(spec),
  )


def poor_man() -> FeaturizerPart:
  """Unit values with inactive ones at POOR_MAN_FILL = -1 (Swersky et al. 2013, Sec. 3) -> VectorPair."""
  return _poor_man


def _poor_man(space: Any) -> Featurizer:
  spec = _needs(space, "conditional_spec", "poor_man", "conditional parameters")
  unit = _unit_values(spec)

  def encode(pts) -> tuple:
    u, active = cond_point.to_unit(cond_point.stack_points(list(pts)), spec)
    return (np.where(active, u, POOR_MAN_FILL),)

  def encode_values(values) -> tuple:
    u, active = unit(values)
    return (jnp.where(active, u, POOR_MAN_FILL),)

  return vector_featurizer(
    "poor_man",
    space.canonical_key,
    encode,
    vector_to_pair,
    VectorPair,
    len(spec.names),
    encode_values=encode_values,
  )
