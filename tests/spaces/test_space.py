"""The layer-graph Space: canonical keys (renumbering invariance, networkx isomorphism as the
reference), sampling, mutation, neighbourhoods, JSON and the initial pool."""

import itertools

import jax
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nas_jax.arch.host_graph import canonical_key
from nas_jax.arch.json_io import Limits, from_json, to_json
from nas_jax.spaces import modifiers as M
from nas_jax.spaces.pools import chain, initial_pool
from nas_jax.wiring import names
from nas_jax.wiring.parts import SPACES
from nas_jax.spaces.space import Space, layer_graph_space

_SPACES = {k: layer_graph_space(k) for k in ("cnn", "mlp")}


def _chain_points(kind, seed, steps):
  space, key = _SPACES[kind], jax.random.PRNGKey(seed)
  points = [space.initial()[seed % 10]]
  for k in jax.random.split(key, steps):
    points.append(space.mutate(points[-1], k)[0])
  return points


def _renumber(arch, perm, pad_to):
  """The same graph with layer i moved to slot perm[i], padded to pad_to."""
  obj = to_json(arch)
  layers = [None] * len(perm)
  for i, layer in enumerate(obj["layers"]):
    layers[perm[i]] = layer
  edges = sorted([int(perm[u]), int(perm[v])] for u, v in obj["edges"])
  return from_json({"kind": obj["kind"], "layers": layers, "edges": edges}, pad_to=pad_to)


def _nx(arch):
  obj = to_json(arch)
  g = nx.DiGraph()
  g.add_nodes_from((i, {"a": (l["label"], l.get("units"), l.get("stride"))}) for i, l in enumerate(obj["layers"]))
  g.add_edges_from(map(tuple, obj["edges"]))
  return g


def _iso(a, b):
  return nx.is_isomorphic(_nx(a), _nx(b), node_match=lambda x, y: x["a"] == y["a"])


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["cnn", "mlp"]), seed=st.integers(0, 2**31 - 1), extra=st.integers(0, 9))
def test_canonical_key_ignores_slot_order_and_padding(kind, seed, extra):
  arch = _chain_points(kind, seed, 3)[-1]
  n = int(np.asarray(arch.mask).sum())
  perm = np.random.default_rng(seed).permutation(n)
  moved = _renumber(arch, perm, n + extra)
  assert to_json(moved) != to_json(arch) or (perm == np.arange(n)).all()
  assert canonical_key(moved) == canonical_key(arch)


@settings(max_examples=6, deadline=None)
@given(kind=st.sampled_from(["cnn", "mlp"]), seed=st.integers(0, 2**31 - 1))
def test_canonical_keys_agree_with_networkx_isomorphism(kind, seed):
  points = _chain_points(kind, seed, 8)
  rng = np.random.default_rng(seed)
  # Renumbered copies make isomorphic pairs with different JSON.
  points += [_renumber(p, rng.permutation(int(p.mask.sum())), p.num_slots) for p in points[::3]]
  for i, a in enumerate(points):
    for b in points[i + 1 :]:
      assert (canonical_key(a) == canonical_key(b)) == _iso(a, b)


def test_canonical_key_separates_close_graphs():
  base = chain("cnn", "conv3:16 conv3:16 fc:16", "softmax")
  first = lambda layer: {**base, "layers": base["layers"][:1] + [layer] + base["layers"][2:]}
  variants = [
    base,
    first({"label": "conv3", "units": 32, "stride": 1}),  # units only
    first({"label": "conv3", "units": 16, "stride": 2}),  # stride only
    first({"label": "conv5", "units": 16, "stride": 1}),  # label only
    {**base, "edges": base["edges"] + [[0, 2]]},
    {**base, "edges": base["edges"] + [[1, 3]]},
  ]
  keys = [canonical_key(from_json(v)) for v in variants]
  assert len(set(keys)) == len(keys)
  assert canonical_key(from_json(chain("mlp", "relu:16", "linear"))).startswith("mlp:")


