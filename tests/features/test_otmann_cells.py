"""OTMANN on NAS-Bench-201/101 cells through `cell_layer_graph`: hand-computed distances, zero
distance within isomorphism classes, the metric properties of NASBOT Theorem 1, padding, and
Sinkhorn against the exact solver.

Path-length features below are (sp, lp, rw) from ip and to op, per group all / conv / pool; the
structural cost of a pair is the mean |difference| over these 3 groups x 6 features = 18 numbers.
"""

import itertools

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import nas_jax
from nas_jax import cell_layer_graph
from nas_jax.arch import cell as cell_lib
from nas_jax.arch import graph, labels
from nas_jax.features.otmann_solver import exact, sinkhorn
from nas_jax.features import otmann
from nas_jax.features import otmann_costs as oc
from nas_jax.spaces import cells as C

NU = otmann.KERNEL_NU_STR


def _nb201(*ops):
  return cell_layer_graph(cell_lib.nb201_cell(ops))


def _nb101(edges, ops):
  a = np.zeros((7, 7), int)
  for i, j in edges:
    a[i, j] = 1
  return cell_lib.nb101_cell(a, ops)


def _d(archs, b=None, nu_str=NU, **kwargs):
  return otmann.otmann_distances(archs, b, nu_str=nu_str, **kwargs).d


# Edge order e0..e5 = 0->1, 0->2, 1->2, 0->3, 1->3, 2->3; ops 0 none, 1 skip, 2 conv1x1, 3 conv3x3, 4 pool.
CONV3 = _nb201(0, 0, 0, 3, 0, 0)  # ip -> conv3 -> op
CONV1 = _nb201(0, 0, 0, 2, 0, 0)  # ip -> conv1 -> op
POOL = _nb201(0, 0, 0, 4, 0, 0)  # ip -> pool -> op
SUMMED = _nb201(2, 1, 1, 0, 0, 3)  # x1 = conv1(x0), x2 = x0 + x1, out = conv3(x2)


def _names(arch):
  return [nas_jax.vocabulary(arch.kind)[i] for i in arch.labels]


def test_nb201_layer_graph_is_the_per_edge_network():
  """The best CIFAR-10 cell: 0->1 c3, 0->2 c3, 1->2 c3, 0->3 skip, 1->3 c3, 2->3 c1. One layer per
  op edge; node 1's conv feeds both 1->2 and 1->3; the skip is the edge input -> output."""
  arch = _nb201(3, 3, 3, 1, 3, 2)
  assert _names(arch) == ["input"] + ["nor_conv_3x3"] * 4 + ["nor_conv_1x1", "output"]
  e0, e1, e2, e4, e5, out = range(1, 7)
  assert np.argwhere(arch.adjacency).tolist() == sorted(
    [[0, e0], [0, e1], [e0, e2], [e0, e4], [e1, e5], [e2, e5], [0, out], [e4, out], [e5, out]]
  )


def test_nb201_layers_sum_their_inputs():
  """SUMMED: ip, conv1 (ip), conv3 (ip + conv1), op. The conv3 reads a sum of two 16-channel
  tensors, 16 channels (NASBOT's concatenation would say 32): masses 16*16 = 256 each; P = 512,
  zeta P = 51.2 < 100, so ip and op take the floor, 100."""
  assert _names(SUMMED) == ["input", "nor_conv_1x1", "nor_conv_3x3", "output"]
  assert np.argwhere(SUMMED.adjacency).tolist() == [[0, 1], [0, 2], [1, 2], [2, 3]]
  np.testing.assert_allclose(graph.layer_masses(SUMMED), [100, 256, 256, 100])
  np.testing.assert_allclose(
    graph.layer_masses(cell_layer_graph(cell_lib.nb201_cell([0, 0, 0, 3, 0, 0]), channels=32)), [102.4, 1024, 102.4]
  )  # 32 * 32; zeta P = 102.4


def test_nb201_known_distances():
  """Masses: ip and op 100 (floor) in all four; conv 256, pool 16 (its input's 16 channels).

  CONV3 vs CONV1: ip-ip, conv-conv, op-op have equal path lengths and groups, so C_str = 0; the
  convs cost M(conv3, conv1) = 0.2 per unit: d = 0.2 * 256 = 51.2 at every nu.
  CONV3 vs POOL: conv and pool never match: 256 + 16 left over. The ips differ in the conv group
  (to op: 1 vs 0 on sp, lp, rw) and the pool group (0 vs 1): 6 / 18 = 1/3; the ops likewise from
  ip. d = 272 + (100 + 100) * nu / 3.
  CONV3 vs SUMMED: CONV3's conv matches SUMMED's conv3 (label 0). all group: from ip sp 1 vs 1,
  lp 1 vs 2, rw 1 vs 1 + (0 + 1) / 2 = 1.5, to op all 1; conv group the same numbers: 2 * 1.5 / 18
  = 1/6. The ips: to op sp 2 vs 2, lp 2 vs 3, rw 2 vs 1 + (2 + 1) / 2 = 2.5 in group all, and
  1 vs (1, 2, 1.5) in group conv: 1/6; the ops from ip likewise: 1/6. SUMMED's conv1 (256) is
  left over (matching it instead costs 0.2 + nu / 3 more). d = 256 + (256 + 100 + 100) * nu / 6.
  """
  nus = np.array(NU)
  d = _d([CONV3], [CONV1, POOL, SUMMED])
  np.testing.assert_allclose(d[:, 0, 0], 51.2, rtol=1e-12)
  np.testing.assert_allclose(d[:, 0, 1], 272 + 200 * nus / 3, rtol=1e-12)
  np.testing.assert_allclose(d[:, 0, 2], 256 + 456 * nus / 6, rtol=1e-12)


