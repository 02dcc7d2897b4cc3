"""Auto-Keras / NASNM (autokeras.md 4-7): a GP with the edit-distance kernel through a Bourgain
embedding, UCB, and the tree-structured morph search of Alg. 1, over the autokeras space; the
chosen network records its evaluated ancestor and the ops from it, so training warm-starts.

Cross-overs (issue #11 item 6): `kernel="otmann"` puts NASBOT's OTMANN GP under the same tree
search, and `optimizer="ea"` maximises the edit-distance UCB with NASBOT's EA (whose mutants are
trained from scratch, as in NASBOT).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.acquisition import evolution
from nas_jax.acquisition import tree_search
from nas_jax.features import bourgain
from nas_jax.features import edit_distance as ed
from nas_jax.features.otmann import KERNEL_NU_STR, otmann_distances
from nas_jax.features.pairwise import OtmannPair, sq_euclidean
from nas_jax.search.state import GOALS
from nas_jax.search.strategies import common
from nas_jax.search.strategy import Strategy
from nas_jax.spaces import morphism
from nas_jax.spaces.morph_space import MorphPoint, weights_id
from nas_jax.surrogates import gp
from nas_jax.surrogates.kernels import Matern12

__all__ = ["KERNELS", "OPTIMIZERS", "TARGETS", "AutokerasState", "autokeras", "autokeras_factory"]

KERNELS = ("edit", "otmann")
OPTIMIZERS = ("tree", "ea")
TARGETS = ("cost", "accuracy")  # what the GP models (spec 4.5): the paper's cost, or the code's score
_ANCHOR_SEED = 123  # the code reseeds with 123 on every embedding: anchors depend on n only


@dataclasses.dataclass(frozen=True)
class AutokerasState:
  """key: the search key; history: every observation; notes: canonical key -> notes."""

  key: jax.Array
  history: common.History
  notes: dict = dataclasses.field(default_factory=dict)



def _pad_rows(x: np.ndarray, rows: int) -> np.ndarray:
  return np.pad(x, ((0, rows - x.shape[0]), (0, 0)))


def edit_ucb(points: list, scores: np.ndarray, *, num_classes: int, beta: float, lam: float, target: str,
             offset: float, layer_match: str = "separate", bourgain_repeat: str = "intended"):
  """UCB on the score scale from the edit-distance GP of spec 4: a function of candidate points.

  The history's edit distances are Bourgain-embedded (anchors fixed by n, as the code does);
  candidates are embedded with the same anchors (spec 4.4), and the GP (zero mean, exp(-rho),
  noise 1e-10 raised as needed) is conditioned on costs `offset - score` ("cost", the paper;
  UCB = offset - (mu - beta sigma)) or on scores ("accuracy", the code; UCB = mu + beta sigma).
  """
  descs = ed.stack_descriptors([ed.arch_descriptor(p.arch, num_classes) for p in points])  # stacked once
  n = len(points)
  d = ed.edit_distances(descs, lam=lam, layer_match=layer_match)
  anchors = bourgain.bourgain_anchors(jax.random.key(_ANCHOR_SEED), n, repeat=bourgain_repeat) if n > 1 else None
  embed = (lambda dist: bourgain.bourgain_embed(dist, anchors)) if anchors else (lambda dist: dist[:, :1])
  phi = embed(d)
  c = common.capacity(n, 16)
  y = scores if target == "accuracy" else offset - scores
  phi_p = _pad_rows(phi, c)
  post = gp.condition_fixed(Matern12.create(), sq_euclidean(phi_p), np.pad(y, (0, c - n)), np.arange(c) < n)
  sign = 1.0 if target == "accuracy" else -1.0

  def score(cands: list) -> np.ndarray:
    m = len(cands)
    cand_descs = ed.stack_descriptors([ed.arch_descriptor(p.arch, num_classes) for p in cands])
    dc = ed.edit_distances(cand_descs, descs, lam=lam, layer_match=layer_match)
    mean, var = gp.predict(post, sq_euclidean(_pad_rows(embed(dc), common.capacity(m, 8)), phi_p))
    mean, std = np.asarray(mean)[:m], np.sqrt(np.asarray(var)[:m])
    ucb = sign * mean + beta * std  # on the GP's target; flipped back to the score scale below
    return ucb if target == "accuracy" else offset + ucb

  return score


def otmann_ucb(key, points: list, scores: np.ndarray, *, beta: float, n_starts: int = 8, fit_steps: int = 100):
  """UCB mu + beta sigma on the score scale from NASBOT's GP (OTMANN kernel, fitted, projected)."""
  from nas_jax.search.strategies.nasbot import nasbot_box  # the kernel's prior box lives with NASBOT
  from nas_jax.surrogates.surrogate import gp_surrogate

  surrogate = gp_surrogate(nasbot_box(len(KERNEL_NU_STR)), n_starts=n_starts, steps=fit_steps, project=True)
  archs = [p.arch for p in points]
  dist = lambda a, b=None: otmann_distances(a, b, solver="exact", nu_str=KERNEL_NU_STR)
  n, c = len(points), common.capacity(len(points), 16)
  h = dist(archs)
  pad = lambda x, r: np.pad(x, ((0, 0), (0, r - x.shape[1]), (0, c - x.shape[2])))
  pair = OtmannPair(jnp.asarray(pad(h.d, c)), jnp.asarray(pad(h.d_bar, c)))
  state = surrogate.fit(key, pair, jnp.asarray(np.pad(scores, (0, c - n))), jnp.asarray(np.arange(c) < n))

  def score(cands: list) -> np.ndarray:
    m = len(cands)
    r = dist([p.arch for p in cands], archs)
    pred = surrogate.predict(state, OtmannPair(jnp.asarray(pad(r.d, common.capacity(m, 8))),
                                               jnp.asarray(pad(r.d_bar, common.capacity(m, 8)))))
    mean, std = (np.asarray(x).reshape(-1, pred.mean.shape[-1]).mean(0)[:m] for x in (pred.mean, pred.std))
    return mean + beta * std

  return score


