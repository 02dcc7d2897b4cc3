"""The acquisition optimisers of nas_jax, each built by its own constructor as an `AcqOptimiser`
(the interface, `maximize(keys, score_fn, context, n)`, is described in `acq_optimiser`):

  ea         NASBOT's evolutionary algorithm (NASBOT App. B.2) from the observed points and the
             space's initial pool, n_EA = clip(scale sqrt(t), lo, hi) new points.
  mutation   BANANAS' candidate set (BANANAS Sec. 4): mutants of the best observed points.
  random     random points of the space (BANANAS' ablation).
  tree       Auto-Keras' tree search with simulated annealing (Auto-Keras Sec. 3.2, Alg. 1); on a space with
             `Space.tree` (the Auto-Keras family) its children are the space's moves (morphs) and
             the choice records its ancestor and ops, elsewhere they are mutations.
  enumeration  every point of a finite space (`Space.enumerate`: NB201's 15,625 cells) scored in a
             few batched calls.
  per_depth  (`conditional_search`) the conditional space's search (our choice).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nas_jax.acquisition import evolution, mutation, tree_search
from nas_jax.acquisition.acq_optimiser import AcqOptimiser, best_of, check_counts, observed, scored
from nas_jax.spaces import graph_edit
from nas_jax.spaces.space import TreeMoves

__all__ = ["ea", "mutation_search", "random_search", "tree", "enumeration"]


def ea(
  *,
  n_ea: int = 0,
  scale: float = 25.0,
  lo: int = 50,
  hi: int = 500,
  selection: str = "paper",
  pool: bool = True,
  screen: int = 0,
) -> AcqOptimiser:
  """NASBOT's EA. n_ea > 0 fixes the number of new points; else n_EA(t) with t = evaluations so far.
  pool: also start from the space's initial points not observed yet (NASBOT's App. B.3).

  screen = k > 0 (our change, not the paper's): where the context has a `screen_fn` (OTMANN's GP:
  the acquisition on lower bounds of the candidates' distances, `otmann_solvers.bound_pairs`),
  the EA evolves on it, and only the k points it ranks best are scored by the acquisition itself,
  which picks among them; a candidate's exact distances are then solved only if it reaches the
  k. screen = 0 is the paper's EA, every candidate scored exactly (as without a screen_fn)."""
  if selection not in evolution.SELECTIONS:
    raise ValueError(f"ea: selection={selection!r}; allowed: {', '.join(evolution.SELECTIONS)}")
  check_counts("ea: ", {"n_ea": (n_ea, 0), "lo": (lo, 1), "hi": (hi, lo), "screen": (screen, 0)})
  if not scale > 0:
    raise ValueError(f"ea: scale={scale!r}; expected a positive number")

  def maximize(keys, score_fn, ctx, n):
    count = n_ea or evolution.n_ea_schedule(len(ctx.points), scale=scale, lo=lo, hi=hi)
    known, _ = observed(ctx)
    seen = {ctx.space.canonical_key(p) for p in ctx.points}
    start = known + ([q for q in ctx.space.initial() if ctx.space.canonical_key(q) not in seen] if pool else [])
    if not start:
      return []
    screening = screen > 0 and ctx.screen_fn is not None
    chosen, values = evolution.ea_maximize(
      keys[0],
      ctx.screen_fn if screening else score_fn,
      start,
      ctx.space,
      n_ea=count,
      n_mut=evolution.n_mut_schedule(count),
      n=max(n, screen) if screening else n,
      exclude=ctx.exclude,
      selection=selection,
    )
    if screening and chosen:
      return best_of(chosen, scored(score_fn, chosen), n, {"n_ea": count, "screened": len(chosen)})
    return [(p, float(v), {"n_ea": count}) for p, v in zip(chosen, values)]

  return AcqOptimiser("ea", maximize, screens=screen > 0)


def mutation_search(
  *, n_parents: int = 5, n_candidates: int = 100, attempts_per_parent: int = 100, n_scored: int = 0
) -> AcqOptimiser:
  """BANANAS' candidates: mutants of the n_parents best observed points until n_candidates; with
  n_scored > 0 a random n_scored of them are scored (BANANAS' GP-BO baseline scores 200)."""
  check_counts(
    "mutation: ",
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
  check_counts("random: ", {"n_candidates": (n_candidates, 1)})

  def maximize(keys, score_fn, ctx, n):
    cands = mutation.random_candidates(
      ctx.space, keys[0], ctx.exclude, n=n_candidates, max_draws=max_draws or 5 * n_candidates
    )
    return best_of(cands, scored(score_fn, cands), n, {"n_candidates": len(cands)}) if cands else []

  return AcqOptimiser("random", maximize)


def enumeration(*, chunk: int = 4096) -> AcqOptimiser:
  """Scores every point of a finite space (`Space.enumerate`) not excluded, `chunk` per call."""
  check_counts("enumeration: ", {"chunk": (chunk, 1)})
  listed: dict = {}  # Space.enumerate -> its points, listed once

  def check(space: Any) -> None:
    if space.enumerate is None:
      raise ValueError(f"enumeration: the {space.name!r} space cannot list its points (Space.enumerate)")

  def maximize(keys, score_fn, ctx, n):
    every = listed.get(ctx.space.enumerate)
    if every is None:
      every = listed[ctx.space.enumerate] = ctx.space.enumerate()
    cands, seen = [], set(ctx.exclude)
    for p in every:
      k = ctx.space.canonical_key(p)
      if k not in seen:  # an iso key maps many cells to one class: score one of each
        seen.add(k)
        cands.append(p)
    if not cands:
      return []
    values = np.concatenate([scored(score_fn, cands[i : i + chunk]) for i in range(0, len(cands), chunk)])
    return best_of(cands, values, n, {"n_candidates": len(cands)})

  return AcqOptimiser("enumerate", maximize, from_space=False, check=check)


def _mutations(space: Any) -> TreeMoves:
  """The tree moves of a space without moves of its own: nodes are points, grown by `mutate`."""

  def expand(point, rng, n_children, max_ops):
    children = (space.mutate(point, graph_edit.child_key(rng)) for _ in range(n_children))
    return [(None, child) for child, ok in children if ok]

  return TreeMoves(root=lambda p: p, expand=expand, descend=lambda node, ancestor, info, trial: node)


def tree(
  *, n_children: int = 8, t0: float = 1.0, r: float = 0.9, t_low: float = 1e-4, variant: str = "paper", max_ops: int = 0
) -> AcqOptimiser:
  """Auto-Keras' tree search (`tree_search.tree_maximize`); one point per call. On a space with
  `Space.tree` (the Auto-Keras family) the choice records its evaluated ancestor, whose weights it
  starts from, and the ops from it; max_ops > 0 caps a node's ops (0: the paper, unbounded)."""
  tree_search.check_options(t0, r, t_low, variant)
  check_counts("tree: ", {"n_children": (n_children, 1), "max_ops": (max_ops, 0)})

  def maximize(keys, score_fn, ctx, n):
    idx = np.flatnonzero(ctx.ok)
    rng = graph_edit.host_rng(keys[1])
    root, grow, descend = ctx.space.tree or _mutations(ctx.space)
    expand = lambda node: grow(node, rng, n_children, max_ops)
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
    anc = int(idx[res.ancestor])
    info = ctx.task_infos[anc] if anc < len(ctx.task_infos) else {}
    point = descend(res.point, ctx.points[anc], info, int(ctx.trial_ids[anc]))
    notes = {"n_pops": res.n_pops, "n_scored": res.n_scored, "parent_trial": int(ctx.trial_ids[anc])}
    return [(point, float(res.score), notes)]

  return AcqOptimiser("tree", maximize, from_space=False)
