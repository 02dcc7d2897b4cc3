"""Two rules of the code's style, guarded so that they do not drift back (beside test_layers.py,
which guards the imports):

- Functions stay short: at most 80 lines in nas_jax/search (the engine a reader follows first) and
  at most 100 elsewhere in nas_jax/ and launch/, decorators left out, nested functions counted in
  their parent too.
- Module-level tables are frozen: no dict, list or set (literal, comprehension or `dict(...)` call)
  is bound at the top level of a module of nas_jax/; a table is a tuple, a frozenset or a
  `types.MappingProxyType`, so no caller can change what every other caller reads. `__all__` is
  Python's own list and stays one.

Each rule lists the exceptions that exist, each with its reason, and fails on an entry that no
longer applies, so the lists only shrink.
"""

import ast
import os
from types import MappingProxyType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREES = ("nas_jax", "launch")
SEARCH = os.path.join("nas_jax", "search") + os.sep
SEARCH_LIMIT, LIMIT = 80, 100
# "path:qualified name" -> why the function is longer than its limit.
LONG_FUNCTIONS = MappingProxyType(
  {
    "nas_jax/arch/main_chain.py:check_arrays": "the main-chain rules, one check and its message after another",
    "nas_jax/search/loop.py:run": "the search loop in one reading: resume, propose, dispatch, record, stop",
    "nas_jax/experiments/compare.py:compare": "the harness's driver: runs, replays and writes the three outputs",
    "nas_jax/surrogates/surrogate.py:gp_surrogate": "a factory whose fit and predict close over its settings",
    "nas_jax/spaces/space.py:layer_graph_space": "a factory whose moves close over the space's limits and modifiers",
    "nas_jax/spaces/morph_space.py:morph_space": "a factory whose moves close over the morph space's settings",
  }
)
MUTABLE = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
MUTABLE_CALLS = ("dict", "list", "set")
# "path:name" -> why the module-level table stays mutable.
MUTABLE_TABLES = MappingProxyType(
  {
    "nas_jax/wiring/parts.py:SPACES": "a registry: a user adds a space by name (docs/extending.md)",
    "nas_jax/wiring/parts.py:STRATEGIES": "a registry: a user adds a strategy by name (docs/extending.md)",
    "nas_jax/wiring/registries.py:TASKS": "a registry: a user adds a task by name (docs/extending.md)",
    "nas_jax/wiring/registries.py:EXECUTORS": "a registry: a user adds an executor by name",
  }
)


def _sources(trees=TREES):
  """(path relative to ROOT, parsed module) of every .py file under `trees`."""
  for tree in trees:
    for dirpath, _, files in os.walk(os.path.join(ROOT, tree)):
      for f in sorted(files):
        if f.endswith(".py"):
          path = os.path.join(dirpath, f)
          with open(path) as fh:
            yield os.path.relpath(path, ROOT), ast.parse(fh.read())


def _functions(node, prefix=""):
  """(qualified name, def node) of every function under `node`, methods and nested ones too."""
  for child in ast.iter_child_nodes(node):
    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
      name = prefix + child.name
      if not isinstance(child, ast.ClassDef):
        yield name, child
      yield from _functions(child, name + ".")
    else:
      yield from _functions(child, prefix)


def long_functions() -> dict:
  """{"path:qualified name": lines} of every function over its limit."""
  out = {}
  for path, tree in _sources():
    limit = SEARCH_LIMIT if path.startswith(SEARCH) else LIMIT
    for name, node in _functions(tree):
      lines = node.end_lineno - node.lineno + 1
      if lines > limit:
        out[f"{path}:{name}"] = lines
  return out


def _top_level(body):
  """The module's top-level statements, those under a top-level if / try / with included."""
  for stmt in body:
    yield stmt
    if isinstance(stmt, (ast.If, ast.Try, ast.With)):
      for block in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])):
        yield from _top_level(block)
      for handler in getattr(stmt, "handlers", []):
        yield from _top_level(handler.body)


def unfrozen_tables() -> dict:
  """{"path:name": line} of every module-level dict / list / set bound in nas_jax/."""
  out = {}
  for path, tree in _sources(("nas_jax",)):
    for stmt in _top_level(tree.body):
      if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
        continue
      value = stmt.value
      call = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in MUTABLE_CALLS
      if not (isinstance(value, MUTABLE) or call):
        continue
      targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
      for t in targets:
        if isinstance(t, ast.Name) and t.id != "__all__":
          out[f"{path}:{t.id}"] = stmt.lineno
  return out


def test_no_function_over_its_limit():
  over = {k: v for k, v in long_functions().items() if k not in LONG_FUNCTIONS}
  assert not over, (
    f"functions over {SEARCH_LIMIT} lines in nas_jax/search or {LIMIT} elsewhere: {over}; split each into named"
    " steps (or, where it cannot be, list it in LONG_FUNCTIONS with the reason)"
  )


def test_long_function_exceptions_are_still_needed():
  stale = sorted(set(LONG_FUNCTIONS) - set(long_functions()))
  assert not stale, f"{stale} are within their limit now (or gone): remove them from LONG_FUNCTIONS"


def test_module_level_tables_are_frozen():
  found = unfrozen_tables()
  unfrozen = {k: v for k, v in found.items() if k not in MUTABLE_TABLES}
  assert not unfrozen, (
    f"module-level tables that any caller could change (path:name: line): {unfrozen}; make each a tuple,"
    " a frozenset or a types.MappingProxyType (or list it in MUTABLE_TABLES with the reason)"
  )


def test_mutable_table_exceptions_are_still_needed():
  stale = sorted(set(MUTABLE_TABLES) - set(unfrozen_tables()))
  assert not stale, f"{stale} are frozen now (or gone): remove them from MUTABLE_TABLES"
