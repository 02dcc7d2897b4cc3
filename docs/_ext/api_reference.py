"""Sphinx extension: the API reference, generated from `nas_jax.__all__` and `MODULES` at every build.

Each public name is documented under the package that defines it (`nas_jax.arch`,
`nas_jax.search`, ...), read from the object itself, so the reference follows the code when a
name is added, removed or moved. The modules of `MODULES`, those the manual, the README and the
notebooks import or name (`nas_jax.viz.plots`, `nas_jax.training.datasets`, ...), are documented
whole as well, each name of their `__all__` under the module's own path, on their package's
page. A documented name without a docstring is a warning, which the strict build (`-W`) turns
into an error: a class or function needs its own docstring, a constant (a registry, a table) a
`#:` comment or a string under its assignment, or else the comment right above it or at the end
of its line. Annotations name nas_jax types by the path of their definition: those link to the
entry that documents them, and an internal type without one is shown as text.

The pages are written to docs/generated/api/ (not committed) before Sphinx reads the sources.
`documented()` lists every name they document without Sphinx (tests/test_api_reference.py
checks the manual's imports against it).
"""

import ast
import importlib
import inspect
import os
import re
import sys

# Titles of the layers; a package not listed here is titled by its name.
TITLES = {
  "arch": "Architectures and cells",
  "spaces": "Search spaces",
  "features": "Distances, encodings and featurizers",
  "surrogates": "Kernels, GPs and ensembles",
  "acquisition": "Acquisition functions and optimisers",
  "search": "The search loop, strategies and schedulers",
  "models": "Models",
  "training": "Training",
  "tasks": "Tasks",
  "viz": "Plots and reports",
  "wiring": "Configs",
  "experiments": "Experiments",
}


# Modules documented whole: those the manual (docs/*.md), the README and the notebooks (colabs/)
# import or name. tests/test_api_reference.py fails naming a module they use that is not here.
MODULES = (
  "nas_jax.arch.cell",
  "nas_jax.arch.conditional_point",
  "nas_jax.arch.host_threads",
  "nas_jax.arch.kinds",
  "nas_jax.arch.json_io",
  "nas_jax.arch.main_chain",
  "nas_jax.arch.morphism",
  "nas_jax.features.bourgain",
  "nas_jax.features.edit_distance",
  "nas_jax.features.otmann_bounds",
  "nas_jax.features.otmann_solver",
  "nas_jax.features.pairwise",
  "nas_jax.spaces.conditional",
  "nas_jax.spaces.constrained",
  "nas_jax.surrogates.conditional_models",
  "nas_jax.surrogates.gp",
  "nas_jax.surrogates.kernels",
  "nas_jax.surrogates.priors",
  "nas_jax.acquisition.continuous",
  "nas_jax.search.curves",
  "nas_jax.search.journal",
  "nas_jax.search.strategies.baselines",
  "nas_jax.search.strategies.regularized_evolution",
  "nas_jax.search.strategies.schedulers",
  "nas_jax.models.arch_net",
  "nas_jax.models.chain_mlp",
  "nas_jax.models.morph_variables",
  "nas_jax.models.nb201_net",
  "nas_jax.models.padded_cnn",
  "nas_jax.models.padded_mlp",
  "nas_jax.training.conditional",
  "nas_jax.training.datasets",
  "nas_jax.training.final_fit",
  "nas_jax.training.nb201_training",
  "nas_jax.training.population",
  "nas_jax.training.saved_model",
  "nas_jax.training.specialised",
  "nas_jax.training.weights",
  "nas_jax.proxies.arch_nets",
  "nas_jax.proxies.measures",
  "nas_jax.proxies.nb201_nets",
  "nas_jax.proxies.net",
  "nas_jax.proxies.proxy",
  "nas_jax.proxies.relu_codes",
  "nas_jax.proxies.scoring",
  "nas_jax.tasks.synthetic",
  "nas_jax.tasks.tabular",
  "nas_jax.tasks.train_task",
  "nas_jax.viz.drawing",
  "nas_jax.viz.plots",
  "nas_jax.wiring.config",
  "nas_jax.wiring.config_files",
  "nas_jax.wiring.final",
  "nas_jax.wiring.names",
  "nas_jax.wiring.parts",
  "nas_jax.wiring.proxies",
  "nas_jax.wiring.registries",
  "nas_jax.wiring.score_table",
  "nas_jax.experiments.combinations",
  "nas_jax.experiments.compare",
  "nas_jax.experiments.final_training",
  "nas_jax.experiments.predictor_experiment",
  "nas_jax.experiments.regret",
  "nas_jax.experiments.report",
  "nas_jax.experiments.study",
  "nas_jax.experiments.study_results",
  "nas_jax.experiments.study_runner",
)


