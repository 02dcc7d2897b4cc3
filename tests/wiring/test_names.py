"""wiring/names.py: a config's names for OTMANN solvers, GP kernels and the arc-kernel paper's
models become the values the parts take, with the options configs have always given, and an
unknown name is refused by name."""

import jax
import numpy as np
import pytest

from nas_jax.features import featurizers as F
from nas_jax.features import otmann_solver
from nas_jax.features.pairwise import OtmannPair, VectorPair
from nas_jax.spaces.cells import nb201_space
from nas_jax.surrogates import conditional_models as cm
from nas_jax.surrogates import priors
from nas_jax.wiring import names

NB201 = nb201_space()


def test_solver_names_make_the_solver_values():
  assert [names.solver_of(n).name for n in names.OTMANN_SOLVERS] == ["exact", "sinkhorn", "bound", "greedy"]
  assert names.solver_of("exact").pairs is otmann_solver.exact().pairs
  value = otmann_solver.sinkhorn(epsilon=0.05)
  assert names.solver_of(value) is value  # a value passes through
  assert names.with_solver({"solver": "bound", "chunk_size": 8}, "x")["solver"] == otmann_solver.bound()
  with pytest.raises(
    ValueError, match="strategy_config.solver: 'lp' is unknown; choose one of: exact, sinkhorn, bound, greedy"
  ):
    names.solver_of("lp", "strategy_config.solver")
  with pytest.raises(ValueError, match="featurizer_config.solver: 'lp' is unknown"):
    names.otmann_featurizer(solver="lp")


def _leaves(box):
  return [np.asarray(x) for x in jax.tree.leaves(box)]


def test_kernel_names_make_the_kernel_values_with_their_options():
  """Each name gives the box its value gives, and p, p_bar, ard go to the kernel: "d" is the
  d-only ablation, "exp_squared" with ard=False one length-scale."""
  d = names.GP_KERNELS["d"](p=2.0)
  assert "(d, p=2.0" in d.name
  box = d.box(OtmannPair, 4)
  want = priors.otmann_kernel(d_bar=False, p=2.0).box(OtmannPair, 4)
  for x, y in zip(_leaves(box), _leaves(want), strict=True):
    np.testing.assert_array_equal(x, y)
  assert float(box.lower.kernel.log_alpha_bar) < -20 and box.lower.kernel.p == 2.0
  iso = names.GP_KERNELS["exp_squared"](ard=False).box(VectorPair, 30)
  assert np.shape(iso.lower.kernel.log_length_scale) == ()
  assert set(names.GP_KERNELS) == {"combined", "d", "d_bar", "exp_squared", "matern52", "matern12", "hamming"}


def test_a_config_gp_takes_the_kernel_name_and_refuses_an_unknown_one():
  on_cells = F.encoding("path")(NB201)
  assert names.gp(kernel="hamming", ard=False, n_starts=2)(on_cells).name == "gp"
  assert names.gp(ard=False, n_starts=2)(on_cells).name == "gp"  # the default kernel's option
  with pytest.raises(ValueError, match="surrogate_config.kernel: 'both' is unknown; choose one of: combined, d, d_bar"):
    names.gp(kernel="both")
  with pytest.raises(ValueError, match="surrogate_config.kernel 'combined': .*'ard'"):
    names.gp(kernel="combined", ard=True)
  with pytest.raises(ValueError, match="p: -1.0; expected a positive finite number"):
    names.gp(kernel="d", p=-1.0)


def test_model_names_are_the_papers_six_values():
  chosen = names.conditional_models_of(("hierarchical_gp", "separate_linear"))
  assert chosen == {"hierarchical_gp": cm.hierarchical_gp, "separate_linear": cm.separate_linear}
  with pytest.raises(ValueError, match=r"models: \['tree_gp'\] are not models"):
    names.conditional_models_of(("hierarchical_gp", "tree_gp"))


def test_a_config_names_a_modifier_subset():
  """space.modifiers "unit" is the App. C.4 ablation's four unit modifiers; the space itself takes
  the subset (or modifier names), not the subset's name."""
  from nas_jax.spaces import modifiers as M
  from nas_jax.spaces.space import layer_graph_space

  named = names.layer_graph_space("cnn", modifiers="unit")
  valued = layer_graph_space("cnn", modifiers=M.UNIT_MODIFIERS)
  point = named.initial()[3]
  keys = lambda space: [space.canonical_key(p) for p in space.neighbours(point)]
  assert keys(named) == keys(valued) and len(keys(named)) > 0
  # unit modifiers keep the structure: every neighbour has the point's layers and edges
  shape = lambda p: (len(named.to_json(p)["layers"]), named.to_json(p)["edges"])
  assert all(shape(p) == shape(point) for p in named.neighbours(point))
  assert names.MODIFIER_SETS["structure"] is M.STRUCTURE_MODIFIERS
  with pytest.raises(ValueError, match="modifiers: 'units' is unknown; choose one of: all, unit, structure"):
    names.layer_graph_space("mlp", modifiers="units")
  with pytest.raises(ValueError, match=r"modifiers: \['unit'\]; expected a non-empty subset of MODIFIERS"):
    layer_graph_space("mlp", modifiers="unit")
