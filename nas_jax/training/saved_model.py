"""A trained network the user keeps: its description, its weights and a compiled predictor, in one
folder that `load_model` turns back into a network that predicts.

A saved model is a directory of three files, each written atomically:
- `model.json`: the `ModelSpec` (what the network is: its family, its JSON as the search journal
  holds it, the input shape and the task);
- `variables.msgpack`: its Flax variables (`weights.save_variables`);
- `predictor.jax_export`: the function x -> predictions with the weights inside, as serialized
  StableHLO (`jax.export`) with a symbolic batch dimension, for CPU and CUDA, which jax alone runs
  (no nas_jax needed).

Only `_FAMILIES` differs between network families: how a spec builds the module, its variables'
shapes and its inference outputs.
"""

from __future__ import annotations

import functools
import json
import math
import os
import types
from typing import Any, Callable, Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import cell as cell_lib
from nas_jax.arch import conditional_point as cond_point
from nas_jax.arch import kinds
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.json_io import Limits
from nas_jax.arch.morph_point import network_json
from nas_jax.models import arch_net, chain_mlp, nb201_net
from nas_jax.training import warm_start, weights

__all__ = [
  "FAMILIES",
  "TASKS",
  "MODEL_FILE",
  "VARIABLES_FILE",
  "EXPORT_FILE",
  "EXPORT_PLATFORMS",
  "ModelSpec",
  "ChainMlp",
  "SavedModel",
  "save_model",
  "load_model",
]

#: The network families a saved model can hold (`ModelSpec.family`).
FAMILIES = ("layer_graph", "conditional", "nb201")
#: The task types a saved model predicts for (`ModelSpec.task`).
TASKS = ("classification", "regression")
#: The files of a saved model's folder: its spec, its weights, its exported predictor.
MODEL_FILE, VARIABLES_FILE, EXPORT_FILE = "model.json", "variables.msgpack", "predictor.jax_export"
EXPORT_PLATFORMS = ("cpu", "cuda")  # the exported predictor runs on either
# A saved network was checked against its search's limits when it was searched; rebuilding it
# checks only that it is a valid network, whatever limits that search had.
_ANY_SIZE = Limits(max_layers=10**6, max_edges=10**9, max_degree=10**6, max_mass=math.inf, min_units=1, max_units=10**9)


class ModelSpec(NamedTuple):
  """What a saved model is; JSON-able (`model.json`).

  Attributes:
    family: "layer_graph" (NASBOT CNN/MLP layer graphs and Auto-Keras networks, run by
      `arch_net.ArchNet`), "conditional" (chain MLPs, `chain_mlp`) or "nb201" (`Nb201Net`).
    point: the network's JSON exactly as the search journal holds it (`arch_json`).
    input_shape: one example's shape, as the task's Dataset arrays hold it, e.g. (8, 8, 1), (64,).
    task: "classification" or "regression".
    num_outputs: the number of classes, or 1 for regression.
    options: the family's static settings: conditional {"max_depth": int}; nb201 the `Nb201Spec`
      fields; layer_graph none.
  """

  family: str
  point: dict
  input_shape: tuple[int, ...]
  task: str
  num_outputs: int
  options: dict


class _Family(NamedTuple):
  """What differs between families.

  build: spec -> the module (a Flax module, or the family's callable).
  shapes: (module, spec) -> its variables as ShapeDtypeStructs.
  outputs: (module, variables, x [n, *input_shape]) -> [n, K] logits or log-probabilities, or
    [n] / [n, 1] regression values.
  """

  build: Callable[[ModelSpec], Any]
  shapes: Callable[[Any, ModelSpec], Any]
  outputs: Callable[[Any, Any, jax.Array], jax.Array]


def _example(spec: ModelSpec) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct((1, *spec.input_shape), jnp.float32)


def _kept(variables: Mapping[str, Any]) -> dict[str, Any]:
  """The collections a trained network keeps: its parameters and batch-norm statistics (not the
  proxies' taps that `Nb201Net.init` also makes)."""
  return {k: v for k, v in variables.items() if k in ("params", "batch_stats")}


def _layer_graph_module(spec: ModelSpec) -> arch_net.ArchNet:
  arch = Architecture.from_json(network_json(spec.point), limits=_ANY_SIZE)
  kind = kinds.of(arch)
  if len(spec.input_shape) != kind.input_rank:
    raise ValueError(f"input_shape {spec.input_shape}; a {kind.name} network takes {kind.example_shape}")
  return arch_net.build_model(arch, spec.num_outputs)


class ChainMlp(NamedTuple):
  """A conditional point's network for inference: `chain_mlp.forward` of its settings (one point's
  `chain_mlp.Settings`, no leading axis), without dropout."""

  settings: chain_mlp.Settings
  d_in: int
  num_outputs: int

  def apply(self, variables: Mapping[str, Any], x: jax.Array) -> jax.Array:
    """[n, num_outputs] outputs of inputs x [n, d_in]."""
    return chain_mlp.forward(variables["params"], self.settings, x, None)


