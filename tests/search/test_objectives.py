"""How `bo`'s objectives score candidates: the acquisition runs as one compiled program per kind
(an acquisition is a pytree of its options), and any other callable acquisition still scores."""

import jax.numpy as jnp
import numpy as np

from nas_jax.acquisition import functions
from nas_jax.search.strategies import objectives
from nas_jax.surrogates import point_model


class _Plain:
  """An acquisition that is not a pytree: mean minus the incumbent."""

  name, closed_form, joint, needs_model = "plain", True, False, True

  def __call__(self, pred, best, key=None):
    return pred.mean - best


def test_the_scorer_runs_pytree_and_plain_acquisitions_at_the_padded_slots(monkeypatch):
  # Four padded slots for three candidates; the scorer cuts the filler off.
  pred = functions.Predictive(jnp.array([1.0, 2.0, 3.0, 9.0]), jnp.array([1.0, 0.5, 0.0, 1.0]))
  monkeypatch.setattr(point_model, "predict", lambda fitted, cands, joint, padded: (pred, pred))
  for acquisition, expected in ((functions.UCB(kappa=2.0), [3.0, 3.0, 3.0]), (_Plain(), [0.0, 1.0, 2.0])):
    score = objectives.single().scorer(None, acquisition, False)(None, 1.0, None, None)
    np.testing.assert_allclose(score(["a", "b", "c"]), expected)
  two = objectives.single().scorer(None, functions.UCB(kappa=4.0), False)(None, 1.0, None, None)
  np.testing.assert_allclose(two(["a", "b", "c"]), [5.0, 4.0, 3.0])  # the same program, other options
