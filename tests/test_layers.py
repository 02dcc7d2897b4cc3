"""Imports flow one way down the layers: arch -> spaces -> features -> surrogates -> acquisition ->
search -> models -> training -> proxies -> tasks -> viz -> wiring -> experiments (then launch/,
outside the package). A module never imports from a package listed after its own; features,
models, training, proxies and tasks see only `arch` of the earlier layers (plus the Task and
Observation types for tasks); nothing imports nas_jax by string."""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nas_jax")
ORDER = [
  "arch",
  "spaces",
  "features",
  "surrogates",
  "acquisition",
  "search",
  "models",
  "training",
  "proxies",
  "tasks",
  "viz",
  "wiring",
  "experiments",
]
# Besides their own package, features/ compare points, models/ build networks of them, training/
# trains those networks and tasks/ evaluate points, so they read the point types in arch/ and
# nothing of the spaces that make those points.
MAY_IMPORT = {
  "features": ("arch",),
  "models": ("arch",),
  "training": ("arch", "models"),
  "proxies": ("arch", "models"),
  "tasks": ("arch", "models", "training", "search.task", "search.state"),
}
# Calls that import a module named by a string: they would hide an import from this test.
DYNAMIC_IMPORTS = {"import_module", "__import__"}


def _modules():
  for dirpath, _, files in os.walk(ROOT):
    for f in files:
      if f.endswith(".py"):
        rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
        yield rel, os.path.join(dirpath, f)


def _tree(path):
  with open(path) as f:
    return ast.parse(f.read())


def _imports(tree):
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nas_jax"):
      yield from (node.module + "." + a.name for a in node.names)
    elif isinstance(node, ast.Import):
      yield from (a.name for a in node.names if a.name.startswith("nas_jax"))


def _dynamic_imports(tree):
  for node in ast.walk(tree):
    if isinstance(node, ast.Call):
      f = node.func
      name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
      if name in DYNAMIC_IMPORTS:
        yield node.lineno, name
      elif any(isinstance(c, ast.Constant) and "nas_jax" in str(c.value) for a in node.args for c in ast.walk(a)):
        if name and "spec" in name:  # importlib.util.spec_from_file_location("nas_jax...", ...)
          yield node.lineno, name


MODULES = sorted(_modules())


def test_every_module_sits_in_a_layer():
  stray = [rel for rel, _ in MODULES if rel != "__init__.py" and rel.split(os.sep)[0] not in ORDER]
  assert not stray, f"{stray} sit outside the layers {ORDER}: move each into the package it belongs to"


@pytest.mark.parametrize("rel, path", MODULES)
def test_imports_flow_down_the_layers(rel, path):
  package = rel.split(os.sep)[0]
  if package == "__init__.py":  # nas_jax/__init__.py is the public API on top of every layer
    return
  level = ORDER.index(package)
  for name in _imports(_tree(path)):
    parts = name.split(".")
    assert len(parts) > 1 and parts[1] in ORDER, f"{rel} imports {name}, which is in no layer"
    target = parts[1]
    assert ORDER.index(target) <= level, f"{rel} imports {name}: {target} comes after {package}"
    if package in MAY_IMPORT and target != package:
      allowed = any(".".join(parts[1:]).startswith(a) for a in MAY_IMPORT[package])
      assert allowed, f"{rel} imports {name}; {package}/ may import only {list(MAY_IMPORT[package])} besides itself"


@pytest.mark.parametrize("rel, path", MODULES)
def test_no_module_imports_by_string(rel, path):
  found = list(_dynamic_imports(_tree(path)))
  assert not found, f"{rel} imports by string at lines {found}: import the module directly"


def test_the_checks_catch_what_they_forbid(tmp_path):
  bad = tmp_path / "bad.py"
  bad.write_text(
    "import importlib\n"
    "m = importlib.import_module('nas_jax.training.specialised')\n"
    "spec = importlib.util.spec_from_file_location('nas_jax.x', 'x.py')\n"
    "from nas_jax.experiments import compare\n"
  )
  tree = _tree(bad)
  assert [n for _, n in _dynamic_imports(tree)] == ["import_module", "spec_from_file_location"]
  assert list(_imports(tree)) == ["nas_jax.experiments.compare"]
