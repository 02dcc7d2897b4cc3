"""The zero-cost proxy's search parts (docs/proxies_search.md), each against known behaviour: the
warm-up is the top k of the N sampled, the prescreen passes on only the proxy's best moves, the
feature is appended as rank quantiles, the GP's prior mean is the least-squares line, the meter
charges each cell once, and a search with every part resumes from its journal to the proposals
of the uninterrupted run.

The proxy is a stand-in that needs no data: a hash of each NB201 cell's string, in a CSV written
for all 15,625 cells, so every score is distinct and no network is built."""

import csv
import hashlib
import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from nas_jax.acquisition import mutation
from nas_jax.acquisition.acq_optimiser import Context
from nas_jax.acquisition.optimizers import mutation_search
from nas_jax.acquisition.prescreen import prescreen
from nas_jax.features import featurizers as feat
from nas_jax.features.proxy_feature import rank_quantiles, with_proxy_feature
from nas_jax.search.state import Observation, Status
from nas_jax.search.strategies.proxy_search import warmup_points, with_proxy
from nas_jax.search.strategies.regularized_evolution import regularized_evolution
from nas_jax.search.strategy import Strategy
from nas_jax.search.task import Task
from nas_jax.spaces import cells
from nas_jax.spaces.proxy_scores import ProxyMeter, ProxyScores, prescreened
from nas_jax.surrogates.proxy_prior import fit_line, shifted
from nas_jax.surrogates.surrogate import Predictive, Surrogate
from nas_jax.features.proxy_feature import ProxyPair
from nas_jax.features.pairwise import VectorPair
from nas_jax.wiring import parts
from nas_jax.wiring.proxy_sources import check_proxy, proxy_table

KEY = jax.random.key(3)
SPACE = cells.nb201_space()


def _hash(arch_str: str) -> float:
  return int.from_bytes(hashlib.blake2b(arch_str.encode(), digest_size=6).digest(), "big") / 2.0**48


def _proxy_of(p) -> float:
  return _hash(SPACE.to_json(p)["arch_str"])


def _meter(seconds: float = 0.0) -> ProxyMeter:
  score = lambda points: np.array([_proxy_of(p) for p in points])
  return ProxyMeter(ProxyScores("hash", score, seconds), SPACE.canonical_key)


@pytest.fixture(scope="module")
def proxy_csv(tmp_path_factory):
  path = tmp_path_factory.mktemp("proxy") / "nb201_cifar10.csv"
  with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["arch_str", "hash"])
    for p in SPACE.enumerate():
      s = SPACE.to_json(p)["arch_str"]
      w.writerow([s, repr(_hash(s))])
  return str(path)


def test_the_meter_scores_each_cell_once_and_charges_it_once():
  calls = []
  proxy = ProxyScores("hash", lambda pts: calls.append(len(pts)) or np.array([_proxy_of(p) for p in pts]), 0.5)
  meter = ProxyMeter(proxy, SPACE.canonical_key)
  a, b = SPACE.sample(KEY, 2)
  assert np.array_equal(meter.score([a, b, a]), [_proxy_of(a), _proxy_of(b), _proxy_of(a)])
  assert meter.take() == (2, 1.0)
  meter.score([b])
  assert calls == [2] and meter.take() == (0, 0.0)


def test_the_warm_up_is_exactly_the_top_k_of_the_n_sampled():
  n, k = 200, 10
  drawn = mutation.random_candidates(SPACE, KEY, frozenset(), n=n, max_draws=20 * n)
  best = sorted(drawn, key=_proxy_of, reverse=True)[:k]
  got = warmup_points(SPACE, _meter(), KEY, n, k)
  assert [SPACE.canonical_key(p) for p in got] == [SPACE.canonical_key(p) for p in best]
  assert len(drawn) == n


def _observe(points, start):
  return [
    Observation(
      trial_id=start + i,
      arch_json=SPACE.to_json(p),
      value=_proxy_of(p),
      status=Status.OK,
      error="",
      seconds=0.0,
      worker="test",
    )
    for i, p in enumerate(points)
  ]


