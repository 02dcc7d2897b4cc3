"""The Strategy contract (search/strategy.py) for every name in STRATEGIES, as optax's alias tests
run every optimiser: a replayed journal proposes what the live run does, no proposal repeats an
observed, pending or same-call point, failed observations are taken in stride, a batch call gives
n distinct points, and bad options fail when the strategy is built, before anything is evaluated.

Each strategy runs on a natural small space with fast options. The objective is a hash of the
point's canonical key in [0, 1): deterministic, and no network trains.
"""

import dataclasses
import functools
import hashlib
import re
from typing import Any, Callable

import jax
import ml_collections
import numpy as np
import pytest

from nas_jax.search.state import Observation, Status
from nas_jax.wiring.parts import STRATEGIES
from nas_jax.search.strategy import Strategy
from nas_jax.search.task import Task
from nas_jax.spaces import cells
from nas_jax.spaces.conditional import conditional_space
from nas_jax.spaces.constrained import constrained
from nas_jax.spaces.morph_space import morph_space
from nas_jax.spaces.space import layer_graph_space

KEY = jax.random.key(0)
NAMES = sorted(STRATEGIES)
NOPE = "nope"  # the unknown value given to every string option in `Case.bad`


@dataclasses.dataclass(frozen=True)
class Case:
  """How one strategy is checked.

  Attributes:
    space: builds its natural small space.
    options: fast `config.strategy_config`.
    bad: options the factory must refuse with a ValueError that names the value.
    steps: proposals (one per step) of the reference run. A strategy that hands out a batch
      computed at once (EA generations, BANANAS' k) resumes by computing a new batch, so its run
      ends on a batch boundary.
    failed: steps whose evaluation fails.
  """

  space: Callable[[], Any]
  options: dict
  bad: tuple
  steps: int
  failed: tuple = (0,)


def _mlp():
  return layer_graph_space("mlp", max_layers=12)  # the MLP pool has 2 networks of <= 12 layers


def _nb201():
  return cells.nb201_space()


def _morph():
  return morph_space(width=8)


def _conditional():
  return conditional_space(max_depth=2)


# NASBOT's parts with two distance scales and 8 EA children
_OTMANN = dict(
  featurizer="otmann",
  featurizer_config=dict(nu_str=(0.1, 0.8)),
  surrogate="gp",
  surrogate_config=dict(n_starts=2, fit_steps=10),
  optimizer="ea",
  optimizer_config=dict(lo=8, hi=8),
)
_BAD_OTMANN = (
  {"featurizer_config": {"solver": NOPE}},
  {"featurizer_config": {"params": NOPE}},
  {"optimizer_config": {"selection": NOPE}},
)

