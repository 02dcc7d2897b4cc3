"""GP hyper-parameters from data: vmapped multi-start maximum likelihood (optax), or posterior
samples under a log-uniform box prior (hit-and-run slice sampling, NASBOT App. B.1).
"""

import functools
from typing import Any, Callable, NamedTuple

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from nas_jax.surrogates import gp, gp_lml

__all__ = [
  "Box",
  "FitResult",
  "check_counts",
  "check_starts",
  "fit_map",
  "optimise",
  "sample_box",
  "sample_hypers",
  "slice_sample",
  "validate_fit_args",
]

# A shrinking slice halves its interval on average per rejection, so 100 rejections reach float
# resolution; the chain then stays put, which the cap makes explicit rather than unbounded.
_MAX_SHRINK = 100


@flax.struct.dataclass
class Box:
  """Log-uniform prior box over hyper-parameters: lower, upper: gp.Hypers of one tree structure,
  in log space. A leaf with lower == upper is held fixed. Build it with `Box.create`."""

  lower: gp.Hypers
  upper: gp.Hypers

  @classmethod
  def create(cls, lower_kernel, upper_kernel, *, noise=(0.005, 0.2)) -> "Box":
    """From (lower, upper) kernels (e.g. `NasbotKernel.bounds()`) and a noise-variance range.

    Targets are normalised, so every box is relative to Var(Y) (as in NASBOT's code). Raises
    ValueError on mismatched trees, shapes, or bounds that are not finite and ordered.
    """
    lo, hi = (float(v) for v in noise)
    if not 0 < lo <= hi < np.inf:
      raise ValueError(f"noise: {noise} is not a range 0 < low <= high < inf")
    lower = gp.Hypers(lower_kernel, jnp.asarray(np.log(lo)))
    upper = gp.Hypers(upper_kernel, jnp.asarray(np.log(hi)))
    lower_leaves, tree = jax.tree.flatten(lower)
    upper_leaves, upper_tree = jax.tree.flatten(upper)
    # PyTreeDef equality ignores the class of flax dataclass nodes; their printed form does not.
    if tree != upper_tree or str(tree) != str(upper_tree):
      raise ValueError(f"upper_kernel: tree {upper_tree} differs from lower_kernel's {tree}")
    for i, (a, b) in enumerate(zip(lower_leaves, upper_leaves)):
      a, b = np.asarray(a), np.asarray(b)
      if a.shape != b.shape or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"leaf {i}: lower {a} and upper {b} need equal shapes and finite values")
      if np.any(a > b):
        raise ValueError(f"leaf {i}: lower {a} exceeds upper {b}")
    return cls(lower, upper)


class FitResult(NamedTuple):
  """hypers: best gp.Hypers; lml: [n_starts] final log-likelihood per start (NaN if it failed);
  ok: [] bool, True if the best start is finite."""

  hypers: gp.Hypers
  lml: jax.Array
  ok: jax.Array


def sample_box(key: jax.Array, box: Box, n: int) -> gp.Hypers:
  """n draws, uniform in log space inside the box: gp.Hypers with leaves [n, ...]."""
  leaves, tree = jax.tree.flatten(box.lower)
  keys = jax.random.split(key, len(leaves))
  draws = [
    lo + jax.random.uniform(k, (n, *jnp.shape(lo)), dtype=jnp.result_type(lo)) * (hi - lo)
    for k, lo, hi in zip(keys, leaves, jax.tree.leaves(box.upper))
  ]
  return jax.tree.unflatten(tree, draws)


def _clip(hypers: gp.Hypers, box: Box) -> gp.Hypers:
  return jax.tree.map(jnp.clip, hypers, box.lower, box.upper)


