"""The Surrogate interface (fit/predict, optax style), the Predictive every acquisition reads,
the GP surrogate, and kriging-believer hallucination of pending evaluations.
"""

import functools
from typing import Any, Callable, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp

from nas_jax.surrogates import gp, gp_fit, gp_lbfgs

__all__ = [
  "GPState",
  "JointInputs",
  "Predictive",
  "Surrogate",
  "gp_surrogate",
  "hallucinate",
  "predict_state",
]


@flax.struct.dataclass
class Predictive:
  """What an acquisition sees, in the units of y (nas_jax maximises).

  mean, std: [m] float, or [S, m] for S hyper-parameter samples (acquisitions average over S);
  samples: [s, m] float joint posterior draws, or None.
  """

  mean: jax.Array
  std: jax.Array
  samples: jax.Array | None = None


@flax.struct.dataclass
class JointInputs:
  """GP predict inputs that also yield joint samples: cross: Pairwise (m, C), the m candidates
  against the C training slots; test: Pairwise (m, m), the candidates with themselves."""

  cross: Any
  test: Any


class Surrogate(NamedTuple):
  """A model of y given inputs, as a NamedTuple of pure functions.

  fit(key, inputs, y: [C], mask: [C] bool) -> state.
  predict(state, inputs) -> Predictive over the m points in inputs.
  condition(state, inputs, y, mask) -> state: new data, same hyper-parameters; None if the
    surrogate has no cheaper way than `fit`.
  refit(key, state, inputs, y, mask) -> state: a short fit on new data that starts from the
    hyper-parameters of `state` (a warm start); None if the surrogate has none.
  fit_from(key, state, inputs, y, mask) -> state: `fit`, but one of its starts is the
    hyper-parameters of `state` (an earlier fit) and one fewer is random; None if it has none.
  """

  fit: Callable[..., Any]
  predict: Callable[[Any, Any], Predictive]
  condition: Callable[..., Any] | None = None
  refit: Callable[..., Any] | None = None
  fit_from: Callable[..., Any] | None = None


@flax.struct.dataclass
class GPState:
  """posterior: gp.GPPosterior with leaves [S, ...] (S = 1 for a MAP fit); lml: [S] float;
  key: PRNG key for joint samples; ok: [] bool, False if fitting or factorising failed."""

  posterior: gp.GPPosterior
  lml: jax.Array
  key: jax.Array
  ok: jax.Array


