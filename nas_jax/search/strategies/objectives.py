"""What `bo`'s surrogate models, and how candidates are scored from its predictions: one value
(`single`), or several objectives by ParEGO's scalarisation (`parego`) or by expected hypervolume
improvement (`ehvi`). Each is built by its own constructor and handed to `bo(objective=...)`.

ParEGO (Knowles 2006) works with any surrogate and acquisition: at each optimisation it models an
augmented Chebyshev scalarisation of the normalised objectives, with weights drawn uniformly from
the simplex by the optimisation's auxiliary key. EHVI models the value only and scores candidates
by their expected hypervolume improvement (`acquisition.ehvi`), the other objectives being costs
the space knows before evaluation (`Space.costs`, as in a constrained space).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np

from nas_jax.acquisition import ehvi as ehvi_lib
from nas_jax.acquisition import pareto
from nas_jax.acquisition.acq_optimiser import check_counts
from nas_jax.acquisition.functions import with_pending
from nas_jax.search.state import to_score
from nas_jax.search.strategies import common
from nas_jax.surrogates import point_model

__all__ = ["Objective", "single", "parego", "ehvi"]

_WEIGHTS_STREAM = 0x3FFF_FFF2  # folds an optimisation's auxiliary key for ParEGO's weights


class Objective(NamedTuple):
  """What the surrogate models, and how candidates are scored.

  Attributes:
    name: "single", "parego" or "ehvi".
    targets: `(history, ok [k], key) -> (y [k], observed [k, 1 + m] | None, notes)`: what the
      surrogate models at the successes `ok`, their scores of every objective, and notes to
      record with the proposal.
    scorer: `(space, acquisition, joint) -> ((fitted, best, key, observed) -> score)`, built once:
      `score(candidates) -> [len(candidates)]` float64, larger is better.
    check: `(space, model, optimiser) -> None`, a ValueError when the other parts cannot serve it.
  """

  name: str
  targets: Callable[[common.History, np.ndarray, jax.Array], tuple]
  scorer: Callable[[Any, Any, bool], Callable]
  check: Callable[[Any, Any, Any], None]


# One program per kind of acquisition and padded candidate count, shared by every search in the
# process (an acquisition is a pytree of its options): eagerly, the acquisition's dozen array
# operations cost more than the GP's prediction, and every batch of the EA's children pays them.
@jax.jit
def _acquire(acquisition: Any, pred, pred_p, best, key) -> jax.Array:
  return acquisition(with_pending(pred, pred_p), best, key)


def _acquisition_scorer(space: Any, acquisition: Any, joint: bool) -> Callable:
  """Scores by `acquisition` at every padded candidate slot (one program per candidate capacity,
  not per count), cut to the candidates: a slot's value does not depend on the slots after it."""

  acquire = _acquire
  if jax.tree.leaves(acquisition) == [acquisition]:  # not a pytree of its options: its own programs
    own = jax.jit(lambda pred, pred_p, best, key: acquisition(with_pending(pred, pred_p), best, key))
    acquire = lambda _, *args: own(*args)

  def scorer(fitted, best, key, observed):
    def score(cands: list) -> np.ndarray:
      pred, pred_p = point_model.predict(fitted, cands, joint=joint, padded=True)
      return np.asarray(acquire(acquisition, pred, pred_p, best, key), np.float64)[: len(cands)]

    return score

  return scorer


def _no_check(space: Any, model: Any, optimiser: Any) -> None:
  del space, model, optimiser


def single() -> Objective:
  """The task's value alone: the surrogate models the scores."""
  return Objective("single", lambda history, ok, key: (history.scores[ok], None, {}), _acquisition_scorer, _no_check)


def parego(objectives: Sequence) -> Objective:
  """ParEGO over the value and `objectives` ((name, goal) pairs, `Task.objectives`)."""
  objectives = common.check_objectives("parego", objectives)

  def targets(history, ok, key):
    observed = common.objective_scores(history, objectives)[ok]
    weights = pareto.simplex_weights(common.host_rng(jax.random.fold_in(key, _WEIGHTS_STREAM)), observed.shape[1])
    notes = {"multi_objective": "parego", "weights": [round(float(w), 4) for w in weights]}
    return pareto.parego_scalarise(observed, weights), observed, notes

  return Objective("parego", targets, _acquisition_scorer, _no_check)


def ehvi(objectives: Sequence, *, goal: str = "max", n_samples: int = 64, ref: Sequence = ()) -> Objective:
  """EHVI over the value (goal `goal`) and `objectives`, known before evaluation (`Space.costs`).

  Args:
    n_samples: Monte Carlo draws of the value per candidate.
    ref: the reference point in raw units, (value, *objectives), or () for 0.1 below the worst
      observed normalised score (`acquisition.ehvi`).
  """
  objectives = common.check_objectives("ehvi", objectives)
  check_counts("ehvi: ", {"n_samples": (n_samples, 1)})
  ref_scores = None
  if ref:
    if len(ref) != 1 + len(objectives) or not all(np.isfinite(np.asarray(ref, float))):
      raise ValueError(
        f"ehvi: ref={ref!r}; expected {1 + len(objectives)} finite raw values"
        f" (value, {', '.join(n for n, _ in objectives) or '...'}), or () for the default"
      )
    goals = [goal, *(g for _, g in objectives)]
    ref_scores = np.array([float(to_score(float(r), g)) for r, g in zip(ref, goals)])

  def targets(history, ok, key):
    return history.scores[ok], common.objective_scores(history, objectives)[ok], {"multi_objective": "ehvi"}

  def scorer(space, acquisition, joint):
    def make(fitted, best, key, observed):
      def score(cands: list) -> np.ndarray:
        pred, pred_p = point_model.predict(fitted, cands)
        known = [[float(to_score(space.costs(c)[name], g)) for name, g in objectives] for c in cands]
        return ehvi_lib.ehvi(pred, pred_p, np.asarray(known), observed, key, n_samples=n_samples, ref=ref_scores)

      return score

    return make

  def check(space, model, optimiser):
    if model is None or optimiser.needs_values or space.costs is None:
      raise ValueError(
        "ehvi needs a surrogate (not the uniform acquisition), an optimiser that scores candidates"
        " (not gradient ascent) and a space that knows the other objectives before evaluation (a"
        " cost metric of config.objectives); use parego"
      )

  return Objective("ehvi", targets, scorer, check)
