"""Auto-Keras's tree-structured acquisition optimiser (Auto-Keras Sec. 3.2, Alg. 1): best-first expansion
of morphs from the evaluated networks, with simulated-annealing acceptance.

Like `evolution.ea_maximize` it works on any space: it only expands points through a host
function `expand(point) -> [(op, child)]`, de-duplicates them by a key, and scores each
expansion's children in one batched call. nas_jax maximises, so the history holds scores
(`to_score`: minus the cost for a cost) and the acquisition is a score too (UCB on the score is
minus the paper's mu - beta sigma on the cost); every comparison of the paper flips sign with it.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Callable, Collection, Hashable, NamedTuple, Sequence

import numpy as np

from nas_jax.acquisition.acq_optimiser import scored
from nas_jax.spaces import graph_edit

__all__ = ["VARIANTS", "TreeResult", "acceptance", "check_options", "tree_maximize"]

# "paper": each child passes the SA test before it is queued (Alg. 1); "code": the test runs when
# an entry is popped and every new child is queued (the authors' code, github.com/keras-team/autokeras).
VARIANTS = ("paper", "code")


class TreeResult(NamedTuple):
  """The optimiser's choice and its bookkeeping.

  Attributes:
    point: the chosen network, reached from history[ancestor] by `ops`.
    ancestor: index into the history of the nearest evaluated ancestor.
    ops: the operations from the ancestor to `point`, in order.
    score: its acquisition value.
    n_pops: queue entries taken (at most ceil(log(t_low / t0) / log(r))).
    n_scored: children scored.
  """

  point: Any
  ancestor: int
  ops: tuple
  score: float
  n_pops: int
  n_scored: int


def acceptance(gain: float, temperature: float) -> float:
  """min(1, exp(gain / T)): the SA probability of keeping a child whose score is `gain` above
  the best so far (Auto-Keras Alg. 1 with c_min - alpha = gain); the exponent is clipped at 0."""
  return math.exp(min(0.0, gain / temperature))


def check_options(t0: float, r: float, t_low: float, variant: str) -> None:
  if not (0 < t_low < t0 and 0 < r < 1):
    raise ValueError(f"t0, r, t_low: {t0!r}, {r!r}, {t_low!r}; need 0 < t_low < t0 and 0 < r < 1")
  if variant not in VARIANTS:
    raise ValueError(f"variant: {variant!r} is unknown; choose one of: {', '.join(VARIANTS)}")


def tree_maximize(
  key,
  score_fn: Callable[[list], Any],
  history: Sequence,
  history_scores,
  expand: Callable[[Any], Sequence[tuple[Any, Any]]],
  dedup_key: Callable[[Any], Hashable],
  *,
  seen: Collection[Hashable] = (),
  t0: float = 1.0,
  r: float = 0.9,
  t_low: float = 1e-4,
  variant: str = "paper",
) -> TreeResult | None:
  """Maximises an acquisition over networks a few morphs from the history (Alg. 1).

  The queue starts with the history keyed by its scores and pops the highest key first. Each pop
  cools T <- r T (T starts at t0; the loop ends when T <= t_low or the queue is empty) and
  expands the popped network: children whose key was seen (history, `seen`, or generated in
  this call) are skipped, the rest are scored in one `score_fn` call and queued with their
  score as key if they pass the SA test `acceptance(g - best, T)` with a fresh U(0, 1) each
  ("paper"). The best score starts at the history's best and rises with every child above it,
  which becomes the choice. If no child beats the history, the choice is the best-scored child.

  Args:
    key: a jax.random key; the search is deterministic given it.
    score_fn: `list[point] -> [k]` acquisition values (higher is better), on the scale of the
      history's scores; NaN or -inf rules a child out.
    history: evaluated points; history_scores: [len(history)] their scores (NaN: failed, never
      expanded).
    expand: `point -> [(op, child)]`, the morphs Omega(f) applied (Alg. 1 line 6).
    dedup_key: `point -> hashable`; equal keys are duplicates (the descriptor, as in the authors' code).
    seen: keys never to score or return, e.g. networks in training.
    t0, r, t_low: initial temperature, cooling factor and floor (1, 0.9, 1e-4: 88 pops at most).
    variant: "paper" or "code" (see `VARIANTS`).

  Returns:
    TreeResult, or None when no new child exists anywhere in the explored tree.
  """
  check_options(t0, r, t_low, variant)
  scores = np.asarray(history_scores, np.float64)
  if len(history) == 0 or scores.shape != (len(history),):
    raise ValueError(
      f"history, history_scores: {len(history)} points and scores of shape {scores.shape};"
      " expected a non-empty history with one score each"
    )
  if not np.isfinite(scores).any():
    raise ValueError("history_scores: no finite score; the tree starts from evaluated networks")
  rng = graph_edit.host_rng(key)
  seen = set(seen) | {dedup_key(p) for p in history}
  order = itertools.count()
  # heapq is a min-heap: keys are negated scores, ties go to the earlier entry.
  queue = [(-s, next(order), p, i, ()) for i, (p, s) in enumerate(zip(history, scores)) if np.isfinite(s)]
  heapq.heapify(queue)
  best = float(np.nanmax(scores))
  chosen, fallback = None, None
  temperature, n_pops, n_scored = t0, 0, 0
  while queue and temperature > t_low:
    temperature *= r
    neg, _, point, ancestor, ops = heapq.heappop(queue)
    n_pops += 1
    if variant == "code" and not rng.random() < acceptance(-neg - best, temperature):
      continue
    children = []
    for op, child in expand(point):
      k = dedup_key(child)
      if k not in seen:
        seen.add(k)
        children.append((op, child))
    if not children:
      continue
    g = scored(score_fn, [c for _, c in children])
    n_scored += len(children)
    for (op, child), value in zip(children, g):
      if not np.isfinite(value):  # a child the acquisition rules out is never queued or chosen
        continue
      entry = (child, ancestor, ops + (op,), float(value))
      if fallback is None or value > fallback[3]:
        fallback = entry
      if variant == "code" or rng.random() < acceptance(value - best, temperature):
        heapq.heappush(queue, (-value, next(order), child, ancestor, ops + (op,)))
      if value > best:
        best, chosen = float(value), entry
  pick = chosen or fallback
  return None if pick is None else TreeResult(pick[0], pick[1], pick[2], pick[3], n_pops, n_scored)