def test_with_proxy_proposes_the_warm_up_first_then_the_strategy_and_notes_the_cost():
  meter = _meter(seconds=0.25)
  strategy = with_proxy(regularized_evolution(SPACE, n_init=3), SPACE, meter, n=50, k=3)
  state = strategy.init(KEY)
  warm = [SPACE.canonical_key(p) for p in state.warmup]
  state, first = strategy.propose(state, 2, [])
  assert [SPACE.canonical_key(p) for p in first] == warm[:2]
  assert strategy.notes(state, first[0]) == {
    "origin": "zc_warmup",
    "proxy_rank": 0,
    "proxy_scored": 50,
    "proxy_s": 12.5,
  }
  state = strategy.update(state, _observe(first, 0))
  state, nxt = strategy.propose(state, 2, [])  # the last warm-up cell, then the strategy's own
  assert SPACE.canonical_key(nxt[0]) == warm[2] and SPACE.canonical_key(nxt[1]) not in warm


def test_prescreen_passes_the_acquisition_only_the_best_quarter_of_the_candidates():
  meter = _meter()
  points = SPACE.sample(KEY, 12)
  ctx = Context(
    SPACE, tuple(points), np.linspace(0, 1, 12), tuple(range(12)), frozenset(map(SPACE.canonical_key, points))
  )
  seen = []

  def acquisition(cands):
    seen.extend(cands)
    return np.array([-_proxy_of(c) for c in cands])  # prefers what the proxy likes least

  opt = prescreen(mutation_search(n_candidates=40), meter, one_in=4)
  chosen = opt.maximize(tuple(jax.random.split(KEY)), acquisition, ctx, 1)
  # the same candidates, unscreened
  all_cands = []
  mutation_search(n_candidates=40).maximize(
    tuple(jax.random.split(KEY)), lambda c: all_cands.extend(c) or np.zeros(len(c)), ctx, 1
  )
  best = sorted(all_cands, key=_proxy_of, reverse=True)[: math.ceil(len(all_cands) / 4)]
  assert {SPACE.canonical_key(c) for c in seen} == {SPACE.canonical_key(c) for c in best}
  worst_kept = min(best, key=_proxy_of)
  assert SPACE.canonical_key(chosen[0][0]) == SPACE.canonical_key(worst_kept)
  assert opt.name == "mutation+prescreen"


def test_a_prescreened_space_moves_to_the_proxys_best_mutant_and_neighbours():
  meter = _meter()
  moved = prescreened(SPACE, meter, one_in=5)
  parent = SPACE.sample(KEY, 1)[0]
  key = jax.random.key(7)
  mutants = [c for c, ok in (SPACE.mutate(parent, jax.random.fold_in(key, i)) for i in range(5)) if ok]
  child, ok = moved.mutate(parent, key)
  assert ok and SPACE.canonical_key(child) == SPACE.canonical_key(max(mutants, key=_proxy_of))
  nb = SPACE.neighbours(parent)
  assert [_proxy_of(p) for p in moved.neighbours(parent)] == sorted(map(_proxy_of, nb), reverse=True)[
    : math.ceil(len(nb) / 5)
  ]


def test_rank_quantiles_are_mid_ranks_among_the_train_scores():
  assert np.allclose(rank_quantiles([1.0, 2.0, 3.0, 4.0], [0.0, 2.0, 2.5, 9.0]), [0.0, 0.375, 0.5, 1.0])
  assert np.allclose(rank_quantiles([5.0, 5.0], [5.0]), [0.5])
  assert np.allclose(rank_quantiles([], [1.0, 2.0]), [0.5, 0.5])


def test_the_proxy_feature_is_appended_to_the_encoding_as_rank_quantiles():
  meter = _meter()
  base = feat.encoding("path")(SPACE)
  f = with_proxy_feature(feat.encoding("path"), meter)(SPACE)
  train, cands = SPACE.sample(KEY, 6), SPACE.sample(jax.random.key(9), 3)
  cache = f.init(train)
  (pt, pc), (bt, _) = f.pairs(cache, train, cands), base.pairs(base.init(train), train, cands)
  z = np.array([_proxy_of(p) for p in train])
  assert f.dim == base.dim + 1 and f.name == "path+hash"
  assert np.array_equal(np.asarray(pt.x1)[:, :-1], np.asarray(bt.x1))
  assert np.allclose(np.asarray(pt.x1)[:, -1], rank_quantiles(z, z))
  assert np.allclose(np.asarray(pc.x1)[:, -1], rank_quantiles(z, [_proxy_of(p) for p in cands]))
  assert np.array_equal(np.asarray(pc.x2), np.asarray(pt.x1))