def gp_surrogate(
  box: gp_fit.Box,
  *,
  n_starts: int = 16,
  steps: int = 200,
  lr: float = 0.05,
  batch_size: int | None = None,
  n_hyper_samples: int = 0,
  n_chains: int = 4,
  burn_in: int = 100,
  project: bool = False,
  n_samples: int = 16,
  warm_steps: int = 20,
  fitter: gp_lbfgs.Lbfgs | None = None,
) -> Surrogate:
  """A GP surrogate whose inputs are Pairwise values (the pair (C, C) for fit and condition).

  Args:
    box: gp_fit.Box; its tree fixes the kernel and is the prior (relative to Var(Y)).
    n_starts, steps, lr, batch_size: maximum-likelihood fit (gp_fit.fit_map), used if
      n_hyper_samples = 0.
    n_hyper_samples, n_chains, burn_in: if n_hyper_samples > 0, hyper-parameters are slice
      samples from their posterior (gp_fit.sample_hypers; NASBOT App. B.1) and Predictive.mean
      and std get a leading axis [S].
    project: clip the Gram matrix's eigenvalues at 0 (set it for NasbotKernel, NASBOT Sec. 4).
    n_samples: joint draws per hyper-parameter sample when predict gets JointInputs.
    warm_steps: Adam steps of `refit`, from the fitted hyper-parameters (maximum likelihood only;
      a surrogate that samples its hyper-parameters has no refit); with `fitter`, the refit's
      L-BFGS iterations at most; 0: the refit keeps the hyper-parameters and conditions on the
      new data (the NASBOT authors' code between two fits, its `build_new_model_every`).
    fitter: None for the Adam fit above; `gp_lbfgs.lbfgs(...)` fits by L-BFGS to convergence
      instead (gp_lbfgs.fit_lbfgs; n_starts, steps, lr and batch_size then unused), and its
      refit runs L-BFGS from the fitted hyper-parameters alone.

  Returns:
    Surrogate. fit raises LinAlgError when, outside jit, the GP cannot be factorised.
    predict(state, inputs): inputs is a Pairwise (m, C) for mean and std, or JointInputs to
    also fill samples: [S * n_samples, m], a deterministic function of state.key and inputs.
    condition keeps the hyper-parameters and y_shift, y_scale of the fitted state.
  """
  if not isinstance(box, gp_fit.Box):
    raise TypeError(f"gp_surrogate: box is a {type(box).__name__}; expected gp_fit.Box")
  gp_fit.check_counts(
    "gp_surrogate",
    n_starts=(n_starts, 1),
    steps=(steps, 1),
    n_hyper_samples=(n_hyper_samples, 0),
    n_chains=(n_chains, 1),
    burn_in=(burn_in, 0),
    n_samples=(n_samples, 1),
    warm_steps=(warm_steps, 0),
    **({} if batch_size is None else {"batch_size": (batch_size, 1)}),
  )
  if not lr > 0:
    raise ValueError(f"gp_surrogate: lr={lr!r}; expected a positive float")
  if fitter is not None and not isinstance(fitter, gp_lbfgs.Lbfgs):
    raise TypeError(f"gp_surrogate: fitter is a {type(fitter).__name__}; expected None or gp_lbfgs.lbfgs(...)")
  if fitter is not None and n_hyper_samples:
    raise ValueError(f"gp_surrogate: fitter and n_hyper_samples={n_hyper_samples} exclude each other; choose one")
  if n_hyper_samples and n_hyper_samples % n_chains:
    raise ValueError(f"gp_surrogate: n_hyper_samples={n_hyper_samples} is not a multiple of n_chains={n_chains}")
  if fitter is not None:  # unused options are blanked so that equal fits share a compile
    config = _FitConfig(0, 0, 0.0, None, 0, 0, 0, project, fitter)
  elif n_hyper_samples == 0:
    config = _FitConfig(n_starts, steps, float(lr), batch_size, 0, 0, 0, project)
  else:
    config = _FitConfig(0, 0, 0.0, None, n_hyper_samples, n_chains, burn_in, project)
  squeeze = n_hyper_samples == 0
  if warm_steps == 0:
    warm = None
  elif fitter is None:
    warm = config._replace(n_starts=1, steps=warm_steps)
  else:
    warm = config._replace(lbfgs=fitter._replace(n_starts=0, max_iter=warm_steps))
  note_jitter = gp.JitterNote()

  def checked(state: GPState, where: str) -> GPState:
    gp.check_ok(state.ok, where)
    note_jitter(state.posterior.jitter, where)
    return state

  def fit(key, inputs, y, mask):
    gp.validate_data(inputs, y, mask, where="gp_surrogate.fit")
    return checked(_fit(key, box, inputs, jnp.asarray(y), jnp.asarray(mask), None, config=config), "gp_surrogate.fit")

  def predict(state, inputs):
    return predict_state(state, inputs, n_samples=n_samples, squeeze=squeeze)

  def condition(state, inputs, y, mask):
    y = jnp.asarray(y)
    gp.validate_data(inputs, y if y.ndim == 1 else y[0], mask, where="gp_surrogate.condition")
    return checked(_condition(state, inputs, y, jnp.asarray(mask), project=project), "gp_surrogate.condition")

  def fit_from(key, state, inputs, y, mask):
    gp.validate_data(inputs, y, mask, where="gp_surrogate.fit_from")
    start = jax.tree.map(lambda x: x[:1], state.posterior.hypers)
    new_state = _fit(key, box, inputs, jnp.asarray(y), jnp.asarray(mask), start, config=config)
    return checked(new_state, "gp_surrogate.fit_from")

  def refit(key, state, inputs, y, mask):
    gp.validate_data(inputs, y, mask, where="gp_surrogate.refit")
    if warm is None:
      kept = _keep(key, state.posterior.hypers, inputs, jnp.asarray(y), jnp.asarray(mask), project=project)
      return checked(kept, "gp_surrogate.refit")
    new_state = _refit(key, box, state.posterior.hypers, inputs, jnp.asarray(y), jnp.asarray(mask), config=warm)
    return checked(new_state, "gp_surrogate.refit")

  return Surrogate(fit, predict, condition, refit if squeeze else None, fit_from if squeeze else None)


