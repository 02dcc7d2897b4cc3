"""OTMANN distances with the exact solver: the paper's known values (NASBOT Fig. 1, Fig. 3), the
properties of NASBOT Theorems 1-3, an independent POT reference, and the public API."""

import os
import sys

import jax
import numpy as np
import ot
import pytest

import nas_jax
from nas_jax.arch import graph
from nas_jax.features import otmann
from nas_jax.features import otmann_costs as oc
from nas_jax.spaces import pools, random_arch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "arch"))
from networks import FIG1A, FIG1B, FIG1C, FIG3_LEFT, FIG3_RIGHT  # noqa: E402

NUS = (0.1, 0.2, 0.4, 0.5, 0.8)
FIG1_PARAMS = oc.OtmannParams(mass=graph.MassParams(fc_mass_coeff=1.0, min_nonproc_mass=0.0))


def _arch(obj, pad_to=None):
  return nas_jax.Architecture.from_json(obj, pad_to=pad_to)


FIG1 = [_arch(FIG1A), _arch(FIG1B), _arch(FIG1C)]


def _mixed_cnns(n, seed):
  rng = np.random.default_rng(seed)
  randoms = [random_arch.random_architecture("cnn", rng, max_layers=14) for _ in range(n - 4)]
  return pools.initial_pool("cnn")[::3] + randoms


def test_fig1_a_vs_b_is_175_1():
  """NASBOT Fig. 1 (a vs b): d = 175.1, d_bar = 175.1 / 6115.2 at nu 0.5, fc x1, no floor, grouped C_str."""
  out = otmann.otmann_distances(FIG1[:2], nu_str=0.5, params=FIG1_PARAMS)
  assert out.d[0, 1] == pytest.approx(175.1, abs=1e-9)
  assert out.d_bar[0, 1] == pytest.approx(175.1 / 6115.2, abs=1e-12)


@pytest.mark.parametrize(
  "params, slope",
  [
    (FIG1_PARAMS, 350.2),  # grouped C_str
    (FIG1_PARAMS._replace(structural="main_text"), 700.4),  # NASBOT Sec. 3 (main-text structural cost)
    (oc.OTMANN_PARAMS["paper"], 275.32),  # experiment masses: fc x0.1, floor 100
    (oc.OTMANN_PARAMS["nasbot_code"], 275.32),
  ],
)
def test_fig1_a_vs_b_is_linear_in_nu(params, slope):
  out = otmann.otmann_distances(FIG1[:2], nu_str=NUS, params=params)
  np.testing.assert_allclose(out.d[:, 0, 1], slope * np.array(NUS), rtol=1e-12)


def test_fig1_c_on_the_reconstructed_graph():
  """NASBOT Fig. 1, c as we reconstruct it: our LP gives d(a,c) = 1630.37 and d(b,c) = 1488.27; the
  paper prints 1479.3 and 1621.4, so the same magnitude and far above d(a,b)."""
  d = otmann.otmann_distances(FIG1, nu_str=0.5, params=FIG1_PARAMS).d
  assert d[0, 2] == pytest.approx(1630.37, abs=5e-3) and d[1, 2] == pytest.approx(1488.27, abs=5e-3)


@pytest.mark.parametrize("structural", oc.STRUCTURAL_FORMS)
def test_fig3_networks_are_at_distance_zero(structural):
  params = oc.OTMANN_PARAMS["nasbot_code"]._replace(structural=structural)
  out = otmann.otmann_distances([_arch(FIG3_LEFT)], [_arch(FIG3_RIGHT)], nu_str=NUS, params=params)
  np.testing.assert_allclose(out.d, 0.0, atol=1e-9)


def test_any_finite_infinity_above_two_gives_the_same_d():
  """Replacing the infinite label costs (Tables 4 and 5) by 2.5, 10 or 7.65432e5 leaves every d unchanged."""
  archs = _mixed_cnns(8, seed=1)
  ref = otmann.otmann_distances(archs, nu_str=NUS).d
  for inf in (2.5, 10.0):
    params = oc.OTMANN_PARAMS["paper"]._replace(inf_cost=inf)
    np.testing.assert_allclose(otmann.otmann_distances(archs, nu_str=NUS, params=params).d, ref, rtol=1e-10)


