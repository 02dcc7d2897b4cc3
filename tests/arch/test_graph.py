"""Layer masses and path lengths: the paper's printed values, networkx, and invariances."""

import fractions
import os
import sys

import jax
import jax.numpy as jnp
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import nas_jax
from nas_jax.arch import graph, json_io
from nas_jax.spaces import pools, random_arch

sys.path.insert(0, os.path.dirname(__file__))
from networks import FIG1A, FIG1B, FIG1C, FIG3_LEFT, FIG3_RIGHT, FIG16  # noqa: E402

FIG1_MASSES = graph.MassParams(fc_mass_coeff=1.0, min_nonproc_mass=0.0)
FIGURES = graph.MASS_PARAMS["nasbot_code"]  # fc x0.1, res x1, floor 100


def masses(obj, params):
  return np.asarray(graph.layer_masses(nas_jax.Architecture.from_json(obj), params))


@pytest.mark.parametrize(
  "obj, expected",
  [
    (FIG1A, [235.2, 16, 256, 512, 1024, 32, 512, 235.2, 235.2]),
    (FIG1B, [235.2, 16, 256, 256, 256, 1024, 32, 512, 235.2, 235.2]),
    (FIG1C, [240, 16, 512, 256, 256, 32, 16, 16, 512, 256, 120, 16, 512, 120, 240]),
  ],
)
def test_fig1_masses(obj, expected):
  np.testing.assert_allclose(masses(obj, FIG1_MASSES), expected, rtol=1e-12)


def test_fig3_masses_use_fc_factor_and_floor():
  np.testing.assert_allclose(masses(FIG3_LEFT, FIGURES), [100, 16, 256, 512, 32, 51.2, 100, 100], rtol=1e-12)
  np.testing.assert_allclose(masses(FIG3_RIGHT, FIGURES), [100, 16, 128, 128, 512, 32, 51.2, 100, 100], rtol=1e-12)


def test_fig16_mlp_floor():
  np.testing.assert_allclose(masses(FIG16, FIGURES), [100, 128, 100, 100], rtol=1e-12)


def test_res_mass_factor_paper_vs_code():
  obj = {
    "kind": "cnn",
    "layers": [{"label": "ip"}, {"label": "res5", "units": 16, "stride": 1}, {"label": "softmax"}, {"label": "op"}],
    "edges": [[0, 1], [1, 2], [2, 3]],
  }
  assert masses(obj, graph.MASS_PARAMS["paper"])[1] == 32.0  # text: twice a conv
  assert masses(obj, graph.MASS_PARAMS["nasbot_code"])[1] == 16.0  # Fig. 5b "res5, 16 (16)"


POOL_IP_MASSES = {
  "cnn": [57704.96, 92111.36, 126517.76, 57735.68, 92551.68, 31659.52, 127367.68, 22919.68, 57735.68, 92551.68],
  "mlp": [7795.2, 25817.6, 58585.6, 21721.6, 97907.2, 202764.8, 185152.0, 307622.4, 132313.6, 342438.4],
}
POOL_SIZES = {"cnn": [21, 24, 27, 15, 19, 19, 23, 11, 15, 19], "mlp": [9, 11, 13, 15, 15, 19, 21, 23, 27, 27]}


@pytest.mark.parametrize("kind", ["cnn", "mlp"])
def test_initial_pool_ip_masses_match_figs_20_21(kind):
  batch = nas_jax.stack(pools.initial_pool(kind))
  m = np.asarray(jax.vmap(lambda a: graph.layer_masses(a, FIGURES))(batch))
  np.testing.assert_allclose(m[:, 0], POOL_IP_MASSES[kind], rtol=1e-9)
  assert batch.mask.sum(1).tolist() == POOL_SIZES[kind]


