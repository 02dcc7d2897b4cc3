"""The conditional space (Swersky et al. 2013, Sec. 2.1): spec layout, validation messages, sampling, mutation,
neighbours, canonical keys, JSON, layer-graph architectures and the arc kernel's unit values."""

import json

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nas_jax.arch import conditional_point as cond_point
from nas_jax.arch.architecture import Architecture
from nas_jax.spaces import conditional as C
from nas_jax.wiring.parts import SPACES

SPEC = cond_point.conditional_spec()
SPACE = C.conditional_space()
P = len(SPEC.names)


def point(params):
  return SPACE.from_json({"kind": "conditional", "params": params})


def layer(i, units=6, activation=0, dropout=0.1, l2=-4.0):
  return {
    f"layer{i}.log2_units": units,
    f"layer{i}.activation": activation,
    f"layer{i}.dropout": dropout,
    f"layer{i}.log10_l2": l2,
  }


def at_depth(p, depth):
  """p with its depth set (new layers from layer(i)), through the JSON."""
  params = {k: v for k, v in SPACE.to_json(p)["params"].items() if SPEC.layer[SPEC.names.index(k)] <= depth}
  for i in range(int(p.values[0]) + 1, depth + 1):
    params.update(layer(i))
  return point({**params, "depth": depth})


def with_value(p, name, value, active=None):
  i = SPEC.names.index(name)
  values = np.array(p.values)
  values[i] = value
  new_active = np.array(p.active)
  if active is not None:
    new_active[i] = active
  return cond_point.ConditionalPoint(values.astype(np.float32), new_active)


D2 = point({"depth": 2, "log10_lr": -3.0, "log2_batch": 5, **layer(1, 7, 1, 0.25, -5.0), **layer(2, 4, 3, 0.0, -2.0)})


def test_spec_layout():
  assert P == 15 and SPEC.max_depth == 3
  assert SPEC.names[:7] == (
    "depth",
    "log10_lr",
    "log2_batch",
    "layer1.log2_units",
    "layer1.activation",
    "layer1.dropout",
    "layer1.log10_l2",
  )
  assert SPEC.names[-4:] == ("layer3.log2_units", "layer3.activation", "layer3.dropout", "layer3.log10_l2")
  np.testing.assert_array_equal(SPEC.lower[:7], [1, -4, 4, 3, 0, 0, -6])
  np.testing.assert_array_equal(SPEC.upper[:7], [3, -1, 7, 9, 3, 0.5, -2])
  np.testing.assert_array_equal(SPEC.integer[:7], [True, False, True, True, True, False, False])
  np.testing.assert_array_equal(SPEC.layer, [0, 0, 0] + [1] * 4 + [2] * 4 + [3] * 4)
  assert len(cond_point.conditional_spec(1).names) == 7 and cond_point.conditional_spec(5).upper[0] == 5
  assert cond_point.ACTIVATIONS == ("relu", "tanh", "logistic", "elu")
  with pytest.raises(ValueError, match="max_depth: 0; expected an integer >= 1"):
    cond_point.conditional_spec(0)


def test_space_is_registered_and_checks_its_task():
  space = SPACES["conditional"](kind="conditional", max_depth=2)  # as build_search passes config.space
  assert (space.name, space.kind) == ("conditional", "conditional")
  assert all(len(p.values) == 11 for p in space.sample(jax.random.key(0), 3))
  with pytest.raises(ValueError, match="task: 'clustering'; allowed: classification, regression"):
    C.conditional_space(task="clustering")
  with pytest.raises(ValueError, match="kind: 'mlp'; the conditional space holds 'conditional' points only"):
    C.conditional_space(kind="mlp")