def _reference_lp(x, y, nu, params):
  """NASBOT eq. (5) assembled in plain numpy from layer masses and path lengths, solved by ot.emd."""
  m = oc.label_cost_matrix(x.kind, params.label_costs)
  m = np.where(np.isinf(m), params.inf_cost, m)
  feats = []
  for a in (x, y):
    n = int(np.asarray(a.mask).sum())
    a = nas_jax.pad(a, 24)  # one shape, one compilation
    paths = np.asarray(graph.path_lengths(a))[:, :, :n].reshape(-1, n)
    feats.append((np.asarray(a.labels)[:n], np.asarray(graph.layer_masses(a, params.mass))[:n], paths))
  (la, ma, pa), (lb, mb, pb) = feats
  cost = np.ones((len(la) + 1, len(lb) + 1))
  cost[:-1, :-1] = m[np.ix_(la, lb)] + nu * np.abs(pa[:, :, None] - pb[:, None, :]).mean(0)
  cost[-1, -1] = 0.0
  plan = ot.emd(np.r_[ma, mb.sum()], np.r_[mb, ma.sum()], cost)
  return plan, cost, ma.sum() + mb.sum()


def test_matches_a_per_pair_pot_reference_and_the_objective_identity():
  """Against ot.emd on a numpy-built eq. (5); and from eq. (3): the optimum equals
  tm1 + tm2 + sum_ij Z_ij (C_ij - 2), with no mass on pairs of cost > 2."""
  archs = _mixed_cnns(6, seed=2)
  params = oc.OTMANN_PARAMS["nasbot_code"]
  d = otmann.otmann_distances(archs, nu_str=0.4, params=params).d
  for i, j in [(0, 1), (0, 5), (2, 3), (4, 5), (1, 4)]:
    plan, cost, tm = _reference_lp(archs[i], archs[j], 0.4, params)
    z, c = plan[:-1, :-1], cost[:-1, :-1]
    assert d[i, j] == pytest.approx(np.sum(plan * cost), rel=1e-9)
    assert d[i, j] == pytest.approx(tm + np.sum(z * (c - 2.0)), rel=1e-9)
    assert z[c > 2].sum() <= 1e-12 * tm


def _mlp(units, activations, *, skip=False, linear=1):
  """ip -> one dense layer per activation -> `linear` parallel linear layers -> op; skip adds ip -> layer 2."""
  k = len(units)
  layers = [{"label": "ip"}] + [{"label": a, "units": u} for a, u in zip(activations, units)]
  layers += [{"label": "linear"}] * linear + [{"label": "op"}]
  edges = [[i, i + 1] for i in range(k)] + [[k, k + 1 + j] for j in range(linear)]
  edges += [[k + 1 + j, len(layers) - 1] for j in range(linear)] + ([[0, 2]] if skip else [])
  return _arch({"kind": "mlp", "layers": layers, "edges": sorted(edges)})


# d with params "nasbot_code" at nu_str 0.01, 0.1, 1 by scipy's HiGHS on the same eq. (5) in float64.
# The first pair differs by one skip edge; the second splits its decision mass over two linear
# layers that cost nothing to match with one. Both networks of a pair have ~5e6 and ~1.4e6 mass.
_LP_PAIRS = [
  (
    _mlp([1000, 1000, 1000], ["relu", "logistic", "elu"]),
    _mlp([1000, 1000, 1000], ["relu", "logistic", "elu"], skip=True),
    (5633.833333333339, 44638.33333333334, 434683.3333333333),
  ),
  (_mlp([512, 1000, 24], ["relu", "tanh", "elu"], linear=2), _mlp([512, 1000, 24], ["relu", "tanh", "elu"]), (0, 0, 0)),
]


@pytest.fixture(params=[True, False], ids=["float64", "float32"])
def x64(request):
  """jax_enable_x64 on (float64 costs) or off (float32 costs, as a user who never turns it on)."""
  jax.config.update("jax_enable_x64", request.param)
  try:
    yield request.param
  finally:
    jax.config.update("jax_enable_x64", True)


def test_similar_mlps_match_the_lp_optimum_in_float32_and_float64(x64):
  """The LP optimum to 1e-6 relative (d = 0: to 1e-9 of the total mass) with float32 costs too.
  Supplies and demands normalised in float32, as they once were, ended up to 1.4e-5 relative
  (first pair) and 2e-2 absolute (second pair) off it: layers of equal mass stopped matching."""
  a, b, known = zip(*_LP_PAIRS)
  d = otmann.otmann_distances(list(a), list(b), nu_str=(0.01, 0.1, 1.0), params="nasbot_code").d
  for p in range(len(_LP_PAIRS)):
    tm = sum(float(graph.total_mass(x, graph.MASS_PARAMS["nasbot_code"])) for x in (a[p], b[p]))
    np.testing.assert_allclose(d[:, p, p], known[p], rtol=1e-6, atol=1e-9 * tm)


