"""bo's chained full fits (`chain_fits`): each full fit after the first starts from the previous
one's optimum, and a resumed search refits the chain and proposes what the uninterrupted one did."""

import jax
import numpy as np
import pytest

from nas_jax.acquisition.functions import ei
from nas_jax.acquisition.optimizers import ea
from nas_jax.features.featurizers import otmann
from nas_jax.search.state import Observation, Status
from nas_jax.search.strategies.bo import bo
from nas_jax.search.strategies.initial import pool
from nas_jax.spaces.space import layer_graph_space
from nas_jax.surrogates.point_model import gp
from nas_jax.tasks.synthetic import synthetic_task


@pytest.fixture(scope="module")
def setup():
  space = layer_graph_space("mlp", max_layers=12)
  task = synthetic_task("f2")
  points = space.initial() + space.sample(jax.random.key(7), 10)
  obs = [
    Observation(i, space.to_json(p), task.evaluate(space.to_json(p), 0).value, Status.OK, "", 0.0, "test")
    for i, p in enumerate(points)
  ]
  return space, task, obs


def _nasbot(space, goal, chain_fits, refit_every=3):
  return bo(
    space,
    goal,
    featurizer=otmann(nu_str=(0.1, 0.8)),
    surrogate=gp(n_starts=2, fit_steps=10, warm_steps=0),
    acquisition=ei(),
    optimiser=ea(lo=8, hi=8),
    initial=pool(),
    refit_every=refit_every,
    chain_fits=chain_fits,
  )


def _hypers(state):
  return np.concatenate([np.ravel(x) for x in jax.tree.leaves(state.anchor[1].state.posterior.hypers)])


def test_chained_fits_replay_exactly_and_differ_from_fresh_ones_after_the_first_link(setup):
  """refit_every=3: anchors at 3, 6, 9; the one at 3 is a fresh fit in both strategies, the ones
  from 6 on start from their predecessor. A search resumed at m successes (no anchor in its state)
  refits the chain (9 -> 6 -> 3) and proposes, from the same anchor, what the uninterrupted one did."""
  space, task, obs = setup
  chained, fresh = (_nasbot(space, task.goal, c) for c in (True, False))
  state = chained.update(chained.init(jax.random.key(8)), obs[:3])
  other = fresh.update(fresh.init(jax.random.key(8)), obs[:3])
  same = []
  for m in range(3, 10):
    if m > 3:
      state, other = chained.update(state, [obs[m - 1]]), fresh.update(other, [obs[m - 1]])
    state, (p,) = chained.propose(state, 1, [])
    other, _ = fresh.propose(other, 1, [])
    resumed = chained.update(chained.init(jax.random.key(8)), obs[:m])
    resumed, (q,) = chained.propose(resumed, 1, [])
    assert space.to_json(q) == space.to_json(p) and resumed.anchor[0] == state.anchor[0] == m - m % 3
    np.testing.assert_array_equal(_hypers(resumed), _hypers(state))
    same.append(np.array_equal(_hypers(state), _hypers(other)))
  # The first link is the unchained fit; at 6 the start from it won (at 9 a random start did).
  assert same[:3] == [True] * 3 and same[3:6] == [False] * 3, same


def test_chain_fits_is_checked(setup):
  space, task, _ = setup
  with pytest.raises(ValueError, match="bo: chain_fits=True chains the full fits of refit_every=1 > 1"):
    _nasbot(space, task.goal, True, refit_every=1)
  with pytest.raises(ValueError, match="bo: chain_fits='yes'; expected True or False"):
    _nasbot(space, task.goal, "yes")
