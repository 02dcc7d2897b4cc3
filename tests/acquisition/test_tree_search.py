"""Auto-Keras's tree-structured SA optimiser (Auto-Keras Sec. 3.2, Alg. 1) on toy spaces."""

import os
import sys

import jax
import numpy as np
import pytest

from nas_jax.acquisition.tree_search import acceptance, tree_maximize

sys.path.insert(0, os.path.dirname(__file__))
from score_spy import ScoreSpy  # noqa: E402

_MOVES = (("+1", 1), ("-1", -1), ("+3", 3), ("-3", -3))


def _expand(x):
  """Integers 0..100; the morphs move by 1 or 3."""
  return [(name, x + dx) for name, dx in _MOVES if 0 <= x + dx <= 100]


def _replay(x, ops):
  return x + sum(dict(_MOVES)[o] for o in ops)


def _peak(x):
  return -((x - 37) ** 2) / 100.0


def test_acceptance_known_values():
  # A hand-computed value of Alg. 1's acceptance: c_min - alpha = -0.05 is a gain of -0.05 on the score scale.
  assert acceptance(-0.05, 1.0) == pytest.approx(0.951229, abs=1e-6)
  assert acceptance(-0.05, 0.9**10) == pytest.approx(0.866409, abs=1e-6)
  assert acceptance(-0.05, 0.9**50) == pytest.approx(6.118e-5, rel=1e-3)
  assert acceptance(0.0, 0.5) == acceptance(3.0, 1e-9) == 1.0


def test_exactly_88_pops_while_the_queue_lasts():
  history = list(range(100))
  out = tree_maximize(
    jax.random.PRNGKey(0), ScoreSpy(_peak), history, [_peak(x) for x in history], lambda x: [], lambda x: x
  )
  assert out is None  # nothing new to expand into
  # Scores rise down a binary tree, so every child is kept and the queue never runs dry.
  wide = tree_maximize(
    jax.random.PRNGKey(0), ScoreSpy(float), [0], [0.0], lambda x: [("a", 2 * x + 1), ("b", 2 * x + 2)], lambda x: x
  )
  assert wide.n_pops == 88 and wide.n_scored == 2 * 88  # 0.9^87 > 1e-4 >= 0.9^88


@pytest.mark.parametrize("variant", ["paper", "code"])
def test_finds_the_peak_and_its_ops_replay_from_the_ancestor(variant):
  history = [0, 10]
  spy = ScoreSpy(_peak)
  out = tree_maximize(
    jax.random.PRNGKey(1), spy, history, [_peak(x) for x in history], _expand, lambda x: x, variant=variant
  )
  assert out.point == 37 and out.score == _peak(37)
  assert _replay(history[out.ancestor], out.ops) == out.point
  scored = sum(spy.calls, [])
  assert len(scored) == len(set(scored)) == out.n_scored and not set(scored) & set(history)


def test_seen_points_are_never_scored_or_returned_and_search_is_deterministic():
  seen = set(range(30, 45))
  args = (ScoreSpy(_peak), [0, 10], [_peak(0), _peak(10)], _expand, lambda x: x)
  out = tree_maximize(jax.random.PRNGKey(2), *args, seen=seen)
  assert out.point not in seen and out.point in (29, 45)  # the best points left
  assert not set(sum(args[0].calls, [])) & seen
  again = tree_maximize(jax.random.PRNGKey(2), ScoreSpy(_peak), *args[1:], seen=seen)
  assert again == out


def test_without_an_improvement_the_best_scored_child_is_returned():
  # Every child scores below the history's best: none is "chosen", so the fallback applies.
  spy = ScoreSpy(lambda x: -1.0 - x / 100)
  out = tree_maximize(jax.random.PRNGKey(3), spy, [50], [10.0], _expand, lambda x: x)
  assert out.score == max(spy.fn(p) for p in sum(spy.calls, [])) and out.point == 47


def test_ruled_out_children_are_never_chosen():
  out = tree_maximize(
    jax.random.PRNGKey(4), ScoreSpy(lambda x: np.nan if x > 10 else _peak(x)), [10], [_peak(10)], _expand, lambda x: x
  )
  assert out.point <= 10


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (dict(r=1.0), "0 < r < 1"),
    (dict(t_low=2.0), "t_low < t0"),
    (dict(variant="astar"), "variant: 'astar'"),
  ],
)
def test_bad_arguments_are_named(kwargs, match):
  with pytest.raises(ValueError, match=match):
    tree_maximize(jax.random.PRNGKey(0), ScoreSpy(_peak), [0], [0.0], _expand, lambda x: x, **kwargs)
  with pytest.raises(ValueError, match="no finite score"):
    tree_maximize(jax.random.PRNGKey(0), ScoreSpy(_peak), [0], [np.nan], _expand, lambda x: x)
  with pytest.raises(ValueError, match="one score each"):
    tree_maximize(jax.random.PRNGKey(0), ScoreSpy(_peak), [0, 1], [0.0], _expand, lambda x: x)
