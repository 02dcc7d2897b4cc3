"""OTMANN costs: the label matrices of NASBOT Tables 4/5 and of the authors' code, parameters, the augmented problem."""

import itertools
import math
import os
import sys

import jax
import numpy as np
import pytest

import nas_jax
from nas_jax.arch import graph, labels
from nas_jax.features import otmann_costs as oc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "arch"))
from networks import FIG1A, FIG1B  # noqa: E402

INF = math.inf
# NASBOT Table 4 with App. A.3's res rule, order c3 c5 c7 r3 r5 r7 mp ap fc sm ip op
SPEC_CNN = {
  ("conv3", "conv5"): 0.2,
  ("conv5", "conv7"): 0.2,
  ("conv3", "conv7"): 0.3,
  ("res3", "res5"): 0.2,
  ("res5", "res7"): 0.2,
  ("res3", "res7"): 0.3,
  ("conv3", "res3"): 0.1,
  ("conv5", "res5"): 0.1,
  ("conv7", "res7"): 0.1,
  ("conv3", "res5"): 0.28,
  ("conv5", "res3"): 0.28,
  ("conv5", "res7"): 0.28,
  ("conv7", "res5"): 0.28,
  ("conv3", "res7"): 0.37,
  ("conv7", "res3"): 0.37,
  ("max-pool", "avg-pool"): 0.25,
}
RECTIFIERS = ("relu", "crelu", "leaky-relu", "softplus", "elu")


def _expected(kind, table):
  names = labels.vocabulary(kind)
  m = np.full((len(names),) * 2, INF)
  np.fill_diagonal(m, 0.0)
  for (x, y), v in table.items():
    m[names.index(x), names.index(y)] = m[names.index(y), names.index(x)] = v
  return m


def test_cnn_paper_matrix_is_spec_table_4_with_res_rule():
  np.testing.assert_allclose(oc.label_cost_matrix("cnn", "paper"), _expected("cnn", SPEC_CNN), atol=1e-12)


def test_cnn_code_matrix_follows_appendix_r():
  r2 = math.sqrt(2) / 10
  table = {
    ("conv3", "conv5"): r2 * math.sqrt(2),
    ("conv5", "conv7"): r2 * math.sqrt(2),
    ("conv3", "conv7"): r2 * 2,
    ("max-pool", "avg-pool"): 0.5,
  }
  table.update({(x.replace("conv", "res"), y.replace("conv", "res")): v for (x, y), v in list(table.items())[:3]})
  for k1, k2 in itertools.product((3, 5, 7), repeat=2):
    table[(f"conv{k1}", f"res{k2}")] = 0.9 * r2 * math.sqrt(abs(k1 - k2)) + 0.1
  m = oc.label_cost_matrix("cnn", "nasbot_code")
  np.testing.assert_allclose(m, _expected("cnn", table), atol=1e-12)
  names = labels.vocabulary("cnn")
  assert m[names.index("conv3"), names.index("conv7")] == pytest.approx(0.28284, abs=1e-5)
  assert m[names.index("conv3"), names.index("res7")] == pytest.approx(0.354558, abs=1e-6)


@pytest.mark.parametrize("rule", oc.LABEL_COST_RULES)
def test_mlp_matrix_is_spec_table_5(rule):
  table = {}
  for x, y in itertools.combinations(RECTIFIERS + ("logistic", "tanh"), 2):
    same = (x in RECTIFIERS) == (y in RECTIFIERS)
    table[(x, y)] = 0.1 if same else 0.25
  np.testing.assert_allclose(oc.label_cost_matrix("mlp", rule), _expected("mlp", table), atol=1e-12)


@pytest.mark.parametrize("kind, rule", list(itertools.product(labels.KINDS, oc.LABEL_COST_RULES)))
def test_label_matrices_are_metrics_on_labels(kind, rule):
  """Theorem 3 needs M symmetric, zero on the diagonal and triangular (Tables 4 and 5 are)."""
  m = oc.label_cost_matrix(kind, rule)
  assert np.array_equal(m, m.T) and np.all(np.diag(m) == 0) and np.all(m >= 0)
  assert np.all(m[:, :, None] <= m[:, None, :] + m.T[None, :, :] + 1e-12)  # M(x,z) <= M(x,y) + M(y,z)


def test_explicit_label_matrix_must_be_square_and_non_negative():
  with pytest.raises(ValueError, match=r"label_costs: an explicit matrix must be \[11\]\[11\]"):
    oc.label_cost_matrix("mlp", ((0.0, 1.0), (1.0, 0.0)))
  with pytest.raises(ValueError, match="label_costs: 'table9' is unknown; choose one of: paper, nasbot_code"):
    oc.label_cost_matrix("cnn", "table9")


