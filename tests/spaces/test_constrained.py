"""`spaces.constrained`: a constrained space gives only feasible points through every generator,
changes nothing when no point is out of bounds, and says so when nothing is feasible."""

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nas_jax.spaces import cells
from nas_jax.spaces.constrained import METRICS, check_limits, constrained, violation
from nas_jax.spaces.space import layer_graph_space
from nas_jax.models import network_costs as costs_lib

DIGITS = ((8, 8, 1), 10)
SPACE = cells.nb201_space()


def _cnn_costs(arch):
  c = costs_lib.network_costs(arch, *DIGITS)
  return {"params": c.params, "flops": c.flops}


def _ops(point) -> dict:
  """A cell's made-up cost: its number of 3x3 convolutions (code 3 on the six edges)."""
  return {"params": float(SPACE.to_json(point)["arch_str"].count("conv_3x3"))}


def test_violation_names_the_first_broken_limit():
  assert violation({"params": 10.0, "flops": 5.0}, {"params": 10.0}) == ""
  assert violation({"params": 11.0}, {"params": 10.0}) == "params 11 > max_params 10"
  with pytest.raises(ValueError, match="lack 'flops'"):
    violation({"params": 1.0}, {"flops": 2.0})


@pytest.mark.parametrize(
  "limits, match",
  [({"weights": 1.0}, "'weights' is not a cost metric"), ({"params": 0}, "max_params=0"), ({"flops": -1.0}, "-1.0")],
)
def test_bad_limits_are_named(limits, match):
  with pytest.raises(ValueError, match=match):
    check_limits(limits)
  assert set(METRICS) >= {"params", "flops", "memory_mb", "latency_ms"}


def test_a_loose_limit_changes_nothing():
  space = layer_graph_space("cnn", max_layers=12)
  loose = constrained(space, _cnn_costs, {"params": 1e12})
  key = jax.random.key(3)
  as_json = lambda points: [space.to_json(p) for p in points]
  assert as_json(loose.sample(key, 6)) == as_json(space.sample(key, 6))
  point = space.sample(key, 1)[0]
  assert space.to_json(loose.mutate(point, key)[0]) == space.to_json(space.mutate(point, key)[0])
  assert as_json(loose.neighbours(point)) == as_json(space.neighbours(point))
  assert as_json(loose.initial()) == as_json(space.initial())
  assert loose.costs(point) == _cnn_costs(point) and loose.feasible(point)


def test_every_generator_gives_feasible_points_only():
  space = layer_graph_space("cnn", max_layers=20)
  pool = [_cnn_costs(p)["params"] for p in space.initial()]
  limit = float(np.median(pool))  # half the pool is too large
  tight = constrained(space, _cnn_costs, {"params": limit})
  key = jax.random.key(0)
  initial = tight.initial()
  assert 0 < len(initial) < len(pool) and all(_cnn_costs(p)["params"] <= limit for p in initial)
  points = tight.sample(key, 20)
  assert len(points) == 20 and all(_cnn_costs(p)["params"] <= limit for p in points)
  for i, p in enumerate(points[:5]):
    child, ok = tight.mutate(p, jax.random.fold_in(key, i))
    assert _cnn_costs(child)["params"] <= limit
    assert all(_cnn_costs(q)["params"] <= limit for q in tight.neighbours(p))
  dropped = [q for q in space.neighbours(points[0]) if _cnn_costs(q)["params"] > limit]
  assert len(tight.neighbours(points[0])) == len(space.neighbours(points[0])) - len(dropped)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(limit=st.integers(0, 5), seed=st.integers(0, 1000))
def test_cells_under_a_limit_never_exceed_it(limit, seed):
  space = cells.nb201_space()
  tight = constrained(space, _ops, {"params": limit + 0.5})
  key = jax.random.key(seed)
  points = tight.sample(key, 8)
  assert len(points) == 8  # at most 5 of 6 edges are 3x3 convs for limit 4: plenty feasible
  assert all(_ops(p)["params"] <= limit for p in points + tight.neighbours(points[0]))
  child, ok = tight.mutate(points[0], key)
  assert _ops(child)["params"] <= limit and (ok or child is points[0])


def test_a_sampler_that_finds_nothing_feasible_says_so():
  space = layer_graph_space("cnn", max_layers=12)
  impossible = constrained(space, _cnn_costs, {"params": 1.0})
  with pytest.raises(ValueError, match=r"constraints: none of \d+ random points .* \(e.g. params .* > max_params 1\)"):
    impossible.sample(jax.random.key(0), 4)
  assert impossible.initial() == []
  point = space.sample(jax.random.key(0), 1)[0]
  assert impossible.mutate(point, jax.random.key(1)) == (point, False)


def test_costs_are_computed_once_per_canonical_key():
  space = cells.nb201_space()
  calls = []

  def counting(point):
    calls.append(space.canonical_key(point))
    return _ops(point)

  tight = constrained(space, counting, {"params": 2.5})
  points = space.sample(jax.random.key(0), 10)
  for p in points + points:
    tight.feasible(p)
  assert sorted(calls) == sorted({space.canonical_key(p) for p in points})