def test_nb101_known_distance():
  """input -> v1 -> output with v1 conv3x3 (a) or maxpool (b), C = 128. Layers: ip, a 1x1
  projection to 128 channels (mass 128 * 128 = 16384), v1, op. a: conv 16384, P = 32768, ip and op
  3276.8 each. b: pool 128, P = 16512, ip and op 1651.2 each.
  The projections match (label 0); conv3 and pool never: 16384 + 128 left. ip and op match
  1651.2 each, 2 * 1625.6 = 3251.2 left. Structural costs of the three matches: group all equal
  (both chains), group conv (a counts 2 convs, b 1) and group pool (b counts 1) differ by 1 on 3
  features each: 6 / 18 = 1/3. d = 16512 + 3251.2 + (16384 + 2 * 1651.2) * nu / 3."""
  a = cell_layer_graph(_nb101([(0, 1), (1, 6)], [0, 0, 0, 0, 0]))
  b = cell_layer_graph(_nb101([(0, 1), (1, 6)], [2, 0, 0, 0, 0]))
  np.testing.assert_allclose(graph.layer_masses(a), [3276.8, 16384, 16384, 3276.8])
  nus = np.array((0.0,) + NU)
  np.testing.assert_allclose(_d([a], [b], nu_str=nus)[:, 0, 0], 19763.2 + 19686.4 * nus / 3, rtol=1e-12)


