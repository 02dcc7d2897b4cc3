"""BANANAS deep-ensemble surrogate (BANANAS Sec. 4; Sec. 5.1): M meta neural networks trained together by
one `jax.vmap` over their keys, inside one jitted optax `lax.scan`, on padded rows with a mask.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import optax

from nas_jax.surrogates.surrogate import Predictive, Surrogate

__all__ = [
  "MetaNet",
  "EnsembleState",
  "fit_member",
  "fit_members",
  "fit_ensemble",
  "predict_members",
  "ensemble_surrogate",
]

_LOSSES = ("mae", "mape")
_MAPE_LOWER_BOUND = 4.5  # the authors' code: a lower bound on the error (%) for the code's mape loss


class MetaNet(nn.Module):
  """len(hidden) Dense+ReLU layers, then Dense(1) (BANANAS Sec. 4); Glorot-uniform weights, zero biases."""

  hidden: Sequence[int] = (20,) * 10

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    """x: [..., D] -> [...]."""
    init = nn.initializers.glorot_uniform()
    for width in self.hidden:
      x = nn.relu(nn.Dense(width, kernel_init=init)(x))
    return nn.Dense(1, kernel_init=init)(x)[..., 0]


@flax.struct.dataclass
class EnsembleState:
  """params: the MetaNet parameters with a leading member axis [M, ...] on every leaf;
  train_mae: [M] float, each member's masked training MAE after fitting."""

  params: Any
  train_mae: jax.Array
  model: MetaNet = flax.struct.field(pytree_node=False)


def _adam(lr: float) -> optax.GradientTransformation:
  return optax.adam(lr, b1=0.9, b2=0.99, eps=1e-7)  # the authors' Keras settings (github.com/naszilla/naszilla)


def _loss(model, loss, params, x, y, w):
  pred = model.apply(params, x)
  if loss == "mae":
    err = jnp.abs(pred - y)
  else:
    err = jnp.abs((pred - _MAPE_LOWER_BOUND) / (y - _MAPE_LOWER_BOUND) - 1.0)
  return jnp.sum(w * err) / jnp.maximum(jnp.sum(w), 1.0)


def _order(key: jax.Array, mask: jax.Array) -> jax.Array:
  """[C] row order: real rows first, shuffled by per-row keys, so padding never moves them."""
  u = jax.vmap(lambda i: jax.random.uniform(jax.random.fold_in(key, i)))(jnp.arange(mask.shape[0]))
  return jnp.argsort(jnp.where(mask, u, 2.0))