def test_canonical_keys_are_computed_once_per_object_and_forgotten_with_it():
  import gc

  from nas_jax.arch import host_graph

  obj = chain("cnn", "conv3:16 conv3:32 fc:16", "softmax")
  arch, twin = from_json(obj), from_json(obj)
  memo = host_graph.KeyMemo()
  key = memo(arch)
  assert key == canonical_key(arch) and memo._keys[id(arch)][1] == key
  calls = []
  real = host_graph._refined_key
  host_graph._refined_key = lambda g: calls.append(g) or real(g)
  try:
    assert memo(arch) == key and not calls  # remembered
    assert memo(twin) == key and len(calls) == 1  # an equal object is keyed afresh
  finally:
    host_graph._refined_key = real
  i = id(arch)
  del arch
  gc.collect()
  assert i not in memo._keys


def test_canonical_keys_of_all_short_chains_differ():
  # Chains that agree locally (same neighbour triples) differ only after several refinement
  # rounds; all 2 + 4 + ... + 128 chains of 1-7 layers over two widths are non-isomorphic.
  specs = [" ".join(f"relu:{w}" for w in ws) for n in range(1, 8) for ws in itertools.product((16, 32), repeat=n)]
  keys = {canonical_key(from_json(chain("mlp", s, "linear"))) for s in specs}
  assert len(keys) == len(specs) == 254


def test_space_has_the_interface_and_registry_entry():
  space = layer_graph_space("mlp")
  assert isinstance(space, Space) and space.name == "layer_graph" and space.kind == "mlp"
  assert Space._fields == (
    "name",
    "kind",
    "sample",
    "mutate",
    "neighbours",
    "canonical_key",
    "to_json",
    "from_json",
    "initial",
    "costs",
    "feasible",
    "fidelities",
    "base",
    "layer_graph",
    "conditional_spec",
    "enumerate",
    "tree",
  )
  assert (space.fidelities, space.base) == ((), None)  # set by spaces.fidelity_space only
  assert SPACES["layer_graph"] is names.layer_graph_space  # a config's modifier subset names, then this


@pytest.mark.parametrize("kind", ["cnn", "mlp"])
def test_sample_gives_valid_points_determined_by_the_key(kind):
  space = layer_graph_space(kind, max_layers=16)
  a = space.sample(jax.random.PRNGKey(5), 6)
  b = space.sample(jax.random.PRNGKey(5), 6)
  c = space.sample(jax.random.PRNGKey(6), 6)
  assert [to_json(x) for x in a] == [to_json(x) for x in b] != [to_json(x) for x in c]
  for x in a:
    n = int(x.mask.sum())
    assert n <= 16 and x.num_slots == 1 << (n - 1).bit_length()
    from_json(to_json(x), limits=Limits(max_layers=16))
  assert layer_graph_space(kind, pad_to=64).sample(jax.random.PRNGKey(0), 3)[2].num_slots == 64


@settings(max_examples=4, deadline=None)
@given(kind=st.sampled_from(["cnn", "mlp"]), seed=st.integers(0, 2**31 - 1))
def test_mutate_always_changes_the_graph_and_keeps_the_capacity(kind, seed):
  space = layer_graph_space(kind, pad_to=64)
  point = space.initial()[seed % 10]
  for k in jax.random.split(jax.random.PRNGKey(seed), 20):
    new, ok = space.mutate(point, k)
    assert ok and new.num_slots == 64 and canonical_key(new) != canonical_key(point)
    assert to_json(space.from_json(to_json(new))) == to_json(new)
    point = new


def test_mutate_retries_until_the_graph_changes():
  # inc then dec maps 8 -> 9 -> 8 units: a two-step compound mutation that often changes nothing.
  space = layer_graph_space("mlp", modifiers=["inc_single", "dec_single"], step_probs=(0, 1))
  point = space.from_json(chain("mlp", "relu:8", "linear"))
  outs = [space.mutate(point, k) for k in jax.random.split(jax.random.PRNGKey(0), 20)]
  assert all(ok and canonical_key(o) != canonical_key(point) for o, ok in outs)


@pytest.mark.parametrize(
  "modifiers, limits",
  [
    (["inc_single", "inc_en_masse"], Limits(max_units=8)),  # every increase is clipped back to 8
    (M.UNIT_MODIFIERS, Limits(min_units=8, max_units=8)),  # no unit count but 8 is allowed
  ],
)
def test_mutate_reports_a_point_no_modifier_can_change(modifiers, limits):
  space = layer_graph_space("mlp", modifiers=modifiers, limits=limits)
  point = space.from_json(chain("mlp", "relu:8", "linear"))
  for k in jax.random.split(jax.random.PRNGKey(3), 3):
    new, ok = space.mutate(point, k)
    assert not ok and new is point