def test_cell_label_costs():
  """Ours, in the spirit of Table 4: 1x1 vs 3x3 conv 0.2, conv vs pool never (both rules)."""
  for kind, names in [
    ("nb201_layers", ("input", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")),
    ("nb101_layers", ("input", "conv1x1-bn-relu", "conv3x3-bn-relu", "maxpool3x3")),
  ]:
    ip, c1, c3, pool = (labels.label_id(kind, name) for name in names)
    for rule in oc.LABEL_COST_RULES:
      m = oc.label_cost_matrix(kind, rule)
      assert m[c1, c3] == pytest.approx(0.2)
      assert np.isinf(m[c3, pool]) and np.isinf(m[c1, pool]) and np.isinf(m[ip, c1])


@pytest.fixture(scope="module")
def nb201_classes():
  classes = {}
  for ops in itertools.product(range(5), repeat=6):
    classes.setdefault(cell_lib.nb201_iso_key(cell_lib.nb201_cell(ops)), []).append(ops)
  return classes


def test_nb201_isomorphic_cells_are_at_distance_zero(nb201_classes):
  """Members of iso_class groups (NB201's isomorphism classes): d = 0 within a class, > 0 across classes. The
  first class is the 75-member class 206; the second holds (3,0,1,0,1,1), one conv3
  read by two paths, and (0,3,0,3,0,1), two conv3s on the input, whose per-edge graphs differ:
  both convert as the member with more layers, two parallel convs."""
  keys = [
    "#+(0)@nor_conv_3x3+0",
    cell_lib.nb201_iso_key(cell_lib.nb201_cell([3, 0, 1, 0, 1, 1])),
    "#+#+(0)@avg_pool_3x3",
  ]
  assert (0, 3, 0, 3, 0, 1) in nb201_classes[keys[1]]
  assert _names(_nb201(3, 0, 1, 0, 1, 1)) == ["input", "nor_conv_3x3", "nor_conv_3x3", "output"]
  members = [nb201_classes[k][:: max(1, len(nb201_classes[k]) // 6)][:6] for k in keys]
  archs = [cell_layer_graph(cell_lib.nb201_cell(ops)) for group in members for ops in group]
  cls = np.repeat(np.arange(len(keys)), [len(g) for g in members])
  for solver, tol in ((exact(), 1e-12), (sinkhorn(), 1e-2)):
    d_bar = otmann.otmann_distances(archs, nu_str=NU, solver=solver).d_bar
    same = cls[:, None] == cls[None, :]
    assert np.all(d_bar[:, same] <= tol)
    assert np.all(d_bar[:, ~same] > 0.05)


def _relabelled(arch, rng):
  """The same network with its layer slots shuffled."""
  p = rng.permutation(len(arch.labels))
  return arch.replace(
    labels=arch.labels[p], units=arch.units[p], strides=arch.strides[p], adjacency=arch.adjacency[np.ix_(p, p)]
  )


def test_nb101_cells_equal_after_pruning_are_at_distance_zero():
  """One cell written three ways: as is; with a dangling vertex 4 and a dead edge 0 -> 5 (pruned);
  with its interior vertices renumbered (v1 <-> v2, v3 kept). Plus slot shuffles of the first."""
  base = _nb101([(0, 1), (0, 2), (1, 3), (2, 3), (3, 6), (1, 6)], [0, 1, 2, 0, 0])
  dangling = _nb101([(0, 1), (0, 2), (1, 3), (2, 3), (3, 6), (1, 6), (2, 4), (0, 5)], [0, 1, 2, 1, 2])
  renumbered = _nb101([(0, 1), (0, 2), (2, 3), (1, 3), (3, 6), (2, 6)], [1, 0, 2, 2, 2])
  archs = [cell_layer_graph(c) for c in (base, dangling, renumbered)]
  rng = np.random.default_rng(0)
  archs += [_relabelled(archs[0], rng) for _ in range(2)]
  np.testing.assert_allclose(_d(archs), 0.0, atol=1e-9)
  other = cell_layer_graph(_nb101([(0, 1), (0, 2), (1, 3), (2, 3), (3, 6), (1, 6)], [1, 1, 2, 0, 0]))
  assert np.all(_d(archs[:1], [other]) > 0)


def _random_cells(seed, n):
  """n random NB201 and n random NB101 cells as layer graphs (two lists)."""
  rng = np.random.default_rng(seed)
  nb201 = [cell_lib.nb201_cell(rng.integers(0, 5, 6)) for _ in range(n)]
  nb101 = C.nb101_space().sample(jax.random.PRNGKey(seed), n)
  return [cell_layer_graph(c) for c in nb201], [cell_layer_graph(c) for c in nb101]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_random_cells_give_finite_symmetric_non_negative_distances(seed):
  """NASBOT Theorem 1 on random cells of both spaces: d >= 0, d(G, G) = 0 (solved, not set: the cross
  form computes the diagonal), d(a, b) = d(b, a), 0 <= d_bar <= 1."""
  for archs in _random_cells(seed, 4):
    out = otmann.otmann_distances(archs, archs, nu_str=NU)
    assert np.all(np.isfinite(out.d)) and np.all(out.d >= -1e-9)
    np.testing.assert_allclose(np.diagonal(out.d, axis1=1, axis2=2), 0.0, atol=1e-9)
    np.testing.assert_allclose(out.d, np.swapaxes(out.d, 1, 2), rtol=1e-9, atol=1e-9)
    assert np.all(out.d_bar <= 1 + 1e-12)


def test_padding_never_changes_the_result():
  for archs in _random_cells(1, 3):
    padded = [nas_jax.pad(a, 17) for a in archs]
    np.testing.assert_allclose(_d(padded), _d(archs), rtol=1e-12, atol=1e-9)


def test_sinkhorn_agrees_with_exact():
  """The tolerance of tests/features/test_otmann_sinkhorn.py: relative error <= 1e-2, never below
  the exact value (the rounded plan is feasible), d_bar <= 1e-2 where d = 0."""
  for archs in _random_cells(2, 5):
    archs.append(archs[0])
    reference = otmann.otmann_distances(archs, nu_str=NU, solver=exact())
    approx = otmann.otmann_distances(archs, nu_str=NU, solver=sinkhorn())
    off = reference.d_bar > 0
    assert np.max(np.abs(approx.d[off] - reference.d[off]) / reference.d[off]) <= 1e-2
    assert np.all(approx.d_bar >= reference.d_bar - 1e-9) and np.all(approx.d_bar[~off] <= 1e-2)


def test_bad_arguments_raise_one_clear_error():
  cell = cell_lib.nb201_cell([3] * 6)
  with pytest.raises(ValueError, match="cell: got a Architecture"):
    cell_layer_graph(CONV3)
  with pytest.raises(ValueError, match=r"cell: a batch of cells \(ops shape \(2, 6\)\)"):
    cell_layer_graph(cell.replace(ops=np.stack([cell.ops] * 2)))
  with pytest.raises(ValueError, match="cell: the nb101 genotype is invalid"):
    cell_layer_graph(_nb101([(0, 1)], [0] * 5))
  for bad in (0, 2.5, True, "16"):
    with pytest.raises(ValueError, match=f"channels: {bad!r}; expected a positive integer or None"):
      cell_layer_graph(cell, channels=bad)
  three_outputs = _nb101([(0, 1), (0, 2), (0, 3), (1, 6), (2, 6), (3, 6)], [0] * 5)
  with pytest.raises(ValueError, match="channels: 2 is fewer than the 3 vertices feeding"):
    cell_layer_graph(three_outputs, channels=2)