def test_fig1b_path_lengths_table():
  f = fractions.Fraction
  expected = [
    [0, 0, 0, 7, 8, f(15, 2)],
    [1, 1, 1, 6, 7, f(13, 2)],
    [2, 2, 2, 6, 6, 6],
    [2, 2, 2, 5, 5, 5],
    [3, 3, 3, 5, 5, 5],
    [3, 4, f(7, 2), 4, 4, 4],
    [4, 5, f(9, 2), 3, 3, 3],
    [5, 6, f(11, 2), 2, 2, 2],
    [6, 7, f(13, 2), 1, 1, 1],
    [7, 8, f(15, 2), 0, 0, 0],
  ]
  pl = np.asarray(nas_jax.path_lengths(nas_jax.Architecture.from_json(FIG1B)))[0]
  np.testing.assert_allclose(pl.T, np.array(expected, float), atol=1e-12)


def test_fig1c_stated_values_from_layer_1():
  pl = np.asarray(nas_jax.path_lengths(nas_jax.Architecture.from_json(FIG1C)))[0]
  np.testing.assert_allclose(pl[3:, 1], [5, 7, 17 / 3], atol=1e-12)
  np.testing.assert_allclose(pl[:, 14], [6, 8, 25 / 4, 0, 0, 0], atol=1e-12)
  np.testing.assert_allclose(pl[:, 0], [0, 0, 0, 6, 8, 20 / 3], atol=1e-12)


def test_chain_all_three_lengths_equal():
  pl = np.asarray(nas_jax.path_lengths(nas_jax.Architecture.from_json(FIG1A)))[0]
  np.testing.assert_allclose(pl[:3], np.tile(np.arange(9.0), (3, 1)))
  np.testing.assert_allclose(pl[3:], np.tile(8 - np.arange(9.0), (3, 1)))


def _nx_lengths(obj, weight_of):
  """Reference: networkx DAG DP; hop into u (from ip) or out of u (to op) weighs weight_of(u)."""
  g = nx.DiGraph()
  g.add_nodes_from(range(len(obj["layers"])))
  g.add_edges_from(map(tuple, obj["edges"]))
  order = list(nx.topological_sort(g))
  n = len(order)
  out = np.zeros((6, n))
  for direction, seq, nbrs, base in ((0, order, g.predecessors, 0), (3, order[::-1], g.successors, 3)):
    for u in seq:
      prev = list(nbrs(u))
      if not prev:
        continue
      vals = np.array([out[base : base + 3, p] for p in prev])
      out[base, u] = weight_of(u) + vals[:, 0].min()
      out[base + 1, u] = weight_of(u) + vals[:, 1].max()
      out[base + 2, u] = weight_of(u) + vals[:, 2].mean()
    del direction
  return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["cnn", "mlp"]))
def test_path_lengths_match_networkx_on_random_dags(seed, kind):
  obj = random_arch.random_json(kind, np.random.default_rng(seed))
  arch = nas_jax.Architecture.from_json(obj, pad_to=24)
  pl = np.asarray(nas_jax.path_lengths(arch))
  table = nas_jax.arch.labels.label_table(kind)
  n = len(obj["layers"])
  for g in range(table.groups.shape[0]):
    names = [l["label"] for l in obj["layers"]]
    member = lambda u: float(table.groups[g, table.names.index(names[u])])
    np.testing.assert_allclose(pl[g, :, :n], _nx_lengths(obj, member), atol=1e-9)
    assert np.all(pl[g, :, n:] == 0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["cnn", "mlp"]))
def test_path_length_orderings(seed, kind):
  arch = random_arch.random_architecture(kind, np.random.default_rng(seed))
  pl = np.asarray(nas_jax.path_lengths(arch))
  for base in (0, 3):
    assert np.all(pl[:, base] <= pl[:, base + 2] + 1e-9)
    assert np.all(pl[:, base + 2] <= pl[:, base + 1] + 1e-9)
  assert np.all(pl[1:] <= pl[:1] + 1e-9)  # a group counts a subset of the hops


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from(["cnn", "mlp"]), st.sampled_from(["paper", "nasbot_code"]))
def test_jax_masses_equal_host_reference(seed, kind, preset):
  obj = random_arch.random_json(kind, np.random.default_rng(seed))
  arch = nas_jax.Architecture.from_json(obj)
  adj = np.asarray(arch.adjacency)
  params = graph.MASS_PARAMS[preset]
  ref = json_io.host_masses(
    kind, np.asarray(arch.labels), np.asarray(arch.units), adj, graph.host_topological_order(adj), params
  )
  np.testing.assert_allclose(np.asarray(graph.layer_masses(arch, params)), ref, rtol=1e-10)


