"""Candidate sets (BANANAS Sec. 4, sizes from the authors' code) and BANANAS acquisitions (Sec. 4; App. B)."""

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.acquisition import mutation
from nas_jax.acquisition import functions
from nas_jax.spaces import cells
from nas_jax.surrogates.surrogate import Predictive

SPACE = cells.nb201_space()


def acquire(name, pred, best, key, *, ei_sigma_scale=1.0):
  """BANANAS' acquisitions as its presets build them: UCB mean + 0.5 std, no pending points."""
  made = {
    "ucb": functions.ucb(kappa=0.5),
    "ei": functions.ei(sigma_scale=ei_sigma_scale),
    "pi": functions.pi(sigma_scale=ei_sigma_scale),
    "ts": functions.thompson(),
    "its": functions.independent_thompson(),
  }
  return made[name](pred, best, key)


def test_candidates_are_new_distinct_and_enough():
  pts = SPACE.sample(jax.random.PRNGKey(0), 10)
  seen = {SPACE.canonical_key(p) for p in pts}
  cands = mutation.mutation_candidates(SPACE, jax.random.PRNGKey(1), pts[:5], seen)
  keys = [SPACE.canonical_key(c) for c in cands]
  assert len(keys) == len(set(keys)) >= 100
  assert not set(keys) & seen


def test_first_bo_step_uses_two_parents_and_about_127_candidates():
  counts, parents_used = [], []
  for s in range(40):
    pts = SPACE.sample(jax.random.PRNGKey(100 + s), 10)
    seen = {SPACE.canonical_key(p) for p in pts}
    key = jax.random.PRNGKey(200 + s)
    counts.append(len(mutation.mutation_candidates(SPACE, key, pts[:5], seen)))
    one = len(mutation.mutation_candidates(SPACE, key, pts[:1], seen))
    parents_used.append(1 if one >= 100 else 2)
  # simulated with the authors' code's rule: exactly 2 parents, 126.6 candidates on average (range 105-146)
  assert set(parents_used) == {2}
  assert 105 <= min(counts) and max(counts) <= 146 and abs(np.mean(counts) - 126.6) < 3.0


def test_exhausted_parents_give_fewer_candidates():
  pts = SPACE.sample(jax.random.PRNGKey(2), 1)
  cands = mutation.mutation_candidates(SPACE, jax.random.PRNGKey(3), pts, set(), attempts_per_parent=20)
  assert 0 < len(cands) <= 20


def test_unchanged_mutants_are_spent_attempts():
  # BANANAS' operator (require_change=False) leaves an NB201 cell unchanged w.p. 0.75^6 = 0.178;
  # such draws count against attempts_per_parent and are never candidates.
  parent = SPACE.sample(jax.random.PRNGKey(6), 1)[0]
  key = jax.random.PRNGKey(7)
  outs = [SPACE.mutate(parent, k) for k in jax.random.split(key, 60)]
  changed = list(dict.fromkeys(SPACE.canonical_key(c) for c, ok in outs if ok))  # first-seen order
  cands = mutation.mutation_candidates(SPACE, key, [parent], set(), attempts_per_parent=60)
  assert not all(ok for _, ok in outs)
  assert [SPACE.canonical_key(c) for c in cands] == changed  # the parent itself never comes back


def test_random_candidates_are_new_and_distinct():
  seen = {SPACE.canonical_key(p) for p in SPACE.sample(jax.random.PRNGKey(4), 50)}
  cands = mutation.random_candidates(SPACE, jax.random.PRNGKey(5), seen, n=1000)
  keys = {SPACE.canonical_key(c) for c in cands}
  assert len(cands) == len(keys) == 1000 and not keys & seen


def test_select_parents_best_first_ties_in_query_order():
  assert mutation.select_parents(list("abcdef"), [1.0, 3.0, 3.0, 0.0, 2.0, 3.0], 4) == list("bcfe")


def test_top_k_distinct_best_first():
  idx = mutation.top_k([0.1, 0.9, 0.5, 0.9], 3)
  assert idx.tolist() == [1, 3, 2]


# Hand-computed acquisition values (BANANAS Sec. 4; App. B), as scores (nas_jax maximises): mean = -f, best = -y_min.
F, SIG, Y_MIN = jnp.array([6.0, 5.8, 5.9]), jnp.array([0.0, 0.4, 0.1]), 5.85


def pred(samples=None):
  return Predictive(mean=-F, std=SIG, samples=samples)


def test_ucb_ei_pi_known_values():
  key = jax.random.PRNGKey(0)
  np.testing.assert_allclose(acquire("ucb", pred(), -Y_MIN, key), -np.array([6.0, 5.6, 5.85]), atol=1e-6)
  np.testing.assert_allclose(acquire("ei", pred(), -Y_MIN, key), [0, 0.185822, 0.019780], atol=1e-5)
  np.testing.assert_allclose(acquire("pi", pred(), -Y_MIN, key), [0, 0.549738, 0.308538], atol=1e-5)
  for name in ("ucb", "ei"):
    kw = {"ei_sigma_scale": 0.2} if name == "ei" else {}
    assert mutation.top_k(acquire(name, pred(), -Y_MIN, key, **kw), 3).tolist() == [1, 2, 0]


def test_zero_spread_orders_by_mean():
  p = Predictive(mean=-F, std=jnp.zeros(3), samples=None)
  for name in ("ucb", "its"):
    assert mutation.top_k(acquire(name, p, -Y_MIN, jax.random.PRNGKey(1)), 3).tolist() == [1, 2, 0]


def test_ts_is_one_member_and_its_is_independent():
  members = jnp.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
  p = Predictive(mean=members.mean(0), std=members.std(0), samples=members)
  for s in range(10):
    v = acquire("ts", p, 0.0, jax.random.PRNGKey(s))
    assert any(np.array_equal(v, m) for m in np.asarray(members))
  draws = np.stack([acquire("its", p, 0.0, jax.random.PRNGKey(s)) for s in range(2000)])
  np.testing.assert_allclose(draws.mean(0), [2.0, 2.0, 2.0], atol=0.1)
  assert abs(np.corrcoef(draws[:, 0], draws[:, 2])[0, 1]) < 0.1  # independent, unlike TS