def test_unit_ablation_space_changes_only_units():
  space = layer_graph_space("cnn", modifiers=M.UNIT_MODIFIERS)
  point = space.initial()[3]
  for k in jax.random.split(jax.random.PRNGKey(0), 10):
    new, ok = space.mutate(point, k)
    a, b = to_json(point), to_json(new)
    assert a["edges"] == b["edges"] and [l["label"] for l in a["layers"]] == [l["label"] for l in b["layers"]]
    assert ok and a != b
    point = new
  structure = layer_graph_space("mlp", modifiers=list(M.STRUCTURE_MODIFIERS))
  point = structure.initial()[0]
  shape = lambda p: (sorted(l["label"] for l in to_json(p)["layers"]), len(to_json(p)["edges"]))
  nbrs = structure.neighbours(point)
  assert len(nbrs) > 20 and all(shape(p) != shape(point) for p in nbrs)


def test_neighbours_known_set_on_a_small_mlp():
  # ip -> relu:64 -> linear -> op. inc, dec (en masse repeats them), dup_path from ip and from
  # relu, remove relu, skip ip -> linear, 6 swaps, 7 + 7 wedges of which "relu:64 twice" is one.
  space = layer_graph_space("mlp")
  point = space.from_json(chain("mlp", "relu:64", "linear"))
  nbrs = space.neighbours(point)
  assert len(nbrs) == 25
  keys = [canonical_key(p) for p in nbrs]
  assert len(set(keys)) == 25 and canonical_key(point) not in keys
  assert keys == [canonical_key(p) for p in space.neighbours(point)]  # deterministic
  sizes = sorted(int(p.mask.sum()) for p in nbrs)
  assert sizes == [3] + [4] * 9 + [5] * 14 + [6]


def test_neighbours_are_bounded_and_valid():
  space = layer_graph_space("cnn", max_neighbours=40)
  point = space.initial()[9]
  nbrs = space.neighbours(point)
  assert len(nbrs) == 40 and len({canonical_key(p) for p in nbrs}) == 40
  for p in nbrs[:10]:
    from_json(to_json(p))


def test_json_round_trip_and_kind_check():
  space = layer_graph_space("cnn")
  for p in space.initial():
    assert to_json(space.from_json(space.to_json(p))) == space.to_json(p)
  with pytest.raises(ValueError, match="kind: 'mlp'; this space holds cnn"):
    space.from_json(chain("mlp", "relu:16", "linear"))
  with pytest.raises(ValueError, match="layers\\[1\\].units"):
    space.from_json(chain("cnn", "conv3:4", "softmax"))
  with pytest.raises(ValueError, match="mutate: got a mlp point"):
    space.mutate(initial_pool("mlp")[0], jax.random.PRNGKey(0))


def test_initial_is_the_paper_pool_within_the_limits():
  space = layer_graph_space("mlp")
  assert [to_json(p) for p in space.initial()] == [to_json(p) for p in initial_pool("mlp")]
  assert [to_json(p) for p in space.initial(3)] == [to_json(p) for p in initial_pool("mlp")[:3]]
  small = layer_graph_space("mlp", max_layers=20)
  sizes = [len(to_json(p)["layers"]) for p in initial_pool("mlp")]
  assert len(small.initial()) == sum(s <= 20 for s in sizes) < 10
  with pytest.raises(ValueError, match="initial: n=11"):
    space.initial(11)


def test_factory_checks_its_arguments():
  with pytest.raises(ValueError, match="kind: 'rnn' is unknown"):
    layer_graph_space("rnn")
  with pytest.raises(ValueError, match="pad_to: 32"):
    layer_graph_space("cnn", pad_to=32)
  with pytest.raises(ValueError, match="limits.max_layers=30 but max_layers=60"):
    layer_graph_space("cnn", limits=Limits(max_layers=30))
  with pytest.raises(ValueError, match="modifiers: \\['grow'\\]"):
    layer_graph_space("cnn", modifiers=["grow"])
  with pytest.raises(ValueError, match="weights"):
    layer_graph_space("cnn", weights="greedy")