def _package(module: str) -> str:
  """The page a module's names go on: "arch" for nas_jax.arch.cell, "nas_jax" for nas_jax."""
  return module.split(".")[1] if module.count(".") else "nas_jax"


def _members(module_name: str) -> list:
  """The public names of a module of MODULES: its `__all__`, which every module of nas_jax has."""
  module = importlib.import_module(module_name)
  if not hasattr(module, "__all__"):
    raise ValueError(f"{module_name} has no __all__; MODULES holds modules that say what is public")
  return list(module.__all__)


def documented() -> frozenset:
  """Every name the reference documents: nas_jax, its top-level names (`nas_jax.Architecture`),
  the packages, and each module of MODULES with the names of its `__all__`. Needs no Sphinx."""
  import nas_jax

  out = {"nas_jax", *(f"nas_jax.{name}" for name in nas_jax.__all__)}
  for module in MODULES:
    out |= {module, ".".join(module.split(".")[:2]), *(f"{module}.{name}" for name in _members(module))}
  return frozenset(out)


def _modules():
  """The submodules of nas_jax that importing it loaded: every public name's home is among them."""
  return [m for n, m in sorted(sys.modules.items()) if n.startswith("nas_jax.") and m is not None]


def _assignment(module, name: str):
  """The top-level statement of `module`'s source that assigns `name` (`X = ...`, `X: T = ...`,
  `X, Y = ...`), or None."""
  try:
    tree = ast.parse(inspect.getsource(module))
  except (OSError, TypeError):
    return None
  for node in tree.body:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    names = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    if any(isinstance(t, ast.Name) and t.id == name for t in names):
      return node
  return None


def _comments(module, node) -> str:
  """The plain comments that say what an assignment holds: the block of comment lines right above
  it, or else the comment at the end of its first line (`X = 3  # what X is`)."""
  lines = inspect.getsource(module).splitlines()
  above, i = [], node.lineno - 2
  while i >= 0 and lines[i].lstrip().startswith("#") and not lines[i].lstrip().startswith("#:"):
    above.insert(0, lines[i].lstrip()[1:].strip())
    i -= 1
  first = lines[node.lineno - 1]
  return " ".join(above) if above else first.split("  # ", 1)[1].strip() if "  # " in first else ""


def _is_data(obj) -> bool:
  return not (inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj) and hasattr(obj, "__qualname__"))


def _entry(name: str, obj, modules) -> dict:
  """Where `name` is defined, what kind of object it is, and its documentation ("" if none)."""
  from sphinx.pycode import ModuleAnalyzer

  if not _is_data(obj):
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    auto = inspect.isclass(obj) and doc and doc.startswith(f"{obj.__name__}(")  # NamedTuple's, dataclass's
    kind = "class" if inspect.isclass(obj) else "function"
    if doc or auto or getattr(obj, "__name__", name) == name:
      return {"module": obj.__module__, "kind": kind, "doc": "" if auto else (doc or "").strip()}
    # a function made by assignment (an initializer, a partial): documented as data, by its `#:` comment
  for module in modules:
    node = _assignment(module, name) if getattr(module, name, None) is obj else None
    if node is not None:
      docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
      doc = "\n".join(docs.get(("", name), [])).strip() or _comments(module, node)
      return {"module": module.__name__, "kind": "data", "doc": doc}
  return {"module": "nas_jax", "kind": "data", "doc": ""}


def _directive(name: str, entry: dict, module: str = "nas_jax") -> str:
  if entry["kind"] == "class":
    return f"```{{eval-rst}}\n.. autoclass:: {module}.{name}\n   :members:\n```\n"
  if entry["kind"] == "function":
    return f"```{{eval-rst}}\n.. autofunction:: {module}.{name}\n```\n"
  body = "\n".join(f"   {line}" for line in _rst_safe(entry["doc"].splitlines()))
  return f"```{{eval-rst}}\n.. py:data:: {name}\n   :module: {module}\n\n{body}\n```\n"


