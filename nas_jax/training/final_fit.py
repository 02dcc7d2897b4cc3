"""Final training of a search's winners (NASBOT, Kandasamy et al. 2018, Sec. 5: "we trained the
best models for longer" and report their test error, Table 3's last column): a network trained on
the training and validation splits together, for a longer schedule, and scored on the test split
after its last epoch.

`FinalFit` is what every family's final trainer returns (`final_fit_layer_graph` here for NASBOT's
layer-graph CNNs and MLPs and Auto-Keras' morph networks; the conditional and NB201 trainers live
beside their families' training). A trainer given a `checkpoint_path` leaves its state there as it
trains, so that a killed run continues where it stopped and ends as an uninterrupted one would.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any, Mapping, NamedTuple

import jax
import numpy as np

from nas_jax.arch.architecture import Architecture
from nas_jax.arch.json_io import Limits
from nas_jax.arch.morph_point import network_json
from nas_jax.training import checkpoints, specialised
from nas_jax.training.datasets import Dataset, input_spec
from nas_jax.training.saved_model import ModelSpec
from nas_jax.training.train_config import TrainConfig, check_config

__all__ = [
  "FinalFit",
  "merge_train_val",
  "final_train_config",
  "count_params",
  "checkpoint_meta",
  "final_fit_layer_graph",
]


class FinalFit(NamedTuple):
  """One finished final training.

  Attributes:
    test_metric: test accuracy (classification) or test MSE on standardised targets (regression)
      after the last epoch.
    variables: host numpy variables of the trained network ({"params", "batch_stats"} for layer
      graphs): what `saved_model.save_model` stores.
    spec: the saved model's `ModelSpec`.
    params: trainable parameter count.
    seconds: wall time of this call (a run continued from a checkpoint counts its own part).
  """

  test_metric: float
  variables: Any
  spec: ModelSpec
  params: int
  seconds: float


def merge_train_val(data: Dataset) -> Dataset:
  """The final split of `data`: training on its training and validation examples together, its
  test split kept. The validation arrays become the test split's, as the training loop evaluates
  a validation split after every epoch; nothing is chosen on them (the metric reported is the one
  after the last epoch: with validation merged into training there is no honest best epoch).
  Inputs and targets keep the search's standardisation (training statistics of the 0.6 split).

  Args:
    data: a Dataset with x_train [n_tr, ...], x_val [n_va, ...], x_test [n_te, ...].

  Returns:
    A Dataset with x_train [n_tr + n_va, ...] and x_val = x_test [n_te, ...].
  """
  if not isinstance(data, Dataset):
    raise TypeError(f"data: got a {type(data).__name__}; expected a datasets.Dataset")
  return data._replace(
    x_train=np.concatenate([data.x_train, data.x_val]),
    y_train=np.concatenate([data.y_train, data.y_val]),
    x_val=data.x_test,
    y_val=data.y_test,
  )


def final_train_config(config: TrainConfig, epochs: int, checkpoint_every: int = 1) -> TrainConfig:
  """The search's `config` run for `epochs` without early stopping (patience 0): the learning
  rate schedule spans all `epochs`. Also checks a final fit's `checkpoint_every` (epochs between
  checkpoints, >= 1)."""
  for name, value in (("epochs", epochs), ("checkpoint_every", checkpoint_every)):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
      raise ValueError(f"{name}: {value!r}; expected an integer >= 1")
  config = config._replace(epochs=int(epochs), patience=0)
  check_config(config)
  return config


def count_params(params: Any) -> int:
  """The number of scalars in a parameter tree."""
  return int(sum(np.size(leaf) for leaf in jax.tree.leaves(params)))


def checkpoint_meta(point_json: dict, data: Dataset, config: TrainConfig, key: jax.Array) -> str:
  """What makes a final-training checkpoint this run's: the network, the data (name, task and
  sizes), the training config and the key's data, as JSON."""
  run = {
    "point": point_json,
    "data": [data.name, data.task, *(int(a.shape[0]) for a in (data.x_train, data.x_val))],
    "train_config": config._asdict(),
    "key": np.asarray(jax.random.key_data(key)).tolist(),
  }
  return json.dumps(run, sort_keys=True)


def final_fit_layer_graph(
  point_json: dict,
  data: Dataset,
  epochs: int,
  key: jax.Array,
  *,
  checkpoint_path: str = "",
  init_variables: Mapping[str, Any] | None = None,
  train_config: TrainConfig = TrainConfig(),
  limits: Limits = Limits(),
  checkpoint_every: int = 1,
) -> FinalFit:
  """Trains a layer-graph network (a NASBOT CNN or MLP, or an Auto-Keras morph network) for all
  `epochs` on `data`'s training split (`merge_train_val` of the search's data) and scores it on
  its test split after the last epoch. Deterministic for `key`: a run continued from its
  checkpoint gives the uninterrupted run's result (`specialised.train_until`).

  Args:
    point_json: the network as the search journal holds it (an Auto-Keras "morph" record, how the
      search reached it, is ignored).
    data: the final split (`merge_train_val`).
    epochs: training epochs, >= 1.
    key: a jax PRNG key (initialisation and shuffles).
    checkpoint_path: where the training state is left every `checkpoint_every` epochs, and read
      back by a rerun with the same arguments; "" keeps none.
    init_variables: {"params", "batch_stats"} of this network to start from (an Auto-Keras
      network's weights kept by its search); None initialises at random.
    train_config: the search's training settings; `epochs` and no early stopping replace its own.
    limits: the bounds `point_json` is read with (the search task's).
    checkpoint_every: epochs between checkpoints.

  Returns:
    A FinalFit; a diverged run has a NaN test_metric.
  """
  t0 = time.perf_counter()
  config = final_train_config(train_config, epochs, checkpoint_every)
  arch = Architecture.from_json(network_json(point_json), limits=limits)
  meta = checkpoint_meta(point_json, data, config, key)
  resume = checkpoints.load(checkpoint_path, meta) if checkpoint_path else None
  done = resume.epochs if resume is not None else 0
  stops = range(done + checkpoint_every, config.epochs, checkpoint_every) if checkpoint_path else ()
  for until in (*stops, config.epochs):
    _, resume, _ = specialised.train_until(arch, data, config, key, until, resume=resume, init_variables=init_variables)
    if checkpoint_path and until < config.epochs:
      checkpoints.save(checkpoint_path, resume, meta)
  error = resume.records[-1][2]  # the test split's error after the last epoch
  variables = {"params": resume.state["params"], "batch_stats": resume.state["batch_stats"]}
  input_shape, num_outputs = input_spec(data)
  spec = ModelSpec(
    family="layer_graph", point=point_json, input_shape=input_shape, task=data.task, num_outputs=num_outputs, options={}
  )
  metric = 1.0 - error if data.task == "classification" else error
  return FinalFit(
    float(metric) if math.isfinite(error) else math.nan,
    variables,
    spec,
    count_params(variables["params"]),
    time.perf_counter() - t0,
  )
