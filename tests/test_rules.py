"""Two rules of the code's style, guarded so that they do not drift back (beside test_layers.py,
which guards the imports):

- Functions stay short: at most 80 lines in nas_jax/search (the engine a reader follows first) and
  at most 100 elsewhere in nas_jax/ and launch/, decorators left out, nested functions counted in
  their parent too.
- Module-level tables are frozen: no dict, list or set (literal, comprehension or `dict(...)` call)
  is bound at the top level of a module of nas_jax/; a table is a tuple, a frozenset or a
  `types.MappingProxyType`, so no caller can change what every other caller reads. `__all__` is
  Python's own list and stays one.
- Names become values in nas_jax/wiring only: no module-level table below it maps names to
  functions, classes or partials; parts take the values, and wiring/ turns a config's names into them.
- Network kinds are descriptors: outside nas_jax/arch, nas_jax/spaces and nas_jax/wiring no `.kind`
  is compared (==, !=, in, not in) or used as a subscript or dict key; code reads the fields of
  `nas_jax.arch.kinds.of(point)` instead.

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


# Network kinds are read through their descriptor (`nas_jax.arch.kinds.Kind`), not tested as
# strings: outside the packages that define kinds and turn config names into them, no `.kind` is
# compared with ==, !=, in or not in, or used as a subscript or a dict key.
KIND_PACKAGES = tuple(os.path.join("nas_jax", p) + os.sep for p in ("arch", "spaces", "wiring"))
KIND_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
# "path:qualified function" -> why a `.kind` is compared or used as a key there.
KIND_TESTS = MappingProxyType(
  {"nas_jax/search/results.py:_is_number": "numpy's dtype.kind, a type code, not a network kind"}
)


def _is_kind(node) -> bool:
  if isinstance(node, ast.Tuple):
    return any(_is_kind(e) for e in node.elts)
  return isinstance(node, ast.Attribute) and node.attr == "kind"


def _kind_tests(node, where="<module>"):
  """(qualified function, line) of every `.kind` compared or used as a key under `node`."""
  for child in ast.iter_child_nodes(node):
    compared = isinstance(child, ast.Compare) and any(isinstance(op, KIND_OPS) for op in child.ops)
    if (
      (compared and any(_is_kind(x) for x in (child.left, *child.comparators)))
      or (isinstance(child, ast.Subscript) and _is_kind(child.slice))
      or (isinstance(child, ast.Dict) and any(k is not None and _is_kind(k) for k in child.keys))
      or (isinstance(child, ast.DictComp) and _is_kind(child.key))
    ):
      yield where, child.lineno
    inner = where
    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
      inner = child.name if where == "<module>" else f"{where}.{child.name}"
    yield from _kind_tests(child, inner)


def kind_tests() -> dict:
  """{"path:qualified function": [lines]} of every string test of a `.kind` in nas_jax/ outside
  KIND_PACKAGES (launch/ sits above wiring/, where configs' names are read)."""
  out: dict = {}
  for path, tree in _sources(("nas_jax",)):
    if not path.startswith(KIND_PACKAGES):
      for where, line in _kind_tests(tree):
        out.setdefault(f"{path}:{where}", []).append(line)
  return out


def test_network_kinds_are_not_tested_as_strings():
  found = {k: v for k, v in kind_tests().items() if k not in KIND_TESTS}
  assert not found, (
    f"`.kind` compared or used as a key (path:function: lines): {found}; read a field of"
    " `nas_jax.arch.kinds.of(point)` instead (or list it in KIND_TESTS with the reason)"
  )


def test_kind_test_exceptions_are_still_needed():
  stale = sorted(set(KIND_TESTS) - set(kind_tests()))
  assert not stale, f"{stale} test no `.kind` now (or are gone): remove them from KIND_TESTS"


def test_the_kind_check_catches_what_it_forbids():
  tree = ast.parse(
    "def f(arch, other, table):\n"
    "  a = arch.kind == 'mlp'\n"
    "  b = 'cnn' != arch.kind\n"
    "  c = arch.kind in ('cnn', 'mlp')\n"
    "  d = other.kind not in table\n"
    "  e = table[arch.kind]\n"
    "  g = {arch.kind: 1}\n"
    "  h = {a.kind: a for a in other}\n"
    "  return table(arch.kind), {a.kind for a in other}, arch.kind < 'z'\n"
  )
  assert list(_kind_tests(tree)) == [("f", line) for line in range(2, 9)]


# Names become values in nas_jax/wiring only: elsewhere no module-level table maps names to
# functions, classes or partials (a dict, dict comprehension or MappingProxyType of one whose
# values include a lambda, a partial, a def or class of the module, or an imported callable).
# Parts take those values; the tables that turn a config's names into them live in wiring/.
WIRING = os.path.join("nas_jax", "wiring") + os.sep
# "path:name" -> why the name -> callable table stays below wiring/.
CALLABLE_TABLES = MappingProxyType(
  {
    "nas_jax/models/arch_net.py:ACTIVATIONS": "an Architecture's labels are data (the interchange JSON's"
    " vocabulary, arch/labels.py); the model is where a layer's label becomes its activation function",
    "nas_jax/training/train_config.py:OPTIMIZERS": "a TrainConfig is a recorded recipe (final_fit writes it as"
    " JSON): its optimizer is a name, made an optax transformation where the recipe runs, in a worker",
    "nas_jax/features/encodings.py:ENCODINGS": "BANANAS' cell encodings by the paper's names (Sec. 5.1), which"
    " key the jitted encoder, the sizes and the featurizers' names; not yet values (issue #66 item 2)",
  }
)


def _names_of_callables(tree) -> set:
  """Module-level names of tree that are callables: defs, classes, imported functions and classes
  (by Python's naming: an imported CAPITALS name is a constant), lambdas and partials."""
  out = set()
  for stmt in _top_level(tree.body):
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
      out.add(stmt.name)
    elif isinstance(stmt, ast.ImportFrom):
      out.update(a.asname or a.name for a in stmt.names if not (a.asname or a.name).isupper())
    elif isinstance(stmt, ast.Assign) and _is_callable(stmt.value, set()):
      out.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
  return out


def _is_callable(node, names: set) -> bool:
  """Whether `node`, a table's value, is statically a function, class or partial."""
  if isinstance(node, ast.Lambda):
    return True
  if isinstance(node, ast.Call):
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "partial") or (isinstance(f, ast.Attribute) and f.attr == "partial")
  if isinstance(node, ast.Name):
    return node.id in names
  if isinstance(node, ast.Attribute):  # module.function or module.Class; module.CONSTANT is data
    return isinstance(node.value, ast.Name) and not node.attr.isupper()
  if isinstance(node, ast.Tuple):
    return any(_is_callable(e, names) for e in node.elts)
  return False


