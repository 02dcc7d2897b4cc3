"""Config files and command-line overrides: `path/to/config.py[:arg]` loaded as `--config=` loads
it, and `dotted.field=value` overrides applied to the loaded config."""

from __future__ import annotations

import ast
import difflib
import importlib.machinery
import importlib.util
import os
import sys
from typing import Sequence

import ml_collections

__all__ = ["load_config", "parse_overrides", "apply_overrides", "missing_field", "first_missing_field"]


def load_config(spec: str) -> ml_collections.ConfigDict:
  """Loads `path/to/config.py[:arg]` by calling its `get_config(arg)` (as `--config=` does).

  A file in a package folder (one with `__init__.py`, as configs/ is) builds on its siblings by
  import (`from configs import random_nb201`): that package is imported first, from beside the
  file rather than from sys.path, so the file loads from any working directory."""
  path, _, arg = spec.partition(":")
  if not path.endswith(".py") or not os.path.isfile(path):
    raise ValueError(f"configs: {spec!r}; expected an existing configs/*.py file, optionally with :arg")
  folder = os.path.dirname(os.path.realpath(path))
  if os.path.isfile(os.path.join(folder, "__init__.py")):
    _import_package(folder)
  module_spec = importlib.util.spec_from_file_location(f"_config_file_{abs(hash(path))}", path)
  module = importlib.util.module_from_spec(module_spec)
  module_spec.loader.exec_module(module)
  try:
    return module.get_config(arg) if arg else module.get_config()
  except (ValueError, TypeError) as e:  # a bad :arg; the user sees which of several configs it was
    raise ValueError(f"configs: {spec}: {e}") from e


def _import_package(folder: str) -> None:
  """Imports the package at `folder` under its folder's name, unless it is imported already."""
  name = os.path.basename(folder)
  if name not in sys.modules:
    spec = importlib.machinery.PathFinder.find_spec(name, [os.path.dirname(folder)])
    sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sys.modules[name])
  where = [os.path.realpath(p) for p in getattr(sys.modules[name], "__path__", [])]
  if where != [folder]:
    raise ValueError(f"configs: {folder}: package {name!r} was imported from {where}; one folder per process")


def parse_overrides(items: Sequence[str]) -> dict:
  """`["task.epochs=3", "num_workers=2"]` -> {"task.epochs": 3, "num_workers": 2}; values are
  Python literals, anything else is kept as a string."""
  out = {}
  for item in items:
    key, eq, text = item.partition("=")
    if not eq or not key or not all(key.split(".")):
      raise ValueError(f"overrides: {item!r}; expected dotted.field=value, e.g. task.epochs=3")
    try:
      out[key] = ast.literal_eval(text)
    except (ValueError, SyntaxError):
      out[key] = text
  return out


def missing_field(config: ml_collections.ConfigDict, key: str) -> str | None:
  """Why the dotted `key` is not a field of `config`, naming what is there; None when it is one."""
  section, where = config, "config"
  for name in key.split("."):
    if not isinstance(section, ml_collections.ConfigDict):
      return f"{where} is a {type(section).__name__} ({section!r}), not a group of fields"
    if name not in section:
      near = difflib.get_close_matches(name, section.keys(), n=1)
      hint = f"did you mean {near[0]!r}? " if near else ""
      return f"{where} has no field {name!r}; {hint}its fields are {', '.join(sorted(section.keys()))}"
    section, where = section[name], f"{where}.{name}"
  return None


def first_missing_field(config: ml_collections.ConfigDict, keys: Sequence[str]) -> tuple[str, str] | None:
  """(key, why) for the first dotted key that is not a field of `config`; None when all are."""
  for key in keys:
    why = missing_field(config, key)
    if why:
      return key, why
  return None


def apply_overrides(config: ml_collections.ConfigDict, overrides: dict, spec: str) -> None:
  """Sets each dotted field of `overrides` in `config`; a field the config lacks is an error,
  raised before any field is set."""
  missing = first_missing_field(config, list(overrides))
  if missing:
    raise ValueError(f"overrides: {missing[0]!r} is not a field of {spec}: {missing[1]}")
  for key, value in overrides.items():
    *parents, leaf = key.split(".")
    section = config
    for name in parents:
      section = section[name]
    section[leaf] = value