def test_the_prior_mean_line_is_least_squares_over_the_observations():
  z = jnp.array([0.0, 0.5, 1.0, 0.25])
  y = 2.0 + 3.0 * z
  mask = jnp.array([True, True, True, False])
  assert np.allclose(fit_line(z, y.at[3].set(100.0), mask), [2.0, 3.0])
  assert np.allclose(fit_line(jnp.ones(3), jnp.array([1.0, 2.0, 6.0]), jnp.ones(3, bool)), [3.0, 0.0])


def test_the_gp_prior_mean_shifts_predictions_by_the_line_and_fits_the_residuals():
  got = {}

  def base_fit(key, pair, y, mask):
    got["y"] = y
    return jnp.zeros(())

  base = Surrogate(base_fit, lambda state, pair: Predictive(jnp.full(pair.shape[0], 0.5), jnp.ones(pair.shape[0])))
  s = shifted(base)
  x = jnp.zeros((4, 2))
  z = jnp.array([0.0, 1.0, 0.5, 0.2])
  y = jnp.array([1.0, 3.0, 2.0, 0.0])
  mask = jnp.array([True, True, True, False])
  state = s.fit(KEY, ProxyPair(VectorPair(x, x), z), y, mask)
  assert np.allclose(state.coef, [1.0, 2.0])  # y = 1 + 2 z on the observations
  assert np.allclose(got["y"][:3], 0.0)
  zc = jnp.array([0.0, 0.9])
  pred = s.predict(state, ProxyPair(VectorPair(jnp.zeros((2, 2)), x), zc))
  assert np.allclose(pred.mean, 0.5 + 1.0 + 2.0 * zc) and np.allclose(pred.std, 1.0)


def test_the_gp_prior_mean_passes_a_chained_fit_the_residuals():
  """`fit_from` (bo's chain_fits) starts the base GP from its earlier state, on y minus the line."""
  got = {}

  def base_fit_from(key, state, pair, y, mask):
    got["state"], got["y"] = state, y
    return jnp.ones(())

  s = shifted(Surrogate(lambda *a: jnp.zeros(()), lambda state, pair: None, fit_from=base_fit_from))
  x = jnp.zeros((4, 2))
  earlier = s.fit(KEY, ProxyPair(VectorPair(x, x), jnp.zeros(4)), jnp.ones(4), jnp.ones(4, bool))
  y, z = jnp.array([1.0, 3.0, 2.0, 0.0]), jnp.array([0.0, 1.0, 0.5, 0.2])
  state = s.fit_from(KEY, earlier, ProxyPair(VectorPair(x, x), z), y, jnp.array([True, True, True, False]))
  assert np.allclose(state.coef, [1.0, 2.0]) and np.allclose(got["y"][:3], 0.0) and got["state"] is earlier.base
  assert shifted(Surrogate(lambda *a: None, lambda state, pair: None)).fit_from is None


def test_a_table_source_scores_its_cells_and_names_a_missing_one(proxy_csv, tmp_path):
  proxy = proxy_table(proxy_csv, "hash", SPACE, seconds_per_score=0.1)
  cells_ = SPACE.sample(KEY, 4)
  assert np.allclose(proxy.score(cells_), [_proxy_of(p) for p in cells_])
  small = tmp_path / "one.csv"
  small.write_text("arch_str,hash\n" + f"{SPACE.to_json(cells_[0])['arch_str']},1.0\n")
  with pytest.raises(ValueError, match=r"no score for cell '\|.*'; the table holds 1 cells"):
    proxy_table(str(small), "hash", SPACE).score(cells_[:2])
  with pytest.raises(ValueError, match=r"config\.proxy\.path: .* expected 'arch_str' and the proxy column 'synflow'"):
    proxy_table(proxy_csv, "synflow", SPACE)


def _config(proxy_csv, strategy, options, **proxy):
  path = proxy_csv.replace("cifar10", "{dataset}")
  return ml_collections.ConfigDict(
    dict(
      strategy=strategy,
      strategy_config=options,
      task=dict(dataset="cifar10"),
      proxy={**dict(path=path, column="hash", seconds_per_score=0.0, warmup_n=0, warmup_k=0), **proxy},
    )
  )


