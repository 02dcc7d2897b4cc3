"""Imports flow one way down the pipeline: arch -> spaces -> features -> surrogates ->
acquisition -> search -> tasks. A module never imports from a package listed after its own, and
no pipeline module imports the modules on top of it (plots, drawing, report)."""

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nas_jax")
ORDER = ["arch", "spaces", "features", "surrogates", "acquisition", "search", "tasks"]
# tasks/ evaluates architectures; besides arch it may only see the Task/Observation types.
TASKS_MAY_IMPORT = {"arch", "spaces", "search.task", "search.state"}
TOP = (
  "plots",
  "drawing",
  "report",
  "conditional_experiment",
)  # nas_jax/<name>.py: they read the pipeline, never the reverse


def _modules():
  for dirpath, _, files in os.walk(ROOT):
    for f in files:
      rel = os.path.relpath(os.path.join(dirpath, f), ROOT)
      # nas_jax/__init__.py and plots.py sit on top of the pipeline and may import anything.
      if f.endswith(".py") and rel.split(os.sep)[0] in ORDER:
        yield rel, os.path.join(dirpath, f)


def _imports(path):
  tree = ast.parse(open(path).read())
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nas_jax"):
      names = [node.module + "." + a.name for a in node.names]
      yield from names
    elif isinstance(node, ast.Import):
      yield from (a.name for a in node.names if a.name.startswith("nas_jax"))


@pytest.mark.parametrize("rel, path", sorted(_modules()))
def test_imports_flow_down_the_pipeline(rel, path):
  package = rel.split(os.sep)[0]
  level = ORDER.index(package)
  for name in _imports(path):
    parts = name.split(".")
    assert len(parts) < 2 or parts[1] not in TOP, f"{rel} imports {name}, which sits on top of the pipeline"
    if len(parts) < 2 or parts[1] not in ORDER:
      continue
    target = parts[1]
    assert ORDER.index(target) <= level, f"{rel} imports {name}: {target} comes after {package}"
    if package == "tasks" and target != "tasks":
      allowed = any(".".join(parts[1:]).startswith(a) for a in TASKS_MAY_IMPORT)
      assert allowed, f"{rel} imports {name}; tasks/ may import only {sorted(TASKS_MAY_IMPORT)}"