def _table_values(node) -> list:
  """The value expressions of a dict literal, dict comprehension, or a MappingProxyType / dict call
  around one; [] for anything else."""
  if isinstance(node, ast.Call) and node.args:
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return _table_values(node.args[0]) if name in ("MappingProxyType", "dict") else []
  if isinstance(node, ast.DictComp):
    return [node.value]
  if isinstance(node, ast.Dict):
    return [v for k, v in zip(node.keys, node.values) if k is not None] + [
      x for k, v in zip(node.keys, node.values) if k is None for x in _table_values(v)
    ]
  return []


def _callable_tables(tree) -> dict:
  """{name: line} of the module-level name -> callable tables of a parsed module."""
  names, out = _names_of_callables(tree), {}
  for stmt in _top_level(tree.body):
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
      if any(_is_callable(v, names) for v in _table_values(stmt.value)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        out.update({t.id: stmt.lineno for t in targets if isinstance(t, ast.Name)})
  return out


def callable_tables() -> dict:
  """{"path:name": line} of every name -> callable table in nas_jax/ outside nas_jax/wiring."""
  return {
    f"{path}:{name}": line
    for path, tree in _sources(("nas_jax",))
    if not path.startswith(WIRING)
    for name, line in _callable_tables(tree).items()
  }


def test_names_become_values_in_wiring_only():
  found = {k: v for k, v in callable_tables().items() if k not in CALLABLE_TABLES}
  assert not found, (
    f"name -> callable tables below wiring/ (path:name: line): {found}; make the part take the value"
    " and move the table into nas_jax/wiring (e.g. wiring/names.py), or list it in CALLABLE_TABLES"
    " with the reason"
  )


def test_callable_table_exceptions_are_still_needed():
  stale = sorted(set(CALLABLE_TABLES) - set(callable_tables()))
  assert not stale, f"{stale} hold no callables now (or are gone): remove them from CALLABLE_TABLES"


def test_the_table_check_catches_what_it_forbids():
  tree = ast.parse(
    "import functools\n"
    "from types import MappingProxyType\n"
    "from optax import adam\n"
    "from x import LIMIT\n"
    "def f(): pass\n"
    "class C: pass\n"
    "g = lambda: 0\n"
    "A = {'f': f}\n"
    "B = MappingProxyType({'c': C, 'n': 1})\n"
    "D = MappingProxyType({k: functools.partial(f, k) for k in 'ab'})\n"
    "E = {'adam': adam, **{'g': g}}\n"
    "F = MappingProxyType({'sgd': optax.sgd})\n"
    "G = MappingProxyType({'a': (LIMIT, f)})\n"
    "DATA = MappingProxyType({'limit': LIMIT, 'file': tabular.NB201_FILE, 'n': (1, 2)})\n"
  )
  assert _callable_tables(tree) == {"A": 8, "B": 9, "D": 10, "E": 11, "F": 12, "G": 13}
