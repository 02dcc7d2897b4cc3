"""NASBOT's EA acquisition optimiser (NASBOT App. B.2): selection probabilities,
schedules, budget accounting, exclusion, and known optima on a toy space and on MLP graphs."""

import os
import sys

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nas_jax.acquisition.evolution import ea_maximize, n_ea_schedule, n_mut_schedule, selection_probs
from nas_jax.spaces.graph_edit import host_rng
from nas_jax.spaces.space import Space, layer_graph_space

sys.path.insert(0, os.path.dirname(__file__))
from score_spy import ScoreSpy  # noqa: E402

_FLOATS = st.floats(-1e3, 1e3, allow_nan=False)


def _line_space():
  """Integers 0..200; a mutation moves by 1..3 either way (ok=False when clipped back to x at a
  bound). A known-optimum toy for the EA."""

  def mutate(x, key):
    rng = host_rng(key)
    y = int(np.clip(x + rng.choice([-3, -2, -1, 1, 2, 3]), 0, 200))
    return y, y != x

  return Space(
    name="line",
    kind="int",
    sample=None,
    mutate=mutate,
    neighbours=None,
    canonical_key=lambda x: x,
    to_json=None,
    from_json=None,
    initial=None,
  )


# --- selection (scale-free, uniform on ties) --------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
  g=st.lists(st.integers(-1000, 1000), min_size=1, max_size=30),
  c=st.integers(-(10**6), 10**6),
  scale=st.floats(0.01, 100),
  selection=st.sampled_from(["paper", "nasbot_code"]),
)
def test_selection_is_shift_and_scale_free(g, c, scale, selection):
  # Integer scores shift exactly; float noise below the shift's precision would be a different g.
  g = np.asarray(g, float)
  p = selection_probs(g, selection=selection)
  assert p.sum() == pytest.approx(1.0) and (p >= 0).all()
  np.testing.assert_allclose(selection_probs(np.add(g, c), selection=selection), p, atol=1e-9)
  np.testing.assert_allclose(selection_probs(np.multiply(g, scale), selection=selection), p, atol=1e-9)


@given(v=_FLOATS, n=st.integers(1, 20))
def test_selection_is_uniform_when_all_scores_are_equal(v, n):
  np.testing.assert_allclose(selection_probs([v] * n), np.full(n, 1 / n))


def test_selection_known_values():
  # g = (0, 1): sigma = 1/2, so pi ~ (1, e^2); the code's 2-sigma temperature gives (1, e).
  np.testing.assert_allclose(selection_probs([0.0, 1.0]), np.array([1, np.e**2]) / (1 + np.e**2))
  np.testing.assert_allclose(selection_probs([0.0, 1.0], selection="nasbot_code"), np.array([1, np.e]) / (1 + np.e))
  np.testing.assert_allclose(selection_probs([0.0, np.nan, 1.0, -np.inf])[[1, 3]], [0, 0])
  np.testing.assert_allclose(selection_probs([np.nan, np.nan]), [0.5, 0.5])
  with pytest.raises(ValueError, match="selection: 'softmax' is unknown"):
    selection_probs([1.0], selection="softmax")


def test_schedules_known_values():
  assert [n_ea_schedule(t) for t in (0, 1, 4, 16, 100, 400, 10_000)] == [50, 50, 50, 100, 250, 500, 500]
  assert [n_mut_schedule(n) for n in (1, 50, 100, 500, 10_000)] == [5, 21, 30, 67, 100]
  with pytest.raises(ValueError, match="t: -1"):
    n_ea_schedule(-1)


# --- the loop ------------------------------------------------------------------------------------


def test_ea_finds_the_known_optimum_on_a_line():
  spy = ScoreSpy(lambda x: -abs(x - 80))
  best, scores = ea_maximize(jax.random.PRNGKey(0), spy, [10, 20], _line_space(), n_ea=150, n_mut=10)
  assert best == [80] and scores.tolist() == [0.0]
  assert spy.calls[0] == [10, 20] and all(len(c) <= 10 for c in spy.calls[1:])


@pytest.mark.parametrize("n_ea, n_mut", [(40, 7), (45, 100), (0, 5)])
def test_ea_scores_exactly_n_ea_new_distinct_points(n_ea, n_mut):
  spy = ScoreSpy(lambda x: 0.0)  # uniform parents: new points stay easy to find
  ea_maximize(jax.random.PRNGKey(1), spy, [100, 100, 120], _line_space(), n_ea=n_ea, n_mut=n_mut)
  scored = sum(spy.calls, [])
  assert spy.calls[0] == [100, 120]  # the population, de-duplicated, scored once
  assert len(scored) == 2 + n_ea and len(set(scored)) == len(scored)


