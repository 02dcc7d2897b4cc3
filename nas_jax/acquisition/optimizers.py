"""The acquisition optimisers of nas_jax by name (`OPTIMISERS`; the interface: `acq_optimiser`).

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
from typing import Any, Callable

import numpy as np

from nas_jax.acquisition import evolution, mutation, tree_search
from nas_jax.acquisition.acq_optimiser import AcqOptimiser, Context, best_of, check_counts, observed, scored
from nas_jax.acquisition.conditional_search import per_depth
from nas_jax.arch import conditional_point as cond_point
from nas_jax.arch import morphism
from nas_jax.arch.cell import nb201_cell
from nas_jax.arch.morph_point import MorphPoint, weights_id
from nas_jax.spaces import graph_edit

__all__ = ["Context", "AcqOptimiser", "OPTIMISERS", "ENUMERABLE", "make_optimiser", "optimisers_for"]


def ea(
  *, n_ea: int = 0, scale: float = 25.0, lo: int = 50, hi: int = 500, selection: str = "paper", pool: bool = True
) -> AcqOptimiser:
  """NASBOT's EA. n_ea > 0 fixes the number of new points; else n_EA(t) with t = evaluations so far.
  pool: also start from the space's initial points not observed yet (NASBOT's App. B.3)."""
  if selection not in evolution.SELECTIONS:
    raise ValueError(f"optimizer_config.selection={selection!r}; allowed: {', '.join(evolution.SELECTIONS)}")
  check_counts("optimizer_config.", {"n_ea": (n_ea, 0), "lo": (lo, 1), "hi": (hi, lo)})
  if not scale > 0:
    raise ValueError(f"optimizer_config.scale={scale!r}; expected a positive number")

  def maximize(keys, score_fn, ctx, n):
    count = n_ea or evolution.n_ea_schedule(len(ctx.points), scale=scale, lo=lo, hi=hi)
    known, _ = observed(ctx)
    seen = {ctx.space.canonical_key(p) for p in ctx.points}
    start = known + ([q for q in ctx.space.initial() if ctx.space.canonical_key(q) not in seen] if pool else [])
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
  check_counts(
    "optimizer_config.",
    {
      "n_parents": (n_parents, 1),
      "n_candidates": (n_candidates, 1),
      "attempts_per_parent": (attempts_per_parent, 1),
      "n_scored": (n_scored, 0),
    },
  )

  def maximize(keys, score_fn, ctx, n):
    known, scores = observed(ctx)
    parents = mutation.select_parents(known, scores, n_parents)
    cands = mutation.mutation_candidates(
      ctx.space, keys[0], parents, ctx.exclude, n_target=n_candidates, attempts_per_parent=attempts_per_parent
    )
    if n_scored and cands:
      cands = [cands[i] for i in graph_edit.host_rng(keys[1]).permutation(len(cands))[:n_scored]]
    if not cands:
      return []
    return best_of(cands, scored(score_fn, cands), n, {"n_candidates": len(cands)})

  return AcqOptimiser("mutation", maximize)


def random_search(*, n_candidates: int = 1000, max_draws: int = 0) -> AcqOptimiser:
  """n_candidates distinct random points from at most max_draws draws (0: 5 n_candidates)."""
  check_counts("optimizer_config.", {"n_candidates": (n_candidates, 1)})

  def maximize(keys, score_fn, ctx, n):
    cands = mutation.random_candidates(
      ctx.space, keys[0], ctx.exclude, n=n_candidates, max_draws=max_draws or 5 * n_candidates
    )
    return best_of(cands, scored(score_fn, cands), n, {"n_candidates": len(cands)}) if cands else []

  return AcqOptimiser("random", maximize)


def _nb201_all() -> list:
  return [nb201_cell(ops) for ops in itertools.product(range(5), repeat=6)]


# Finite spaces by kind: every point, in a fixed order.
ENUMERABLE: dict[str, Callable[[], list]] = {"nb201": _nb201_all}


def enumeration(*, chunk: int = 4096) -> AcqOptimiser:
  """Scores every point of a finite space (`ENUMERABLE`) not excluded, `chunk` per call."""
  check_counts("optimizer_config.", {"chunk": (chunk, 1)})
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
    values = np.concatenate([scored(score_fn, cands[i : i + chunk]) for i in range(0, len(cands), chunk)])
    return best_of(cands, values, n, {"n_candidates": len(cands)})

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


def _stored_as(ctx: Context, i: int) -> str:
  """The name under which observation i's trained weights were stored, as its journalled task info
  records it ("weights"); its architecture's `weights_id` when the task stores none."""
  stored = ctx.task_infos[i].get("weights") if i < len(ctx.task_infos) else None
  return stored if isinstance(stored, str) and stored else weights_id(ctx.points[i].arch.to_json())


def tree(
  *, n_children: int = 8, t0: float = 1.0, r: float = 0.9, t_low: float = 1e-4, variant: str = "paper", max_ops: int = 0
) -> AcqOptimiser:
  """Auto-Keras' tree search (`tree_search.tree_maximize`); one point per call. On the Auto-Keras
  family the choice is a MorphPoint that records its evaluated ancestor, whose weights it starts
  from, and the ops from it; max_ops > 0 caps a node's ops (0: the paper, unbounded)."""
  tree_search.check_options(t0, r, t_low, variant)
  check_counts("optimizer_config.", {"n_children": (n_children, 1), "max_ops": (max_ops, 0)})

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
      point = MorphPoint(point.arch, _stored_as(ctx, anc), int(ctx.trial_ids[anc]), tuple(res.ops))
      notes["parent_trial"] = point.parent_trial
    return [(point, float(res.score), notes)]

  return AcqOptimiser("tree", maximize)


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
  special = {"enumerate": kind in ENUMERABLE, "per_depth": kind == cond_point.KIND}
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
