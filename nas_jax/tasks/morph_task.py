"""Warm-started training as a search Task (Auto-Keras Sec. 3.2, 4.3): a network morphed from an
evaluated parent starts from the parent's trained weights, morphed by the same ops; every trained
network's weights are stored under the weights directory, so a killed search resumes with
nothing lost and its children still warm-start.

Storage: `<weights_dir>/<name>.json` (the architecture, written first) and `<name>.msgpack` (the
best epoch's variables), both written atomically by the worker before it returns, so a journalled
network always has its weights. The name is `<weights_id>-<evaluation seed>`, returned in the
task's info ("weights") and so recorded in the journal, and a child names its parent's file from
that record: weights left by an evaluation that was never journalled (its search was killed) are
read by no one, and a retrained network never replaces the file of a journalled one.
"""

from __future__ import annotations

import functools
import json
import os

import jax

from nas_jax.arch import morphism
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.morph_point import network_json, weights_id
from nas_jax.search.task import Task, TaskResult
from nas_jax.models import morph_variables
from nas_jax.tasks.synthetic import PERMISSIVE_LIMITS
from nas_jax.tasks.train_task import load_dataset, task_result
from nas_jax.training import specialised, weights
from nas_jax.training.train_config import TrainConfig, check_config

__all__ = ["morph_train_task", "save_network", "load_network"]


def _paths(weights_dir: str, name: str) -> tuple[str, str]:
  return os.path.join(weights_dir, f"{name}.json"), os.path.join(weights_dir, f"{name}.msgpack")


def save_network(weights_dir: str, arch_json: dict, variables: dict, seed: int) -> str:
  """Stores a network trained with evaluation seed `seed` (architecture, then variables; each
  atomically); returns the name it is stored under, `<weights_id>-<seed>`."""
  body = {k: arch_json[k] for k in ("kind", "layers", "edges")}
  name = f"{weights_id(body)}-{int(seed)}"
  arch_path, var_path = _paths(weights_dir, name)
  os.makedirs(weights_dir, exist_ok=True)
  with open(arch_path + ".tmp", "w") as f:
    json.dump(body, f)
  os.replace(arch_path + ".tmp", arch_path)
  weights.save_variables(var_path, variables)
  return name


def load_network(weights_dir: str, name: str) -> tuple[Architecture, dict]:
  """The architecture and variables stored under `name` (`save_network`'s result, as the journal
  records it); FileNotFoundError naming what is missing."""
  arch_path, var_path = _paths(weights_dir, name)
  if not os.path.exists(var_path):
    raise FileNotFoundError(
      f"warm start: no weights {var_path} for parent {name}; was the parent trained with"
      f" this weights_dir ({weights_dir})?"
    )
  with open(arch_path) as f:
    arch = Architecture.from_json(json.load(f), limits=PERMISSIVE_LIMITS)
  return arch, weights.load_variables(var_path)


def _evaluate(
  name: str,
  train_config: TrainConfig,
  data_seed: int,
  weights_dir: str,
  noise: bool,
  arch_json: dict,
  seed: int,
) -> TaskResult:
  """Task.evaluate of `morph_train_task` (top level, so it pickles)."""
  body = network_json(arch_json)
  arch = Architecture.from_json(body, limits=PERMISSIVE_LIMITS)
  data = load_dataset(name, arch.kind, data_seed, "", "classification")
  k_morph, k_train = jax.random.split(jax.random.key(seed))
  morph, init = arch_json.get("morph"), None
  if morph is not None:
    parent_arch, parent_vars = load_network(weights_dir, morph["parent"])
    ops = [morphism.Op.from_json(o) for o in morph["ops"]]
    child, init = morph_variables.replay_morphs(parent_arch, parent_vars, ops, k_morph, noise=noise)
    if child.to_json() != arch.to_json():
      raise ValueError(
        f"morph: replaying ops {morph['ops']} on parent {morph['parent']} does not give this architecture"
      )
  r = specialised.evaluate(arch, data, train_config, k_train, init_variables=init, keep_variables=True)
  stored = save_network(weights_dir, body, r.variables, seed) if r.variables is not None else None
  return task_result(r, data, weights=stored, warm_start=morph is not None)


def morph_train_task(
  dataset: str, train_config: TrainConfig, weights_dir: str, *, data_seed: int = 0, noise: bool = True
) -> Task:
  """A Task that trains autokeras networks on a classification dataset, warm-started from their
  parent when their JSON names one (`arch.morph_point.MorphPoint`), and stores every trained network.

  value = the best validation accuracy, test_value = its test accuracy, goal "max"; info adds
  "weights" (the name it is stored under, which its children's "morph.parent" names) and
  "warm_start". The optimizer state is always fresh (as in the authors' code);
  `train_config.patience` gives the early stopping of Auto-Keras Sec. 4.3.

  Args:
    dataset: "digits" or a classification table path.
    train_config: a `TrainConfig`.
    weights_dir: where trained networks are stored and parents are read.
    data_seed: seed of the train/validation/test split.
    noise: the morph noise of the authors' code on new weights (the code's default).
  """
  check_config(train_config)
  if not isinstance(weights_dir, str) or not weights_dir:
    raise ValueError(f"morph_train_task: weights_dir={weights_dir!r}; expected a directory path")
  data = load_dataset(dataset, "autokeras", data_seed, "", "classification")
  if data.task != "classification":
    raise ValueError(f"morph_train_task: dataset {dataset!r} is a {data.task} problem; autokeras networks classify")
  return Task(
    name=f"morph-train-{data.name}",
    goal="max",
    evaluate=functools.partial(_evaluate, dataset, train_config, data_seed, weights_dir, bool(noise)),
  )
