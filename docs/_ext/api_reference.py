"""Sphinx extension: the API reference, generated from `nas_jax.__all__` at every build.

Each public name is documented under the package that defines it (`nas_jax.arch`,
`nas_jax.search`, ...), read from the object itself, so the reference follows the code when a
name is added, removed or moved. A public name without a docstring is a warning, which the
strict build (`-W`) turns into an error: a class or function needs its own docstring, a
constant (a registry, a table) a `#:` comment or a string under its assignment.

The pages are written to docs/generated/api/ (not committed) before Sphinx reads the sources.
"""

import ast
import inspect
import os
import re
import sys

from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

logger = logging.getLogger(__name__)

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


def _modules():
  """The submodules of nas_jax that importing it loaded: every public name's home is among them."""
  return [m for n, m in sorted(sys.modules.items()) if n.startswith("nas_jax.") and m is not None]


def _assigns(module, name: str) -> bool:
  """Whether `module`'s source assigns `name` at the top level."""
  try:
    tree = ast.parse(inspect.getsource(module))
  except (OSError, TypeError):
    return False
  for node in tree.body:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    if any(isinstance(t, ast.Name) and t.id == name for t in targets):
      return True
  return False


def _is_data(obj) -> bool:
  return not (inspect.isclass(obj) or inspect.isroutine(obj) or callable(obj) and hasattr(obj, "__qualname__"))


def _entry(name: str, obj, modules) -> dict:
  """Where `name` is defined, what kind of object it is, and its documentation ("" if none)."""
  if not _is_data(obj):
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    auto = inspect.isclass(obj) and doc and doc.startswith(f"{obj.__name__}(")  # NamedTuple's, dataclass's
    kind = "class" if inspect.isclass(obj) else "function"
    return {"module": obj.__module__, "kind": kind, "doc": "" if auto else (doc or "").strip()}
  for module in modules:
    if getattr(module, name, None) is obj and _assigns(module, name):
      docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
      return {"module": module.__name__, "kind": "data", "doc": "\n".join(docs.get(("", name), [])).strip()}
  return {"module": "nas_jax", "kind": "data", "doc": ""}


def _directive(name: str, entry: dict) -> str:
  if entry["kind"] == "class":
    return f"```{{eval-rst}}\n.. autoclass:: nas_jax.{name}\n   :members:\n```\n"
  if entry["kind"] == "function":
    return f"```{{eval-rst}}\n.. autofunction:: nas_jax.{name}\n```\n"
  body = "\n".join(f"   {line}" for line in _rst_safe(entry["doc"].splitlines()))
  return f"```{{eval-rst}}\n.. py:data:: {name}\n   :module: nas_jax\n\n{body}\n```\n"


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


def generate(app) -> None:
  """Writes docs/generated/api/index.md and one page per package; warns for each undocumented name."""
  import nas_jax

  modules = _modules()
  groups: dict = {}
  for name in nas_jax.__all__:
    entry = _entry(name, getattr(nas_jax, name), modules)
    if not entry["doc"]:
      logger.warning(
        f"nas_jax.{name} (defined in {entry['module']}) has no docstring; every public name needs one",
        type="nas_jax",
        subtype="api",
      )
    package = entry["module"].split(".")[1] if entry["module"].count(".") else "nas_jax"
    groups.setdefault(package, []).append((name, entry))
  out = os.path.join(app.srcdir, "generated", "api")
  os.makedirs(out, exist_ok=True)
  order = [p for p in TITLES if p in groups] + sorted(p for p in groups if p not in TITLES)
  index = [
    "# API reference",
    "",
    "Generated from `nas_jax.__all__` when the manual is built: every public name, under the package",
    "that defines it, with its docstring. Import them from the top level (`nas_jax.Architecture`).",
    "",
    "```{toctree}",
    ":hidden:",
    "",
    *order,
    "```",
  ]
  for package in order:
    title = TITLES.get(package, package)
    names = [n for n, _ in groups[package]]
    index += ["", f"## [{title}]({package}.md)", "", ", ".join(f"{{py:obj}}`~nas_jax.{n}`" for n in names)]
    page = [f"# {title}", "", f"Defined in `nas_jax.{package}`; imported as `nas_jax.<name>`.", ""]
    page += [f"## `{name}`\n\n{_directive(name, entry)}" for name, entry in groups[package]]
    _write(os.path.join(out, f"{package}.md"), "\n".join(page))
  for stale in set(os.listdir(out)) - {f"{p}.md" for p in order} - {"index.md"}:
    os.remove(os.path.join(out, stale))
  _write(os.path.join(out, "index.md"), "\n".join(index) + "\n")


def setup(app):
  app.connect("builder-inited", generate)
  app.connect("autodoc-process-docstring", _process_docstring, priority=400)
  return {"parallel_read_safe": True, "version": "1"}
