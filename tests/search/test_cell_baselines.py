"""The BANANAS baselines on NB201 (BANANAS Sec. 5.1, and the authors' code's local search): regularized evolution, local
search and GP-BO with a path-encoding kernel."""

import os

import jax
import numpy as np
import pytest

from nas_jax.features import encodings
from nas_jax.features.pairwise import VectorPair
from nas_jax.search import executors, loop
from nas_jax.features import featurizers
from nas_jax.search.strategies import local_search, presets, regularized_evolution
from nas_jax.surrogates import kernels, point_model
from nas_jax.spaces import cells
from nas_jax.experiments.regret import regret_curve
from nas_jax.tasks import tabular
from tests.conftest import SHARED_DATA

FOLDER = os.path.join(SHARED_DATA, "nasbench201")
SPACE = cells.nb201_space()


def run(strategy, workdir, budget, seed=0):
  if not os.path.isdir(FOLDER):
    pytest.skip(f"NAS-Bench-201 tables not found at {FOLDER}")
  return loop.run(
    strategy,
    tabular.nb201_task(FOLDER),
    executors.InlineExecutor(),
    str(workdir),
    space=SPACE,
    budget=budget,
    key=jax.random.PRNGKey(seed),
    progress=False,
  )


def test_re_population_never_exceeds_29_after_warm_up(tmp_path):
  s = regularized_evolution.regularized_evolution(SPACE, "max")
  obs = run(s, tmp_path, 60)
  state = s.update(s.init(jax.random.PRNGKey(0)), obs)
  assert len(state.population) == 29
  assert list(state.population) == list(range(31, 60))  # the oldest died first
  assert len({o.arch_json["arch_str"] for o in obs}) == 60


def test_re_children_are_mutants_of_population_members(tmp_path):
  s = regularized_evolution.regularized_evolution(SPACE, "max")
  obs = run(s, tmp_path, 30)
  state = s.update(s.init(jax.random.PRNGKey(0)), obs[:10])
  _, kids = s.propose(state, 20, [])
  parents = np.stack([p.ops for p in state.history.points])
  for kid in kids:  # a rate-1 mutant differs from some member in few edges
    assert ((parents != kid.ops).sum(1)).min() <= 4


def test_local_search_walks_only_through_neighbours(tmp_path):
  s = local_search.local_search(SPACE, "max")
  obs = run(s, tmp_path, 80)
  state, walked = s.init(jax.random.PRNGKey(0)), 0
  for o in obs:  # replay: the same proposals, and each walk step is a neighbour of current
    state, pts = s.propose(state, 1, [])
    assert SPACE.to_json(pts[0]) == o.arch_json
    if state.current is not None:
      assert (pts[0].ops != state.history.points[state.current].ops).sum() == 1
      walked += 1
    state = s.update(state, [o])
  assert walked >= 20


def test_gp_kernel_values():
  """The gp_bo preset's kernel alpha^2 exp(-d / l^2), d the Hamming distance of path encodings."""
  x = np.asarray(encodings.encode("path", SPACE.sample(jax.random.PRNGKey(0), 20)), np.float64)
  k = np.asarray(kernels.Hamming.create(1.5**2, 3.0**2)(VectorPair(x, x)))
  np.testing.assert_allclose(np.diag(k), 2.25)
  assert np.all(k > 0) and np.all(k <= 2.25) and np.allclose(k, k.T)
  d = np.abs(x[0] - x[1]).sum()
  np.testing.assert_allclose(k[0, 1], 2.25 * np.exp(-d / 9.0))


def test_gp_posterior_interpolates_and_reverts_to_prior():
  cells_ = SPACE.sample(jax.random.PRNGKey(3), 5)
  gp = point_model.gp_fixed(kernel="hamming", variance=2.25, length_scale=9.0, target_offset=100.0)
  model = gp(featurizers.encoding("path")(SPACE))
  y = np.array([91.0, 92.0, 93.0, 94.0])
  fitted = point_model.fit(model, jax.random.PRNGKey(0), model.featurizer.init(cells_[:4]), cells_[:4], y, 4)
  pred, _ = point_model.predict(fitted, cells_)
  np.testing.assert_allclose(np.asarray(pred.mean)[:4], y, atol=1e-4)  # scores back on their own scale
  std = np.asarray(pred.std)
  assert np.all(std[:4] < 1e-3) and std[4] > 0.1


def test_gp_bo_runs_distinct_queries_with_one_per_step(tmp_path):
  obs = run(presets.gp_bo(SPACE, "max"), tmp_path, 25)
  assert len({o.arch_json["arch_str"] for o in obs}) == 25


@pytest.mark.slow
def test_re_and_ls_beat_random_search_expectation(tmp_path):
  t = tabular.load_nb201(FOLDER)
  for name, make in (("re", regularized_evolution.regularized_evolution), ("ls", local_search.local_search)):
    regrets = []
    for seed in range(6):
      obs = run(make(SPACE, "max"), tmp_path / f"{name}{seed}", 150, seed)
      regrets.append(regret_curve([o.value for o in obs], [o.test_value for o in obs], t.best_test)[-1])
    assert np.mean(regrets) < 0.5079, name  # random search's exact expectation (computed from the table)
