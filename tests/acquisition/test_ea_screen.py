"""The EA's screen (`optimizers.ea(screen=k)`): it evolves on the cheap score, scores only its k
best by the exact one and picks by that; it keeps the exact winner whenever the screen bounds the
exact score from above and ranks every dropped candidate below the kept winner; without a cheap
score it is the paper's EA."""

import jax
import numpy as np
import pytest

from nas_jax.acquisition import optimizers as O
from nas_jax.acquisition.acq_optimiser import Context, feasible_first
from nas_jax.arch.cell import NB201_OPS
from nas_jax.spaces.cells import nb201_space
from tests.acquisition.score_spy import ScoreSpy

NB201 = nb201_space()
CONV3 = NB201_OPS.index("nor_conv_3x3")
KEYS = (jax.random.key(4), jax.random.key(5))
OPTIONS = dict(lo=60, hi=60)


def _code(cell) -> int:
  return int(np.dot(np.asarray(cell.ops), 5 ** np.arange(6)))


def exact(cell) -> float:
  """A score with no ties: conv3 count, then the cell's base-5 code (steps of 6.4e-8)."""
  return float(np.sum(np.asarray(cell.ops) == CONV3)) + 1e-3 * _code(cell) / 5**6


def upper(cell) -> float:
  """An upper bound of `exact`, off by less than its smallest step: it ranks as exact does."""
  return exact(cell) + 1e-9 * (_code(cell) % 7)


def coarse(cell) -> float:
  """An upper bound of `exact` that cannot tell cells of one conv3 count apart."""
  return float(np.sum(np.asarray(cell.ops) == CONV3)) + 1e-3


def _context(screen_fn=None):
  observed = NB201.sample(jax.random.key(3), 6)
  scores = np.array([exact(c) for c in observed])
  keys = frozenset(NB201.canonical_key(p) for p in observed)
  return Context(NB201, tuple(observed), scores, tuple(range(6)), keys, screen_fn=screen_fn)


def _dropped_bound_proves_the_winner(screen: ScoreSpy, kept: list, winner) -> bool:
  """Every candidate the screen saw but did not keep has a bound below the winner's exact score."""
  keys = {NB201.canonical_key(p) for p in kept} | _context().exclude
  dropped = [p for call in screen.calls for p in call if NB201.canonical_key(p) not in keys]
  return bool(dropped) and max(screen.fn(p) for p in dropped) < exact(winner)


def test_the_screen_keeps_the_exact_winner_where_the_bound_proves_it_must():
  screen, score = ScoreSpy(upper), ScoreSpy(exact)
  ((best, value, notes),) = O.ea(screen=8, **OPTIONS).maximize(KEYS, score, _context(screen), 1)
  (kept,) = score.calls  # one exact call, on the screen's 8 best
  assert len(kept) == 8 and notes["screened"] == 8
  assert _dropped_bound_proves_the_winner(screen, kept, best)
  seen = [p for call in screen.calls for p in call if NB201.canonical_key(p) not in _context().exclude]
  assert value == exact(best) == max(exact(p) for p in seen)  # the winner of every candidate


def test_a_coarse_screen_still_picks_by_the_exact_score_among_the_kept():
  screen, score = ScoreSpy(coarse), ScoreSpy(exact)
  out = O.ea(screen=8, **OPTIONS).maximize(KEYS, score, _context(screen), 3)
  (kept,) = score.calls
  values = [v for _, v, _ in out]
  assert values == sorted((exact(p) for p in kept), reverse=True)[:3]
  assert [exact(p) for p, _, _ in out] == values


def test_without_a_cheap_score_the_screen_is_the_papers_ea():
  spy_a, spy_b = ScoreSpy(exact), ScoreSpy(exact)
  a = O.ea(screen=8, **OPTIONS).maximize(KEYS, spy_a, _context(), 2)
  b = O.ea(**OPTIONS).maximize(KEYS, spy_b, _context(), 2)
  assert [NB201.canonical_key(p) for p, _, _ in a] == [NB201.canonical_key(p) for p, _, _ in b]
  assert [[NB201.canonical_key(p) for p in c] for c in spy_a.calls] == [
    [NB201.canonical_key(p) for p in c] for c in spy_b.calls
  ]


def test_feasible_first_filters_the_screen_too():
  no_conv3_first = lambda c: int(np.asarray(c.ops)[0]) != CONV3
  screen = ScoreSpy(upper)
  opt = feasible_first(O.ea(screen=8, **OPTIONS), no_conv3_first)
  out = opt.maximize(KEYS, ScoreSpy(exact), _context(screen), 3)
  assert out and all(no_conv3_first(p) for p, _, _ in out)


def test_a_negative_screen_is_refused():
  with pytest.raises(ValueError, match="^ea: screen=-1; expected an integer >= 0$"):
    O.ea(screen=-1)
