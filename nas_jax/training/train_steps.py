"""The jitted passes of training and the state they carry (NASBOT Sec. 5; App. C.2): one epoch is a
`lax.scan` over shuffled minibatches, evaluation a `lax.scan` over zero-padded batches
(`train_loop.eval_splits`).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax

__all__ = [
  "TrainState",
  "Apply",
  "flax_apply",
  "initial_state",
  "example_losses",
  "train_epoch",
  "epoch_order",
  "eval_sums",
]

# apply(params, batch_stats, x, train) -> (outputs, batch_stats): a network's forward pass; in
# training mode it also returns the updated batch statistics (unchanged where there are none).
Apply = Callable[[Any, Any, jax.Array, bool], tuple[jax.Array, Any]]


class TrainState(NamedTuple):
  """Everything that changes during training. params, batch_stats: Flax variable trees
  (batch_stats is empty for MLPs); opt_state: the optax state."""

  params: Any
  batch_stats: Any
  opt_state: Any


def initial_state(tx: optax.GradientTransformation, variables: dict[str, Any]) -> TrainState:
  """The TrainState of freshly initialised Flax variables."""
  return TrainState(variables["params"], variables.get("batch_stats", {}), tx.init(variables["params"]))


def flax_apply(model) -> Apply:
  """The `Apply` of a Flax module whose `__call__` takes `train` (an ArchNet)."""

  def apply(params, batch_stats, x, train):
    variables = {"params": params, "batch_stats": batch_stats}
    if not train:
      return model.apply(variables, x, train=False), batch_stats
    out, updates = model.apply(variables, x, train=True, mutable=["batch_stats"])
    return out, updates.get("batch_stats", batch_stats)

  return apply


def example_losses(out: jax.Array, y: jax.Array, classification: bool) -> tuple[jax.Array, jax.Array]:
  """Per-example loss and error. out: [B, K] log-probs or [B] predictions; y: [B]."""
  if classification:
    loss = -jnp.take_along_axis(out, y[:, None].astype(jnp.int32), axis=1)[:, 0]
    # argmax of NaN logits is a class like any other: keep divergence visible in the error.
    return loss, jnp.where(jnp.isnan(loss), jnp.nan, (out.argmax(-1) != y).astype(jnp.float32))
  sq = jnp.square(out - y.astype(jnp.float32))
  return sq, sq


def train_epoch(apply: Apply, tx, classification, steps, batch_size, state: TrainState, x, y, perm):
  """One pass over the training split in the order `perm`, as a scan over minibatches; the
  remainder after `steps` full batches is dropped.

  Args:
    apply: the network's forward pass.
    state: the TrainState.
    x: [n, ...] training inputs; y: [n] targets.
    perm: [n] int, this epoch's permutation of the examples. It is drawn outside: a threefry
      draw inside would add its compilation to every architecture's.

  Returns:
    (new state, [] mean training loss).
  """
  batches = perm[: steps * batch_size].reshape(steps, batch_size)

  def step(state, idx):
    def loss_fn(params):
      out, batch_stats = apply(params, state.batch_stats, x[idx], True)
      return example_losses(out, y[idx], classification)[0].mean(), batch_stats

    (loss, batch_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    updates, opt_state = tx.update(grads, state.opt_state, state.params)
    # An x64 schedule must not promote the float32 parameters (the scan carry keeps its dtype).
    updates = jax.tree.map(lambda u, p: u.astype(p.dtype), updates, state.params)
    return TrainState(optax.apply_updates(state.params, updates), batch_stats, opt_state), loss

  state, losses = jax.lax.scan(step, state, batches)
  return state, losses.mean()


def epoch_order(shuffle_key: jax.Array, epoch, n: int) -> jax.Array:
  """[n] int: the order of the n training examples in `epoch`, drawn from a network's shuffle key,
  the same whether the network trains alone or in a population."""
  return jax.random.permutation(jax.random.fold_in(shuffle_key, epoch), n)


def eval_sums(apply: Apply, classification, state: TrainState, x, y, valid):
  """Per-batch summed loss and error. x: [nb, b, ...]; y, valid: [nb, b]. Returns two [nb]."""

  def body(_, batch):
    xb, yb, vb = batch
    out, _ = apply(state.params, state.batch_stats, xb, False)
    loss, err = example_losses(out, yb, classification)
    return None, (jnp.sum(loss * vb), jnp.sum(err * vb))

  return jax.lax.scan(body, None, (x, y, valid))[1]