def autokeras(space: Any, goal: str = "max", *, num_classes: int = 10, kernel: str = "edit",
              optimizer: str = "tree", beta: float = 2.576, lam: float = 1.0, target: str = "cost",
              n_children: int = 8, t0: float = 1.0, r: float = 0.9, t_low: float = 1e-4, variant: str = "paper",
              layer_match: str = "separate", bourgain_repeat: str = "intended", n_ea: int = 200,
              max_ops: int = 0) -> Strategy:
  """Auto-Keras as a Strategy over the autokeras space (`spaces.morph_space`).

  The initial networks (G0, G1) are proposed first, then random networks until one evaluation
  succeeds. Each later proposal conditions the GP on the evaluated networks and runs Alg. 1
  (`tree_search.tree_maximize`) from them: children are `n_children` sampled morphs (spec 2.4),
  networks pending evaluation are never proposed again (spec 7.1: generation runs while one
  network trains; the loop's `prefetch` gives that overlap), and the choice carries its
  ancestor's weights id and the ops from it.

  Args:
    space: the autokeras Space; goal: the task's goal.
    num_classes: width of the classifier in the descriptor (spec 1.5).
    kernel: "edit" (spec 4) or "otmann" (NASBOT's GP, a cross-over).
    optimizer: "tree" (Alg. 1) or "ea" (NASBOT's EA over `space.mutate`, `n_ea` candidates).
    beta: UCB weight (code 2.576); lam: the skip weight of the edit distance.
    target: "cost" (the paper: GP on offset - score, zero prior mean) or "accuracy" (the code).
    n_children, t0, r, t_low, variant: Alg. 1 (spec 6.1, 6.3).
    layer_match, bourgain_repeat: edit-distance and embedding variants (spec 3.2, 4.3).
    max_ops: if > 0, the tree expands no network more than this many morphs from the history
      (Ours; 0 = the paper). Far from the history sigma -> 1 dominates UCB (spec 4.5), so the
      unbounded search walks up to ~88 morphs away: faithful, but slow to train on a CPU.
  """
  if goal not in GOALS:
    raise ValueError(f"autokeras: goal={goal!r}; allowed: {', '.join(GOALS)}")
  for name, value, allowed in (("kernel", kernel, KERNELS), ("optimizer", optimizer, OPTIMIZERS),
                               ("target", target, TARGETS)):
    if value not in allowed:
      raise ValueError(f"autokeras: {name}={value!r}; allowed: {', '.join(allowed)}")
  if not (isinstance(beta, (int, float)) and beta >= 0):
    raise ValueError(f"autokeras: beta={beta!r}; expected a number >= 0")
  if isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 0:
    raise ValueError(f"autokeras: max_ops={max_ops!r}; expected an integer >= 0 (0: unbounded)")
  offset = 1.0 if goal == "max" else 0.0  # cost = 1 - accuracy; a "min" task's value is its cost

  def acquisition(key, points, scores):
    if kernel == "otmann":
      return otmann_ucb(key, points, scores, beta=beta)
    return edit_ucb(points, scores, num_classes=num_classes, beta=beta, lam=lam, target=target, offset=offset,
                    layer_match=layer_match, bourgain_repeat=bourgain_repeat)

  def init(key):
    return AutokerasState(key=key, history=common.empty_history())

  def choose(key, history, exclude):
    ok = np.flatnonzero(history.ok)
    points = [history.points[i] for i in ok]
    k_fit, k_search, k_expand = jax.random.split(key, 3)
    score = acquisition(k_fit, points, history.scores[ok])
    if optimizer == "ea":
      chosen, values = evolution.ea_maximize(k_search, score, points, space, n_ea=n_ea,
                                             n_mut=evolution.n_mut_schedule(n_ea), exclude=exclude)
      return (chosen[0], {"origin": "ea", "acquisition": float(values[0])}) if chosen else (None, None)
    rng = common.host_rng(k_expand)

    def expand(point):  # a tree node's ops are those from its history root
      if max_ops and len(point.ops) >= max_ops:
        return []
      return [(o, MorphPoint(morphism.apply_op(point.arch, o), ops=point.ops + (o,)))
              for o in morphism.sample_ops(point.arch, rng, n_children)]

    roots = [MorphPoint(p.arch) for p in points]
    res = tree_search.tree_maximize(k_search, score, roots, history.scores[ok], expand, space.canonical_key,
                                    seen=exclude, t0=t0, r=r, t_low=t_low, variant=variant)
    if res is None:
      return None, None
    anc = int(ok[res.ancestor])
    ancestor = history.points[anc]
    point = MorphPoint(res.point.arch, weights_id(ancestor.arch.to_json()), int(history.trial_ids[anc]),
                       tuple(res.ops))
    return point, {"origin": "tree", "acquisition": float(res.score), "n_pops": res.n_pops,
                   "n_scored": res.n_scored, "parent_trial": point.parent_trial}

  def propose(state, n, pending):
    choose_one = lambda k, exclude, taken: choose(k, state.history, exclude)
    return common.model_based_propose(state, n, pending, space, choose_one)

  def update(state, observations):
    return common.observe(state, space, goal, observations) if observations else state

  return Strategy(init=init, propose=propose, update=update, notes=common.notes_reader(space))


def autokeras_factory(config, space, task) -> Strategy:
  """`config.strategy = "autokeras"`; `config.strategy_config` holds keyword arguments of `autokeras`."""
  return autokeras(space, task.goal, **common.strategy_options(config))