@pytest.mark.parametrize(
  "name, value, active, message",
  [
    ("layer1.dropout", 0.7, None, r"layer1.dropout: 0.7 is outside \[0, 0.5\]"),
    ("log10_lr", -4.5, None, r"log10_lr: -4.5 is outside \[-4, -1\]"),
    ("log2_batch", 4.5, None, "log2_batch: 4.5 is not an integer; log2_batch takes the integers 4..7"),
    ("layer3.dropout", 0.0, True, "layer3.dropout is marked active but depth is 2"),
    ("layer2.log10_l2", -2.0, False, "layer2.log10_l2 is marked inactive but depth is 2"),
    ("depth", 4, None, r"depth: 4 is outside \[1, 3\]"),
    ("depth", 1.5, None, "depth: 1.5 is not an integer"),
    ("layer3.log2_units", 10, None, r"layer3.log2_units: 10 is outside \[3, 9\]"),  # inactive values too
    ("layer1.log10_l2", np.nan, None, "layer1.log10_l2: nan is not finite"),
  ],
)
def test_check_point_names_the_parameter(name, value, active, message):
  cond_point.check_point(D2, SPEC)
  with pytest.raises(ValueError, match=message):
    cond_point.check_point(with_value(D2, name, value, active), SPEC)


def test_check_point_shapes_dtypes_and_batches():
  with pytest.raises(ValueError, match="expected float32 and bool"):
    cond_point.check_point(cond_point.ConditionalPoint(np.asarray(D2.values, np.float64), D2.active), SPEC)
  with pytest.raises(ValueError, match=r"expected both \[11\] or both \[n, 11\] for max_depth=2"):
    cond_point.check_point(D2, cond_point.conditional_spec(2))
  with pytest.raises(TypeError, match="point: dict given; expected a ConditionalPoint"):
    cond_point.check_point({"values": D2.values}, SPEC)
  batch = cond_point.stack_points([D2, with_value(D2, "layer1.dropout", 0.6)])
  assert batch.values.shape == (2, P)
  with pytest.raises(ValueError, match=r"points\[1\]: layer1.dropout: 0.6 is outside"):
    cond_point.check_point(batch, SPEC)


@pytest.mark.parametrize(
  "params, message",
  [
    (
      {"depth": 1, "log10_lr": -2, "log2_batch": 5, **layer(1), "layer2.dropout": 0.1},
      "params.layer2.dropout: given but depth is 1, which leaves it inactive; omit it",
    ),
    ({"depth": 2, "log10_lr": -2, "log2_batch": 5, **layer(1)}, "params.layer2.log2_units: missing; depth 2"),
    ({"depth": 1, "log10_lr": -2, "log2_batch": 5, **layer(1), "width": 3}, "params.width: unknown parameter"),
    ({"depth": 1, "log10_lr": "fast", "log2_batch": 5, **layer(1)}, "params.log10_lr: 'fast' is not a number"),
    ({"depth": 1, "log10_lr": -2, "log2_batch": True, **layer(1)}, "params.log2_batch: True is not a number"),
    ({"log10_lr": -2}, "params.depth: missing"),
    ({"depth": 0}, r"params.depth: 0 is outside \[1, 3\]"),
    (
      {"depth": 1, "log10_lr": -2, "log2_batch": 5, **layer(1, activation=4)},
      r"params.layer1.activation: 4 is outside \[0, 3\]",
    ),
  ],
)
def test_from_json_names_the_field(params, message):
  with pytest.raises(ValueError, match=message):
    point(params)


def test_from_json_checks_the_envelope():
  with pytest.raises(ValueError, match="kind: 'mlp'; this space holds 'conditional' points"):
    SPACE.from_json({"kind": "mlp", "params": {}})
  with pytest.raises(ValueError, match="expected an object with keys kind, params"):
    SPACE.from_json({"kind": "conditional"})


def canonical(p):
  """Inactive values sit at the lower bounds, so equal points have equal arrays."""
  active = np.asarray(p.active)
  return np.array_equal(np.asarray(p.values)[~active], SPEC.lower[~active])


def test_sample_covers_every_depth_with_valid_canonical_points():
  points = SPACE.sample(jax.random.key(0), 200)
  for p in points:
    cond_point.check_point(p, SPEC)
    assert canonical(p)
  depths = np.array([p.values[0] for p in points])
  assert set(depths) == {1, 2, 3} and min(np.bincount(depths.astype(int))[1:]) > 40
  acts = np.array([p.values[SPEC.names.index("layer1.activation")] for p in points])
  assert set(acts) == {0, 1, 2, 3}
  assert SPACE.sample(jax.random.key(0), 3)[2].values.tolist() == points[2].values.tolist()