@pytest.mark.parametrize(
  "proxy, match",
  [
    (dict(warmup_n=5, warmup_k=10), r"config\.proxy\.warmup_k: 10 is more than warmup_n=5"),
    (dict(prescreen=1), r"config\.proxy\.prescreen: 1 is not allowed"),
    (dict(feature="yes"), r"config\.proxy\.feature: 'yes' is not allowed"),
    (dict(seconds_per_score=-1.0), r"config\.proxy\.seconds_per_score: -1\.0"),
    (dict(prescreen=2, colour=1), r"config\.proxy: fields \['colour'\] are unknown"),
  ],
)
def test_bad_proxy_fields_are_named(proxy_csv, proxy, match):
  with pytest.raises(ValueError, match=match):
    check_proxy(_config(proxy_csv, "random", {}, **proxy))


def test_a_missing_proxy_file_is_named(tmp_path):
  c = _config(str(tmp_path / "nb201_cifar10.csv"), "random", {}, warmup_n=5, warmup_k=2)
  with pytest.raises(ValueError, match=r"config\.proxy\.path: '.*nb201_cifar10\.csv' is not a file"):
    check_proxy(c)


@pytest.mark.parametrize(
  "strategy, proxy, match",
  [
    (
      "regularized_evolution",
      dict(feature=True),
      r"config\.proxy\.feature: strategy 'regularized_evolution' does not take it",
    ),
    ("random", dict(prescreen=4), r"config\.proxy\.prescreen: strategy 'random' does not take it"),
    ("bananas", dict(prior_mean=True), r"config\.proxy\.prior_mean: bananas models with an ensemble"),
  ],
)
def test_a_part_a_strategy_cannot_take_is_refused_when_built(proxy_csv, strategy, proxy, match):
  with pytest.raises(ValueError, match=match):
    parts.make_strategy(strategy, _config(proxy_csv, strategy, {}, **proxy), SPACE, Task("hash", "max", None))


_CASES = {
  "re": ("regularized_evolution", dict(population_size=5, tournament_size=2, n_init=3), dict(prescreen=3)),
  "ls": ("local_search", dict(n_restart=3), dict(prescreen=4)),
  "bananas": (
    "bananas",
    dict(hidden=(8, 8), epochs=20, n_members=2, n_init=3, k=2, n_candidates=20, attempts_per_parent=20),
    dict(prescreen=2, feature=True),
  ),
  "bo": (
    "bo",
    dict(
      featurizer="path",
      surrogate="gp",
      surrogate_config=dict(n_starts=2, fit_steps=10),
      acquisition="ei",
      optimizer="mutation",
      optimizer_config=dict(n_candidates=20, attempts_per_parent=20),
      initial="random",
      n_init=3,
    ),
    dict(prescreen=2, prior_mean=True),
  ),
  # NASBOT's screened EA: the proxy cuts the screen's batches, the GP's prior mean wraps its pairs
  "nasbot": (
    "nasbot",
    dict(
      featurizer="otmann",
      surrogate="gp",
      surrogate_config=dict(n_starts=2, fit_steps=10),
      acquisition="ei",
      optimizer="ea",
      optimizer_config=dict(lo=24, hi=24, pool=False, screen=4),
      initial="random",
      n_init=3,
    ),
    dict(prescreen=2, prior_mean=True),
  ),
}


# the model-based cases fit a surrogate at every step: over 10 s each
_SLOW = ("bananas", "bo", "nasbot")


@pytest.mark.parametrize(
  "case", [pytest.param(c, marks=[pytest.mark.slow] if c in _SLOW else []) for c in sorted(_CASES)]
)
def test_a_search_with_proxy_parts_resumed_from_its_journal_proposes_what_it_would_have(proxy_csv, case):
  name, options, proxy = _CASES[case]
  config = _config(proxy_csv, name, options, warmup_n=30, warmup_k=3, **proxy)
  build = lambda: parts.make_strategy(name, config, SPACE, Task("hash", "max", None))
  live: Strategy = build()
  state, journal = live.init(KEY), []
  for _ in range(7):  # 3 warm-up cells, then 4 of the strategy (BANANAS: two batches of k = 2)
    state, points = live.propose(state, 1, [])
    obs = _observe(points, len(journal))
    journal += obs
    state = live.update(state, obs)
  _, want = live.propose(state, 2, [])
  resumed = build()  # a new process: a new meter
  _, again = resumed.propose(resumed.update(resumed.init(KEY), journal), 2, [])
  assert [SPACE.to_json(p) for p in again] == [SPACE.to_json(p) for p in want]
  warm = [SPACE.canonical_key(p) for p in state.warmup]
  assert [SPACE.canonical_key(SPACE.from_json(o.arch_json)) for o in journal[:3]] == warm