@functools.partial(jax.jit, static_argnames=("steps", "lr", "project", "batch_size"))
def optimise(
  starts: gp.Hypers,
  box: Box,
  pair: Any,
  y: jax.Array,
  mask: jax.Array,
  *,
  steps: int = 200,
  lr: float = 0.05,
  project: bool = False,
  batch_size: int | None = None,
) -> tuple[gp.Hypers, jax.Array]:
  """Maximises the log marginal likelihood from every start at once (one vmap, one lax.scan).

  Adam on the log-parameters, projected back into the box after every step; a step whose
  gradient is not finite is skipped. The gradient is gp.log_marginal_likelihood's (through
  project_psd's straight-through clipping when project), computed in closed form from one
  factorisation per step (gp_lml). batch_size=None vmaps all starts; an int k runs chunks of
  k starts one after another (lax.map), which bounds memory for large C and many starts. On CPU
  the vmap gains little at large C (see benchmarks/bench_gp.py): XLA's batched LAPACK calls
  are no faster than single ones.

  Args:
    starts: gp.Hypers with leaves [n, ...]; box: Box; pair: Pairwise (C, C); y: [C]; mask: [C].
    steps, lr: Adam steps and learning rate; project: as in gp.condition.
    batch_size: None, or the number of starts vmapped together.

  Returns:
    hypers: gp.Hypers [n, ...], the final point of every start; lml: [n] float there.
  """
  opt = optax.apply_if_finite(optax.adam(lr), max_consecutive_errors=steps + 1)

  def loss(h):
    return -gp_lml.log_marginal_likelihood(h, pair, y, mask, project=project, straight_through=True)

  def one_start(h0):
    def step(carry, _):
      h, state = carry
      grads = jax.grad(loss)(h)
      updates, state = opt.update(grads, state, h)
      return (_clip(optax.apply_updates(h, updates), box), state), None

    (h, _), _ = jax.lax.scan(step, (h0, opt.init(h0)), None, length=steps)
    return h, -loss(h)

  if batch_size is None:
    return jax.vmap(one_start)(starts)
  return jax.lax.map(one_start, starts, batch_size=batch_size)


def check_counts(where: str, **counts: tuple[Any, int]) -> None:
  """ValueError `{where}: {name}={value!r}; expected an int >= {least}` for the first of the
  counts, given as name=(value, least), that is not such an int."""
  for name, (value, least) in counts.items():
    if not isinstance(value, (int, np.integer)) or value < least:
      raise ValueError(f"{where}: {name}={value!r}; expected an int >= {least}")


def check_starts(where: str, starts: Any, box: Box) -> None:
  """ValueError `{where}: starts ...` unless starts is None or gp.Hypers of the box's tree with
  leaves [k, ...], one k >= 1 (k starts)."""
  if starts is None:
    return
  lead = {jnp.shape(x)[:1] for x in jax.tree.leaves(starts)}
  same = str(jax.tree.structure(starts)) == str(jax.tree.structure(box.lower))
  if not same or len(lead) != 1 or lead in ({()}, {(0,)}):
    raise ValueError(f"{where}: starts must be gp.Hypers of the box's tree, leaves [k, ...] with one k >= 1")


def validate_fit_args(where: str, box: Any, pair: Any, y, mask, **counts: tuple[Any, int]) -> None:
  """Plain-Python checks shared by the fits: box is a Box, the counts (as in check_counts) and
  the data (gp.validate_data). Raises TypeError or ValueError naming `where`."""
  if not isinstance(box, Box):
    raise TypeError(f"{where}: box is a {type(box).__name__}; expected gp_fit.Box")
  check_counts(where, **counts)
  gp.validate_data(pair, y, mask, where=where)


@functools.partial(jax.jit, static_argnames=("n_starts", "steps", "lr", "project", "batch_size"))
def _fit_map(key, box, pair, y, mask, starts, *, n_starts, steps, lr, project, batch_size):
  fresh = sample_box(key, box, n_starts)
  if starts is not None:
    fresh = jax.tree.map(lambda a, b: jnp.concatenate([a.astype(b.dtype), b]), starts, fresh)
  finals, lml = optimise(
    fresh,
    box,
    pair,
    y,
    mask,
    steps=steps,
    lr=lr,
    project=project,
    batch_size=batch_size,
  )
  best = jnp.argmax(jnp.where(jnp.isnan(lml), -jnp.inf, lml))
  return FitResult(jax.tree.map(lambda x: x[best], finals), lml, jnp.isfinite(lml[best]))