def changed(a, b):
  """Names of the parameters whose active value or activity differs."""
  va, vb = np.where(a.active, a.values, np.nan), np.where(b.active, b.values, np.nan)
  return [n for n, x, y in zip(SPEC.names, va, vb) if not (x == y or (np.isnan(x) and np.isnan(y)))]


def test_mutate_changes_the_key_with_one_active_parameter_or_the_depth():
  points = SPACE.sample(jax.random.key(1), 50)
  depth_moves = 0
  for k, p in enumerate(points):
    m, ok = SPACE.mutate(p, jax.random.key(k))
    cond_point.check_point(m, SPEC)
    assert ok and canonical(m) and SPACE.canonical_key(m) != SPACE.canonical_key(p)
    diff = changed(p, m)
    if m.values[0] != p.values[0]:
      depth_moves += 1
      assert all(SPEC.layer[SPEC.names.index(n)] > min(p.values[0], m.values[0]) for n in diff[1:])
    else:
      assert len(diff) == 1
  assert depth_moves > 0
  one = C.conditional_space(max_depth=1)
  p = one.initial(1)[0]
  outs = [one.mutate(p, jax.random.key(k)) for k in range(20)]
  assert all(ok and one.canonical_key(m) != one.canonical_key(p) for m, ok in outs)


def test_neighbours_are_bounded_deterministic_and_one_step_away():
  p = D2
  nbrs = SPACE.neighbours(p)
  keys = [SPACE.canonical_key(q) for q in nbrs]
  assert keys == [SPACE.canonical_key(q) for q in SPACE.neighbours(p)]
  assert len(set(keys)) == len(keys) and SPACE.canonical_key(p) not in keys
  for q in nbrs:
    cond_point.check_point(q, SPEC)
    assert canonical(q)
  depths = sorted(int(q.values[0]) for q in nbrs if q.values[0] != 2)
  assert depths == [1, 3]
  deeper = next(q for q in nbrs if q.values[0] == 3)
  np.testing.assert_array_equal(deeper.values[-4:], deeper.values[7:11])  # the new layer copies layer 2
  # 2 depth moves, then 2 moves for each of the 10 other active parameters, less one for each of
  # the three at a bound: layer2.activation=3, layer2.dropout=0, layer2.log10_l2=-2.
  assert len(nbrs) == 2 + 20 - 3
  lr = sorted(float(q.values[1]) for q in nbrs if changed(p, q) == ["log10_lr"])
  np.testing.assert_allclose(lr, [-3.3, -2.7], rtol=1e-6)
  assert all(len(SPACE.neighbours(q)) <= 2 * P for q in SPACE.sample(jax.random.key(2), 20))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), depth=st.integers(1, 2), which=st.integers(0, 7), frac=st.floats(0.0, 1.0))
def test_canonical_key_and_json_ignore_inactive_values(seed, depth, which, frac):
  p = at_depth(SPACE.sample(jax.random.key(seed), 1)[0], depth)
  inactive = np.flatnonzero(~np.asarray(p.active))
  i = int(inactive[which % len(inactive)])
  value = SPEC.lower[i] + frac * (SPEC.upper[i] - SPEC.lower[i])
  q = with_value(p, SPEC.names[i], np.round(value) if SPEC.integer[i] else value)
  cond_point.check_point(q, SPEC)
  assert SPACE.canonical_key(q) == SPACE.canonical_key(p)
  assert SPACE.to_json(q) == SPACE.to_json(p)
  np.testing.assert_array_equal(
    cond_point.to_unit(cond_point.stack_points([q]), SPEC)[0], cond_point.to_unit(cond_point.stack_points([p]), SPEC)[0]
  )


def test_canonical_key_rounds_to_six_digits():
  p = with_value(D2, "log10_lr", -3.0000001)
  assert SPACE.canonical_key(p) == SPACE.canonical_key(D2)
  assert SPACE.canonical_key(with_value(D2, "log10_lr", -3.001)) != SPACE.canonical_key(D2)
  assert "log10_lr=-3," in SPACE.canonical_key(D2) and "layer3" not in SPACE.canonical_key(D2)


