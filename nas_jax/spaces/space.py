"""The `Space` interface (a NamedTuple of pure functions) and the NASBOT layer-graph space.

A point of `layer_graph_space` is a padded `Architecture`; `arch.host_graph.canonical_key` names
its graph up to a renumbering of the layers, which is what searches de-duplicate by (each space
remembers its points' keys in a `KeyMemo` of its own).
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Hashable, Mapping, NamedTuple, Sequence

import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture, next_power_of_two, pad
from nas_jax.arch.host_graph import KeyMemo
from nas_jax.arch.json_io import Limits, from_json, is_valid, to_json
from nas_jax.spaces import graph_edit
from nas_jax.spaces import modifiers as modifiers_lib
from nas_jax.spaces.pools import initial_pool
from nas_jax.spaces.random_arch import random_json

__all__ = ["Space", "TreeMoves", "layer_graph_space"]

_MUTATE_TRIES = 64  # compound mutations tried before `mutate` gives up on changing a point


class TreeMoves(NamedTuple):
  """How a tree search grows a space's points, where they grow by other moves than `mutate`
  (the Auto-Keras family: function-preserving morphs that keep their ancestor's weights).

  Attributes:
    root: `(point) -> node`, an observed point as the root of a tree.
    expand: `(node, rng, n, max_ops) -> [(op, node)]`: up to n children of a node, none when
      the node already holds max_ops ops from its root (0: no limit).
    descend: `(node, ancestor, info, trial) -> point`: the chosen node as a point that records
      its evaluated ancestor (that point, its journalled task info and its trial id).
  """

  root: Callable[[Any], Any]
  expand: Callable[[Any, Any, int, int], list]
  descend: Callable[[Any, Mapping, int], Any]


class Space(NamedTuple):
  """A search space as pure functions of its points (STYLE.md interfaces table).

  Attributes:
    name: the `registry.SPACES` entry that builds it.
    kind: the point kind, e.g. "cnn", "mlp", "nb201".
    sample: `(key, n) -> list[point]`, n random valid points.
    mutate: `(point, key) -> (point, ok)`: a valid point with a different canonical key and
      ok=True, or the input point itself and ok=False when no change was made: no modifier
      changes it within the limits, or a cell's single code-mutation draw (`require_change=False`)
      changed nothing. ok=False is a result, never an exception: callers skip the point and count
      the attempt. An invalid input point still raises ValueError.
    neighbours: `(point) -> list[point]`, a deterministic bounded neighbourhood.
    canonical_key: `(point) -> hashable`, equal for equal points up to renumbering.
    to_json: `(point) -> dict`, the interchange JSON.
    from_json: `(obj) -> point`, validated; ValueError naming the field otherwise.
    initial: `(n=None) -> list[point]`, the first n points of the initial pool (all when None).
    costs: `(point) -> {metric: value}`, what the point costs before it is evaluated (parameters,
      FLOPs, ...), or None when unknown; `constrained.constrained` sets it.
    feasible: `(point) -> bool`, whether the point is within the space's constraints, or None for
      an unconstrained space. sample, mutate, neighbours and initial only give feasible points;
      optimisers that build points otherwise (tree search, gradients) check it.
    fidelities: set only by `fidelity_space.fidelity_space`: the task's fidelities, increasing,
      of its points (`FidelityPoint`s: a base point at a fidelity); () for any other space.
    base: set only by `fidelity_space.fidelity_space`: the Space of the points it wraps, on which
      featurizers are built (`features.fidelity.with_fidelity`); None for any other space.
    layer_graph: `(point) -> Architecture`, the point's network as a layer graph (what OTMANN
      and the edit distance read); None when the points are no networks. This field and the
      three below are what parts of the BO engine may read of a space, each None where the
      space does not offer it.
    conditional_spec: the `ConditionalSpec` of a conditional space's points (the arc kernel, the
      poor man's embedding and the per-depth optimiser read it).
    enumerate: `() -> list[point]`, every point of a finite space, in a fixed order.
    tree: `TreeMoves`, where a tree search grows points by moves of their own.
  """

  name: str
  kind: str
  sample: Callable[[Any, int], list]
  mutate: Callable[[Any, Any], tuple[Any, bool]]
  neighbours: Callable[[Any], list]
  canonical_key: Callable[[Any], Hashable]
  to_json: Callable[[Any], dict]
  from_json: Callable[[Any], Any]
  initial: Callable[..., list]
  costs: Callable[[Any], Mapping[str, float]] | None = None
  feasible: Callable[[Any], bool] | None = None
  fidelities: tuple = ()
  base: Any = None
  layer_graph: Callable[[Any], Architecture] | None = None
  conditional_spec: Any = None
  enumerate: Callable[[], list] | None = None
  tree: TreeMoves | None = None


def _resolve_modifiers(modifiers) -> tuple[str, ...]:
  if modifiers is None:
    return tuple(modifiers_lib.MODIFIERS)
  names = (modifiers,) if isinstance(modifiers, str) else tuple(modifiers)
  bad = [
    n
    for n in names
    if n not in modifiers_lib.MODIFIERS
    or (isinstance(modifiers, Mapping) and modifiers[n] is not modifiers_lib.MODIFIERS[n])
  ]
  if not names or bad:
    raise ValueError(
      f"modifiers: {list(names)}; expected a non-empty subset of MODIFIERS:"
      f" {', '.join(modifiers_lib.MODIFIERS)} (names, or e.g. UNIT_MODIFIERS)"
    )
  return names


def layer_graph_space(
  kind: str,
  *,
  max_layers: int = 60,
  limits: Limits | None = None,
  modifiers: Mapping[str, Any] | Sequence[str] | None = None,
  pad_to: int | None = None,
  weights=None,
  step_probs: Sequence[float] = modifiers_lib.STEP_PROBS,
  max_neighbours: int = 256,
) -> Space:
  """NASBOT's space of CNN or MLP layer graphs (NASBOT Sec. 2.2; App. B.2-B.3).

  `mutate` is the compound mutation, retried until the graph changes (ok=False after
  `_MUTATE_TRIES` compound mutations that change nothing); `neighbours` are the
  distinct single-modifier changes; `initial` is the paper's pool (Figs. 20/21) less any network
  that breaks `limits`.

  Args:
    kind: "cnn" or "mlp".
    max_layers: the layer limit; `limits.max_layers` must agree when `limits` is given.
    limits: search-space limits (NASBOT App. B.3); `Limits(max_layers=max_layers)` by default.
    modifiers: the modifiers `mutate` and `neighbours` use: names from `MODIFIERS`, or a subset
      mapping such as `UNIT_MODIFIERS` or `STRUCTURE_MODIFIERS` (the App. C.4 ablation; a config
      names them "all", "unit", "structure": `wiring.names.MODIFIER_SETS`); all nine by default.
    pad_to: capacity N of every point; must be >= max_layers. Without it, points from `sample`,
      `initial` and `from_json` are padded to the next power of two of their layer count, and a
      mutation keeps its parent's N when it fits (else the next power of two).
    weights: modifier-type weights of `compound_mutation` (None: uniform, the paper).
    step_probs: P(k = 1, 2, ...) of the compound mutation.
    max_neighbours: the most points `neighbours` returns.

  Returns:
    A `Space` named "layer_graph".
  """
  if kind not in labels_lib.LAYER_GRAPH_KINDS:
    raise ValueError(f"kind: {kind!r} is unknown; allowed: {', '.join(labels_lib.LAYER_GRAPH_KINDS)}")
  if not (isinstance(max_layers, int) and max_layers >= 4):
    raise ValueError(f"max_layers: {max_layers!r}; expected an integer >= 4")
  if limits is None:
    limits = Limits(max_layers=max_layers)
  elif limits.max_layers != max_layers:
    raise ValueError(f"limits.max_layers={limits.max_layers} but max_layers={max_layers}; pass both equal")
  if pad_to is not None and not (isinstance(pad_to, int) and pad_to >= max_layers):
    raise ValueError(f"pad_to: {pad_to!r}; expected None or an integer >= max_layers={max_layers}")
  if not (isinstance(max_neighbours, int) and max_neighbours >= 1):
    raise ValueError(f"max_neighbours: {max_neighbours!r}; expected an integer >= 1")
  names = _resolve_modifiers(modifiers)
  bound = {n: functools.partial(modifiers_lib.MODIFIERS[n], limits=limits, pad_to=pad_to) for n in names}
  # Fail on bad weights or step probabilities now, not at the first mutation.
  modifiers_lib.type_probs(names, weights)
  modifiers_lib.check_step_probs(step_probs)
  canonical_key = KeyMemo()

  def fit(arch: Architecture) -> Architecture:
    n = int(np.asarray(arch.mask).sum())
    return pad(arch, pad_to if pad_to is not None else next_power_of_two(n))

  def check(point: Any, where: str) -> None:
    if not isinstance(point, Architecture) or point.kind != kind:
      what = getattr(point, "kind", type(point).__name__)
      raise ValueError(f"{where}: got a {what} point; this space holds {kind} Architectures")

  def sample(key, n: int) -> list[Architecture]:
    if not (isinstance(n, int) and n >= 0):
      raise ValueError(f"sample: n={n!r}; expected an integer >= 0")
    rng = graph_edit.host_rng(key)
    most = min(20, max_layers)
    return [
      from_json_(random_json(kind, rng, min_layers=min(5, most), max_layers=most, limits=limits)) for _ in range(n)
    ]

  def mutate(point: Architecture, key) -> tuple[Architecture, bool]:
    check(point, "mutate")
    rng = graph_edit.host_rng(key)
    before = canonical_key(point)
    for _ in range(_MUTATE_TRIES):
      out, applied = modifiers_lib.compound_mutation(
        point, graph_edit.child_key(rng), modifiers=bound, step_probs=step_probs, weights=weights
      )
      if applied and canonical_key(out) != before:
        return out, True
    return point, False

  def neighbours(point: Architecture) -> list[Architecture]:
    """Distinct single-modifier changes, in an order seeded by the point's canonical key."""
    check(point, "neighbours")
    own = canonical_key(point)
    seed = int(own.split(":")[1][:12], 16)
    seen, out = {own}, []
    for _, new in modifiers_lib.single_changes(
      point, names, limits=limits, pad_to=pad_to, max_changes=2 * max_neighbours, seed=seed
    ):
      k = canonical_key(new)
      if k not in seen and len(out) < max_neighbours:
        seen.add(k)
        out.append(new)
    return out

  def from_json_(obj: Any) -> Architecture:
    arch = from_json(obj, limits=limits)
    if arch.kind != kind:
      raise ValueError(f"kind: {arch.kind!r}; this space holds {kind} architectures")
    return fit(arch)

  def initial(n: int | None = None) -> list[Architecture]:
    pool = [fit(a) for a in initial_pool(kind) if is_valid(to_json(a), limits)]
    if n is not None and not (isinstance(n, int) and 0 <= n <= len(pool)):
      raise ValueError(f"initial: n={n!r}; the {kind} pool has {len(pool)} networks within the limits (0..{len(pool)})")
    return pool[:n]

  return Space(
    name="layer_graph",
    kind=kind,
    sample=sample,
    mutate=mutate,
    neighbours=neighbours,
    canonical_key=canonical_key,
    to_json=to_json,
    from_json=from_json_,
    initial=initial,
    layer_graph=lambda arch: arch,
  )
