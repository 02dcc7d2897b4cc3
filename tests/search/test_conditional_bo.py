"""Conditional BO (issue 12 item 3): gradient ascent reaches the clipped maximum of a concave
function and moves only free coordinates; every kernel proposes valid points that are neither
observed nor pending, deterministically for a key; by default the gradient and mutation
optimisers spend equal acquisition evaluations; the conditional configs build the strategy."""

import os
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.acquisition.continuous import maximize_continuous, n_evaluations
from nas_jax.arch.conditional_point import check_point, conditional_spec
from nas_jax.search.state import Observation, Status
from nas_jax.wiring.parts import make_strategy
from nas_jax.spaces.conditional import conditional_space
from nas_jax.wiring import config_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPACE = conditional_space(max_depth=3)
SPEC = conditional_spec(3)
# Few, short fits and searches: the claims here are about validity, not about good proposals.
FAST = dict(n_starts_fit=2, fit_steps=5, n_random=8, n_grad_starts=2, grad_steps=4)
KERNELS = ("arc", "poor_man", "otmann")
OPTIMIZERS = ("gradient", "mutation")
CONFIGS = (
  "arc_conditional_digits.py",
  "poor_man_conditional_digits.py",
  "otmann_conditional_digits.py",
  "random_conditional_digits.py",
)


def conditional_bo(space, goal, **options):
  """The strategy `config.strategy = "conditional_bo"` builds from these `strategy_config` options."""
  config = {"strategy": "conditional_bo", "strategy_config": options}
  return make_strategy("conditional_bo", config, space, types.SimpleNamespace(goal=goal, objectives=()))


def _concave(target, values):
  return -jnp.sum((values - target) ** 2)


def _observed(strategy, n=6):
  """The strategy's state after n made-up validation errors (the initial points first)."""
  points = SPACE.initial() + SPACE.sample(jax.random.key(3), n - len(SPACE.initial()))
  obs = [
    Observation(
      trial_id=i, arch_json=SPACE.to_json(p), value=float(v), status=Status.OK, error="", seconds=1.0, worker="test"
    )
    for i, (p, v) in enumerate(zip(points, np.linspace(0.1, 0.6, n)))
  ]
  return strategy.update(strategy.init(jax.random.key(0)), obs)


def _keys(points):
  return [SPACE.canonical_key(p) for p in points]


def test_maximize_continuous_reaches_the_clipped_maximum_and_moves_only_free_coordinates():
  lower, upper = np.array([0.0, 0.0, -1.0, 0.0]), np.array([1.0, 2.0, 1.0, 10.0])
  target = jnp.array([0.3, 5.0, -0.5, 7.0])  # coordinate 1's maximum lies beyond its upper bound
  x0 = np.array([[0.9, 0.1, 0.5, 3.0], [0.1, 1.9, -0.9, 4.0]])
  free = np.array([[True, True, True, False], [True, True, False, True]])
  values, acq = maximize_continuous(
    jax.random.key(0), jax.tree_util.Partial(_concave, target), x0, free, lower, upper, steps=300
  )
  values = np.asarray(values)
  np.testing.assert_allclose(values[free], np.broadcast_to(np.clip(target, lower, upper), x0.shape)[free], atol=1e-2)
  assert np.array_equal(values[~free], x0[~free])
  assert np.all((values >= lower) & (values <= upper))
  assert values[0, 1] == values[1, 1] == 2.0  # clipped to the bound exactly
  np.testing.assert_allclose(acq, [_concave(target, v) for v in values], rtol=1e-12)
  assert np.all(np.asarray(acq) > [_concave(target, x) for x in x0])