def test_json_round_trip():
  for p in SPACE.sample(jax.random.key(3), 30) + SPACE.initial() + [D2]:
    obj = json.loads(json.dumps(SPACE.to_json(p)))
    assert set(obj["params"]) == {n for n, on in zip(SPEC.names, np.asarray(p.active)) if on}
    q = SPACE.from_json(obj)
    np.testing.assert_array_equal(q.values, p.values)
    np.testing.assert_array_equal(q.active, p.active)
  assert SPACE.to_json(D2)["params"]["layer1.dropout"] == 0.25
  assert isinstance(SPACE.to_json(D2)["params"]["log2_batch"], int)


def test_initial_points_have_depths_one_to_max():
  pool = SPACE.initial()
  assert [int(p.values[0]) for p in pool] == [1, 2, 3]
  for p in pool:
    cond_point.check_point(p, SPEC)
  assert SPACE.to_json(pool[0])["params"] == {"depth": 1, "log10_lr": -2.5, "log2_batch": 5, **layer(1, 6, 1, 0.25)}
  assert len(SPACE.initial(2)) == 2
  with pytest.raises(ValueError, match=r"initial: n=4; expected None or an integer in 0..3"):
    SPACE.initial(4)


def test_to_architecture_is_the_chain_of_the_active_layers():
  arch = cond_point.to_architecture(D2, SPEC)
  obj = arch.to_json()
  assert [(l["label"], l.get("units")) for l in obj["layers"]] == [
    ("ip", None),
    ("tanh", 128),
    ("elu", 16),
    ("softmax", None),
    ("op", None),
  ]
  assert obj["edges"] == [[0, 1], [1, 2], [2, 3], [3, 4]]
  assert Architecture.from_json(obj).to_json() == obj
  for p in SPACE.sample(jax.random.key(4), 30):
    obj = cond_point.to_architecture(p, SPEC, decision="linear").to_json()
    depth = int(p.values[0])
    assert len(obj["layers"]) == depth + 3 and obj["layers"][-2]["label"] == "linear"
    for i, l in enumerate(obj["layers"][1 : depth + 1], start=1):
      at = lambda f, i=i: p.values[SPEC.names.index(f"layer{i}.{f}")]
      assert (l["label"], l["units"]) == (cond_point.ACTIVATIONS[int(at("activation"))], 2 ** int(at("log2_units")))
    Architecture.from_json(obj)
  with pytest.raises(ValueError, match="decision: 'sigmoid'; allowed: softmax, linear"):
    cond_point.to_architecture(D2, SPEC, decision="sigmoid")


def test_to_unit_of_a_one_layer_space_has_no_nan():
  """max_depth 1 gives depth the range [1, 1]: a constant, mapped to 0 rather than 0 / 0."""
  spec = cond_point.conditional_spec(1)
  u, _ = cond_point.to_unit(
    cond_point.stack_points(C.conditional_space(max_depth=1).sample(jax.random.key(0), 4)), spec
  )
  assert np.all(np.isfinite(u)) and np.all(u[:, 0] == 0.0)


def test_to_unit_rescales_active_values_and_zeroes_inactive_ones():
  points = cond_point.stack_points(SPACE.sample(jax.random.key(5), 50) + [D2])
  u, active = cond_point.to_unit(points, SPEC)
  assert u.shape == (51, P) and u.dtype == np.float64
  assert (u >= 0).all() and (u <= 1).all() and (u[~active] == 0).all()
  np.testing.assert_array_equal(active, points.active)
  np.testing.assert_allclose(u[-1, :11], [0.5, 1 / 3, 1 / 3, 4 / 6, 1 / 3, 0.5, 0.25, 1 / 6, 1.0, 0.0, 1.0], rtol=1e-6)
  with pytest.raises(ValueError, match=r"to_unit takes a batch \[n, P\]"):
    cond_point.to_unit(D2, SPEC)