def fit_member(key, x, y, mask, *, model, epochs, batch_size, lr, loss="mae"):
  """Trains one member (pure; vmap it over keys). Empty batches (padding only) are skipped, so
  the fit equals the fit on the real rows alone.

  Args:
    key: PRNG key for the init and every epoch's order.
    x: [C, D] float; y: [C] float targets; mask: [C] bool, real rows.
    model: a MetaNet; epochs, batch_size, lr: training settings (the authors' code); loss: "mae" | "mape".

  Returns:
    (params, train_mae []).
  """
  k_init, k_order = jax.random.split(key)
  x = x.astype(jnp.float32)
  y = y.astype(jnp.float32)
  params = model.init(k_init, x[:1])
  opt = _adam(lr)
  c = x.shape[0]
  n_batches = -(-c // batch_size)
  grad_fn = jax.value_and_grad(functools.partial(_loss, model, loss))

  n_real = jnp.sum(mask)  # shared by all members, so under vmap the cond below stays a cond

  def step(carry, batch):
    b, idx, w = batch

    def update(carry):
      params, opt_state = carry
      _, g = grad_fn(params, x[idx], y[idx], w)
      updates, opt_state = opt.update(g, opt_state, params)
      return optax.apply_updates(params, updates), opt_state

    # Batches past the real rows hold padding only: skip them (Adam would move even on a zero
    # gradient), which also makes a padded fit cost what the unpadded one does.
    return jax.lax.cond(b * batch_size < n_real, update, lambda carry: carry, carry), None

  def epoch(carry, ek):
    order = jnp.pad(_order(ek, mask), (0, n_batches * batch_size - c))
    real = mask[order] & (jnp.arange(n_batches * batch_size) < c)  # pad slots repeat row 0
    w = real.astype(jnp.float32)
    batches = (
      jnp.arange(n_batches),
      order.reshape(n_batches, batch_size),
      w.reshape(n_batches, batch_size),
    )
    return jax.lax.scan(step, carry, batches)[0], None

  carry = (params, opt.init(params))
  params, _ = jax.lax.scan(epoch, carry, jax.random.split(k_order, epochs))[0]
  mae = _loss(model, "mae", params, x, y, mask.astype(jnp.float32))
  return params, mae


@functools.partial(jax.jit, static_argnames=("model", "epochs", "batch_size", "lr", "loss"))
def fit_members(keys, x, y, mask, *, model, epochs, batch_size, lr, loss="mae") -> EnsembleState:
  """Trains one MetaNet per key at once: `fit_member` vmapped over keys [M, ...] (one compile).

  Returns:
    EnsembleState with params [M, ...] and train_mae [M].
  """
  fit = functools.partial(fit_member, model=model, epochs=epochs, batch_size=batch_size, lr=lr, loss=loss)
  params, mae = jax.vmap(fit, in_axes=(0, None, None, None))(keys, x, y, mask)
  return EnsembleState(params=params, train_mae=mae, model=model)


def fit_ensemble(
  key,
  x,
  y,
  mask,
  *,
  model=MetaNet(),
  n_members=5,
  epochs=150,
  batch_size=32,
  lr=0.01,
  loss="mae",
) -> EnsembleState:
  """Trains `n_members` MetaNets on (x [C, D], y [C], mask [C] bool), each with its own key
  (init and data orders) split from `key` (BANANAS Sec. 4); see `fit_members`."""
  return fit_members(
    jax.random.split(key, n_members),
    x,
    y,
    mask,
    model=model,
    epochs=epochs,
    batch_size=batch_size,
    lr=lr,
    loss=loss,
  )


@jax.jit
def predict_members(state: EnsembleState, x: jax.Array) -> jax.Array:
  """[M, m] predictions of every member for x: [m, D]."""
  return jax.vmap(state.model.apply, in_axes=(0, None))(state.params, x.astype(jnp.float32))


def _check(name: str, value: Any, ok: bool, allowed: str) -> None:
  if not ok:
    raise ValueError(f"ensemble_surrogate: {name}={value!r}; allowed: {allowed}")


def ensemble_surrogate(
  *,
  n_members: int = 5,
  hidden: Sequence[int] = (20,) * 10,
  epochs: int = 150,
  batch_size: int = 32,
  lr: float = 0.01,
  loss: str = "mae",
  ddof: int = 0,
) -> Surrogate:
  """The BANANAS ensemble as a `Surrogate` over encodings ([C, D] float inputs).

  Args:
    n_members: M (BANANAS Sec. 4: 5). hidden: hidden widths (10 x 20). epochs, batch_size, lr: 150, 32,
      0.01 (code). loss: "mae" or "mape". ddof: 0 (code, population std) or 1 (paper).

  Returns:
    Surrogate: fit(key, x [C, D], y [C], mask [C]) -> EnsembleState; predict(state, x [m, D])
    -> Predictive(mean [m], std [m], samples = per-member predictions [M, m]).
  """
  _check("n_members", n_members, isinstance(n_members, int) and n_members >= 2, "an int >= 2")
  _check("epochs", epochs, isinstance(epochs, int) and epochs >= 1, "an int >= 1")
  _check("batch_size", batch_size, isinstance(batch_size, int) and batch_size >= 1, "an int >= 1")
  _check("lr", lr, lr > 0, "a positive float")
  _check("loss", loss, loss in _LOSSES, ", ".join(_LOSSES))
  _check("ddof", ddof, ddof in (0, 1), "0 or 1")
  options = dict(
    model=MetaNet(tuple(hidden)), n_members=n_members, epochs=epochs, batch_size=batch_size, lr=lr, loss=loss
  )

  def fit(key, inputs, y, mask):
    inputs, y, mask = jnp.asarray(inputs), jnp.asarray(y), jnp.asarray(mask, bool)
    if inputs.ndim != 2 or y.shape != inputs.shape[:1] or mask.shape != y.shape:
      raise ValueError(
        f"ensemble_surrogate.fit: inputs {inputs.shape}, y {y.shape}, mask {mask.shape}; expected [C, D], [C], [C]"
      )
    return fit_ensemble(key, inputs, y, mask, **options)

  @jax.jit
  def predict(state, inputs):
    p = predict_members(state, inputs)
    return Predictive(mean=p.mean(0), std=p.std(0, ddof=ddof), samples=p)

  return Surrogate(fit=fit, predict=predict)
