"""Acquisition optimisers: enumeration finds the exact maximum of a score over all NB201 cells
and skips excluded ones; every optimiser returns new points best first; the registry says which
optimiser works on which space, and bad options are named at build time."""

import jax
import numpy as np
import pytest

from nas_jax.acquisition import optimizers as O
from nas_jax.acquisition.acq_optimiser import Context
from nas_jax.arch.cell import NB201_OPS
from nas_jax.spaces.cells import nb201_space

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
  (best, value, notes), second = O.make_optimiser("enumerate", "nb201").maximize(
    (jax.random.key(1), jax.random.key(2)), conv3_count, ctx, 2
  )
  assert np.all(np.asarray(best.ops) == CONV3) and value == pytest.approx(6 - 0.03)
  assert notes["n_candidates"] == 15625 - 5 and second[1] <= value
  ctx = _context(NB201, [best])  # observed now: the next best comes back
  ((again, _, _),) = O.make_optimiser("enumerate", "nb201").maximize(
    (jax.random.key(1), jax.random.key(2)), conv3_count, ctx, 1
  )
  assert NB201.canonical_key(again) != NB201.canonical_key(best)


@pytest.mark.parametrize(
  "name, options",
  [
    ("ea", dict(lo=20, hi=20)),
    ("mutation", dict(n_candidates=30)),
    ("random", dict(n_candidates=50)),
    ("tree", dict(n_children=4)),
  ],
)
def test_every_optimiser_returns_new_points_best_first(name, options):
  observed = NB201.sample(jax.random.key(3), 6)
  ctx = _context(NB201, observed)
  out = O.make_optimiser(name, "nb201", **options).maximize((jax.random.key(4), jax.random.key(5)), conv3_count, ctx, 3)
  assert out, name
  values = [v for _, v, _ in out]
  assert values == sorted(values, reverse=True)
  assert not {NB201.canonical_key(p) for p, _, _ in out} & ctx.exclude
  np.testing.assert_allclose(values, conv3_count([p for p, _, _ in out]))
  assert max(values) >= max(conv3_count(observed)) - 1  # the search moves towards the maximum


def test_the_registry_says_where_each_optimiser_works_and_names_bad_options():
  assert "enumerate" in O.optimisers_for("nb201") and "enumerate" not in O.optimisers_for("cnn")
  assert "per_depth" in O.optimisers_for("conditional") and "per_depth" not in O.optimisers_for("nb201")
  with pytest.raises(ValueError, match="optimizer: 'enumerate' does not work on 'cnn' spaces"):
    O.make_optimiser("enumerate", "cnn")
  with pytest.raises(ValueError, match="optimizer_config.selection='x'"):
    O.make_optimiser("ea", "cnn", selection="x")
  with pytest.raises(ValueError, match="optimizer_config for 'mutation'"):
    O.make_optimiser("mutation", "cnn", n_children=3)
  with pytest.raises(ValueError, match="t0, r, t_low"):
    O.make_optimiser("tree", "cnn", r=2.0)
