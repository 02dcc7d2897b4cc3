"""NASBOT's EA with a screen (`presets.nasbot(optimiser=ea(screen=k))`): its proposals replay from the journal;
the default, `screen=0`, proposes what the EA did before the screen existed, to the bit."""

import hashlib
import json

import jax
import pytest

from nas_jax.acquisition.optimizers import ea
from nas_jax.features.featurizers import otmann
from nas_jax.search.state import Observation, Status
from nas_jax.search.strategies import presets
from nas_jax.spaces.space import layer_graph_space
from nas_jax.surrogates.point_model import gp
from nas_jax.tasks.synthetic import synthetic_task

FAST = dict(featurizer=otmann(nu_str=(0.1, 0.8)), surrogate=gp(n_starts=2, fit_steps=10), optimiser=ea(lo=12, hi=12))
# The first 5 proposals of `_search(screen=0)`, made by the EA before `screen` was added
# (sha1 of each point's JSON, first 12 hex digits): 2 of the initial pool, then 3 by EI.
PAPER = ["6011635eac18", "d59557eae12b", "7b34f4c0fe09", "7fa9595ae7c3", "79973c4de194"]


@pytest.fixture(scope="module")
def setup():
  return layer_graph_space("mlp", max_layers=12), synthetic_task("f2")


def _observation(space, task, t, point):
  js = space.to_json(point)
  value = task.evaluate(js, 0).value
  return Observation(trial_id=t, arch_json=js, value=value, status=Status.OK, error="", seconds=0.0, worker="t")


def _search(space, task, steps, **options):
  """(strategy, state, observations, notes) after `steps` proposals of one point, each observed."""
  s = presets.nasbot(space, task.goal, **{**FAST, **options})
  state, observations, notes = s.init(jax.random.key(5)), [], []
  for t in range(steps):
    state, (p,) = s.propose(state, 1, [])
    notes.append(s.notes(state, p))
    observations.append(_observation(space, task, t, p))
    state = s.update(state, observations[-1:])
  return s, state, observations, notes


def _digest(space, point) -> str:
  return hashlib.sha1(json.dumps(space.to_json(point), sort_keys=True).encode()).hexdigest()[:12]


def test_screen_0_is_the_papers_ea_to_the_bit(setup):
  space, task = setup
  _, _, observations, _ = _search(space, task, len(PAPER))  # the default
  assert [
    hashlib.sha1(json.dumps(o.arch_json, sort_keys=True).encode()).hexdigest()[:12] for o in observations
  ] == PAPER


def test_the_screened_ea_replays_from_the_journal(setup):
  space, task = setup
  more = dict(optimiser=ea(lo=2 * presets.EA_SCREEN, hi=2 * presets.EA_SCREEN, screen=presets.EA_SCREEN))  # drops some
  live, state, observations, notes = _search(space, task, 5, **more)
  assert [n.get("screened") for n in notes[2:]] == [presets.EA_SCREEN] * 3  # the EA's, screened
  _, (expected,) = live.propose(state, 1, [])
  fresh = presets.nasbot(space, task.goal, **{**FAST, **more})  # a new process: no memo, no cache
  replayed = fresh.update(fresh.init(jax.random.key(5)), observations)
  _, (again,) = fresh.propose(replayed, 1, [])
  assert _digest(space, again) == _digest(space, expected)