def fit_map(
  key: jax.Array,
  box: Box,
  pair: Any,
  y,
  mask,
  *,
  n_starts: int = 16,
  starts: gp.Hypers | None = None,
  steps: int = 200,
  lr: float = 0.05,
  project: bool = False,
  batch_size: int | None = None,
) -> FitResult:
  """Maximum-likelihood hyper-parameters from given starts and n_starts random ones in the box.

  Args:
    key: PRNG key for the fresh starts; box: Box (its tree fixes the kernel's structure).
    pair: Pairwise (C, C); y: [C] float; mask: [C] bool.
    n_starts: fresh starts, uniform in the box (0 is allowed when `starts` are given).
    starts: gp.Hypers with leaves [k, ...] in the box (e.g. an earlier fit's optimum), or None.
    steps, lr: Adam steps and learning rate; project: as in gp.condition.
    batch_size: as in `optimise` (None: all starts in one vmap).

  Returns:
    FitResult over the k + n_starts starts (given ones first). A start that ends at NaN loses;
    ok is False only if every start failed.

  Raises:
    ValueError, TypeError: on invalid arguments, before anything is traced.
  """
  batch = {} if batch_size is None else {"batch_size": (batch_size, 1)}
  least = 0 if starts is not None else 1
  validate_fit_args("fit_map", box, pair, y, mask, n_starts=(n_starts, least), steps=(steps, 1), **batch)
  if not lr > 0:
    raise ValueError(f"fit_map: lr={lr!r}; expected a positive float")
  check_starts("fit_map", starts, box)
  return _fit_map(
    key,
    box,
    pair,
    y,
    mask,
    starts,
    n_starts=n_starts,
    steps=steps,
    lr=float(lr),
    project=project,
    batch_size=batch_size,
  )


def slice_sample(
  key: jax.Array,
  log_density: Callable[[jax.Array], jax.Array],
  x0: jax.Array,
  lower: jax.Array,
  upper: jax.Array,
  *,
  n_steps: int,
) -> tuple[jax.Array, jax.Array]:
  """Hit-and-run slice sampling (Neal 2003, sec. 5) of a density restricted to a box.

  Each step draws a random direction (isotropic after scaling the box to a unit cube), then
  samples the slice on the chord through the box by shrinkage; the bounded chord needs no
  stepping out. NaN densities count as zero, so a chain that starts there moves at once.

  Args:
    key: PRNG key; log_density: [D] -> [] float, unnormalised; x0: [D] float inside the box.
    lower, upper: [D] float, lower <= upper (equal: that coordinate is fixed).
    n_steps: static number of steps.

  Returns:
    samples: [n_steps, D] float, the state after each step; log_p: [n_steps] float there.
  """
  width = upper - lower
  moves = width > 0

  def log_p(u):
    value = log_density(lower + u * width)
    return jnp.where(jnp.isnan(value), -jnp.inf, value)

  def step(carry, key):
    u, lp = carry
    k_dir, k_level, k_shrink = jax.random.split(key, 3)
    g = jnp.where(moves, jax.random.normal(k_dir, u.shape, dtype=u.dtype), 0.0)
    g = g / jnp.maximum(jnp.linalg.norm(g), jnp.finfo(u.dtype).tiny)
    safe_g = jnp.where(moves, g, 1.0)
    ends_a, ends_b = -u / safe_g, (1.0 - u) / safe_g
    t_lo = jnp.max(jnp.where(moves, jnp.minimum(ends_a, ends_b), -jnp.inf))
    t_hi = jnp.min(jnp.where(moves, jnp.maximum(ends_a, ends_b), jnp.inf))
    level = lp - jax.random.exponential(k_level, dtype=u.dtype)

    def propose(c):
      i, lo, hi, _, _, _ = c  # on rejection, shrink the chord towards the current point (t = 0)
      t = jax.random.uniform(jax.random.fold_in(k_shrink, i), minval=lo, maxval=hi, dtype=u.dtype)
      u_new = jnp.clip(u + t * g, 0.0, 1.0)
      lp_new = log_p(u_new)
      accept = lp_new > level
      return (i + 1, jnp.where(t < 0, t, lo), jnp.where(t < 0, hi, t), u_new, lp_new, accept)

    def searching(c):
      return ~c[5] & (c[0] < _MAX_SHRINK)

    _, _, _, u_new, lp_new, accept = jax.lax.while_loop(searching, propose, (0, t_lo, t_hi, u, lp, jnp.array(False)))
    u, lp = jnp.where(accept, u_new, u), jnp.where(accept, lp_new, lp)
    return (u, lp), (lower + u * width, lp)

  u0 = jnp.where(moves, (x0 - lower) / jnp.where(moves, width, 1.0), 0.0)
  _, (samples, lps) = jax.lax.scan(step, (u0, log_p(u0)), jax.random.split(key, n_steps))
  return samples, lps