@pytest.mark.parametrize(
  "params, match",
  [
    ("codebase", "params: 'codebase' is unknown; choose one of: paper, nasbot_code"),
    (oc.OtmannParams(structural="grouped4"), "params.structural: 'grouped4' is unknown"),
    (oc.OtmannParams(label_costs="table1"), "params.label_costs: 'table1' is unknown"),
    (oc.OtmannParams(inf_cost=2.0), r"params.inf_cost: 2.0; must be finite and > 2 \* nas_cost"),
    (oc.OtmannParams(nas_cost=0.0), "params.nas_cost: 0.0; must be > 0"),
  ],
)
def test_otmann_params_reject_bad_values(params, match):
  with pytest.raises(ValueError, match=match):
    oc.otmann_params(params)


def test_presets_differ_exactly_where_the_sources_differ():
  paper, code = oc.OTMANN_PARAMS["paper"], oc.OTMANN_PARAMS["nasbot_code"]
  assert paper.mass.res_mass_factor == 2.0 and code.mass.res_mass_factor == 1.0
  assert paper._replace(mass=code.mass, label_costs="nasbot_code") == code
  assert code.inf_cost == 7.65432e5 and hash(paper) != hash(code)


_problem = jax.jit(oc.augmented_problem, static_argnames=("kind", "params", "cap"))
_costs = jax.jit(oc.cost_matrices, static_argnames=("kind", "params"))


def _features(obj, params, pad_to=None):
  return oc.otmann_features(nas_jax.Architecture.from_json(obj, pad_to=pad_to), params)


def test_augmented_problem_is_spec_eq_5():
  """Supplies [masses_a; tm_b], demands [masses_b; tm_a], sink costs 1 and a 0 corner (NASBOT eq. (5))."""
  params = oc.OTMANN_PARAMS["paper"]
  fa, fb = _features(FIG1A, params, pad_to=12), _features(FIG1B, params, pad_to=12)
  prob = _problem(fa, fb, 0.5, "cnn", params)
  ma, mb = np.asarray(fa.masses), np.asarray(fb.masses)
  na, nb = len(FIG1A["layers"]), len(FIG1B["layers"])
  np.testing.assert_allclose(prob.supply, np.r_[ma[:na], mb.sum(), np.zeros(12 - na)])
  np.testing.assert_allclose(prob.demand, np.r_[mb[:nb], ma.sum(), np.zeros(12 - nb)])
  cost = np.asarray(prob.cost)
  assert np.all(cost[na, :nb] == 1.0) and np.all(cost[:na, nb] == 1.0) and cost[na, nb] == 0.0
  c_lmm, c_str = _costs(fa, fb, "cnn", params)
  np.testing.assert_allclose(cost[:na, :nb], (np.asarray(c_lmm) + 0.5 * np.asarray(c_str))[:na, :nb])


def test_padding_leaves_the_real_block_of_the_problem_unchanged():
  params = oc.OTMANN_PARAMS["nasbot_code"]
  small = _problem(_features(FIG1A, params), _features(FIG1B, params), 0.3, "cnn", params)
  big = _problem(_features(FIG1A, params, 12), _features(FIG1B, params, 12), 0.3, "cnn", params)
  np.testing.assert_array_equal(np.asarray(big.cost)[:10, :11], small.cost)
  np.testing.assert_array_equal(np.asarray(big.supply)[:10], small.supply)
  assert np.all(np.asarray(big.supply)[10:] == 0) and np.all(np.asarray(big.demand)[11:] == 0)


def test_structural_forms_grouped_is_mean_of_group_costs():
  """Grouped C_str = mean over groups of each group's 6-feature C (NASBOT App. A.3); main text = group all."""
  params = oc.OtmannParams()
  fa, fb = _features(FIG1A, params), _features(FIG1B, params)
  _, grouped = _costs(fa, fb, "cnn", params)
  pa = np.asarray(graph.path_lengths(nas_jax.Architecture.from_json(FIG1A)))
  pb = np.asarray(graph.path_lengths(nas_jax.Architecture.from_json(FIG1B)))
  per_group = np.abs(pa[:, :, :, None] - pb[:, :, None, :]).mean(1)  # [G, Na, Nb]
  np.testing.assert_allclose(grouped, per_group.mean(0), atol=1e-12)
  main = params._replace(structural="main_text")
  _, c_main = _costs(_features(FIG1A, main), _features(FIG1B, main), "cnn", main)
  np.testing.assert_allclose(c_main, per_group[0], atol=1e-12)


def test_cap_clips_only_real_pairs_and_inf_is_replaced():
  params = oc.OtmannParams(nas_cost=0.5)
  fa, fb = _features(FIG1A, params), _features(FIG1B, params)
  capped = np.asarray(_problem(fa, fb, 0.8, "cnn", params, cap=1.5).cost)
  raw = np.asarray(_problem(fa, fb, 0.8, "cnn", params).cost)
  c_lmm, _ = _costs(fa, fb, "cnn", params)
  assert np.asarray(c_lmm).max() == params.inf_cost and capped[:-1, :-1].max() == 1.5
  assert np.all(capped[-1, :-1] == 0.5) and np.all(capped[:-1, -1] == 0.5)
  np.testing.assert_array_equal(np.minimum(raw[:-1, :-1], 1.5), capped[:-1, :-1])