def test_given_population_scores_replace_the_first_call_and_change_nothing_else():
  f = lambda x: -abs(x - 80)
  population = [10, 20, 10, 55]
  plain = ea_maximize(jax.random.PRNGKey(4), ScoreSpy(f), population, _line_space(), n_ea=40, n_mut=6, n=4)
  spy = ScoreSpy(f)
  given_ = ea_maximize(
    jax.random.PRNGKey(4),
    spy,
    population,
    _line_space(),
    n_ea=40,
    n_mut=6,
    n=4,
    population_scores=[f(x) for x in population],
  )
  assert given_[0] == plain[0] and given_[1].tolist() == plain[1].tolist()
  assert not set(sum(spy.calls, [])) & set(population)  # only children were scored
  with pytest.raises(ValueError, match=r"population_scores: shape \(3,\); expected \[4\]"):
    ea_maximize(
      jax.random.PRNGKey(4), spy, population, _line_space(), n_ea=4, n_mut=2, population_scores=[0.0, 1.0, 2.0]
    )


def test_ea_never_returns_or_scores_excluded_points():
  spy = ScoreSpy(lambda x: -abs(x - 137))
  exclude = set(range(130, 145)) | {20}
  best, scores = ea_maximize(
    jax.random.PRNGKey(2), spy, [20, 60], _line_space(), n_ea=120, n_mut=10, n=5, exclude=exclude
  )
  assert not set(best) & exclude and len(best) == 5
  assert not set(sum(spy.calls[1:], [])) & exclude
  assert scores.tolist() == [-abs(x - 137) for x in best] == sorted(scores.tolist(), reverse=True)


def test_ea_stops_when_no_new_points_exist_and_skips_nan():
  spy = ScoreSpy(lambda x: np.nan if x % 2 else float(x))
  best, scores = ea_maximize(
    jax.random.PRNGKey(3), spy, [0], _line_space(), n_ea=10_000, n_mut=20, n=3, max_mutations=3000
  )
  scored = sum(spy.calls, [])
  assert len(scored) == len(set(scored)) <= 201  # stopped by max_mutations, not by n_ea
  top = sorted((x for x in scored if x % 2 == 0), reverse=True)[:3]
  assert best == top and scores.tolist() == [float(x) for x in top]


def test_ea_skips_unchanged_children_and_counts_them_as_mutations():
  calls = []

  def stuck(x, key):  # a space where no point can change
    calls.append(x)
    return x, False

  space = _line_space()._replace(mutate=stuck)
  spy = ScoreSpy(float)
  best, scores = ea_maximize(jax.random.PRNGKey(5), spy, [3, 7], space, n_ea=10, n_mut=4, n=2, max_mutations=9)
  assert len(calls) == 9 and spy.calls == [[3, 7]]  # the budget of mutations ends the loop
  assert best == [7, 3] and scores.tolist() == [7.0, 3.0]


def test_ea_checks_its_arguments():
  space, score = _line_space(), ScoreSpy(float)
  with pytest.raises(ValueError, match="n_mut: 0"):
    ea_maximize(jax.random.PRNGKey(0), score, [1], space, n_ea=5, n_mut=0)
  with pytest.raises(ValueError, match="population: empty"):
    ea_maximize(jax.random.PRNGKey(0), score, [], space, n_ea=5, n_mut=5)
  with pytest.raises(ValueError, match=r"score_fn: returned shape \(1,\) for 2 points"):
    ea_maximize(jax.random.PRNGKey(0), lambda ps: np.zeros(1), [1, 2], space, n_ea=5, n_mut=5)


def _layers(p):
  return int(np.asarray(p.mask).sum())


def test_ea_improves_on_the_mlp_pool_and_beats_random_sampling():
  # Known optimum: score = -|layers - 33|; the pool's best (27 layers) is 6 away and random
  # networks (at most 20 layers) at least 13.
  space = layer_graph_space("mlp")
  score = lambda ps: np.array([-abs(_layers(p) - 33) for p in ps], float)
  pool = space.initial()
  assert score(pool).max() == -6
  ea_best, rand_best = [], []
  for seed in range(3):
    key = jax.random.PRNGKey(seed)
    best, scores = ea_maximize(key, score, pool, space, n_ea=60, n_mut=n_mut_schedule(60), n=2)
    assert scores[0] == score(best)[0] and scores[0] >= scores[1]
    ea_best.append(scores[0])
    rand_best.append(score(space.sample(key, 60)).max())
  assert min(ea_best) == 0 and np.mean(ea_best) > np.mean(rand_best)


def test_ea_on_layer_graphs_respects_exclusion_and_is_deterministic():
  space = layer_graph_space("cnn")
  score = lambda ps: np.array([float(np.asarray(p.units).sum()) for p in ps])
  pool = space.initial()
  exclude = {space.canonical_key(p) for p in pool}
  run = lambda: ea_maximize(
    jax.random.PRNGKey(7), score, pool, space, n_ea=30, n_mut=10, n=3, exclude=exclude, selection="nasbot_code"
  )
  (best, scores), (again, _) = run(), run()
  assert [space.canonical_key(p) for p in best] == [space.canonical_key(p) for p in again]
  assert not {space.canonical_key(p) for p in best} & exclude
  assert scores[0] > score(pool).max()