def _chain_mlp_module(spec: ModelSpec) -> ChainMlp:
  cspec = cond_point.conditional_spec(spec.options.get("max_depth", 3))
  point = cond_point.point_from_json(spec.point, cspec)
  if len(spec.input_shape) != 1:
    raise ValueError(f"input_shape {spec.input_shape}; a chain MLP takes flat features [D]")
  d_in = spec.input_shape[0]
  settings = chain_mlp.settings(cond_point.stack_points([point]), cspec, 0, d_in)
  return ChainMlp(jax.tree.map(lambda a: a[0], settings), d_in, spec.num_outputs)


def _nb201_module(spec: ModelSpec) -> nb201_net.Nb201Net:
  cell = cell_lib.cell_from_json(spec.point, "nb201")
  net_spec = nb201_net.check_spec(nb201_net.Nb201Spec(**spec.options))
  if (net_spec.num_classes, (net_spec.image_size,) * 2 + (3,)) != (spec.num_outputs, spec.input_shape):
    raise ValueError(
      f"options: {net_spec.num_classes} classes of {net_spec.image_size}x{net_spec.image_size} RGB images do"
      f" not fit num_outputs {spec.num_outputs} and input_shape {spec.input_shape}"
    )
  return nb201_net.Nb201Net(net_spec, tuple(int(o) for o in cell.ops), batch_norm="running")


_FAMILIES = types.MappingProxyType(
  {
    "layer_graph": _Family(
      _layer_graph_module,
      lambda m, spec: jax.eval_shape(functools.partial(m.init, train=False), jax.random.key(0), _example(spec)),
      lambda m, variables, x: m.apply(variables, x, train=False),
    ),
    "conditional": _Family(
      _chain_mlp_module,
      lambda m, spec: {
        "params": jax.eval_shape(lambda: chain_mlp.init_params(m.settings, jax.random.key(0), m.d_in, m.num_outputs))
      },
      lambda m, variables, x: m.apply(variables, x),
    ),
    "nb201": _Family(
      _nb201_module,
      lambda m, spec: _kept(jax.eval_shape(m.init, jax.random.key(0), _example(spec))),
      lambda m, variables, x: m.apply(variables, x),
    ),
  }
)


def _check_spec(spec: Any, where: str) -> ModelSpec:
  """`spec` with a tuple input_shape, or ValueError naming the field."""
  if not isinstance(spec, ModelSpec):
    raise TypeError(f"{where}: got a {type(spec).__name__}; expected a ModelSpec")
  if spec.family not in _FAMILIES:
    raise ValueError(f"{where}.family: {spec.family!r}; allowed: {', '.join(FAMILIES)}")
  if spec.task not in TASKS:
    raise ValueError(f"{where}.task: {spec.task!r}; allowed: {', '.join(TASKS)}")
  shape = tuple(spec.input_shape) if isinstance(spec.input_shape, (list, tuple)) else ()
  if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in shape):
    raise ValueError(f"{where}.input_shape: {spec.input_shape!r}; expected one example's shape, e.g. (8, 8, 1)")
  n = spec.num_outputs
  if isinstance(n, bool) or not isinstance(n, int) or n < 1 or (spec.task == "regression" and n != 1):
    raise ValueError(f"{where}.num_outputs: {n!r}; expected the class count (classification) or 1 (regression)")
  if not isinstance(spec.point, dict) or not isinstance(spec.options, dict):
    raise ValueError(f"{where}: point and options must be JSON objects (dicts)")
  return spec._replace(input_shape=shape)


def _predictions(spec: ModelSpec, out: jax.Array) -> jax.Array:
  """Class probabilities [n, K] of logits (or log-probabilities), or values [n]."""
  if spec.task == "classification":
    return jax.nn.softmax(out.astype(jnp.float32), axis=-1)
  return (out[:, 0] if out.ndim == 2 else out).astype(jnp.float32)


def _predict_fn(spec: ModelSpec, module: Any) -> Callable[[Any, jax.Array], jax.Array]:
  """(variables, x) -> predictions."""
  outputs = _FAMILIES[spec.family].outputs
  return lambda variables, x: _predictions(spec, outputs(module, variables, x))