@pytest.fixture(scope="module")
def triple_set():
  archs = _mixed_cnns(12, seed=3)
  return archs, otmann.otmann_distances(archs, nu_str=otmann.KERNEL_NU_STR)


def test_symmetric_non_negative_and_bounded(triple_set):
  """NASBOT Theorem 1 and Sec. 3: d = d^T >= 0, |tm1 - tm2| <= d <= tm1 + tm2, 0 <= d_bar <= 1."""
  archs, out = triple_set
  tm = np.array([float(graph.total_mass(a, oc.OTMANN_PARAMS["paper"].mass)) for a in archs])
  assert np.array_equal(out.d, out.d.transpose(0, 2, 1))
  lo, hi = np.abs(tm[:, None] - tm[None, :]), tm[:, None] + tm[None, :]
  assert np.all(out.d >= lo * (1 - 1e-12)) and np.all(out.d <= hi * (1 + 1e-12))
  assert np.all((out.d_bar >= 0) & (out.d_bar <= 1 + 1e-12))
  np.testing.assert_allclose(out.d_bar, out.d / hi, rtol=1e-12)


def test_triangle_inequality(triple_set):
  """NASBOT Theorem 3: d(i,k) <= d(i,j) + d(j,k) for every triple and nu."""
  _, out = triple_set
  d = out.d
  slack = d[:, :, :, None] + d[:, None, :, :] - d[:, :, None, :]  # [nu, i, j, l]: d_ij + d_jl - d_il
  assert slack.min() >= -1e-9 * d.max()


def test_non_decreasing_and_concave_in_nu(triple_set):
  """As an LP's optimal value, d is a minimum of functions linear in nu."""
  _, out = triple_set
  nus = np.array(otmann.KERNEL_NU_STR)
  d = out.d.reshape(len(nus), -1)
  assert np.all(np.diff(d, axis=0) >= -1e-9)
  slopes = np.diff(d, axis=0) / np.diff(nus)[:, None]
  assert np.all(np.diff(slopes, axis=0) <= 1e-6)


def test_self_distance_is_zero_when_solved():
  archs = _mixed_cnns(5, seed=4)
  out = otmann.otmann_distances(archs, list(archs), nu_str=NUS)
  np.testing.assert_allclose(np.diagonal(out.d, axis1=1, axis2=2), 0.0, atol=1e-9)
  np.testing.assert_allclose(out.d, out.d.transpose(0, 2, 1), rtol=1e-9, atol=1e-9)


def _permuted(obj, perm):
  """The same network with layer i stored in slot perm[i]."""
  layers = [None] * len(perm)
  for i, p in enumerate(perm):
    layers[p] = obj["layers"][i]
  return {**obj, "layers": layers, "edges": [[int(perm[i]), int(perm[j])] for i, j in obj["edges"]]}


def test_layer_order_and_padding_do_not_change_d():
  """A pseudo-metric (NASBOT Theorem 1): isomorphic graphs are at distance 0 and d ignores numbering; zero-mass padding
  never changes d."""
  rng = np.random.default_rng(5)
  objs = [FIG1C, pools.initial_pool("cnn")[7].to_json(), random_arch.random_json("cnn", rng)]
  base = [_arch(o) for o in objs]
  moved = [_arch(_permuted(o, rng.permutation(len(o["layers"]))), pad_to=len(o["layers"]) + 7) for o in objs]
  ref = otmann.otmann_distances(base, nu_str=NUS)
  np.testing.assert_allclose(otmann.otmann_distances(moved, nu_str=NUS).d, ref.d, rtol=1e-9, atol=1e-9)
  cross = otmann.otmann_distances(base, moved, nu_str=NUS).d
  np.testing.assert_allclose(np.diagonal(cross, axis1=1, axis2=2), 0.0, atol=1e-9)


def test_res_layers_separate_the_presets():
  """The paper doubles a res layer's mass and uses Table 4; the authors' code does neither."""
  archs = pools.initial_pool("cnn")[7:9]
  paper = otmann.otmann_distances(archs, nu_str=0.5, params="paper").d[0, 1]
  code = otmann.otmann_distances(archs, nu_str=0.5, params="nasbot_code").d[0, 1]
  assert code < paper
  assert code == pytest.approx(
    otmann.otmann_distances(
      archs,
      nu_str=0.5,
      params=oc.OTMANN_PARAMS["paper"]._replace(mass=graph.MASS_PARAMS["nasbot_code"], label_costs="nasbot_code"),
    ).d[0, 1],
    rel=1e-12,
  )