CASES = {
  "random": Case(_nb201, {}, ({"n_init": 4},), steps=5),
  "ea": Case(_mlp, {"n_mut": 2}, ({"n_mut": 0},), steps=6, failed=(0, 4)),  # pool 2, generations of 2
  "bo": Case(
    _nb201,
    dict(
      featurizer="path",
      surrogate="gp",
      surrogate_config=dict(n_starts=2, fit_steps=10),
      acquisition="ei",
      optimizer="mutation",
      optimizer_config=dict(n_candidates=20, attempts_per_parent=20),
      initial="random",
      n_init=4,
      batch=2,
    ),
    (
      {"featurizer": NOPE},
      {"surrogate": NOPE},
      {"acquisition": NOPE},
      {"optimizer": NOPE},
      {"initial": NOPE},
      {"surrogate_config": {"kernel": NOPE}},
      {"acquisition_config": {"kappa": NOPE}},
    ),
    steps=8,
    failed=(0, 6),
  ),  # 4 random cells, then batches of 2
  "nasbot": Case(
    _mlp,
    _OTMANN,
    (
      {"acquisition": NOPE},
      *_BAD_OTMANN,
      {"surrogate_config": {"kernel": NOPE}},
      {"surrogate_config": {"p": -1.0}},
      {"optimizer_config": {"lo": -5}},
    ),
    steps=5,
    failed=(0, 3),
  ),
  # NASBOT's GP fitted by L-BFGS from the previous optimum plus fresh starts (its `fitter`)
  "nasbot[lbfgs]": Case(
    _mlp,
    dict(_OTMANN, surrogate_config=dict(fitter="lbfgs", fitter_config=dict(n_starts=2))),
    ({"surrogate_config": {"fitter": NOPE}},),
    steps=5,
    failed=(0, 3),
  ),
  "rand": Case(_mlp, _OTMANN, _BAD_OTMANN, steps=5, failed=(0, 3)),
  "bananas": Case(
    _nb201,
    dict(hidden=(8, 8), epochs=30, n_members=3, n_init=4, k=2, n_candidates=20, attempts_per_parent=20),
    ({"preset": NOPE}, {"encoding": NOPE}, {"acquisition": NOPE}, {"optimizer": NOPE}),
    steps=8,
    failed=(0, 6),
  ),  # 4 random cells, then batches of k = 2
  "gp_bo": Case(_nb201, dict(n_init=4, n_scored=50), ({"encoding": NOPE},), steps=6, failed=(0, 4)),
  "local_search": Case(_nb201, dict(n_restart=3), ({"n_restart": 0},), steps=8, failed=(0, 6)),
  "regularized_evolution": Case(
    _nb201, dict(population_size=5, tournament_size=2, n_init=4), ({"population_size": 0},), steps=8, failed=(0, 6)
  ),
  "autokeras": Case(
    _morph,
    dict(max_ops=2, n_children=4),
    (
      {"featurizer": NOPE},
      {"optimizer": NOPE},
      {"target": NOPE},
      {"variant": NOPE},
      {"layer_match": NOPE},
      {"bourgain_repeat": NOPE},
    ),
    steps=5,
    failed=(0, 3),
  ),
  "conditional_bo": Case(
    _conditional,
    dict(n_starts_fit=2, fit_steps=5, n_random=8, n_grad_starts=2, grad_steps=4, n_mutations=10),
    ({"featurizer": NOPE}, {"optimizer": NOPE}, {"acquisition": NOPE}),
    steps=6,
    failed=(0, 4),
  ),  # 2 successes before the GP
}


CASE_NAMES = sorted(CASES)  # every strategy, and variants `name[variant]` of some with other parts


def _strategy(name: str) -> str:
  """The registered strategy of a case: `nasbot[lbfgs]` -> `nasbot`."""
  return name.split("[")[0]


def _case(name: str) -> Case:
  if name not in CASES:
    pytest.fail(
      f"strategy {name!r} is registered in STRATEGIES but has no entry in CASES: give it a"
      " natural small space, fast options and bad options"
    )
  return CASES[name]


def _never_evaluate(arch_json, seed):
  raise AssertionError(f"the contract suite evaluates nothing itself; evaluate({arch_json!r}, {seed}) was called")


TASK = Task(name="hash", goal="max", evaluate=_never_evaluate)


def _build(name: str, space: Any, options: dict) -> Strategy:
  config = ml_collections.ConfigDict({"strategy": _strategy(name), "strategy_config": options})
  return STRATEGIES[_strategy(name)](config, space, TASK)


def _value(space: Any, point: Any) -> float:
  """The objective: the canonical key hashed to [0, 1)."""
  digest = hashlib.blake2b(repr(space.canonical_key(point)).encode(), digest_size=8).digest()
  return int.from_bytes(digest, "big") / 2.0**64


def _observe(space: Any, points: list, start: int, failed: bool) -> list[Observation]:
  return [
    Observation(
      trial_id=start + i,
      arch_json=space.to_json(p),
      value=None if failed else _value(space, p),
      status=Status.FAILED if failed else Status.OK,
      error="boom" if failed else "",
      seconds=0.0,
      worker="contract",
    )
    for i, p in enumerate(points)
  ]


def _keys(space: Any, points: list) -> list:
  return [space.canonical_key(p) for p in points]


def _jsons(space: Any, points: list) -> list:
  return [space.to_json(p) for p in points]