class SavedModel(NamedTuple):
  """A network loaded by `load_model` (or built from a spec and variables).

  Attributes:
    spec: its ModelSpec.
    module: the Flax module (`ArchNet`, or `Nb201Net` with running batch-norm averages) or, for a
      conditional point, a `ChainMlp` (`module.apply(variables, x)` for both).
    variables: its Flax variables {"params": ..., "batch_stats": ...} (numpy leaves).
    apply: the jitted (variables, x) -> predictions that `predict` calls.
  """

  spec: ModelSpec
  module: Any
  variables: Any
  apply: Callable[[Any, jax.Array], jax.Array]

  def predict(self, x: Any) -> np.ndarray:
    """Predictions for inputs x [n, *input_shape] in the form the task's Dataset holds them
    (standardised as it standardised its data; float32).

    Returns:
      [n, num_outputs] class probabilities (classification), or [n] values (regression, in the
      standardised units of the Dataset's targets).
    """
    x = np.asarray(x, np.float32)
    if x.shape[1:] != self.spec.input_shape or x.ndim < 2:
      raise ValueError(
        f"predict: x has shape {x.shape}; expected [n, {', '.join(map(str, self.spec.input_shape))}]"
        " (a batch of inputs as the task's Dataset holds them)"
      )
    return np.asarray(self.apply(self.variables, x))


def _model(spec: ModelSpec, variables: Any, where: tuple[str, str]) -> SavedModel:
  """The SavedModel of a checked spec and variables that fit its network; ValueError otherwise,
  prefixed by where[0] for the spec, where[1] for the variables."""
  family = _FAMILIES[spec.family]
  try:
    module = family.build(spec)
  except (ValueError, TypeError) as e:
    raise ValueError(f"{where[0]}: the {spec.family} network does not build: {e}") from None
  try:
    fitted = warm_start.match_variables(variables, family.shapes(module, spec))
  except (ValueError, TypeError) as e:
    raise ValueError(f"{where[1]}: the variables do not fit the network: {e}") from None
  fitted = jax.tree.map(lambda a: np.asarray(a, np.float32), fitted)
  return SavedModel(spec, module, fitted, jax.jit(_predict_fn(spec, module)))


def _export(model: SavedModel) -> bytes:
  """The serialized `jax.export` of x [b, *input_shape] float32 -> predictions, b symbolic."""
  fn = functools.partial(_predict_fn(model.spec, model.module), model.variables)
  (b,) = jax.export.symbolic_shape("b")
  x = jax.ShapeDtypeStruct((b, *model.spec.input_shape), jnp.float32)
  return jax.export.export(jax.jit(fn), platforms=EXPORT_PLATFORMS)(x).serialize()


def save_model(directory: str, spec: ModelSpec, variables: Any) -> str:
  """Writes a model the user keeps: `directory`/model.json, variables.msgpack and
  predictor.jax_export (see the module docstring), each atomically.

  Args:
    directory: the folder (created if absent; files already there are replaced).
    spec: the ModelSpec.
    variables: the trained Flax variables of `spec`'s network (e.g. `FinalFit.variables`).

  Returns:
    `directory`.

  Raises:
    ValueError / TypeError: a bad spec, or variables that do not fit its network.
  """
  spec = _check_spec(spec, "spec")
  try:
    text = json.dumps({**spec._asdict(), "input_shape": list(spec.input_shape)}, indent=1, sort_keys=True)
  except (TypeError, ValueError) as e:
    raise ValueError(f"spec: point and options must hold JSON values only ({e})") from None
  model = _model(spec, variables, ("save_model: spec", "save_model"))
  directory = os.fspath(directory)
  weights.save_variables(os.path.join(directory, VARIABLES_FILE), model.variables)
  weights.write_atomic(os.path.join(directory, EXPORT_FILE), _export(model))
  weights.write_atomic(os.path.join(directory, MODEL_FILE), text.encode())  # last: a complete model
  return directory


def _read_spec(path: str) -> ModelSpec:
  try:
    with open(path, encoding="utf-8") as f:
      obj = json.load(f)
  except FileNotFoundError:
    raise FileNotFoundError(f"load_model: {path}: no such file (save_model writes it)") from None
  except (ValueError, UnicodeDecodeError) as e:
    raise ValueError(f"load_model: {path} is not valid JSON ({e})") from None
  if not isinstance(obj, dict) or set(obj) != set(ModelSpec._fields):
    keys = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
    raise ValueError(f"load_model: {path} holds {keys}; expected an object with keys {', '.join(ModelSpec._fields)}")
  try:
    return _check_spec(ModelSpec(**obj), path)
  except (ValueError, TypeError) as e:
    raise ValueError(f"load_model: {e}") from None


def load_model(directory: str) -> SavedModel:
  """The model `save_model` wrote in `directory`: `load_model(d).predict(x)`.

  Raises:
    FileNotFoundError: no directory, or a file of it missing (the message names it).
    ValueError: a file is corrupt, or the variables do not fit the network (named).
  """
  directory = os.fspath(directory)
  if not os.path.isdir(directory):
    raise FileNotFoundError(f"load_model: {directory}: no such directory (save_model writes one)")
  spec_path, path = os.path.join(directory, MODEL_FILE), os.path.join(directory, VARIABLES_FILE)
  spec = _read_spec(spec_path)
  try:
    variables = weights.load_variables(path)
  except (FileNotFoundError, ValueError) as e:
    raise type(e)(f"load_model: {e}") from None
  return _model(spec, variables, (f"load_model: {spec_path}", f"load_model: {path}"))