def test_shapes_batches_chunks_and_mlps():
  archs = pools.initial_pool("mlp")[:5]
  one = otmann.otmann_distances(archs[:2], archs[2:], nu_str=0.2)
  many = otmann.otmann_distances(
    nas_jax.stack(archs[:2]), nas_jax.stack(archs[2:], pad_to=40), nu_str=[0.2], chunk_size=1
  )
  assert one.d.shape == (2, 3) and many.d.shape == (1, 2, 3)
  np.testing.assert_allclose(many.d[0], one.d, rtol=1e-12)
  assert np.all(one.d > 0)


def test_threaded_and_serial_lp_solves_agree(triple_set):
  """A 66-pair chunk is split over threads; chunks of 8 pairs run on the calling thread."""
  archs, full = triple_set
  serial = otmann.otmann_distances(archs, nu_str=otmann.KERNEL_NU_STR, chunk_size=8)
  np.testing.assert_array_equal(serial.d, full.d)


def test_a_plan_optimal_at_the_least_and_greatest_nu_gives_the_values_between(triple_set, monkeypatch):
  """Each pair is solved at the least and the greatest nu; where the first plan is optimal at
  both, the nus between take its costs with no LP. The values are those of a solve per nu, in
  any order of the nus, and some pairs take each path."""
  archs, _ = triple_set
  nus = (0.8, 0.1, 0.3, 0.5)
  calls = [0]
  emd_c = ot.lp.emd_wrap.emd_c

  def counted(*args):
    calls[0] += 1
    return emd_c(*args)

  monkeypatch.setattr(ot.lp.emd_wrap, "emd_c", counted)
  together = otmann.otmann_distances(archs, nu_str=nus).d_bar
  pairs = len(archs) * (len(archs) - 1) // 2
  assert 2 * pairs < calls[0] < 4 * pairs, (calls[0], pairs)
  alone = np.stack([otmann.otmann_distances(archs, nu_str=(nu,)).d_bar[0] for nu in nus])
  np.testing.assert_allclose(together, alone, rtol=0, atol=1e-10)


def test_extend_distances_equals_a_full_recomputation():
  archs = _mixed_cnns(7, seed=6)
  old = otmann.otmann_distances(archs[:4], nu_str=otmann.KERNEL_NU_STR)
  grown = otmann.extend_distances(old, archs[:4], archs[4:], nu_str=otmann.KERNEL_NU_STR)
  full = otmann.otmann_distances(archs, nu_str=otmann.KERNEL_NU_STR)
  np.testing.assert_allclose(grown.d, full.d, rtol=1e-9, atol=1e-9)
  np.testing.assert_allclose(grown.d_bar, full.d_bar, rtol=1e-9, atol=1e-12)
  with pytest.raises(ValueError, match=r"old: distances of shape \(4, 4, 4\); 3 old architectures .* need \(4, 3, 3\)"):
    otmann.extend_distances(old, archs[:3], archs[4:], nu_str=otmann.KERNEL_NU_STR)


@pytest.mark.parametrize(
  "kwargs, error, match",
  [
    (dict(solver="lp"), TypeError, r"solver: 'lp' given; expected an OTMANN solver value: exact\(\), sinkhorn"),
    (dict(nu_str=-0.1), ValueError, r"nu_str: -0.1; expected a number >= 0"),
    (dict(nu_str=["a"]), ValueError, r"nu_str: \['a'\]; expected a number >= 0"),
    (dict(chunk_size=0), ValueError, "chunk_size: 0; expected a positive integer"),
    (dict(params="paper2"), ValueError, "params: 'paper2' is unknown"),
    (dict(archs_b=pools.initial_pool("mlp")[:1]), ValueError, "archs_b: kind 'mlp' differs from archs_a's 'cnn'"),
  ],
)
def test_bad_arguments_are_named(kwargs, error, match):
  with pytest.raises(error, match=match):
    otmann.otmann_distances(FIG1[:2], **kwargs)


def test_single_architecture_is_rejected():
  with pytest.raises(ValueError, match="archs_a: one Architecture given"):
    otmann.otmann_distances(FIG1[0])
  with pytest.raises(TypeError, match="archs_a: dict given"):
    otmann.otmann_distances(FIG1A)