@dataclasses.dataclass(frozen=True)
class Run:
  """A reference run: `steps` single proposals, each observed before the next."""

  space: Any
  strategy: Strategy
  state: Any
  journal: list
  proposed: list  # [points of each propose call]


@functools.lru_cache(maxsize=None)
def _run(name: str) -> Run:
  case = _case(name)
  space = case.space()
  strategy = _build(name, space, case.options)
  state, journal, proposed = strategy.init(KEY), [], []
  for t in range(case.steps):
    state, points = strategy.propose(state, 1, [])
    proposed.append(points)
    obs = _observe(space, points, len(journal), failed=t in case.failed)
    journal += obs
    state = strategy.update(state, obs)
  return Run(space, strategy, state, journal, proposed)


@functools.lru_cache(maxsize=None)
def _next_two(name: str) -> list:
  """The live run's next call, propose(state, 2, [])."""
  run = _run(name)
  return run.strategy.propose(run.state, 2, [])[1]


@functools.lru_cache(maxsize=None)
def _replayed(name: str) -> Any:
  """The state `update(init(key), journal)` of the reference run's journal (a resume)."""
  run = _run(name)
  return run.strategy.update(run.strategy.init(KEY), run.journal)


def test_every_registered_strategy_has_a_case():
  assert sorted({_strategy(name) for name in CASES}) == NAMES