_PLURAL = re.compile(r"(?<=[\w)\]])`(?=[a-z])")  # the closing quote of "`Cell`s"
_SECTION = re.compile(r"^\s*[A-Z][A-Za-z ]*:\s*$")  # "Args:", "Returns:", ... (Google style)


def _rst_safe(lines: list) -> list:
  """Docstrings here are plain text in Google style, with `code` in backticks. Three things in
  such text mean something else in reStructuredText, so they are neutralised before napoleon
  reads the sections: a line with an unpaired `*` (as in `fn(*args)`) gets its stars escaped, a
  `|` (as in `|x - y|`) is escaped, a code span followed by letters (a plural) is closed with an
  escaped space, and in the prose before the first section a continuation line
  indented under its sentence is joined to it instead of starting a block quote."""
  out, in_sections, indent = [], False, 0
  for line in lines:
    unpaired = line.count("*") % 2 or line.count("**") % 2
    line = line.replace("*", "\\*") if unpaired else line
    line = line.replace("|", "\\|")
    line = _PLURAL.sub("`\\ ", line)
    in_sections = in_sections or bool(_SECTION.match(line))
    depth = len(line) - len(line.lstrip())
    if not in_sections and line.strip() and out and out[-1].strip() and depth > indent:
      line = " " * indent + line.lstrip()
    elif line.strip():
      indent = depth
    out.append(line)
  return out


def _process_docstring(app, what, name, obj, options, lines) -> None:
  lines[:] = _rst_safe(lines)


def _write(path: str, text: str) -> None:
  """Writes `text` unless the file already holds it (so an unchanged page is not rebuilt)."""
  if os.path.exists(path):
    with open(path) as f:
      if f.read() == text:
        return
  with open(path, "w") as f:
    f.write(text)


def _warn_undocumented(full: str, entry: dict) -> None:
  from sphinx.util import logging

  logging.getLogger(__name__).warning(
    f"{full} (defined in {entry['module']}) has no docstring; every public name needs one",
    type="nas_jax",
    subtype="api",
  )


def _home(obj, module_name: str) -> str:
  """Where a class or function that `module_name` exports is documented in full, when that is
  elsewhere: its top-level name, or its defining module's entry ("" if neither)."""
  import nas_jax

  if _is_data(obj):
    return ""
  top = next((n for n in nas_jax.__all__ if getattr(nas_jax, n) is obj), "")
  if top:
    return f"nas_jax.{top}"
  defining = obj.__module__
  if defining != module_name and defining in MODULES and obj.__name__ in _members(defining):
    return f"{defining}.{obj.__name__}"
  return ""


def _module_section(module_name: str, modules: list) -> list:
  """A module of MODULES: its docstring, then each name of its `__all__` under the module's path;
  a class or function documented elsewhere (a top-level name, a re-export) links to that entry,
  as documenting a class twice would register its canonical name twice."""
  module = importlib.import_module(module_name)
  lines = [f"## `{module_name}`", "", f"```{{eval-rst}}\n.. automodule:: {module_name}\n```", ""]
  for name in _members(module_name):
    obj, home = getattr(module, name), _home(getattr(module, name), module_name)
    if home:
      kind = "class" if inspect.isclass(obj) else "function"
      text = f"The same {kind} as :py:{'class' if kind == 'class' else 'func'}:`{home}`."
      lines += [
        f"### `{name}`",
        "",
        f"```{{eval-rst}}\n.. py:{kind}:: {name}\n   :module: {module_name}\n\n   {text}\n```\n",
      ]
      continue
    entry = _entry(name, obj, [module, *modules])
    if not entry["doc"]:
      _warn_undocumented(f"{module_name}.{name}", entry)
    lines += [f"### `{name}`", "", _directive(name, entry, module_name)]
  return lines