def _permuted(obj, perm):
  """Same graph with layer i moved to slot perm[i]."""
  layers = [None] * len(perm)
  for i, p in enumerate(perm):
    layers[p] = obj["layers"][i]
  return {**obj, "layers": layers, "edges": [[perm[i], perm[j]] for i, j in obj["edges"]]}


@settings(max_examples=10, deadline=None)  # each example compiles its own shapes
@given(st.integers(0, 2**31 - 1), st.sampled_from(["cnn", "mlp"]), st.integers(0, 9))
def test_slot_order_and_padding_never_change_results(seed, kind, extra):
  rng = np.random.default_rng(seed)
  obj = random_arch.random_json(kind, rng)
  perm = rng.permutation(len(obj["layers"]))
  a = nas_jax.Architecture.from_json(obj)
  b = nas_jax.Architecture.from_json(_permuted(obj, perm), pad_to=len(perm) + extra)
  ma, mb = np.asarray(nas_jax.layer_masses(a)), np.asarray(nas_jax.layer_masses(b))
  np.testing.assert_allclose(mb[perm], ma, rtol=1e-12)
  assert np.all(mb[len(perm) :] == 0)
  pa, pb = np.asarray(nas_jax.path_lengths(a)), np.asarray(nas_jax.path_lengths(b))
  np.testing.assert_allclose(pb[:, :, perm], pa, atol=1e-12)


def test_vmap_batch_equals_one_by_one():
  archs = [random_arch.random_architecture("mlp", np.random.default_rng(s)) for s in range(6)]
  batch = nas_jax.stack(archs)
  bm = np.asarray(jax.vmap(nas_jax.layer_masses)(batch))
  for i, a in enumerate(archs):
    n = a.num_slots
    np.testing.assert_allclose(bm[i, :n], np.asarray(nas_jax.layer_masses(a)), rtol=1e-12)
    assert np.all(bm[i, n:] == 0)


def test_total_mass_closed_form():
  arch = nas_jax.Architecture.from_json(FIG1A)
  tm = float(nas_jax.total_mass(arch, FIG1_MASSES))
  assert tm == pytest.approx(2352 + 3 * 235.2)


def test_topological_order_respects_every_edge():
  arch = nas_jax.Architecture.from_json(_permuted(FIG1C, np.random.default_rng(0).permutation(15)), pad_to=18)
  order = np.asarray(nas_jax.topological_order(arch)).tolist()
  pos = {u: k for k, u in enumerate(order)}
  for i, j in zip(*np.nonzero(np.asarray(arch.adjacency))):
    assert pos[i] < pos[j]
  assert sorted(order[:15]) == list(range(15))


def test_masses_are_differentiable_free_of_nan_under_jit_float32():
  arch = jax.tree.map(jnp.asarray, nas_jax.Architecture.from_json(FIG1B))
  with jax.enable_x64(False):
    m = jax.jit(nas_jax.layer_masses)(arch)
  assert m.dtype == jnp.float32
  np.testing.assert_allclose(np.asarray(m)[5], 1024.0)


def test_adjacency_lists_match_the_dense_matrix():
  rng = np.random.default_rng(0)
  adj = rng.random((9, 9)) < 0.3
  parents, children = graph.adjacency_lists(adj)
  assert children == [np.flatnonzero(r).tolist() for r in adj]
  assert parents == [np.flatnonzero(c).tolist() for c in adj.T]
