"""Surrogates over points: the target offset maps predictions back to scores, pending points are
hallucinated (same mean, smaller std), the fixed GP draws joint samples, padded predictions hold
the candidates' first and compile nothing for another count of one capacity, the traceable value
model equals the host prediction, overflowing scores fail loudly, and bad pairings are refused by
name."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.features import featurizers as F
from nas_jax.spaces.cells import nb201_space
from nas_jax.spaces.conditional import conditional_space
from nas_jax.arch.architecture import next_power_of_two
from nas_jax.features.pairwise import OtmannPair, VectorPair
from nas_jax.surrogates import kernels, priors
from nas_jax.surrogates import point_model as pm

NB201 = nb201_space()
CELLS = NB201.sample(jax.random.key(0), 14)
SCORES = np.linspace(80.0, 92.0, 10)


def _fit(model, n_ok=10, n_pending=0):
  train = CELLS[: n_ok + n_pending]
  return pm.fit(model, jax.random.key(1), model.featurizer.init(train), train, SCORES[:n_ok], n_ok)


def test_an_offset_model_predicts_scores_as_a_score_model_does():
  feats = F.encoding("path")(NB201)
  on_scores = pm.gp_fixed(kernel="hamming", variance=2.25, length_scale=9.0)(feats)
  on_errors = pm.gp_fixed(kernel="hamming", variance=2.25, length_scale=9.0, target_offset=100.0)(feats)
  a, _ = pm.predict(_fit(on_scores), CELLS[10:])
  b, _ = pm.predict(_fit(on_errors), CELLS[10:])
  # A zero-mean GP on y and on 100 - y: means mirror around the prior (0 vs 100), stds agree.
  np.testing.assert_allclose(np.asarray(b.std), np.asarray(a.std), rtol=1e-9)
  c, _ = pm.predict(_fit(on_errors), CELLS[:10])
  np.testing.assert_allclose(np.asarray(c.mean), SCORES, atol=1e-3)  # scores at the data, not errors


@pytest.mark.parametrize(
  "surrogate, options", [(pm.gp, dict(n_starts=2, fit_steps=10)), (pm.gp_fixed, dict(variance=2.25, length_scale=9.0))]
)
def test_pending_points_keep_the_mean_and_shrink_the_std(surrogate, options):
  model = surrogate(target_offset=100.0, **options)(F.encoding("path")(NB201))
  pred, pred_p = pm.predict(_fit(model, n_pending=2), CELLS[10:12])
  np.testing.assert_allclose(np.asarray(pred_p.mean), np.asarray(pred.mean), atol=1e-6)
  assert np.all(np.asarray(pred_p.std) < 0.5 * np.asarray(pred.std))  # a fitted GP keeps its noise floor


def test_scores_that_overflow_the_normalisation_fail_loudly():
  model = pm.gp(n_starts=2, fit_steps=5)(F.encoding("path")(NB201))
  train = CELLS[:10]
  with pytest.raises(ValueError, match=r"scores: values up to 1e\+300 overflow the surrogate's normalisation"):
    pm.fit(model, jax.random.key(1), model.featurizer.init(train), train, np.linspace(-1e300, 1e300, 10), 10)


def test_the_fixed_gp_draws_joint_samples():
  model = pm.gp_fixed(variance=2.25, length_scale=9.0)(F.encoding("path")(NB201))
  pred, _ = pm.predict(_fit(model), CELLS[10:], joint=True)
  assert pred.samples.shape == (16, 4) and np.all(np.isfinite(np.asarray(pred.samples)))


@pytest.mark.parametrize("surrogate, options", [(pm.gp, dict(n_starts=2, fit_steps=10)), (pm.ensemble, {})])
def test_padded_predictions_hold_the_candidates_first_and_compile_once_per_capacity(surrogate, options, count_compiles):
  model = surrogate(target_offset=100.0, **options)(F.encoding("path")(NB201))
  fitted = _fit(model, n_pending=1)
  cands = NB201.sample(jax.random.key(5), 8)
  pm.predict(fitted, cands, padded=True)
  with count_compiles() as compiled:  # fewer candidates, same capacities: every program reused
    for m in (7, 5):
      pred, pred_p = pm.predict(fitted, cands[:m], padded=True)
  assert compiled[0] == 0
  exact, exact_p = pm.predict(fitted, cands[:5])
  assert pred.mean.shape[-1] == pred_p.std.shape[-1] == next_power_of_two(5, model.min_candidates)
  for a, b in [(pred.mean, exact.mean), (pred.std, exact.std), (pred_p.std, exact_p.std)]:
    np.testing.assert_allclose(np.asarray(a)[..., :5], np.asarray(b), rtol=1e-12)


def test_the_value_model_equals_the_host_prediction():
  space = conditional_space(max_depth=2)
  pts = space.initial() + space.sample(jax.random.key(5), 5)
  model = pm.gp(n_starts=2, fit_steps=10)(F.arc()(space))
  fitted = pm.fit(model, jax.random.key(2), model.featurizer.init(pts[:6]), pts[:6], np.arange(5.0), 5)
  host, host_p = pm.predict(fitted, pts[5:])
  values = jnp.asarray(np.stack([np.asarray(p.values, np.float64) for p in pts[5:]]))
  # Traced, as an acquisition optimiser calls it (and compiled once, not an operation at a time).
  traced, traced_p = jax.jit(lambda v: pm.value_predictive(pm.value_model(fitted), v))(values)
  np.testing.assert_allclose(np.asarray(traced.mean)[0], np.asarray(host.mean), rtol=1e-6, atol=1e-9)
  np.testing.assert_allclose(np.asarray(traced_p.std)[0], np.asarray(host_p.std), rtol=1e-4, atol=1e-6)
  grad = jax.jit(jax.grad(lambda v: pm.value_predictive(pm.value_model(fitted), v[None])[0].mean.sum()))(values[0])
  assert np.all(np.isfinite(np.asarray(grad)))


@pytest.mark.parametrize(
  "surrogate, featurizer, match",
  [
    (lambda: pm.ensemble(), F.otmann(), "'ensemble' reads vectors; featurizer 'otmann' gives OtmannPair"),
    (lambda: pm.gp_fixed(), F.arc(), "use the fitted 'gp' for OTMANN and arc features"),
    (lambda: pm.gp_fixed(kernel="hamming"), F.poor_man(), "'poor_man' is not binary"),
    (lambda: pm.gp(p=2.0), F.encoding("path"), "gp on 'path' features: .*'p'"),
    (lambda: pm.gp(kernel=priors.matern52(), p=2.0), F.encoding("path"), r"\['p'\] are options of the default kernel"),
    (lambda: pm.gp(kernel=priors.hamming()), F.poor_man(), "'poor_man' is not binary"),
    (lambda: pm.gp(kernel=priors.exp_squared()), F.otmann(), r"reads VectorPair, DistancePair; .* give OtmannPair"),
    (lambda: pm.gp(n_starts=0), F.encoding("path"), "n_starts=0"),
    (lambda: pm.gp(box=object(), kernel=priors.otmann_kernel()), F.otmann(), "box excludes the options \\['kernel'\\]"),
  ],
)
def test_bad_pairings_are_refused_by_name(surrogate, featurizer, match):
  space = conditional_space() if featurizer in (F.arc(), F.poor_man()) else NB201
  with pytest.raises(ValueError, match=match):
    surrogate()(featurizer(space))


def test_a_fit_on_fewer_padded_slots_predicts_as_the_fit_at_the_capacity():
  """fit_step: 9 observations (capacity 16) are fitted on 12 slots, then conditioned on 16; Adam's
  path is the same up to rounding, so the predictions are too."""
  feats = F.encoding("path")(NB201)
  tight = pm.gp(n_starts=2, fit_steps=10, fit_step=4)(feats)
  full = pm.gp(n_starts=2, fit_steps=10)(feats)
  a, b = _fit(tight, n_ok=9), _fit(full, n_ok=9)
  assert a.capacity == b.capacity == 16 and a.state.posterior.chol.shape == (1, 16, 16)
  pa, _ = pm.predict(a, CELLS[9:])
  pb, _ = pm.predict(b, CELLS[9:])
  np.testing.assert_allclose(np.asarray(pa.mean), np.asarray(pb.mean), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(pa.std), np.asarray(pb.std), rtol=1e-6)
  train = CELLS[:9]  # the hyper-parameters are those of the fit on 12 slots
  pair, _ = feats.pairs(feats.init(train), train, [])
  y = jnp.asarray(np.concatenate([SCORES[:9], np.zeros(3)]))
  on_12 = tight.surrogate.fit(jax.random.key(1), pair.pad(12, 12), y, jnp.arange(12) < 9)
  for got, want in zip(jax.tree.leaves(a.state.posterior.hypers), jax.tree.leaves(on_12.posterior.hypers)):
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
  with pytest.raises(ValueError, match=r"gp: fit_step=-1; expected an int >= 0"):
    pm.gp(fit_step=-1)


def test_a_sum_of_kernel_values_fits_in_the_sum_of_their_boxes():
  """gp(kernel=a + b): the box holds kernels.Sum of the terms' bounds (the noise range the left
  term's), and the GP fits and predicts on it; a name in place of a value is refused by name."""
  both = priors.matern52(ard=False) + priors.hamming()
  box = both.box(VectorPair, 5)
  single = priors.hamming().box(VectorPair, 5)
  assert isinstance(box.lower.kernel, kernels.Sum) and isinstance(box.upper.kernel.k2, kernels.Hamming)
  np.testing.assert_array_equal(box.upper.kernel.k2.log_length_scale, single.upper.kernel.log_length_scale)
  assert box.lower.kernel.k1.log_length_scale.shape == () and both.binary
  fitted = _fit(pm.gp(kernel=both, n_starts=2, fit_steps=10)(F.encoding("path")(NB201)))
  pred, _ = pm.predict(fitted, CELLS[10:])
  assert np.all(np.isfinite(np.asarray(pred.mean))) and np.all(np.asarray(pred.std) > 0)
  with pytest.raises(TypeError, match="gp: kernel='matern52'; expected a kernel value"):
    pm.gp(kernel="matern52")
  with pytest.raises(ValueError, match="the terms read no common pair type"):
    priors.otmann_kernel() + priors.arc_kernel()
  assert priors.otmann_kernel(d_bar=False).box(OtmannPair, 4).lower.kernel.log_alpha_bar < -20