# Module-level jitted cores with static options: surrogates built with equal options share
# compiled code, so re-creating a surrogate (e.g. once per search) does not recompile.
class _FitConfig(NamedTuple):
  n_starts: int
  steps: int
  lr: float
  batch_size: int | None
  n_hyper_samples: int
  n_chains: int
  burn_in: int
  project: bool
  lbfgs: gp_lbfgs.Lbfgs | None = None


def _state(k_state, hypers, pair, y, mask, project) -> GPState:
  """The GPState of hyper-parameters [S, ...] on the data."""
  post = jax.vmap(lambda h: gp.condition(h, pair, y, mask, project=project))(hypers)
  lml = jax.vmap(lambda h: gp.log_marginal_likelihood(h, pair, y, mask, project=project))(hypers)
  return GPState(post, lml, k_state, jnp.all(post.ok) & jnp.all(jnp.isfinite(lml)))


@functools.partial(jax.jit, static_argnames=("project",))
def _keep(key, hypers, pair, y, mask, *, project: bool) -> GPState:
  """A refit of no step: the GPState of hypers [S, ...] on the new data, keyed as `_refit`'s."""
  return _state(jax.random.split(key)[1], hypers, pair, y, mask, project)


@functools.partial(jax.jit, static_argnames=("config",))
def _refit(key, box, hypers, pair, y, mask, *, config: _FitConfig) -> GPState:
  """config.steps Adam steps (or config.lbfgs) from the first of `hypers` [S, ...]; its start wins
  if they end worse (or not finite), so a warm refit never leaves a better fit behind."""
  start = jax.tree.map(lambda x: x[:1], hypers)
  if config.lbfgs is not None:
    best = gp_lbfgs.fit_lbfgs(key, box, pair, y, mask, starts=start, project=config.project, **config.lbfgs._asdict())
    hypers = jax.tree.map(lambda x: x[None], best[0].hypers)
    return _state(jax.random.split(key)[1], hypers, pair, y, mask, config.project)
  end, lml = gp_fit.optimise(start, box, pair, y, mask, steps=config.steps, lr=config.lr, project=config.project)
  lml0 = gp.log_marginal_likelihood(jax.tree.map(lambda x: x[0], start), pair, y, mask, project=config.project)
  better = jnp.isfinite(lml[0]) & ~(lml[0] < lml0)
  best = jax.tree.map(lambda e, s: jnp.where(better, e, s), end, start)
  return _state(jax.random.split(key)[1], best, pair, y, mask, config.project)


