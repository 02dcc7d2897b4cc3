"""What the manual uses has an API entry: every nas_jax module and name that a code block of
README.md or docs/*.md, a notebook of colabs/, or their prose imports or names is documented by
the generated reference (docs/_ext/api_reference.py), which `documented()` lists without Sphinx."""

import ast
import glob
import importlib
import json
import os
import re
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "docs", "_ext"))

import api_reference  # noqa: E402

PAGES = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "colabs", "*.ipynb")))
FENCE = re.compile(r"```(?:python|\{code-cell\}[^\n]*)\n(.*?)```", re.S)
DOTTED = re.compile(r"\bnas_jax(?:\.\w+)+")


def _sources():
  """(where, code blocks, prose) of each page and notebook."""
  for path in PAGES:
    with open(path) as f:
      text = f.read()
    yield os.path.relpath(path, ROOT), FENCE.findall(text), FENCE.sub("", text)
  for path in NOTEBOOKS:
    with open(path) as f:
      cells = json.load(f)["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    prose = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    yield os.path.relpath(path, ROOT), code, prose


def entry_name(dotted: str) -> str:
  """The API entry a dotted name needs: its longest prefix of modules and the attribute after it
  (`nas_jax.Architecture.from_json` -> `nas_jax.Architecture`, documented with its members)."""
  parts = dotted.split(".")
  obj, depth = importlib.import_module(parts[0]), 1
  while depth < len(parts) and isinstance(obj, types.ModuleType):
    try:
      obj = importlib.import_module(".".join(parts[: depth + 1]))
    except ImportError:
      if not hasattr(obj, parts[depth]):
        return dotted  # no such name: not documented, and the failure names it
      obj = getattr(obj, parts[depth])
    depth += 1
  return ".".join(parts[:depth])


def _chain(node) -> list:
  """["a", "b", "c"] of the expression a.b.c; [] when it does not start at a name."""
  names = []
  while isinstance(node, ast.Attribute):
    names.append(node.attr)
    node = node.value
  return [node.id, *reversed(names)] if isinstance(node, ast.Name) else []


def code_uses(code: str) -> set:
  """The nas_jax names a block imports, and the attributes it reads of what it imported."""
  code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!")))
  tree = ast.parse(code)
  aliases, used = {}, set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name.split(".")[0] == "nas_jax":
          used.add(a.name)
          aliases[a.asname or "nas_jax"] = a.name if a.asname else "nas_jax"
    elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nas_jax":
      used.add(node.module)
      for a in node.names:
        used.add(f"{node.module}.{a.name}")
        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
  for node in ast.walk(tree):
    chain = _chain(node) if isinstance(node, ast.Attribute) else []
    if chain and chain[0] in aliases:
      used.add(".".join([aliases[chain[0]], *chain[1:]]))
  return used


def test_a_dotted_name_needs_the_entry_of_its_module_or_its_object():
  assert entry_name("nas_jax.viz.plots.draw") == "nas_jax.viz.plots.draw"
  assert entry_name("nas_jax.Architecture.from_json") == "nas_jax.Architecture"
  assert entry_name("nas_jax.training.datasets") == "nas_jax.training.datasets"
  assert entry_name("nas_jax.no_such_name") == "nas_jax.no_such_name"
  uses = code_uses("import nas_jax\nfrom nas_jax.viz import plots as p\np.draw(nas_jax.layer_graph_space('mlp'))")
  assert uses == {"nas_jax", "nas_jax.viz", "nas_jax.viz.plots", "nas_jax.viz.plots.draw", "nas_jax.layer_graph_space"}


def test_the_modules_the_manual_names_are_documented():
  """The ones issue 63 found without an entry, and the packages' own modules."""
  documented = api_reference.documented()
  for name in (
    "nas_jax.training.datasets.load_table",
    "nas_jax.training.population.train_population",
    "nas_jax.viz.plots.draw",
    "nas_jax.experiments.report",
    "nas_jax.Architecture",
  ):
    assert name in documented, name


@pytest.mark.parametrize("where, code, prose", [pytest.param(*s, id=s[0]) for s in _sources()])
def test_every_nas_jax_name_the_manual_uses_has_an_api_entry(where, code, prose):
  used = set().union(*map(code_uses, code)) | set(DOTTED.findall(prose))
  documented = api_reference.documented()
  missing = sorted({entry_name(u) for u in used} - documented)
  assert not missing, (
    f"{where} uses {', '.join(missing)}, which the API reference does not document: add the module to"
    " MODULES in docs/_ext/api_reference.py (or the name to its module's __all__)"
  )


def test_jax_numpy_flax_optax_and_ott_names_link_to_their_documentation_offline():
  pytest.importorskip("docutils", reason="docs/_ext/offline_links.py is a Sphinx extension (the docs extra)")
  import offline_links

  jax_docs = "https://docs.jax.dev/en/latest/"
  assert offline_links.url("jnp.where") == jax_docs + "_autosummary/jax.numpy.where.html"
  assert offline_links.url("jax.jaxlib._jax.Array") == jax_docs + "_autosummary/jax.Array.html"  # jax.Array
  assert offline_links.url("jax.numpy") == jax_docs + "jax.numpy.html"
  assert offline_links.url("np.ndarray") == "https://numpy.org/doc/stable/reference/generated/numpy.ndarray.html"
  generator = "https://numpy.org/doc/stable/reference/random/generator.html#numpy.random.Generator"
  assert offline_links.url("numpy.random._generator.Generator") == generator
  assert offline_links.url("flax.linen.module.Module").endswith(
    "flax.readthedocs.io/en/latest/search.html?q=flax.linen.Module"
  )
  assert offline_links.url("optax.adam") == "https://optax.readthedocs.io/en/latest/search.html?q=optax.adam"
  assert offline_links.url("nas_jax.Space") == offline_links.url("typing.Any") == ""
