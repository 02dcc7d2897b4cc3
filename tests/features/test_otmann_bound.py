"""OTMANN without an LP (`otmann_bounds`): `solver=bound()` is never above the exact distance and
`solver=greedy()` (a greedy plan's cost) never below it, on random MLPs, CNNs and cells; both are 0
between a network and itself and exact where the cheapest matches already form a plan."""

import jax
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nas_jax import cell_layer_graph
from nas_jax.arch import cell as cell_lib
from nas_jax.features import otmann
from nas_jax.features.otmann_solver import bound, exact, greedy
from nas_jax.spaces import cells as C
from nas_jax.spaces.space import layer_graph_space

NU = otmann.KERNEL_NU_STR


def _all(a, b):
  return [otmann.otmann_distances(a, b, nu_str=NU, solver=s) for s in (exact(), bound(), greedy())]


def _assert_between(exact, bound, greedy):
  for x in (bound, greedy):
    assert np.all(np.isfinite(x.d)) and np.all(x.d >= 0.0)
  tol = 1e-9 * np.maximum(exact.d, 1.0)
  assert np.all(bound.d_bar <= exact.d_bar + 1e-9), float(np.max(bound.d_bar - exact.d_bar))
  assert np.all(bound.d <= exact.d + tol)
  assert np.all(greedy.d_bar >= exact.d_bar - 1e-9), float(np.max(exact.d_bar - greedy.d_bar))
  assert np.all(greedy.d >= exact.d - tol)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["mlp", "cnn"]))
def test_the_bounds_hold_exact_otmann_between_them_on_random_networks(seed, kind):
  space = layer_graph_space(kind, max_layers=10)
  a = space.sample(jax.random.key(seed), 4)
  b = space.sample(jax.random.key(seed + 1), 3)
  _assert_between(*_all(a, b))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_the_bounds_hold_exact_otmann_between_them_on_random_cells(seed):
  rng = np.random.default_rng(seed)
  nb201 = [cell_layer_graph(cell_lib.nb201_cell(rng.integers(0, 5, 6))) for _ in range(5)]
  nb101 = [cell_layer_graph(c) for c in C.nb101_space().sample(jax.random.PRNGKey(seed), 4)]
  for archs in (nb201, nb101):
    exact, bound, greedy = _all(archs, archs)
    _assert_between(exact, bound, greedy)
    for x in (bound, greedy):
      np.testing.assert_allclose(np.diagonal(x.d, axis1=1, axis2=2), 0.0, atol=1e-9)


def test_both_are_exact_when_the_cheapest_matches_form_a_plan():
  """Two NB201 cells that differ in one op: every layer's cheapest match is its twin (one layer
  unmatched on each side), which is a plan, so the relaxation loses nothing."""
  a = cell_layer_graph(cell_lib.nb201_cell([1, 2, 3, 1, 2, 3]))
  b = cell_layer_graph(cell_lib.nb201_cell([1, 2, 3, 1, 2, 4]))
  exact, bound, greedy = _all([a], [b])
  assert exact.d.min() > 0
  np.testing.assert_allclose(bound.d, exact.d, rtol=1e-9)
  np.testing.assert_allclose(greedy.d, exact.d, rtol=1e-9)