def test_maximize_continuous_names_a_start_outside_the_bounds():
  with pytest.raises(ValueError, match="x0_values"):
    maximize_continuous(
      jax.random.key(0),
      lambda v: -jnp.sum(v**2),
      np.array([[2.0]]),
      np.array([[True]]),
      np.array([0.0]),
      np.array([1.0]),
    )


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_kernel_proposes_valid_points_neither_observed_nor_pending(kernel):
  strategy = conditional_bo(SPACE, "min", featurizer=kernel, gradient=kernel != "otmann", n_mutations=10, **FAST)
  state = _observed(strategy)
  pending = SPACE.sample(jax.random.key(7), 2)
  proposed, out = strategy.propose(state, 2, pending)
  assert len(out) == 2 and len(set(_keys(out))) == 2
  assert not set(_keys(out)) & (state.history.keys | set(_keys(pending)))
  for p in out:
    check_point(p, SPEC)
    note = strategy.notes(proposed, p)
    assert note["featurizer"] == kernel and note["depth"] == int(p.values[0])
    assert note["origin"] in ("random", "mutation", "gradient") and note["acquisition"] >= 0  # EI


def test_gradient_and_mutation_spend_equal_acquisition_evaluations_by_default():
  spent = {}
  for optimizer in OPTIMIZERS:
    strategy = conditional_bo(SPACE, "min", featurizer="arc", gradient=optimizer == "gradient", **FAST)
    proposed, (p,) = strategy.propose(_observed(strategy), 1, [])
    note = strategy.notes(proposed, p)
    assert note["optimizer"] == "per_depth" and note["gradient"] == (optimizer == "gradient")
    spent[optimizer] = note["n_acq_evals"]
  scored = 3 * FAST["n_random"] + 6  # random points per depth and the observed points
  gradient = n_evaluations(3 * FAST["n_grad_starts"], FAST["grad_steps"])
  assert spent["gradient"] == spent["mutation"] == scored + 3 * 100 + gradient


def test_proposals_are_deterministic_for_a_key_and_skip_pending_points():
  # UCB with kappa = 0 is the posterior mean, which hallucinating a pending point leaves as it is,
  # so only the exclusion of pending keys can keep the strategy from proposing p twice.
  options = dict(FAST, gradient=False, acquisition="ucb", acquisition_config={"kappa": 0.0}, n_random=1, n_mutations=0)
  first, second = (conditional_bo(SPACE, "min", **options) for _ in range(2))
  pending = SPACE.sample(jax.random.key(7), 1)
  state = _observed(first)
  proposed, (p,) = first.propose(state, 1, pending)
  _, (again,) = second.propose(_observed(second), 1, pending)
  assert _keys([p]) == _keys([again])
  # The same key (as many points pending) draws the same candidates, one per depth.
  proposed_other, (other,) = first.propose(state, 1, [p])
  assert _keys([other]) != _keys([p])
  assert first.notes(proposed_other, other)["acquisition"] <= first.notes(proposed, p)["acquisition"]


def test_options_are_checked_by_name():
  with pytest.raises(ValueError, match="featurizer: 'rbf' is unknown"):
    conditional_bo(SPACE, "min", featurizer="rbf")
  with pytest.raises(ValueError, match="ascends the acquisition's gradient"):
    conditional_bo(SPACE, "min", featurizer="otmann", gradient=True)
  with pytest.raises(ValueError, match="n_random"):
    conditional_bo(SPACE, "min", n_random=0)


@pytest.mark.parametrize("name", CONFIGS)
def test_conditional_config_builds_its_strategy_and_documents_its_command(name):
  path = os.path.join(ROOT, "configs", name)
  c = config_files.load_config(f"{path}:smoke")
  assert (c.task.name, c.space.name, c.task.max_depth, c.budget) == ("conditional", "conditional", 3, 5)
  space = conditional_space(max_depth=c.space.max_depth)
  strategy = make_strategy(c.strategy, c, space, types.SimpleNamespace(goal="min", objectives=()))
  _, out = strategy.propose(strategy.init(jax.random.key(0)), c.budget, [])
  if c.strategy == "conditional_bo":  # the initial networks, then random ones until a success
    assert _keys(out)[:3] == _keys(space.initial())
  assert len(set(_keys(out))) == c.budget  # canonical_key checks every point
  assert f"python launch/search.py --config=configs/{name}" in open(path).read().split('"""')[1]
  with pytest.raises(ValueError, match="arg must be"):
    config_files.load_config(f"{path}:large")
