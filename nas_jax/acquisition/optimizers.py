"""Acquisition optimisers: one type for every way nas_jax maximises an acquisition over a space.

An `AcqOptimiser` is a NamedTuple of a name and a pure-by-keys function

    maximize(keys, score_fn, context, n) -> [(point, value, notes)], best first

where `keys = (key, aux_key)`, `score_fn(list[point]) -> [k]` float scores (higher is better;
NaN or -inf rules a point out) and `context` (`Context`) holds the space, the observations and the
canonical keys never to return. Registered in `OPTIMISERS`:

  ea         NASBOT's evolutionary algorithm (nasbot.md 8.1) from the observed points and the
             space's initial pool, n_EA = clip(scale sqrt(t), lo, hi) new points.
  mutation   BANANAS' candidate set (bananas.md 7): mutants of the best observed points.
  random     random points of the space (BANANAS' ablation).
  tree       Auto-Keras' tree search with simulated annealing (autokeras.md 6); on the Auto-Keras
             family its children are morphs and the choice records its ancestor and ops.
  enumerate  every point of a finite space (NB201's 15,625 cells) scored in a few batched calls.
  per_depth  the conditional space's search (arc_kernel.md 6): per depth, random points and the
             EA's mutants, then gradient ascent on the continuous parameters of the best ones
             through `context.value_fn`, a traceable acquisition of raw values.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable, NamedTuple, Sequence

import flax.struct
import jax
import numpy as np

from nas_jax.acquisition import continuous, evolution, mutation, tree_search
from nas_jax.acquisition import functions as acq
from nas_jax.features.featurizers import conditional_spec_of
from nas_jax.spaces import conditional as cond
from nas_jax.spaces import graph_edit, morphism
from nas_jax.spaces.cells import nb201_cell
from nas_jax.spaces.morph_space import MorphPoint, weights_id
from nas_jax.surrogates import point_model

__all__ = [
  "Context",
  "AcqOptimiser",
  "OPTIMISERS",
  "ENUMERABLE",
  "ValueAcquisition",
  "value_acquisition",
  "make_optimiser",
  "optimisers_for",
]


class Context(NamedTuple):
  """What an optimiser may read.

  Attributes:
    space: the Space.
    points: every observed point, in observation order; scores: [n] float64 (NaN: failed);
      trial_ids: their trial ids.
    exclude: canonical keys never to return (observed, pending, already chosen).
    value_fn: for optimisers with `needs_values`: values [P] -> [] acquisition, traceable and
      differentiable (a `jax.tree_util.Partial`); else None.
  """

  space: Any
  points: tuple
  scores: np.ndarray
  trial_ids: tuple
  exclude: frozenset
  value_fn: Any = None

  @property
  def ok(self) -> np.ndarray:
    return ~np.isnan(self.scores)


class AcqOptimiser(NamedTuple):
  """name: its OPTIMISERS entry; maximize: see the module docstring; needs_values: it reads
  `context.value_fn`, so the surrogate must be a GP on a featurizer that encodes raw values."""

  name: str
  maximize: Callable[[tuple, Callable, Context, int], list]
  needs_values: bool = False


def _scored(score_fn: Callable, points: list) -> np.ndarray:
  g = np.asarray(score_fn(points), np.float64)
  if g.shape != (len(points),):
    raise ValueError(f"score_fn: returned shape {g.shape} for {len(points)} points; expected [{len(points)}]")
  return g


def _best(points: Sequence, values: np.ndarray, n: int, notes: dict) -> list:
  """The n best points with a finite value, best first (ties keep order)."""
  order = [i for i in mutation.top_k(values, len(values)) if np.isfinite(values[i])][:n]
  return [(points[i], float(values[i]), dict(notes)) for i in order]


def _observed(ctx: Context) -> tuple[list, np.ndarray]:
  idx = np.flatnonzero(ctx.ok)
  return [ctx.points[i] for i in idx], ctx.scores[idx]


def ea(
  *, n_ea: int = 0, scale: float = 25.0, lo: int = 50, hi: int = 500, selection: str = "paper", pool: bool = True
) -> AcqOptimiser:
  """NASBOT's EA. n_ea > 0 fixes the number of new points; else n_EA(t) with t = evaluations so far.
  pool: also start from the space's initial points not observed yet (NASBOT's App. B.3)."""
  if selection not in evolution.SELECTIONS:
    raise ValueError(f"optimizer_config.selection={selection!r}; allowed: {', '.join(evolution.SELECTIONS)}")
  for name, v, least in (("n_ea", n_ea, 0), ("lo", lo, 1), ("hi", hi, lo)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
      raise ValueError(f"optimizer_config.{name}={v!r}; expected an integer >= {least}")
  if not scale > 0:
    raise ValueError(f"optimizer_config.scale={scale!r}; expected a positive number")

  def maximize(keys, score_fn, ctx, n):
    count = n_ea or evolution.n_ea_schedule(len(ctx.points), scale=scale, lo=lo, hi=hi)
    known, _ = _observed(ctx)
    observed = {ctx.space.canonical_key(p) for p in ctx.points}
    start = known + ([q for q in ctx.space.initial() if ctx.space.canonical_key(q) not in observed] if pool else [])
    if not start:
      return []
    chosen, values = evolution.ea_maximize(
      keys[0],
      score_fn,
      start,
      ctx.space,
      n_ea=count,
      n_mut=evolution.n_mut_schedule(count),
      n=n,
      exclude=ctx.exclude,
      selection=selection,
    )
    return [(p, float(v), {"n_ea": count}) for p, v in zip(chosen, values)]

  return AcqOptimiser("ea", maximize)


def mutation_search(
  *, n_parents: int = 5, n_candidates: int = 100, attempts_per_parent: int = 100, n_scored: int = 0
) -> AcqOptimiser:
  """BANANAS' candidates: mutants of the n_parents best observed points until n_candidates; with
  n_scored > 0 a random n_scored of them are scored (BANANAS' GP-BO baseline scores 200)."""
  for name, v, least in (
    ("n_parents", n_parents, 1),
    ("n_candidates", n_candidates, 1),
    ("attempts_per_parent", attempts_per_parent, 1),
    ("n_scored", n_scored, 0),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
      raise ValueError(f"optimizer_config.{name}={v!r}; expected an integer >= {least}")

  def maximize(keys, score_fn, ctx, n):
    known, scores = _observed(ctx)
    parents = mutation.select_parents(known, scores, n_parents)
    cands = mutation.mutation_candidates(
      ctx.space, keys[0], parents, ctx.exclude, n_target=n_candidates, attempts_per_parent=attempts_per_parent
    )
    if n_scored and cands:
      cands = [cands[i] for i in graph_edit.host_rng(keys[1]).permutation(len(cands))[:n_scored]]
    if not cands:
      return []
    return _best(cands, _scored(score_fn, cands), n, {"n_candidates": len(cands)})

  return AcqOptimiser("mutation", maximize)


def random_search(*, n_candidates: int = 1000, max_draws: int = 0) -> AcqOptimiser:
  """n_candidates distinct random points from at most max_draws draws (0: 5 n_candidates)."""
  if isinstance(n_candidates, bool) or not isinstance(n_candidates, (int, np.integer)) or n_candidates < 1:
    raise ValueError(f"optimizer_config.n_candidates={n_candidates!r}; expected an integer >= 1")

  def maximize(keys, score_fn, ctx, n):
    cands = mutation.random_candidates(
      ctx.space, keys[0], ctx.exclude, n=n_candidates, max_draws=max_draws or 5 * n_candidates
    )
    return _best(cands, _scored(score_fn, cands), n, {"n_candidates": len(cands)}) if cands else []

  return AcqOptimiser("random", maximize)


def _nb201_all() -> list:
  return [nb201_cell(ops) for ops in itertools.product(range(5), repeat=6)]


# Finite spaces by kind: every point, in a fixed order.
ENUMERABLE: dict[str, Callable[[], list]] = {"nb201": _nb201_all}


def enumeration(*, chunk: int = 4096) -> AcqOptimiser:
  """Scores every point of a finite space (`ENUMERABLE`) not excluded, `chunk` per call."""
  if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
    raise ValueError(f"optimizer_config.chunk={chunk!r}; expected an integer >= 1")
  cached: dict[str, list] = {}

  def maximize(keys, score_fn, ctx, n):
    kind = ctx.space.kind
    if kind not in cached:
      cached[kind] = ENUMERABLE[kind]()
    cands, seen = [], set(ctx.exclude)
    for p in cached[kind]:
      k = ctx.space.canonical_key(p)
      if k not in seen:  # an iso key maps many cells to one class: score one of each
        seen.add(k)
        cands.append(p)
    if not cands:
      return []
    values = np.concatenate([_scored(score_fn, cands[i : i + chunk]) for i in range(0, len(cands), chunk)])
    return _best(cands, values, n, {"n_candidates": len(cands)})

  return AcqOptimiser("enumerate", maximize)


def _expander(space: Any, rng: np.random.Generator, n_children: int, max_ops: int) -> tuple[Callable, Callable]:
  """(root, expand) of the tree search: morphs on the Auto-Keras family, mutations elsewhere."""
  if space.kind == "autokeras":

    def expand(point):  # a node's ops are those from its history root
      if max_ops and len(point.ops) >= max_ops:
        return []
      return [
        (o, MorphPoint(morphism.apply_op(point.arch, o), ops=point.ops + (o,)))
        for o in morphism.sample_ops(point.arch, rng, n_children)
      ]

    return (lambda p: MorphPoint(p.arch)), expand

  def expand_any(point):
    children = (space.mutate(point, graph_edit.child_key(rng)) for _ in range(n_children))
    return [(None, child) for child, ok in children if ok]

  return (lambda p: p), expand_any


def tree(
  *, n_children: int = 8, t0: float = 1.0, r: float = 0.9, t_low: float = 1e-4, variant: str = "paper", max_ops: int = 0
) -> AcqOptimiser:
  """Auto-Keras' tree search (`tree_search.tree_maximize`); one point per call. On the Auto-Keras
  family the choice is a MorphPoint that records its evaluated ancestor, whose weights it starts
  from, and the ops from it; max_ops > 0 caps a node's ops (0: the paper, unbounded)."""
  tree_search.check_options(t0, r, t_low, variant)
  for name, v, least in (("n_children", n_children, 1), ("max_ops", max_ops, 0)):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
      raise ValueError(f"optimizer_config.{name}={v!r}; expected an integer >= {least}")

  def maximize(keys, score_fn, ctx, n):
    idx = np.flatnonzero(ctx.ok)
    root, expand = _expander(ctx.space, graph_edit.host_rng(keys[1]), n_children, max_ops)
    roots = [root(ctx.points[i]) for i in idx]
    res = tree_search.tree_maximize(
      keys[0],
      score_fn,
      roots,
      ctx.scores[idx],
      expand,
      ctx.space.canonical_key,
      seen=ctx.exclude,
      t0=t0,
      r=r,
      t_low=t_low,
      variant=variant,
    )
    if res is None:
      return []
    notes = {"n_pops": res.n_pops, "n_scored": res.n_scored}
    point = res.point
    if ctx.space.kind == "autokeras":
      anc = int(idx[res.ancestor])
      point = MorphPoint(
        point.arch, weights_id(ctx.points[anc].arch.to_json()), int(ctx.trial_ids[anc]), tuple(res.ops)
      )
      notes["parent_trial"] = point.parent_trial
    return [(point, float(res.score), notes)]

  return AcqOptimiser("tree", maximize)


_CHILDREN = 100  # EA children per depth next to the gradient stage


def _to_point(values: np.ndarray, spec: cond.ConditionalSpec) -> cond.ConditionalPoint:
  """The canonical point of values [P]: integers rounded, clipped to the bounds, inactive values
  at their lower bounds (as the space keeps them)."""
  values = np.clip(np.where(spec.integer, np.round(values), values), spec.lower, spec.upper)
  active = cond.activity(values, spec)
  return cond.ConditionalPoint(np.where(active, values, spec.lower).astype(np.float32), active)


def _random_points(rng: np.random.Generator, spec: cond.ConditionalSpec, depth: int, n: int) -> list:
  """n points of one depth, every parameter uniform in its bounds (integers uniform)."""
  ints = rng.integers(spec.lower.astype(np.int64), spec.upper.astype(np.int64) + 1, (n, len(spec.names)))
  values = np.where(spec.integer, ints, rng.uniform(spec.lower, spec.upper, (n, len(spec.names))))
  values[:, 0] = depth  # index 0 is the depth (spaces/conditional.py)
  return [_to_point(v, spec) for v in values]


def per_depth(
  *,
  n_random: int = 200,
  gradient: bool = True,
  n_grad_starts: int = 16,
  grad_steps: int = 50,
  n_mutations: int | None = None,
) -> AcqOptimiser:
  """For every depth: n_random random points and the observed ones are scored, the EA mutates the
  best (n_mutations new points), and with gradient the best n_grad_starts run grad_steps Adam steps
  on their active continuous parameters. n_mutations None gives 100, plus without gradient the
  evaluations the gradient stage would spend, so both variants spend equal acquisition evaluations."""
  for name, v, least in (
    ("n_random", n_random, 1),
    ("n_grad_starts", n_grad_starts, 1),
    ("grad_steps", grad_steps, 1),
    ("n_mutations", 0 if n_mutations is None else n_mutations, 0),
  ):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
      raise ValueError(f"optimizer_config.{name}={v!r}; expected an integer >= {least}")
  if n_mutations is None:
    n_mutations = _CHILDREN + (0 if gradient else continuous.n_evaluations(n_grad_starts, grad_steps))

  def maximize(keys, score_fn, ctx, n):
    spec = conditional_spec_of(ctx.space)
    spent = [0]

    def counted(cands):
      spent[0] += len(cands)
      return _scored(score_fn, cands)

    found, starts = [], []
    for depth in range(1, spec.max_depth + 1):
      k_rand, k_ea = jax.random.split(jax.random.fold_in(keys[0], depth))
      randoms = _random_points(graph_edit.host_rng(k_rand), spec, depth, n_random)
      population = randoms + [p for p, ok in zip(ctx.points, ctx.ok) if ok and p.values[0] == depth]
      points, values = evolution.ea_maximize(
        k_ea,
        counted,
        population,
        ctx.space,
        n_ea=n_mutations,
        n_mut=evolution.n_mut_schedule(max(n_mutations, 1)),
        n=n_grad_starts if gradient else 1,
        exclude=ctx.exclude,
        population_scores=counted(population),
      )
      random_keys = {ctx.space.canonical_key(p) for p in randoms}
      found += [
        (float(v), p, "random" if ctx.space.canonical_key(p) in random_keys else "mutation")
        for p, v in zip(points, values)
      ]
      starts += points
    if gradient and starts:
      x0 = np.stack([np.asarray(p.values, np.float64) for p in starts])
      free = np.stack([np.asarray(p.active) for p in starts]) & ~spec.integer
      values, acq_values = continuous.maximize_continuous(
        jax.random.fold_in(keys[0], 0), ctx.value_fn, x0, free, spec.lower, spec.upper, steps=grad_steps
      )
      spent[0] += continuous.n_evaluations(len(starts), grad_steps)
      moved = [_to_point(v, spec) for v in np.asarray(values)]
      found += [(float(a), p, "gradient") for a, p in zip(np.asarray(acq_values), moved)]
    for value, point, origin in sorted(found, key=lambda f: -f[0]):
      if ctx.space.canonical_key(point) not in ctx.exclude:
        return [
          (
            point,
            value,
            {"origin": origin, "depth": int(point.values[0]), "gradient": gradient, "n_acq_evals": spent[0]},
          )
        ]
    return []

  return AcqOptimiser("per_depth", maximize, needs_values=gradient)


OPTIMISERS: dict[str, Callable[..., AcqOptimiser]] = {
  "ea": ea,
  "mutation": mutation_search,
  "random": random_search,
  "tree": tree,
  "enumerate": enumeration,
  "per_depth": per_depth,
}


def optimisers_for(kind: str) -> list[str]:
  """The optimiser names that work on spaces of `kind`."""
  special = {"enumerate": kind in ENUMERABLE, "per_depth": kind == cond.KIND}
  return [name for name in OPTIMISERS if special.get(name, True)]


def make_optimiser(name: str, kind: str, **options) -> AcqOptimiser:
  """The optimiser `name` for spaces of `kind`; ValueError naming what is unknown or not allowed."""
  if name not in OPTIMISERS:
    raise ValueError(f"optimizer: {name!r} is unknown; allowed: {', '.join(OPTIMISERS)}")
  if name not in optimisers_for(kind):
    raise ValueError(
      f"optimizer: {name!r} does not work on {kind!r} spaces; choose one of: {', '.join(optimisers_for(kind))}"
    )
  try:
    return OPTIMISERS[name](**options)
  except TypeError as e:
    raise ValueError(f"optimizer_config for {name!r}: {e}") from None


@flax.struct.dataclass
class ValueAcquisition:
  """An acquisition of raw values for `per_depth`'s gradient stage: one compile per capacity.

  model: point_model.ValueModel; best: [] the best score; kappa, xi, sigma_scale: [] options of
  `functions.acquire`; name: static, "ei", "pi" or "ucb".
  """

  model: point_model.ValueModel
  best: Any
  kappa: Any
  xi: Any
  sigma_scale: Any
  name: str = flax.struct.field(pytree_node=False)


def value_acquisition(va: ValueAcquisition, values: jax.Array) -> jax.Array:
  """The acquisition of one point, values [P] -> [], differentiable in its active values."""
  pred, pred_p = point_model.value_predictive(va.model, values[None])
  return acq.acquire(va.name, pred, pred_p, va.best, kappa=va.kappa, xi=va.xi, sigma_scale=va.sigma_scale)[0]
