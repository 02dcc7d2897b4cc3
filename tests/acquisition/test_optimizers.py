"""Acquisition optimisers: enumeration finds the exact maximum of a score over all NB201 cells
and skips excluded ones; every optimiser returns new points best first; an optimiser says what it
needs of a space, and bad options are named at build time."""

import jax
import numpy as np
import pytest

from nas_jax.acquisition import optimizers as O
from nas_jax.acquisition.acq_optimiser import Context
from nas_jax.acquisition.conditional_search import per_depth
from nas_jax.arch.cell import NB201_OPS
from nas_jax.spaces.cells import nb201_space
from nas_jax.spaces.conditional import conditional_space
from nas_jax.spaces.space import layer_graph_space

NB201 = nb201_space()
CONV3 = NB201_OPS.index("nor_conv_3x3")


def conv3_count(cells):
  return np.array([float(np.sum(np.asarray(c.ops) == CONV3)) - 0.01 * float(np.asarray(c.ops)[0]) for c in cells])


def _context(space, points, exclude=()):
  scores = np.asarray(conv3_count(points)) if space is NB201 else np.arange(len(points), dtype=float)
  keys = frozenset(space.canonical_key(p) for p in points) | frozenset(exclude)
  return Context(space, tuple(points), scores, tuple(range(len(points))), keys)


def test_enumeration_returns_the_exact_maximum_and_skips_excluded_cells():
  ctx = _context(NB201, NB201.sample(jax.random.key(0), 5))
  (best, value, notes), second = O.enumeration().maximize((jax.random.key(1), jax.random.key(2)), conv3_count, ctx, 2)
  assert np.all(np.asarray(best.ops) == CONV3) and value == pytest.approx(6 - 0.03)
  assert notes["n_candidates"] == 15625 - 5 and second[1] <= value
  ctx = _context(NB201, [best])  # observed now: the next best comes back
  ((again, _, _),) = O.enumeration().maximize((jax.random.key(1), jax.random.key(2)), conv3_count, ctx, 1)
  assert NB201.canonical_key(again) != NB201.canonical_key(best)


@pytest.mark.parametrize(
  "name, options",
  [
    (O.ea, dict(lo=20, hi=20)),
    (O.mutation_search, dict(n_candidates=30)),
    (O.random_search, dict(n_candidates=50)),
    (O.tree, dict(n_children=4)),
  ],
)
def test_every_optimiser_returns_new_points_best_first(name, options):
  observed = NB201.sample(jax.random.key(3), 6)
  ctx = _context(NB201, observed)
  out = name(**options).maximize((jax.random.key(4), jax.random.key(5)), conv3_count, ctx, 3)
  assert out, name
  values = [v for _, v, _ in out]
  assert values == sorted(values, reverse=True)
  assert not {NB201.canonical_key(p) for p, _, _ in out} & ctx.exclude
  np.testing.assert_allclose(values, conv3_count([p for p, _, _ in out]))
  assert max(values) >= max(conv3_count(observed)) - 1  # the search moves towards the maximum


def test_an_optimiser_checks_what_it_needs_of_a_space_and_names_bad_options():
  O.enumeration().check(NB201)
  per_depth().check(conditional_space(max_depth=2))
  with pytest.raises(ValueError, match="the 'layer_graph' space cannot list its points"):
    O.enumeration().check(layer_graph_space("cnn"))
  with pytest.raises(ValueError, match="the 'nb201' space has none"):
    per_depth().check(NB201)
  with pytest.raises(ValueError, match="selection='x'"):
    O.ea(selection="x")
  with pytest.raises(ValueError, match="n_candidates=0"):
    O.mutation_search(n_candidates=0)
  with pytest.raises(ValueError, match="t0, r, t_low"):
    O.tree(r=2.0)
