"""`acquisition.ehvi`: Monte Carlo EHVI against exact improvements and numerical integration, and
multi-objective BO through it."""

import jax
import ml_collections
import numpy as np
import pytest

from nas_jax.acquisition import pareto
from nas_jax.acquisition.ehvi import REF_MARGIN, ehvi
from nas_jax.search.state import Observation, Status
from nas_jax.wiring.parts import STRATEGIES
from nas_jax.search.task import Task
from nas_jax.spaces import cells
from nas_jax.spaces.constrained import constrained
from nas_jax.surrogates.surrogate import Predictive

# Observed (value, -cost) scores: a front of three points and one dominated point.
OBSERVED = np.array([[0.0, -1.0], [0.5, -2.0], [1.0, -4.0], [0.2, -3.0]])
LO, HI = OBSERVED.min(0), OBSERVED.max(0)
REF = np.full(2, -REF_MARGIN)


def _normalised(points):
  return (np.asarray(points, float) - LO) / (HI - LO)


def _exact_gain(value, cost_score):
  front = _normalised(OBSERVED[pareto.non_dominated(OBSERVED)])
  point = _normalised([[value, cost_score]])
  return pareto.hypervolume(np.vstack([front, point]), REF) - pareto.hypervolume(front, REF)


def _pred(mean, std):
  return Predictive(np.asarray(mean, float), np.asarray(std, float))


def test_a_certain_value_gives_its_exact_hypervolume_improvement():
  means, costs = [1.2, 0.7, 0.1, 0.4], [[-3.0], [-2.5], [-4.0], [-0.5]]
  pred = _pred(means, np.zeros(4))
  got = ehvi(pred, pred, np.asarray(costs), OBSERVED, jax.random.key(0), n_samples=8)
  want = [_exact_gain(m, c[0]) for m, c in zip(means, costs)]
  np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
  assert got[2] == 0.0 and got[0] > 0 and got[3] > 0  # (0.1, -4) is dominated by (1.0, -4)


def test_monte_carlo_matches_numerical_integration_over_the_value():
  mean, std, cost = 0.6, 0.4, -2.5
  pred = _pred([mean], [std])
  got = ehvi(pred, pred, np.array([[cost]]), OBSERVED, jax.random.key(1), n_samples=20000)[0]
  grid = np.linspace(mean - 8 * std, mean + 8 * std, 4001)
  gains = np.array([_exact_gain(v, cost) for v in grid])
  density = np.exp(-0.5 * ((grid - mean) / std) ** 2) / (std * np.sqrt(2 * np.pi))
  want = np.trapezoid(gains * density, grid)
  assert got == pytest.approx(want, rel=0.03)
  # Uncertainty has value: a dominated mean still gains in expectation, and more with more spread.
  narrow, wide = (
    ehvi(_pred([0.1], [s]), _pred([0.1], [s]), np.array([[-3.5]]), OBSERVED, jax.random.key(2), n_samples=2000)[0]
    for s in (0.3, 1.0)
  )
  assert 0 < narrow < wide


def test_a_given_reference_point_ignores_gains_below_it():
  pred = _pred([0.3, 1.2], [0.0, 0.0])
  costs = np.array([[-0.5], [-3.0]])  # a poor but tiny network, and a strong one
  default = ehvi(pred, pred, costs, OBSERVED, jax.random.key(0), n_samples=4)
  assert (default > 0).all()
  floor = np.array([0.4, -5.0])  # only values above 0.4 count
  got = ehvi(pred, pred, costs, OBSERVED, jax.random.key(0), n_samples=4, ref=floor)
  front = OBSERVED[pareto.non_dominated(OBSERVED)]
  point = np.array([[1.2, -3.0]])
  hv = lambda p: pareto.hypervolume(_normalised(p), _normalised(floor[None])[0])
  assert got[0] == 0.0 and got[1] == pytest.approx(hv(np.vstack([front, point])) - hv(front), rel=1e-12)


def test_pending_std_and_hyper_parameter_samples_are_used():
  mean = np.array([[0.6, 0.3], [0.8, 0.1]])  # H = 2 hyper-parameter samples, m = 2 candidates
  real, pending = _pred(mean, np.full((2, 2), 0.3)), _pred(mean, np.zeros((2, 2)))
  costs = np.array([[-2.5], [-1.5]])
  got = ehvi(real, pending, costs, OBSERVED, jax.random.key(3), n_samples=64)
  # The pending model's std (zero) is used: the draws are the means, half from each hyper sample.
  want = [np.mean([_exact_gain(mean[h, j], costs[j, 0]) for h in (0, 1)]) for j in (0, 1)]
  np.testing.assert_allclose(got, want, rtol=1e-12)


def _cell_cost(point):
  return {"params": float(SPACE.to_json(point)["arch_str"].count("conv"))}


SPACE = cells.nb201_space()


def _observe(space, points, start):
  out = []
  for i, p in enumerate(points):
    arch_str = space.to_json(p)["arch_str"]
    out.append(
      Observation(
        trial_id=start + i,
        arch_json=space.to_json(p),
        value=arch_str.count("conv_3x3") + 0.1 * arch_str.count("skip"),
        status=Status.OK,
        error="",
        seconds=0.0,
        worker="t",
        objectives={"params": _cell_cost(p)["params"]},
      )
    )
  return out


@pytest.mark.parametrize("multi_objective", ["ehvi", "parego"])
def test_multi_objective_bo_proposes_and_notes_how(multi_objective):
  space = constrained(SPACE, _cell_cost, {})
  task = Task("cells", "max", lambda a, s: None, objectives=(("params", "min"),))
  options = dict(
    featurizer="path",
    surrogate="gp",
    surrogate_config=dict(n_starts=2, fit_steps=10),
    acquisition="ei",
    optimizer="mutation",
    optimizer_config=dict(n_candidates=30, attempts_per_parent=20),
    initial="random",
    n_init=6,
    multi_objective=multi_objective,
  )
  config = ml_collections.ConfigDict({"strategy": "bo", "strategy_config": options})
  strategy = STRATEGIES["bo"](config, space, task)
  state = strategy.init(jax.random.key(0))
  state, first = strategy.propose(state, 6, [])
  state = strategy.update(state, _observe(space, first, 0))
  state, (point,) = strategy.propose(state, 1, [])
  notes = strategy.notes(state, point)
  assert notes["multi_objective"] == multi_objective
  if multi_objective == "parego":
    assert len(notes["weights"]) == 2 and sum(notes["weights"]) == pytest.approx(1, abs=1e-3)
  else:
    assert notes["acquisition"] >= 0  # an expected improvement of hypervolume


def test_ehvi_needs_costs_the_space_knows():
  task = Task("cells", "max", lambda a, s: None, objectives=(("params", "min"),))
  config = ml_collections.ConfigDict(
    {"strategy": "bo", "strategy_config": dict(featurizer="path", optimizer="mutation", multi_objective="ehvi")}
  )
  with pytest.raises(ValueError, match="ehvi needs .* a space that knows the other objectives"):
    STRATEGIES["bo"](config, SPACE, task)
  single = ml_collections.ConfigDict(
    {"strategy": "bo", "strategy_config": dict(featurizer="path", optimizer="mutation", multi_objective="ehvi")}
  )
  with pytest.raises(ValueError, match="needs other objectives"):
    STRATEGIES["bo"](single, SPACE, task._replace(objectives=()))
