"""The interchange format: every validity rule gives a specific ValueError; round trips are exact."""

import copy
import json
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nas_jax
from nas_jax.arch import json_io
from nas_jax.spaces import pools, random_arch

sys.path.insert(0, os.path.dirname(__file__))
from networks import FIG1B, FIG1C, FIG16  # noqa: E402


def _edit(obj, fn):
  obj = copy.deepcopy(obj)
  fn(obj)
  return obj


def _add_layer(obj, layer, edges):
  obj["layers"].append(layer)
  obj["edges"] += edges


BAD = [
  ("not an object", [1, 2], "expected an object"),
  ("bad json text", "{kind", "not valid JSON"),
  ("missing key", {"kind": "cnn", "layers": []}, "expected exactly kind, layers, edges"),
  ("unknown kind", _edit(FIG1B, lambda o: o.update(kind="rnn")), "kind: 'rnn' is unknown"),
  (
    "unknown label",
    _edit(FIG1B, lambda o: o["layers"][2].update(label="conv4")),
    "layers[2].label: 'conv4' is not a cnn label",
  ),
  (
    "mlp label in cnn",
    _edit(FIG1B, lambda o: o["layers"][2].update(label="relu")),
    "layers[2].label: 'relu' is not a cnn label",
  ),
  ("units missing", _edit(FIG1B, lambda o: o["layers"][1].pop("units")), "layers[1].units: missing"),
  (
    "units too small",
    _edit(FIG1B, lambda o: o["layers"][1].update(units=4)),
    "layers[1].units: 4 is not allowed; expected an integer in [8, 1024]",
  ),
  ("units too large", _edit(FIG1B, lambda o: o["layers"][1].update(units=2048)), "[8, 1024]"),
  ("units not int", _edit(FIG1B, lambda o: o["layers"][1].update(units=16.0)), "layers[1].units"),
  (
    "units on pool",
    _edit(FIG1B, lambda o: o["layers"][6].update(units=8)),
    "layers[6].units: a max-pool layer has no units",
  ),
  (
    "bad stride",
    _edit(FIG1B, lambda o: o["layers"][1].update(stride=3)),
    "layers[1].stride: 3 is not allowed; a conv3 layer has stride 1 or 2",
  ),
  (
    "stride on fc",
    _edit(FIG1B, lambda o: o["layers"][7].update(stride=1)),
    "layers[7].stride: a fc layer has no stride",
  ),
  ("unknown layer key", _edit(FIG1B, lambda o: o["layers"][1].update(act="relu")), "unknown keys ['act']"),
  ("no ip", _edit(FIG1B, lambda o: o["layers"][0].update(label="conv3", units=8, stride=1)), "found 0 'ip' layers"),
  (
    "two op",
    _edit(FIG1B, lambda o: o["layers"][7].update(label="op") or o["layers"][7].pop("units")),
    "found 2 'op' layers",
  ),
  ("self loop", _edit(FIG1B, lambda o: o["edges"].append([3, 3])), "edges[10]: [3, 3] is a self-loop"),
  (
    "out of range",
    _edit(FIG1B, lambda o: o["edges"].append([3, 10])),
    "edges[10]: [3, 10] is out of range; layer indices are 0..9",
  ),
  ("duplicate edge", _edit(FIG1B, lambda o: o["edges"].append([0, 1])), "edges[10]: [0, 1] is a duplicate"),
  ("bad edge", _edit(FIG1B, lambda o: o["edges"].append([0])), "edges[10]: [0] is not a pair"),
  ("cycle", _edit(FIG1B, lambda o: o["edges"].append([5, 1])), "the graph has a cycle"),
  ("ip with parent", _edit(FIG1B, lambda o: o["edges"].append([1, 0])), "the ip layer has parents [1]"),
  ("op with child", _edit(FIG1B, lambda o: o["edges"].append([9, 5])), "the op layer has children [5]"),
  (
    "dangling layer",
    _edit(FIG1B, lambda o: _add_layer(o, {"label": "conv3", "units": 8, "stride": 1}, [[1, 10]])),
    "layers[10] (conv3): not on any path from ip to op",
  ),
  ("no decision", _edit(FIG16, lambda o: o["layers"][2].update(label="relu", units=8)), "no decision layer"),
  (
    "decision feeds non-op",
    _edit(FIG16, lambda o: _add_layer(o, {"label": "relu", "units": 8}, [[2, 4], [4, 3]])),
    "a decision layer feeds op only",
  ),
  (
    "non-decision feeds op",
    _edit(FIG1B, lambda o: o["edges"].append([7, 9])),
    "layers[7] (fc): feeds op, but only decision layers may",
  ),
  (
    "mixed decisions",
    _edit(FIG16, lambda o: _add_layer(o, {"label": "softmax"}, [[1, 4], [4, 3]])),
    "decision layers mix labels",
  ),
  (
    "image sizes",
    _edit(FIG1B, lambda o: o["layers"][3].update(stride=2)),
    "layers[5] (conv5): parents give images of different sizes",
  ),
  (
    "conv after fc",
    _edit(
      FIG1B,
      lambda o: (
        o["layers"][6].update(label="conv3", units=8, stride=1)
        or o["layers"].__setitem__(5, {"label": "fc", "units": 32})
      ),
    ),
    "layers[6] (conv3): its input is already flattened",
  ),
]