def generate(app) -> None:
  """Writes docs/generated/api/index.md and one page per package (its top-level names, then its
  modules of MODULES); warns for each undocumented name."""
  import nas_jax

  modules = _modules()
  groups: dict = {}
  for name in nas_jax.__all__:
    entry = _entry(name, getattr(nas_jax, name), modules)
    if not entry["doc"]:
      _warn_undocumented(f"nas_jax.{name}", entry)
    groups.setdefault(_package(entry["module"]), []).append((name, entry))
  by_package: dict = {}
  for module in MODULES:
    by_package.setdefault(_package(module), []).append(module)
  out = os.path.join(app.srcdir, "generated", "api")
  os.makedirs(out, exist_ok=True)
  packages = set(groups) | set(by_package)
  order = [p for p in TITLES if p in packages] + sorted(p for p in packages if p not in TITLES)
  index = [
    "# API reference",
    "",
    "```{eval-rst}",
    ".. py:module:: nas_jax",
    "```",
    "",
    "Generated from `nas_jax.__all__` when the manual is built: every public name, under the package",
    "that defines it, with its docstring. Import them from the top level (`nas_jax.Architecture`).",
    "Each package's page then documents whole the modules the manual and the notebooks import from",
    "(`from nas_jax.viz import plots`), each name under the module's own path.",
    "",
    "```{toctree}",
    ":hidden:",
    "",
    *order,
    "```",
  ]
  for package in order:
    title = TITLES.get(package, package)
    names = [n for n, _ in groups.get(package, [])]
    index += ["", f"## [{title}]({package}.md)", ""]
    index += [", ".join(f"{{py:obj}}`~nas_jax.{n}`" for n in names)] if names else []
    own = by_package.get(package, [])
    index += ["", "Modules: " + ", ".join(f"{{py:mod}}`{m}`" for m in own)] if own else []
    page = [f"# {title}", ""]
    if package != "nas_jax":  # the index declares nas_jax itself
      page += [f"```{{eval-rst}}\n.. py:module:: nas_jax.{package}\n```", ""]
    if names:
      page += [f"Defined in `nas_jax.{package}`; imported as `nas_jax.<name>`.", ""]
      page += [f"## `{name}`\n\n{_directive(name, entry)}" for name, entry in groups[package]]
    for module in own:
      page += _module_section(module, modules)
    _write(os.path.join(out, f"{package}.md"), "\n".join(page))
  for stale in set(os.listdir(out)) - {f"{p}.md" for p in order} - {"index.md"}:
    os.remove(os.path.join(out, stale))
  _write(os.path.join(out, "index.md"), "\n".join(index) + "\n")


def find(parts: list[str]):
  """The object a dotted path's parts name (its longest importable prefix, then attributes), or
  None."""
  for depth in range(len(parts), 0, -1):
    try:
      obj = importlib.import_module(".".join(parts[:depth]))
    except ImportError:
      continue
    for part in parts[depth:]:
      obj = getattr(obj, part, None)
    return obj
  return None


def _lookup(target: str, module: str | None):
  """The object a reference names: a full `nas_jax.` path, or a name in the module it is read in
  (a string annotation such as "TrainConfig"); None when there is none."""
  path = target if target.startswith("nas_jax.") else f"{module}.{target}" if module else ""
  return find(path.split(".")) if path else None


def _missing_reference(app, env, node, contnode):
  """A nas_jax class or function that a signature names by the path of its definition (its
  annotation) links to the entry that documents it; one that has no entry (an internal type:
  a protocol, a config tuple) is shown as plain text. A name that does not exist is left
  unresolved, so the strict build fails on it."""
  if node.get("refdomain") != "py":
    return None
  obj = _lookup(node["reftarget"], node.get("py:module"))
  if obj is None and node.get("py:class"):  # a name in the module of the class it annotates
    owner = _lookup(node["py:class"], node.get("py:module"))
    obj = _lookup(node["reftarget"], getattr(owner, "__module__", None))
  if obj is None and "." not in node["reftarget"]:  # a bare name (a class signature's annotation)
    found = [getattr(m, node["reftarget"], None) for m in _modules()]
    defined = {id(o): o for o in found if not _is_data(o) and (o.__module__ or "").startswith("nas_jax")}
    obj = next(iter(defined.values())) if len(defined) == 1 else None
  if obj is None or _is_data(obj) or not (getattr(obj, "__module__", None) or "").startswith("nas_jax"):
    return None
  entries = {}
  for name in sorted(documented(), key=lambda n: (n.count("."), n), reverse=True):  # the top level wins
    parts = name.rsplit(".", 1)
    found = getattr(importlib.import_module(parts[0]), parts[1], None) if len(parts) == 2 else None
    if found is not None and not _is_data(found):
      entries[id(found)] = name
  if id(obj) not in entries:
    return contnode
  return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, "obj", entries[id(obj)], node, contnode)


def setup(app):
  app.connect("builder-inited", generate)
  app.connect("autodoc-process-docstring", _process_docstring, priority=400)
  app.connect("missing-reference", _missing_reference)
  return {"parallel_read_safe": True, "version": "1"}