@functools.partial(jax.jit, static_argnames=("n_samples", "n_chains", "burn_in", "thin", "project"))
def _sample_hypers(key, box, pair, y, mask, *, n_samples, n_chains, burn_in, thin, project):
  lower, unravel = ravel_pytree(box.lower)
  upper, _ = ravel_pytree(box.upper)

  def log_density(theta):
    return gp.log_marginal_likelihood(unravel(theta), pair, y, mask, project=project)

  per_chain = n_samples // n_chains
  k_init, k_chains = jax.random.split(key)
  x0 = jax.vmap(lambda h: ravel_pytree(h)[0])(sample_box(k_init, box, n_chains))

  def chain(k, x):
    samples, lps = slice_sample(k, log_density, x, lower, upper, n_steps=burn_in + per_chain * thin)
    return samples[burn_in + thin - 1 :: thin], lps[burn_in + thin - 1 :: thin]

  samples, lps = jax.vmap(chain)(jax.random.split(k_chains, n_chains), x0)
  return jax.vmap(unravel)(samples.reshape(n_samples, -1)), lps.reshape(n_samples)


def sample_hypers(
  key: jax.Array,
  box: Box,
  pair: Any,
  y,
  mask,
  *,
  n_samples: int = 16,
  n_chains: int = 4,
  burn_in: int = 100,
  thin: int = 2,
  project: bool = False,
) -> tuple[gp.Hypers, jax.Array]:
  """Posterior samples of the hyper-parameters under a log-uniform prior on the box.

  NASBOT's choice (App. B.1, after Snoek et al. 2012): n_chains hit-and-run slice-sampling
  chains (vmapped), each started uniformly in the box, run burn_in steps, then keep every
  thin-th state.

  Args:
    key: PRNG key; box: Box; pair: Pairwise (C, C); y: [C] float; mask: [C] bool.
    n_samples: total samples, a multiple of n_chains; burn_in, thin: steps per chain.
    project: as in gp.condition.

  Returns:
    hypers: gp.Hypers with leaves [n_samples, ...]; lml: [n_samples] float at each sample.

  Raises:
    ValueError, TypeError: on invalid arguments, before anything is traced.
  """
  counts = dict(n_samples=(n_samples, 1), n_chains=(n_chains, 1), thin=(thin, 1), burn_in=(burn_in, 0))
  validate_fit_args("sample_hypers", box, pair, y, mask, **counts)
  if n_samples % n_chains:
    raise ValueError(f"sample_hypers: n_samples={n_samples} is not a multiple of n_chains={n_chains}")
  return _sample_hypers(
    key,
    box,
    pair,
    y,
    mask,
    n_samples=n_samples,
    n_chains=n_chains,
    burn_in=burn_in,
    thin=thin,
    project=project,
  )