@pytest.mark.parametrize("name, obj, message", BAD, ids=[b[0] for b in BAD])
def test_invalid_input_names_the_problem(name, obj, message):
  del name
  with pytest.raises(ValueError) as e:
    nas_jax.Architecture.from_json(obj)
  assert message in str(e.value)


def test_limits_layers_edges_degree_mass():
  big = pools.chain("mlp", " ".join(["relu:8"] * 60), "linear")
  with pytest.raises(ValueError, match="63 layers; at most 60"):
    nas_jax.Architecture.from_json(big)
  fan = {
    "kind": "mlp",
    "layers": [{"label": "ip"}] + [{"label": "relu", "units": 8}] * 6 + [{"label": "linear"}, {"label": "op"}],
    "edges": [[0, i] for i in range(1, 7)] + [[i, 7] for i in range(1, 7)] + [[7, 8]],
  }
  with pytest.raises(ValueError, match=r"layers\[0\] \(ip\): out-degree 6; at most 5"):
    nas_jax.Architecture.from_json(fan)
  nas_jax.Architecture.from_json(fan, limits=json_io.Limits(max_degree=6))
  with pytest.raises(ValueError, match="edges: 13 edges; at most 12"):
    nas_jax.Architecture.from_json(fan, limits=json_io.Limits(max_degree=6, max_edges=12))
  heavy = pools.chain("mlp", "relu:1024 relu:1024", "linear")
  with pytest.raises(ValueError, match=r"total mass 1.36448e\+06 exceeds the limit 1e\+06"):
    nas_jax.Architecture.from_json(heavy, limits=json_io.Limits(max_mass=1e6))


def test_pad_to_smaller_than_layers():
  with pytest.raises(ValueError, match=r"pad_to: 5 is less than the number of layers \(10\)"):
    nas_jax.Architecture.from_json(FIG1B, pad_to=5)


@settings(max_examples=300, deadline=None)
@given(
  st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 40)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.sampled_from(["cnn", "mlp", "ip", "op", "conv3", "relu", "linear", "softmax", "max-pool"]),
    lambda children: (
      st.lists(children, max_size=6)
      | st.dictionaries(
        st.sampled_from(["kind", "layers", "edges", "label", "units", "stride", "x"]), children, max_size=4
      )
    ),
    max_leaves=30,
  )
)
def test_any_json_value_gives_an_architecture_or_a_value_error(value):
  try:
    arch = nas_jax.Architecture.from_json(value)
  except ValueError as e:
    assert str(e)
  else:
    assert arch.to_json() == nas_jax.Architecture.from_json(arch.to_json()).to_json()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["cnn", "mlp"]), st.integers(0, 40))
def test_mutated_valid_json_never_crashes(seed, kind, k):
  """Random single-field corruptions of valid networks: accepted or a ValueError, nothing else."""
  rng = np.random.default_rng(seed)
  obj = random_arch.random_json(kind, rng)
  i = int(rng.integers(len(obj["layers"])))
  junk = [None, -1, 0, 7, 9, 1025, "conv3", "relu", [1], {"a": 1}, 2.5, True][k % 12]
  target = ["label", "units", "stride", "edge", "kind"][k % 5]
  if target == "edge":
    obj["edges"].append([i, junk])
  elif target == "kind":
    obj["kind"] = junk
  else:
    obj["layers"][i][target] = junk
  try:
    nas_jax.Architecture.from_json(obj)
  except ValueError as e:
    assert str(e)


@pytest.mark.parametrize("obj", [FIG1C, FIG16])
def test_json_round_trip_is_exact(obj):
  arch = nas_jax.Architecture.from_json(obj)
  out = arch.to_json()
  canonical = copy.deepcopy(obj)
  canonical["edges"] = sorted(canonical["edges"])
  assert out == canonical
  assert json.loads(json.dumps(out)) == out
  again = nas_jax.Architecture.from_json(json.dumps(out))
  for leaf_a, leaf_b in zip(np.asarray(arch.adjacency), np.asarray(again.adjacency)):
    np.testing.assert_array_equal(leaf_a, leaf_b)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["cnn", "mlp"]))
def test_round_trip_random_networks(seed, kind):
  obj = random_arch.random_json(kind, np.random.default_rng(seed))
  arch = nas_jax.Architecture.from_json(obj, pad_to=30)
  assert arch.to_json() == {**obj, "edges": sorted(obj["edges"])}


def test_stride_defaults_and_pool_stride():
  obj = copy.deepcopy(FIG1B)
  obj["layers"][1].pop("stride")
  obj["layers"][6]["stride"] = 2
  arch = nas_jax.Architecture.from_json(obj)
  assert int(arch.strides[1]) == 1 and int(arch.strides[6]) == 2
  assert "stride" not in arch.to_json()["layers"][6]
  assert int(arch.strides[7]) == 0  # fc has none