@pytest.mark.parametrize("name", CASE_NAMES)
def test_replaying_the_journal_proposes_what_the_live_run_does(name):
  run = _run(name)
  replayed = _replayed(name)
  _, again = run.strategy.propose(replayed, 2, [])
  assert _jsons(run.space, again) == _jsons(run.space, _next_two(name))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_a_model_predicts_as_a_function_of_the_state(name):
  run = _run(name)
  points = [p for batch in run.proposed for p in batch][:3] + _next_two(name)
  mean = None if run.strategy.predict is None else run.strategy.predict(run.state, points)
  if mean is None:  # no predict, or no model ("rand": BO on random acquisition values)
    assert _strategy(name) in ("ea", "local_search", "rand", "random", "regularized_evolution"), (
      f"{name}: no predictions"
    )
    return
  assert mean.shape == (len(points),) and np.all(np.isfinite(mean))
  replayed = _replayed(name)
  np.testing.assert_allclose(run.strategy.predict(replayed, points), mean, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_no_proposal_is_observed_pending_or_repeated(name):
  run = _run(name)
  during = [k for points in run.proposed for k in _keys(run.space, points)]
  assert len(during) == len(set(during)) == _case(name).steps  # one new point per step
  pending = _next_two(name)  # what the strategy would propose next is now under evaluation
  _, points = run.strategy.propose(run.state, 2, pending)
  keys = _keys(run.space, points)
  assert len(keys) == len(set(keys)) == 2
  assert not set(keys) & (set(during) | set(_keys(run.space, pending)))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_failed_observations_are_accepted_and_the_search_goes_on(name):
  case, run = _case(name), _run(name)
  assert [o.status for o in run.journal].count(Status.FAILED) == len(case.failed)
  assert all(len(points) == 1 for points in run.proposed)  # every step after a failure proposed
  # A start where every evaluation fails: the strategy keeps proposing new points.
  state, first = run.strategy.propose(run.strategy.init(KEY), 2, [])
  state = run.strategy.update(state, _observe(run.space, first, 0, failed=True))
  state, (point,) = run.strategy.propose(state, 1, [])
  assert run.space.canonical_key(point) not in _keys(run.space, first)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_a_batch_call_gives_n_distinct_new_points(name):
  run = _run(name)
  _, cold = run.strategy.propose(run.strategy.init(KEY), 3, [])
  keys = _keys(run.space, cold)
  assert len(keys) == len(set(keys)) == 3
  observed = {k for points in run.proposed for k in _keys(run.space, points)}
  keys = _keys(run.space, _next_two(name))
  assert len(keys) == len(set(keys)) == 2 and not set(keys) & observed


def test_a_model_batch_notes_its_seconds_once():
  """BO's batch of 2 after its 4 random cells: the fit and acquisition seconds of the one
  optimisation go with its first point only, so a journal's sum counts them once."""
  run = _run("bo")
  state, points = run.strategy.propose(run.state, 2, [])
  notes = [run.strategy.notes(state, p) for p in points]
  assert [("seconds" in n) for n in notes] == [True, False]
  assert notes[0]["seconds"]["fit"] >= 0 and notes[0]["seconds"]["acquisition"] >= 0


def _bad_cases() -> list:
  out = []
  for name in sorted(set(NAMES) | set(CASES)):
    for bad in CASES[name].bad if name in CASES else ({},):
      out.append(pytest.param(name, bad, id=f"{name}-{'-'.join(bad) or 'no-case'}"))
  return out


def _leaf(options: dict) -> tuple[str, Any]:
  """The one (option, value) of a bad option set, inside nested sections such as surrogate_config."""
  ((option, value),) = options.items()
  return _leaf(value) if isinstance(value, dict) else (option, value)


@pytest.mark.parametrize("name, bad", _bad_cases())
def test_bad_options_fail_when_the_strategy_is_built(name, bad):
  case = _case(name)
  option, value = _leaf(bad)
  named = re.escape(repr(value))
  with pytest.raises(ValueError, match=named):
    _build(name, case.space(), {**case.options, **bad})


# --- constraints and several objectives: the same cases, a second hash as a cost ------------


def _cost(space: Any, point: Any) -> float:
  """A cost in [0, 1) independent of `_value`: the canonical key hashed with another salt."""
  digest = hashlib.blake2b(repr(space.canonical_key(point)).encode(), digest_size=8, salt=b"cost").digest()
  return int.from_bytes(digest, "big") / 2.0**64


LIMIT = 0.6  # about 40% of every space is infeasible


def _mo_observe(space: Any, points: list, start: int, failed: bool) -> list[Observation]:
  return [
    dataclasses.replace(o, objectives={} if failed else {"params": _cost(space, p)})
    for o, p in zip(_observe(space, points, start, failed), points)
  ]


@functools.lru_cache(maxsize=None)
def _constrained_run(name: str, objectives: bool) -> tuple:
  """(space, strategy, journal, proposed points) of the case run on its space constrained to
  cost <= LIMIT, with the cost as a second objective when `objectives`."""
  case = _case(name)
  base = case.space()
  space = constrained(base, lambda p: {"params": _cost(base, p)}, {"params": LIMIT})
  task = TASK._replace(objectives=(("params", "min"),)) if objectives else TASK
  config = ml_collections.ConfigDict({"strategy": _strategy(name), "strategy_config": case.options})
  strategy = STRATEGIES[_strategy(name)](config, space, task)
  state, journal, proposed = strategy.init(KEY), [], []
  for t in range(case.steps):
    state, points = strategy.propose(state, 1, [])
    proposed += points
    obs = _mo_observe(space, points, len(journal), failed=t in case.failed)
    journal += obs
    state = strategy.update(state, obs)
  _, more = strategy.propose(state, 2, [])
  return space, strategy, journal, proposed + more


@pytest.mark.parametrize("objectives", [False, True], ids=["one-objective", "two-objectives"])
@pytest.mark.parametrize("name", CASE_NAMES)
def test_every_proposal_satisfies_the_constraints(name, objectives):
  space, _, _, proposed = _constrained_run(name, objectives)
  assert len(proposed) == _case(name).steps + 2
  costs = [_cost(space, p) for p in proposed]
  assert max(costs) <= LIMIT, f"{name} proposed a point of cost {max(costs):.3f} > {LIMIT}"


@pytest.mark.parametrize("name", CASE_NAMES)
def test_a_multi_objective_journal_replays_to_the_same_proposals(name):
  _, strategy, journal, proposed = _constrained_run(name, True)
  replayed = strategy.update(strategy.init(KEY), journal)
  _, again = strategy.propose(replayed, 2, [])
  space = _constrained_run(name, True)[0]
  assert _jsons(space, again) == _jsons(space, proposed[-2:])
  keys = _keys(space, proposed)
  assert len(keys) == len(set(keys))
