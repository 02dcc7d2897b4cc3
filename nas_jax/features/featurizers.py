"""The featurizers of nas_jax by name, and the spaces each accepts (`FEATURIZERS`).

otmann        OTMANN distances d, d_bar at several nu_str (NASBOT) of the point's layer graph:
              cnn/mlp graphs as they are, the Auto-Keras family's networks, the conditional
              space's chain MLPs (`conditional.to_architecture`) and NB201/NB101 cells
              (`cell_graphs.cell_layer_graph`). Networks met twice are solved once.
edit          Auto-Keras' edit distance, Bourgain-embedded (anchors fixed by the train size).
path, trunc_path, path_iso, adj_onehot, adj_code, adj_cont
              BANANAS' cell encodings (0/1 vectors; also the ensemble's inputs).
arc           the arc kernel's (unit values, activity) of conditional points.
poor_man      the poor man's embedding: unit values, inactive ones at -1 (also vectors).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import cell_graphs
from nas_jax.arch import conditional_point as cond_point
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
from nas_jax.features.pairwise import ArcPair, DistancePair, OtmannPair, VectorPair, sq_euclidean

__all__ = [
  "BINARY_FEATURIZERS",
  "FEATURIZERS",
  "POOR_MAN_FILL",
  "OTMANN_SPACES",
  "make_featurizer",
  "conditional_spec_of",
  "featurizers_for",
]

OTMANN_SPACES = ("cnn", "mlp", "autokeras", cond_point.KIND, "nb201", "nb101")
_CELL_KINDS = ("nb201", "nb101")
_ANCHOR_SEED = 123  # Auto-Keras' code reseeds with 123 on every embedding: anchors depend on n only


def conditional_spec_of(space: Any) -> cond_point.ConditionalSpec:
  """The spec of a conditional space, from its points' size P = len(SHARED) + 4 max_depth."""
  n_params = len(space.initial(1)[0].values)
  return cond_point.conditional_spec((n_params - len(cond_point.SHARED)) // len(cond_point.LAYER_FIELDS))


def _to_architecture(space: Any) -> Callable:
  """point -> the layer graph OTMANN reads, by space kind."""
  if space.kind in ("cnn", "mlp"):
    return lambda p: p
  if space.kind == "autokeras":
    return lambda p: p.arch
  if space.kind == cond_point.KIND:
    spec = conditional_spec_of(space)
    return lambda p: cond_point.to_architecture(p, spec)
  return cell_graphs.cell_layer_graph


class OtmannItem(NamedTuple):
  """What the OTMANN featurizer keeps of a point: its network's canonical key and kind, and the
  network's host features (`otmann.feature_rows`), built once per point."""

  key: str
  kind: str
  features: OtmannFeatures


def otmann_featurizer(
  space: Any, *, nu_str=KERNEL_NU_STR, solver: str = "exact", params: str = "paper", chunk_size: int = 256
) -> Featurizer:
  """OTMANN distances (d, d_bar) [n_nu, n, n] -> OtmannPair; options of `otmann_distances`."""
  check_options(solver=solver, nu_str=nu_str, params=params, chunk_size=chunk_size)
  nus = tuple(float(v) for v in np.atleast_1d(nu_str))
  to_arch = _to_architecture(space)

  def prepare(points: list) -> list:
    archs = [to_arch(p) for p in points]
    keys = [arch_key(a) for a in archs]
    first: dict[str, int] = {}  # one feature row per distinct network
    for i, k in enumerate(keys):
      first.setdefault(k, i)
    rows = dict(zip(first, feature_rows(host_features([archs[i] for i in first.values()], params))))
    return [OtmannItem(k, a.kind, rows[k]) for k, a in zip(keys, archs)]

  def dist_pairs(a: list, b: list, ia: np.ndarray, ib: np.ndarray) -> tuple:
    # Each unordered pair of distinct networks is solved once (conditional points share
    # networks, cells share graphs), the network with the smaller key as the source: an LP and
    # its transpose agree only to ~1e-13, so this keeps a matrix built in one call (a replay's)
    # exactly symmetric, with half the LPs.
    nets, inv = _unique(a + b)
    order = sorted(range(len(nets)), key=lambda k: nets[k].key)
    rank = np.empty(len(nets), np.int64)
    rank[order] = np.arange(len(nets))
    i, j = rank[inv[ia]], rank[inv[len(a) + ib]]
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    pairs, inverse = np.unique(lo * len(nets) + hi, return_inverse=True)
    feats = stack_features([nets[k].features for k in order])
    out = feature_pair_distances(
      feats,
      feats,
      pairs // len(nets),
      pairs % len(nets),
      a[0].kind,
      solver=solver,
      nu_str=nus,
      params=params,
      chunk_size=chunk_size,
    )
    same = lo == hi  # one network: distance 0, as OTMANN's
    return tuple(np.where(same, 0.0, x[:, inverse]) for x in out)

  def dist(a: list, b: list) -> tuple:
    ia, ib = (x.ravel() for x in np.indices((len(a), len(b))))
    return tuple(x.reshape(len(nus), len(a), len(b)) for x in dist_pairs(a, b, ia, ib))

  return distance_featurizer(
    "otmann",
    OTMANN_SPACES,
    space.canonical_key,
    prepare,
    dist,
    otmann_to_pair,
    OtmannPair,
    len(nus),
    dist_pairs=dist_pairs,
  )


def _unique(items: list) -> tuple[list, np.ndarray]:
  """(distinct networks by canonical key, [n] index of each input among them)."""
  index, unique = {}, []
  inverse = np.empty(len(items), np.int64)
  for i, x in enumerate(items):
    if x.key not in index:
      index[x.key] = len(unique)
      unique.append(x)
    inverse[i] = index[x.key]
  return unique, inverse


def edit_featurizer(
  space: Any,
  *,
  num_classes: int = 10,
  lam: float = 1.0,
  layer_match: str = "separate",
  bourgain_repeat: str = "intended",
) -> Featurizer:
  """Auto-Keras' edit distances, embedded by Bourgain anchors drawn for the train size n (spec
  4.3-4.4): DistancePairs of squared distances between the coordinates (exp(-rho) reads them)."""
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

  prepare = lambda pts: [ed.arch_descriptor(p.arch, num_classes) for p in pts]
  return distance_featurizer("edit", ("autokeras",), space.canonical_key, prepare, dist, to_pair, DistancePair, None)


def encoding_featurizer(name: str) -> Callable[..., Featurizer]:
  """A factory of the cell encoding `name` as a vector featurizer."""

  def make(space: Any) -> Featurizer:
    dim = encodings.encoding_size(name, space.kind)
    encode = lambda pts: (np.asarray(encodings.encode(name, list(pts)), np.float64),)
    return vector_featurizer(name, _CELL_KINDS, space.canonical_key, encode, vector_to_pair, VectorPair, dim)

  make.__name__ = f"{name}_featurizer"
  return make


def _unit_values(spec: cond_point.ConditionalSpec) -> Callable:
  """`values [m, P] -> (u, active)`, `conditional.to_unit` as a traceable function of raw values."""
  lower, span, layer = jnp.asarray(spec.lower), jnp.asarray(spec.upper - spec.lower), jnp.asarray(spec.layer)

  def unit(values):
    active = layer <= values[:, :1]
    return jnp.where(active & (span > 0), (values - lower) / jnp.where(span > 0, span, 1.0), 0.0), active

  return unit


def arc_featurizer(space: Any) -> Featurizer:
  """(u, active) [n, P] of conditional points -> ArcPair (arc_kernel.md 2)."""
  spec = conditional_spec_of(space)
  encode = lambda pts: cond_point.to_unit(cond_point.stack_points(list(pts)), spec)
  return vector_featurizer(
    "arc",
    (cond_point.KIND,),
    space.canonical_key,
    encode,
    arc_to_pair,
    ArcPair,
    len(spec.names),
    encode_values=_unit_values(spec),
  )


def poor_man_featurizer(space: Any) -> Featurizer:
  """Unit values with inactive ones at POOR_MAN_FILL = -1 (arc_kernel.md 9) -> VectorPair."""
  spec = conditional_spec_of(space)
  unit = _unit_values(spec)

  def encode(pts) -> tuple:
    u, active = cond_point.to_unit(cond_point.stack_points(list(pts)), spec)
    return (np.where(active, u, POOR_MAN_FILL),)

  def encode_values(values) -> tuple:
    u, active = unit(values)
    return (jnp.where(active, u, POOR_MAN_FILL),)

  return vector_featurizer(
    "poor_man",
    (cond_point.KIND,),
    space.canonical_key,
    encode,
    vector_to_pair,
    VectorPair,
    len(spec.names),
    encode_values=encode_values,
  )


POOR_MAN_FILL = -1.0  # arc_kernel.md 9: the paper's value for inactive parameters
# Featurizers of 0/1 vectors (a Hamming kernel counts their mismatches); adj_code, adj_cont are not.
BINARY_FEATURIZERS = ("path", "trunc_path", "path_iso", "adj_onehot")

FEATURIZERS: dict[str, tuple[tuple, Callable[..., Featurizer]]] = {
  "otmann": (OTMANN_SPACES, otmann_featurizer),
  "edit": (("autokeras",), edit_featurizer),
  **{name: (_CELL_KINDS, encoding_featurizer(name)) for name in encodings.ENCODINGS},
  "arc": ((cond_point.KIND,), arc_featurizer),
  "poor_man": ((cond_point.KIND,), poor_man_featurizer),
}


def featurizers_for(kind: str) -> list[str]:
  """The featurizer names that accept spaces of `kind`."""
  return [n for n, (kinds, _) in FEATURIZERS.items() if kind in kinds and _defined(n, kind)]


def _defined(name: str, kind: str) -> bool:
  if name not in encodings.ENCODINGS:
    return True
  try:
    encodings.encoding_size(name, kind)
  except ValueError:  # e.g. adj_code is an nb101 encoding only
    return False
  return True


def make_featurizer(name: str, space: Any, **options) -> Featurizer:
  """The featurizer `name` over `space`; ValueError naming what is unknown or not allowed."""
  if name not in FEATURIZERS:
    raise ValueError(f"featurizer: {name!r} is unknown; allowed: {', '.join(FEATURIZERS)}")
  if name not in featurizers_for(space.kind):
    raise ValueError(
      f"featurizer: {name!r} does not accept {space.kind!r} spaces; for {space.kind!r} choose one"
      f" of: {', '.join(featurizers_for(space.kind)) or '(none)'}"
    )
  factory = FEATURIZERS[name][1]
  try:
    return factory(space, **options)
  except TypeError as e:  # an option the featurizer does not take
    raise ValueError(f"featurizer_config for {name!r}: {e}") from None
