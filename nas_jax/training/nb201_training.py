"""Trains a NAS-Bench-201 cell's network to predict: the benchmark's own network (`Nb201Net` with
its cells, `affine=True`) on the user's images, with the benchmark's training recipe.

NAS-Bench-201 trains every network with SGD, Nesterov momentum 0.9, weight decay 5e-4 and a
learning rate of 0.1 decayed to 0 by a cosine over all steps, in batches of 256 for 200 epochs
(Dong & Yang 2020, Sec. 2.3, Table 1): `NB201_TRAIN_CONFIG`. The benchmark also augments its
images (random crops and flips); here the images are used as the Dataset holds them. Batch norm
keeps running averages in training, which the trained network predicts with (`Nb201Net`'s
`batch_norm`). The epochs are the compiled passes of `train_steps`, run by `train_loop`.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import cell as cell_lib
from nas_jax.models import nb201_init, nb201_net
from nas_jax.training import checkpoints, train_loop, train_steps, warm_start
from nas_jax.training.datasets import Dataset, input_spec
from nas_jax.training.final_fit import FinalFit, checkpoint_meta, count_params, final_train_config
from nas_jax.training.saved_model import ModelSpec
from nas_jax.training.train_config import TrainConfig, make_optimizer

__all__ = ["NB201_TRAIN_CONFIG", "nb201_model_spec", "final_fit_nb201"]

#: NAS-Bench-201's training schedule: 200 epochs of SGD with Nesterov momentum and a cosine learning rate.
NB201_TRAIN_CONFIG = TrainConfig(
  epochs=200, batch_size=256, learning_rate=0.1, optimizer="nesterov", schedule="cosine", weight_decay=5e-4
)


def nb201_model_spec(point_json: dict, data: Dataset, *, channels: int = 16, cells_per_stage: int = 5) -> ModelSpec:
  """The saved model of an NB201 cell (`cell_to_json`'s JSON) trained on `data`: the benchmark's
  network with `channels` and `cells_per_stage`, sized to the data's images and classes.

  Raises:
    ValueError: a bad cell, data that are not a classification of square RGB images [n, H, H, 3]
      with H a multiple of 4, or bad sizes.
  """
  cell_lib.cell_from_json(point_json, "nb201")
  shape, num_outputs = input_spec(data)
  if data.task != "classification" or len(shape) != 3 or shape[0] != shape[1] or shape[2] != 3:
    raise ValueError(
      f"data: {data.name!r} is a {data.task} task with inputs {shape}; an NB201 network classifies"
      " square RGB images [n, H, H, 3]"
    )
  net = nb201_net.Nb201Spec(channels, cells_per_stage, num_outputs, shape[0], bn=True, affine=True)
  return ModelSpec("nb201", point_json, shape, data.task, num_outputs, dict(nb201_net.check_spec(net)._asdict()))


def _apply(model: nb201_net.Nb201Net) -> train_steps.Apply:
  """The `train_steps.Apply` of `model`: log-probabilities, batch norm on the batch's statistics
  updating the running averages in training, on the running averages otherwise."""
  training, inference = model.clone(batch_norm="train"), model.clone(batch_norm="running")

  def apply(params, batch_stats, x, train):
    variables = {"params": params, "batch_stats": batch_stats}
    if not train:
      return jax.nn.log_softmax(inference.apply(variables, x)), batch_stats
    out, updates = training.apply(variables, x, mutable=["batch_stats"])
    return jax.nn.log_softmax(out), updates["batch_stats"]

  return apply


def _initial_variables(spec: nb201_net.Nb201Spec, cell: tuple[int, ...], key: jax.Array, abstract: Any) -> Any:
  """PyTorch's initialisation (`nb201_init`) of the cell's parameters; running means 0, variances 1."""
  params = jax.jit(lambda k: nb201_net.specialise_params(nb201_init.init_params(k, spec), cell))(key)
  params = jax.tree.map(lambda a: a.astype(jnp.float32), params)  # float32 under jax_enable_x64 too
  stats = jax.tree_util.tree_map_with_path(
    lambda path, s: (jnp.ones if path[-1].key.endswith("var") else jnp.zeros)(s.shape, s.dtype),
    abstract["batch_stats"],
  )
  return {"params": params, "batch_stats": stats}


def final_fit_nb201(
  point_json: dict,
  data: Dataset,
  epochs: int,
  key: jax.Array,
  *,
  checkpoint_path: str = "",
  init_variables: Mapping[str, Any] | None = None,
  train_config: TrainConfig = NB201_TRAIN_CONFIG,
  channels: int = 16,
  cells_per_stage: int = 5,
  checkpoint_every: int = 1,
) -> FinalFit:
  """Trains the benchmark's network of an NB201 cell for all `epochs` on `data`'s training split
  and scores it on its test split after the last epoch. Deterministic for `key` (initialisation
  and each epoch's shuffle derive from it), and a run continued from its checkpoint gives the
  uninterrupted run's result.

  Args:
    point_json: the cell as the search journal holds it ({"kind": "nb201", "arch_str": ...}).
    data: the final split (`final_fit.merge_train_val`): images [n, H, H, 3], H a multiple of 4.
    epochs: training epochs, >= 1 (the cosine schedule spans them all).
    key: a jax PRNG key.
    checkpoint_path: where the training state is left every `checkpoint_every` epochs, and read
      back by a rerun with the same arguments; "" keeps none.
    init_variables: {"params", "batch_stats"} of this network to start from; None initialises as
      PyTorch does (the benchmark's networks).
    train_config: the recipe; `epochs` replaces its own and early stopping is off.
    channels, cells_per_stage: the network's width C and cells per stage N (16 and 5 in the
      benchmark).
    checkpoint_every: epochs between checkpoints.

  Returns:
    A FinalFit (test accuracy; NaN when training diverged).
  """
  t0 = time.perf_counter()
  config = final_train_config(train_config, epochs, checkpoint_every)
  spec = nb201_model_spec(point_json, data, channels=channels, cells_per_stage=cells_per_stage)
  n = data.x_train.shape[0]
  if config.batch_size > n:
    raise ValueError(f"train_config.batch_size: {config.batch_size} exceeds the {n} training examples")
  net_spec = nb201_net.Nb201Spec(**spec.options)
  cell = tuple(int(o) for o in cell_lib.cell_from_json(point_json, "nb201").ops)
  model = nb201_net.Nb201Net(net_spec, cell)
  apply = _apply(model)
  steps = n // config.batch_size
  tx = make_optimizer(config, steps * config.epochs)
  init_key, shuffle_key = jax.random.split(key)
  x_train, y_train = jnp.asarray(data.x_train, jnp.float32), jnp.asarray(data.y_train)
  splits = train_loop.eval_splits(data, config)
  shapes = jax.eval_shape(model.clone(batch_norm="train").init, init_key, x_train[:1])
  shapes = {k: shapes[k] for k in ("params", "batch_stats")}  # not the proxies' taps
  abstract = jax.eval_shape(functools.partial(train_steps.initial_state, tx), shapes)

  meta = checkpoint_meta({"point": point_json, "options": spec.options}, data, config, key)
  resume = checkpoints.load(checkpoint_path, meta) if checkpoint_path else None
  state = None if resume is None else checkpoints.restore_state(abstract, resume.state)
  records = [] if state is None else list(resume.records)
  if state is None:
    variables = (
      _initial_variables(net_spec, cell, init_key, shapes)
      if init_variables is None
      else jax.tree.map(lambda a: jnp.array(a, jnp.float32), warm_start.match_variables(init_variables, shapes))
    )
    state = train_steps.initial_state(tx, variables)

  epoch_fn = functools.partial(train_steps.train_epoch, apply, tx, True, steps, config.batch_size)
  run_epoch = jax.jit(epoch_fn, donate_argnums=0)  # the state's buffers are updated in place
  run_eval = jax.jit(functools.partial(train_steps.eval_sums, apply, True))
  perm = lambda epoch: train_steps.epoch_order(shuffle_key, epoch, n)
  while len(records) < config.epochs:
    until = min(len(records) + checkpoint_every, config.epochs) if checkpoint_path else config.epochs
    state = train_loop.train_epochs(
      lambda state, epoch: run_epoch(state, x_train, y_train, perm(epoch))[0],
      lambda state: [splits.record(*run_eval(state, splits.x, splits.y, splits.valid))],
      state,
      range(len(records) + 1, until + 1),
      [records],
    ).state
    if checkpoint_path and until < config.epochs:
      checkpoints.save(checkpoint_path, checkpoints.capture(state, records), meta)

  error = records[-1][2]  # the test split's error after the last epoch
  variables = jax.device_get({"params": state.params, "batch_stats": state.batch_stats})
  return FinalFit(
    1.0 - error if math.isfinite(error) else math.nan,
    jax.tree.map(np.asarray, variables),
    spec,
    count_params(variables["params"]),
    time.perf_counter() - t0,
  )