@functools.partial(jax.jit, static_argnames=("config",))
def _fit(key, box, pair, y, mask, start, *, config: _FitConfig) -> GPState:
  """The full fit; `start` (hypers [1, ...] or None) takes the place of one random start."""
  k_fit, k_state = jax.random.split(key)
  c = config
  fresh = 0 if start is None else 1
  if c.lbfgs is not None:
    options = c.lbfgs._replace(n_starts=c.lbfgs.n_starts - fresh)._asdict()
    best = gp_lbfgs.fit_lbfgs(k_fit, box, pair, y, mask, starts=start, project=c.project, **options)[0].hypers
    hypers = jax.tree.map(lambda x: x[None], best)
  elif c.n_hyper_samples == 0:
    options = dict(n_starts=c.n_starts - fresh, steps=c.steps, lr=c.lr, batch_size=c.batch_size)
    best = gp_fit.fit_map(k_fit, box, pair, y, mask, starts=start, project=c.project, **options).hypers
    hypers = jax.tree.map(lambda x: x[None], best)
  else:
    options = dict(n_samples=c.n_hyper_samples, n_chains=c.n_chains, burn_in=c.burn_in)
    hypers, _ = gp_fit.sample_hypers(k_fit, box, pair, y, mask, project=c.project, **options)
  return _state(k_state, hypers, pair, y, mask, c.project)


@functools.partial(jax.jit, static_argnames=("n_samples", "squeeze"))
def predict_state(state: GPState, inputs: Any, *, n_samples: int, squeeze: bool) -> Predictive:
  """A GPState's Predictive at inputs (Pairwise (m, C), or JointInputs for n_samples joint draws
  per hyper-parameter sample); squeeze drops the axis S = 1 of a single fit."""
  if isinstance(inputs, JointInputs):
    mean, cov = jax.vmap(gp.predict_joint, (0, None, None))(state.posterior, inputs.cross, inputs.test)
    var = jnp.maximum(jnp.diagonal(cov, axis1=-2, axis2=-1), 0.0)
    chol, _ = jax.vmap(gp.cholesky_with_jitter)(cov)
    eps = jax.random.normal(state.key, (mean.shape[0], n_samples, mean.shape[1]), mean.dtype)
    draws = mean[:, None, :] + jnp.einsum("sij,snj->sni", chol, eps)
    samples = draws.reshape(-1, mean.shape[1])
  else:
    mean, var = jax.vmap(gp.predict, (0, None))(state.posterior, inputs)
    samples = None
  std = jnp.sqrt(var)
  if squeeze:
    mean, std = mean[0], std[0]
  return Predictive(mean, std, samples)


@functools.partial(jax.jit, static_argnames=("project",))
def _condition(state: GPState, pair: Any, y: jax.Array, mask: jax.Array, *, project: bool):
  def one(p, y_s):
    return gp.condition(p.hypers, pair, y_s, mask, project=project, y_shift=p.y_shift, y_scale=p.y_scale)

  post = jax.vmap(one, (0, 0 if y.ndim == 2 else None))(state.posterior, y)
  return state.replace(posterior=post, ok=state.ok & jnp.all(post.ok))


def hallucinate(
  surrogate: Surrogate,
  state: Any,
  inputs: Any,
  y: jax.Array,
  mask: jax.Array,
  pending: jax.Array,
  key: jax.Array | None = None,
) -> Any:
  """Kriging believer (NASBOT App. B.3, after Ginsbourger et al.): adds the pending points as if observed at their mean.

  The returned state predicts the same mean and a smaller std near pending points; combine
  them with acquisition.with_pending (real mean, hallucinated std), as NASBOT's `hei` does.

  Args:
    surrogate: Surrogate; state: its fitted state.
    inputs: the fit inputs over all C slots (pending ones included), e.g. the Pairwise (C, C).
    y: [C] float; mask: [C] bool, the real observations; pending: [C] bool, slots in flight.
    key: needed only if surrogate.condition is None, to refit with the pending points.

  Returns:
    The surrogate's state conditioned on mask | pending.
  """
  mean = surrogate.predict(state, inputs).mean
  y_aug = jnp.where(pending, mean, y)
  mask_aug = jnp.asarray(mask) | jnp.asarray(pending)
  if surrogate.condition is not None:
    return surrogate.condition(state, inputs, y_aug, mask_aug)
  if key is None:
    raise ValueError("hallucinate: key is None; a surrogate without condition needs a key to refit")
  return surrogate.fit(key, inputs, y_aug, mask_aug)
