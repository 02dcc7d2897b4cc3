"""A surrogate over points: any featurizer's output fed to a GP (fitted or fixed) or the ensemble.

Each surrogate is built by its own constructor with its own options (`gp`, `gp_fixed`,
`ensemble`); what it returns is a surrogate part, a function `featurizer -> PointModel` that
picks the kernel its featurizer's pairs need:

    model = gp(n_starts=16)(featurizer)
    fitted = fit(model, key, cache, train_points, scores, n_ok)   # pending: train_points[n_ok:]
    pred, pred_p = predict(fitted, candidates)                     # on the score scale

The train points are the successful observations followed by the points pending evaluation; the
pending ones are hallucinated by one rule for every surrogate (kriging believer: observed at the
real model's mean), and `pred_p` is the prediction of the model that holds them. Every padded size
is a power of two, so a growing history compiles O(log n) times; a GP built with `fit_step` = k
fits its hyper-parameters on the observations padded to a multiple of k instead.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple, Sequence

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.features.featurizer import FeatureCache, Featurizer
from nas_jax.features.pairwise import DistancePair, OtmannPair, VectorPair
from nas_jax.arch.architecture import next_power_of_two
from nas_jax.surrogates import gp as gp_lib
from nas_jax.surrogates import kernels
from nas_jax.surrogates.ensemble import ensemble_surrogate
from nas_jax.surrogates import priors
from nas_jax.surrogates.surrogate import (
  GPState,
  JointInputs,
  Predictive,
  Surrogate,
  gp_surrogate,
  hallucinate,
  predict_state,
)

__all__ = [
  "SurrogatePart",
  "PointModel",
  "Fitted",
  "ValueModel",
  "gp",
  "gp_fixed",
  "ensemble",
  "fit",
  "predict",
  "screened",
  "mean_at",
  "value_model",
  "value_predictive",
]


class PointModel(NamedTuple):
  """A surrogate and how it reads a featurizer.

  Attributes:
    name: "gp", "gp_fixed" or "ensemble" (recorded in the journal's notes); featurizer: what it reads.
    surrogate: fit/predict/condition over Pairwise (GPs) or [C, D] vectors (the ensemble).
    vectors: True if the surrogate reads the pairs' x1 vectors instead of the pairs.
    min_train, min_candidates: the smallest padded sizes of the train and candidate sets.
    target_offset: None to model scores; a number c to model c - score (BANANAS' val error with
      c = 100, Auto-Keras' cost with c = 1), predictions being mapped back to scores.
    fit_step: 0 to fit at the train capacity; k > 0 to fit (when no point is pending) on the
      observations padded to a multiple of k below it, then condition at the train capacity
      (`fit`).
  """

  name: str
  featurizer: Featurizer
  surrogate: Surrogate
  vectors: bool
  min_train: int
  min_candidates: int
  target_offset: float | None
  fit_step: int = 0


@dataclasses.dataclass(frozen=True)
class Fitted:
  """A fitted PointModel: state on the observations, state_p also on the pending points."""

  model: PointModel
  cache: FeatureCache
  train: tuple
  state: Any
  state_p: Any
  capacity: int


def _fixed_gp(kernel: Any) -> Surrogate:
  """A GP whose kernel is fixed: zero prior mean, raw targets, no fit (gp_lib.condition_fixed). Its
  state is a GPState of one hyper-parameter sample, so joint draws (Thompson sampling) work too."""

  def fit(key, pair, y, mask):
    post = gp_lib.condition_fixed(kernel, pair, y, mask)
    return GPState(jax.tree.map(lambda x: x[None], post), jnp.zeros(1), key, post.ok)

  def predict(state, inputs):
    return predict_state(state, inputs, n_samples=16, squeeze=True)

  def condition(state, pair, y, mask):
    return fit(state.key, pair, y, mask)

  return Surrogate(fit, predict, condition)


# A surrogate part: the model of a featurizer's points, built on that featurizer.
SurrogatePart = Callable[[Featurizer], PointModel]


def _check_hamming(featurizer: Featurizer, hamming: bool) -> None:
  if hamming and not featurizer.binary:
    raise ValueError(
      f"surrogate kernel='hamming' counts mismatches of 0/1 features; {featurizer.name!r} is not binary"
      " (the path, trunc_path, path_iso and adj_onehot encodings are)"
    )


def _fixed_kernel(featurizer: Featurizer, kernel: str | None, variance: float, length_scale: float):
  _check_hamming(featurizer, kernel == "hamming")
  if featurizer.pair_type is VectorPair and (kernel == "hamming" or (kernel is None and featurizer.binary)):
    return kernels.Hamming.create(variance, length_scale)
  if kernel in (None, "matern12") and featurizer.pair_type in (VectorPair, DistancePair):
    return kernels.Matern12.create(variance, length_scale)
  raise ValueError(
    f"surrogate kernel={kernel!r}: a fixed GP on {featurizer.name!r} features"
    f" ({featurizer.pair_type.__name__}) takes 'hamming' (binary vectors) or 'matern12' (vectors"
    " and distances); use the fitted 'gp' for OTMANN and arc features"
  )


def gp(
  *,
  kernel: priors.KernelPrior | None = None,
  p: float | None = None,
  p_bar: float | None = None,
  ard: bool | None = None,
  box: Any = None,
  n_starts: int = 16,
  fit_steps: int = 200,
  n_hyper_samples: int = 0,
  n_chains: int | None = None,
  warm_steps: int = 20,
  fitter: Any = None,
  target_offset: float | None = None,
  fit_step: int = 0,
) -> SurrogatePart:
  """A GP with fitted hyper-parameters (maximum likelihood, or posterior samples).

  Args:
    kernel: a kernel value of `priors` with its prior box: otmann_kernel(d_bar=False, p=2.0)
      (NASBOT's App. C.4 ablations), exp_squared(ard=False), matern52(), matern12(), hamming(),
      arc_kernel(), or a sum / product of them (`+`, `*`); None for the featurizer's default
      (`priors.default_kernel`), whose options are p, p_bar (OTMANN's powers) and ard (one
      length-scale per feature).
    box: a `gp_fit.Box` of any kernel that reads the featurizer's pairs (a new kernel), instead
      of kernel, p, p_bar and ard.
    n_starts, fit_steps: the multi-start Adam fit; n_hyper_samples, n_chains: posterior samples
      instead (n_chains defaults to 4 when sampling); warm_steps: steps of a warm refit (0: the
      refit keeps the hyper-parameters and only conditions on the new data).
    fitter: None for the Adam fit; `gp_lbfgs.lbfgs(...)` for L-BFGS to convergence from its own
      few starts (n_starts and fit_steps then unused; warm_steps caps a refit's iterations).
    target_offset: None to model scores; c to model c - score (BANANAS' val error, c = 100).
    fit_step: 0, or k > 0 to fit on the observations padded to a multiple of k rather than to
      the train capacity, a power of two (`PointModel.fit_step`): a fit costs the cube of its
      padded size, and the power of two can waste up to 8x of it, for one more compiled fit per
      k new observations.
  """
  if isinstance(fit_step, bool) or not isinstance(fit_step, int) or fit_step < 0:
    raise ValueError(f"gp: fit_step={fit_step!r}; expected an int >= 0 (0: fit at the train capacity)")
  shape = {k: v for k, v in (("p", p), ("p_bar", p_bar), ("ard", ard)) if v is not None}
  if box is not None and (shape or kernel is not None):
    raise ValueError(f"gp: box excludes the options {sorted(shape) or ['kernel']}; the box fixes the kernel")
  if kernel is not None and not isinstance(kernel, priors.KernelPrior):
    raise TypeError(
      f"gp: kernel={kernel!r}; expected a kernel value of nas_jax.surrogates.priors, e.g. otmann_kernel()"
    )
  if kernel is not None and shape:
    raise ValueError(
      f"gp: {sorted(shape)} are options of the default kernel; set them on the kernel value {kernel.name}"
    )
  samples = n_hyper_samples
  options = dict(
    n_starts=n_starts, steps=fit_steps, n_hyper_samples=samples, n_chains=n_chains or (4 if samples else 1)
  )
  surrogate_of = lambda b, project: gp_surrogate(b, project=project, warm_steps=warm_steps, fitter=fitter, **options)
  surrogate_of(priors.exp_squared().box(VectorPair, 1), False)  # checks the fit's options now, before any space

  def build(featurizer: Featurizer) -> PointModel:
    b = box
    if b is None:
      try:
        k = kernel or priors.default_kernel(featurizer.pair_type, **shape)
      except TypeError as e:  # an option this featurizer's kernel does not take
        raise ValueError(f"gp on {featurizer.name!r} features: {e}") from None
      _check_hamming(featurizer, k.binary)
      b = k.box(featurizer.pair_type, featurizer.dim)
    surrogate = surrogate_of(b, featurizer.pair_type is OtmannPair)
    return PointModel("gp", featurizer, surrogate, False, 16, 8, target_offset, fit_step)

  return build


def gp_fixed(
  *, kernel: str | None = None, variance: float = 1.0, length_scale: float = 1.0, target_offset: float | None = None
) -> SurrogatePart:
  """A GP whose kernel is fixed: "hamming" (binary vectors; BANANAS' GP-BO kernel alpha^2
  exp(-d / l^2) is variance alpha^2, length_scale l^2) or "matern12" (vectors and distances);
  None for hamming on binary features, else matern12. target_offset as for `gp`."""

  def build(featurizer: Featurizer) -> PointModel:
    surrogate = _fixed_gp(_fixed_kernel(featurizer, kernel, variance, length_scale))
    return PointModel("gp_fixed", featurizer, surrogate, False, 16, 8, target_offset)

  return build


def ensemble(*, target_offset: float | None = None, **options) -> SurrogatePart:
  """BANANAS' deep ensemble on a vector featurizer; options of `ensemble.ensemble_surrogate`
  (n_members, hidden, epochs, batch_size, lr, ddof, loss). target_offset as for `gp`."""
  if "hidden" in options:
    options["hidden"] = tuple(options["hidden"])
  surrogate = ensemble_surrogate(**options)

  def build(featurizer: Featurizer) -> PointModel:
    if featurizer.pair_type is not VectorPair:
      raise ValueError(
        f"surrogate 'ensemble' reads vectors; featurizer {featurizer.name!r} gives"
        f" {featurizer.pair_type.__name__} (use an encoding or poor_man)"
      )
    return PointModel("ensemble", featurizer, surrogate, True, 32, 128, target_offset)

  return build


def _inputs(model: PointModel, pair: Any, rows: int, cols: int):
  if model.vectors:
    x = np.asarray(pair.x1, np.float32)
    return np.concatenate([x, np.zeros((rows - len(x), x.shape[1]), np.float32)])
  return pair.pad(rows, cols)


def fit(
  model: PointModel,
  key: jax.Array,
  cache: FeatureCache,
  train: Sequence,
  scores: np.ndarray,
  n_ok: int,
  *,
  warm: Fitted | None = None,
  start: Fitted | None = None,
) -> Fitted:
  """Fits the model on train[:n_ok] with `scores` [n_ok] and hallucinates train[n_ok:].

  Every train point must be in `cache` (`featurizer.extend` it with the pending points first).
  With `warm` (an earlier fit of this model), the surrogate's `refit` starts from its
  hyper-parameters instead of a full fit (GPs with fitted hyper-parameters only). With
  `model.fit_step` and no pending point, the full fit runs on the observations padded to a
  multiple of fit_step, and the surrogate's `condition` puts them on the train capacity. With
  `start` (an earlier fit), the full fit starts once from its hyper-parameters (`fit_from`).
  """
  if warm is not None and model.surrogate.refit is None:
    raise ValueError(f"fit: warm given, but surrogate {model.name!r} has no warm refit (a GP with fitted hypers has)")
  if start is not None and (warm is not None or model.surrogate.fit_from is None):
    raise ValueError(f"fit: start given with warm, or to surrogate {model.name!r} without fit_from; give one of them")
  n = len(train)
  c = next_power_of_two(n, model.min_train)
  pair, _ = model.featurizer.pairs(cache, train, [])
  inputs = _inputs(model, pair, c, c)
  y = np.zeros(c)
  y[:n_ok] = scores if model.target_offset is None else model.target_offset - np.asarray(scores)
  with np.errstate(over="ignore", invalid="ignore"):
    spread = np.std(y[:n_ok])
  if not np.isfinite(spread):  # normalising would give NaN predictions that look like a fit
    raise ValueError(
      f"scores: values up to {np.max(np.abs(y[:n_ok])):.3g} overflow the surrogate's normalisation"
      " (their variance is not finite); rescale the objective, e.g. to its logarithm"
    )
  slots = np.arange(c)
  ok, pending = jnp.asarray(slots < n_ok), jnp.asarray((slots >= n_ok) & (slots < n))
  tight = min(c, -(-n_ok // model.fit_step) * model.fit_step) if model.fit_step else c
  if start is None:
    full = functools.partial(model.surrogate.fit, key)
  else:
    full = functools.partial(model.surrogate.fit_from, key, start.state)
  if warm is None and n == n_ok and tight < c:  # the fit on fewer slots, conditioned on all c
    small = full(_inputs(model, pair, tight, tight), jnp.asarray(y[:tight]), ok[:tight])
    state = model.surrogate.condition(small, inputs, jnp.asarray(y), ok)
  elif warm is None:
    state = full(inputs, jnp.asarray(y), ok)
  else:
    state = model.surrogate.refit(key, warm.state, inputs, jnp.asarray(y), ok)
  state_p = state
  if n > n_ok:  # the key refits only surrogates without a cheaper `condition` (the ensemble)
    state_p = hallucinate(model.surrogate, state, inputs, jnp.asarray(y), ok, pending, key=jax.random.fold_in(key, 1))
  return Fitted(model, cache, tuple(train), state, state_p, c)


def _to_scores(model: PointModel, pred: Predictive, m: int) -> Predictive:
  mean, std = pred.mean[..., :m], pred.std[..., :m]
  samples = None if pred.samples is None else pred.samples[..., :m]
  if model.target_offset is None:
    return Predictive(mean, std, samples)
  c = model.target_offset
  return Predictive(c - mean, std, None if samples is None else c - samples)


def predict(
  fitted: Fitted, candidates: Sequence, *, joint: bool = False, padded: bool = False
) -> tuple[Predictive, Predictive]:
  """(pred, pred_p): predictions at the candidates by the model of the observations and by the
  model that also holds the pending points, mean and std [m] (or [S, m] for hyper-parameter
  samples) on the score scale. joint=True also fills GP samples (Thompson sampling): it needs the
  candidates' features against each other. padded=True returns them at all
  `next_power_of_two(m, min_candidates)` candidate slots instead (filler after the first m): what a
  caller that computes on them eagerly wants, since each new m would compile its programs anew."""
  model, m = fitted.model, len(candidates)
  r = next_power_of_two(m, model.min_candidates)
  _, cross = model.featurizer.pairs(fitted.cache, fitted.train, candidates)
  inputs = _inputs(model, cross, r, fitted.capacity)
  if joint and not model.vectors:
    scratch = model.featurizer.extend(fitted.cache, candidates)
    test, _ = model.featurizer.pairs(scratch, candidates, [])
    inputs = JointInputs(inputs, test.pad(r, r))
  pred = model.surrogate.predict(fitted.state, inputs)
  pred_p = pred if fitted.state_p is fitted.state else model.surrogate.predict(fitted.state_p, inputs)
  m = r if padded else m
  return _to_scores(model, pred, m), _to_scores(model, pred_p, m)


def screened(fitted: Fitted) -> Fitted | None:
  """`fitted` predicting from its featurizer's `screen` (cheap lower bounds of the candidates'
  distances; the train points' stay exact), or None when the featurizer has none. Its `predict`
  is what a screening optimiser ranks candidates by."""
  feats = fitted.model.featurizer
  if feats.screen is None:
    return None
  return dataclasses.replace(fitted, model=fitted.model._replace(featurizer=feats._replace(pairs=feats.screen)))


def mean_at(
  model: PointModel, key: jax.Array, cache: FeatureCache, train: Sequence, scores: np.ndarray, points: Sequence
) -> np.ndarray:
  """[m] float64: the mean score at `points` of the model fitted on `train` with `scores` [n]
  (averaged over hyper-parameter samples). Every train point must be in `cache`."""
  pred, _ = predict(fit(model, key, cache, train, scores, len(train)), points)
  mean = np.asarray(pred.mean, np.float64)
  return mean.mean(0) if mean.ndim == 2 else mean


_VAR_FLOOR = 1e-12  # relative to Var(Y): keeps the gradient of the std finite at observed points


@flax.struct.dataclass
class ValueModel:
  """A fitted GP as a traceable function of raw parameter values (gradient ascent on them).

  posterior, posterior_p: gp_lib.GPPosterior [S, ...] of the observations, and with the pending points;
  train: the featurizer's features of the C train slots (zero at padding); offset: the target
  offset (0 when the GP models scores); sign: -1 when it models offset - score, else 1;
  encode, to_pair: the featurizer's `encode_values` and `to_pair` (static).
  """

  posterior: gp_lib.GPPosterior
  posterior_p: gp_lib.GPPosterior
  train: tuple
  offset: jax.Array
  sign: jax.Array
  encode: Callable = flax.struct.field(pytree_node=False)
  to_pair: Callable = flax.struct.field(pytree_node=False)


def value_model(fitted: Fitted) -> ValueModel:
  """The ValueModel of a fitted GP whose featurizer encodes raw values; ValueError otherwise."""
  model = fitted.model
  if model.vectors or model.featurizer.encode_values is None:
    raise ValueError(
      f"value_model: a GP on a featurizer with encode_values is needed; got {model.name!r} on {model.featurizer.name!r}"
    )
  train = model.featurizer.features(fitted.cache, fitted.train)
  train = tuple(np.concatenate([x, np.zeros((fitted.capacity - len(x),) + x.shape[1:], x.dtype)]) for x in train)
  offset = 0.0 if model.target_offset is None else model.target_offset
  sign = 1.0 if model.target_offset is None else -1.0
  return ValueModel(
    fitted.state.posterior,
    fitted.state_p.posterior,
    tuple(jnp.asarray(x) for x in train),
    jnp.asarray(offset),
    jnp.asarray(sign),
    model.featurizer.encode_values,
    model.featurizer.to_pair,
  )


def value_predictive(vm: ValueModel, values: jax.Array) -> tuple[Predictive, Predictive]:
  """(pred, pred_p) at values [m, P] on the score scale, mean and std [S, m]; traceable and
  differentiable (the variance is floored at 1e-12 Var(Y), where sqrt has no gradient)."""
  pair = vm.to_pair(vm.encode(values), vm.train)

  def one(post):
    mean, var = jax.vmap(gp_lib.predict, (0, None))(post, pair)
    std = jnp.sqrt(jnp.maximum(var, _VAR_FLOOR * post.y_scale[:, None] ** 2))
    return Predictive(vm.offset + vm.sign * mean, std)

  return one(vm.posterior), one(vm.posterior_p)
