"""Which final trainer a finished search's config means: `final_family` turns the config a search
wrote (`workdir/config.json`) into its family's trainer and final data split, or says why there
is nothing to train (a tabular or synthetic task)."""

from __future__ import annotations

import functools
import os
from types import MappingProxyType
from typing import Any, Callable, NamedTuple

import ml_collections

from nas_jax.search.state import Observation
from nas_jax.tasks import morph_task, tabular, train_task
from nas_jax.tasks.synthetic import PERMISSIVE_LIMITS
from nas_jax.training.conditional import final_fit_conditional
from nas_jax.training.datasets import Dataset, load_images
from nas_jax.training.final_fit import FinalFit, final_fit_layer_graph, merge_train_val
from nas_jax.training.nb201_training import final_fit_nb201
from nas_jax.wiring.registries import train_config_of

__all__ = ["FinalFamily", "NothingToTrain", "FINAL_FAMILIES", "final_family"]


class FinalFamily(NamedTuple):
  """A search's family of networks, ready for final training.

  Attributes:
    family: "layer_graph", "conditional" or "nb201" (`saved_model.ModelSpec.family`).
    data: the final split (`merge_train_val` of the search's data).
    fit: (point_json, data, epochs, key, *, checkpoint_path, init_variables) -> FinalFit: the
      family's final trainer with the search's settings bound.
    search_epochs: the epochs each network trained for during the search; None when the search
      trained nothing (NB201 cells looked up in the benchmark's table).
    warm_start: a journalled Observation -> the variables its final training starts from (the
      weights an Auto-Keras search kept of it), or None; None for families that start at random.
  """

  family: str
  data: Dataset
  fit: Callable[..., FinalFit]
  search_epochs: int | None
  warm_start: Callable[[Observation], Any] | None = None


class NothingToTrain(NamedTuple):
  """A search whose networks are not trained: `why` in one line, and for a tabular task `lookup`,
  a network's JSON -> {"test": the table's test figure, "params": its parameter count or None}."""

  why: str
  lookup: Callable[[dict], dict] | None = None


def _section(config: dict) -> ml_collections.ConfigDict:
  return ml_collections.ConfigDict(config["task"])


def _train(config: dict, workdir: str, dataset: str) -> FinalFamily:
  c, kind = _section(config), config["space"]["kind"]
  data = train_task.load_dataset(c.dataset, kind, c.data_seed, c.target, c.task_type)
  fit = functools.partial(final_fit_layer_graph, train_config=train_config_of(c), limits=PERMISSIVE_LIMITS)
  return FinalFamily("layer_graph", merge_train_val(data), fit, int(c.epochs))


def _kept_weights(weights_dir: str, obs: Observation) -> Any:
  """The variables an Auto-Keras search stored of `obs` (its info names them); None when it
  stored none (its training diverged)."""
  name = (obs.info.get("task") or {}).get("weights")
  return None if name is None else morph_task.load_network(weights_dir, name)[1]


def _morph_train(config: dict, workdir: str, dataset: str) -> FinalFamily:
  c = _section(config)
  data = train_task.load_dataset(c.dataset, "autokeras", c.data_seed, "", "classification")
  fit = functools.partial(final_fit_layer_graph, train_config=train_config_of(c), limits=PERMISSIVE_LIMITS)
  weights_dir = c.weights_dir or os.path.join(workdir, "weights")  # as `config.build_search` sets it
  warm = functools.partial(_kept_weights, weights_dir)
  return FinalFamily("layer_graph", merge_train_val(data), fit, int(c.epochs), warm)


def _table_figures(table: tabular.Nb201Table, arch_json: dict) -> dict:
  row = table.row.get(arch_json.get("arch_str"))
  if row is None:
    raise ValueError(f"arch_json: {arch_json!r} is no cell of the NB201 table")
  params = None if table.params is None else int(table.params[row])
  return {"test": float(table.test[row]), "params": params}


def _nb201(config: dict, workdir: str, dataset: str) -> FinalFamily | NothingToTrain:
  c = _section(config)
  if not dataset:
    table = tabular.load_nb201(c.path, c.dataset, c.report_metric)
    why = (
      f"nothing to train: this search looked its cells up in the NAS-Bench-201 table ({c.dataset}),"
      " whose figures are of the benchmark's trained networks; give --dataset=PATH (an .npz of"
      " images) to train the top cells on your data"
    )
    return NothingToTrain(why, functools.partial(_table_figures, table))
  return FinalFamily("nb201", merge_train_val(load_images(dataset)), final_fit_nb201, None)


def _conditional(config: dict, workdir: str, dataset: str) -> FinalFamily:
  c = _section(config)
  data = train_task.load_dataset(c.dataset, "mlp", c.data_seed, "", "regression")
  fit = functools.partial(final_fit_conditional, max_depth=c.max_depth)
  return FinalFamily("conditional", merge_train_val(data), fit, int(c.epochs))


def _synthetic(config: dict, workdir: str, dataset: str) -> NothingToTrain:
  return NothingToTrain(
    "nothing to train: this search scored its networks with a synthetic function of their graphs"
    f" ({config['task'].get('function', '?')}), not by training them"
  )


# config.task.name -> builder(config.json as a dict, workdir, --dataset) -> what final training does
FINAL_FAMILIES: MappingProxyType[str, Callable[[dict, str, str], FinalFamily | NothingToTrain]] = MappingProxyType(
  {
    "train": _train,
    "morph_train": _morph_train,
    "conditional": _conditional,
    "nb201": _nb201,
    "synthetic": _synthetic,
  }
)


def final_family(config: dict | None, workdir: str, dataset: str = "") -> FinalFamily | NothingToTrain:
  """The final trainer of the search that wrote `config` in `workdir`, or why it has none.

  Args:
    config: the search's `config.json` as a dict.
    workdir: the search's workdir (Auto-Keras searches keep their weights under it by default).
    dataset: an .npz of images to train NB201 cells on; "" for none.

  Raises:
    ValueError naming what is missing or unknown.
  """
  if not isinstance(config, dict) or not isinstance(config.get("task"), dict) or "name" not in config["task"]:
    raise ValueError(f"workdir: {workdir!r} has no config.json with a task; expected the workdir of a search")
  name = config["task"]["name"]
  if name not in FINAL_FAMILIES:
    raise ValueError(f"config.task.name: {name!r} has no final training; known: {', '.join(FINAL_FAMILIES)}")
  if dataset and name != "nb201":
    raise ValueError(f"dataset: {dataset!r}; only a search of NB201 cells trains on a dataset given here")
  return FINAL_FAMILIES[name](config, workdir, dataset)
