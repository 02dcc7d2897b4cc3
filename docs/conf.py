"""Sphinx configuration of nas_jax's manual: MyST pages, notebooks rendered by myst-nb without
executing them (the tests run them), and an API reference generated from `nas_jax.__all__`.

  sphinx-build -W --keep-going -b html docs docs/_build/html

`-W` turns every warning into an error: a broken cross-reference (nitpicky), a page left out of
the navigation, a public name without a docstring (`_ext/api_reference.py`).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # the nas_jax of this checkout, whatever is installed
sys.path.insert(0, os.path.join(HERE, "_ext"))

project = "nas_jax"
author = "The nas_jax developers"
copyright = "2026, the nas_jax developers"
extensions = [
  "myst_nb",
  "sphinx.ext.autodoc",
  "sphinx.ext.napoleon",
  "sphinx.ext.mathjax",
  "sphinx.ext.viewcode",  # each API entry links to its highlighted source
  "api_reference",
  "cli_reference",
  "offline_links",  # jax, numpy, flax, optax, ott-jax names linked without a network (its docstring)
]
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = "nas_jax"
html_static_path = []

# The notebooks live in colabs/, committed without outputs; the manual shows docs/notebooks/, the
# copies that benchmarks/render_notebooks.py ran with their outputs (plots included), as they are:
# running five notebooks here would take minutes of every build (docs/notebooks.md).
nb_execution_mode = "off"

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
smartquotes = False  # `--seeds` stays two hyphens in the CLI reference, not an en dash

# Strict references: a `nas_jax.X` that no longer exists is an error. jax, numpy, flax, optax and
# ott names link to their documentation (_ext/offline_links.py); other libraries' names in
# signatures (typing, ml_collections, matplotlib) are not documented here.
nitpicky = True
nitpick_ignore_regex = [
  ("py:.*", r"(ml_collections|chex|typing|collections|enum|os|concurrent|matplotlib)(\..*)?"),
  ("py:.*", r"(tuple|list|dict)\[.*"),  # a piece of a parametrised annotation (tuple[int, ...])
  ("py:.*", r"(Any|Callable|Sequence|Iterable|Mapping|Iterator|Optional|Union|NoReturn|Protocol|NamedTuple)"),
  ("py:.*", r"(int|float|str|bool|bytes|dict|list|tuple|set|frozenset|object|type|None|Ellipsis)"),
  ("py:.*", r"(Array|ArrayLike|PRNGKey|Key|Pytree|PyTree|Shape|DType)"),
  ("py:.*", r"nas_jax\..*\._\w+"),  # private helpers named in annotations
]
autodoc_typehints = "signature"  # the types in signatures; shapes are in the docstrings (Google style)
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True  # `modifiers=MODIFIERS`, not the repr of a dict of functions
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True  # NamedTuple fields are documented once, by their Attributes section
napoleon_attr_annotations = False  # the Attributes sections give shapes and types in words
# "Returns:" and "Raises:" sections here are sentences ("An unbatched Architecture of kind ...",
# "ValueError naming the field and what is allowed"), not "type: description" lists: render them
# as written.
napoleon_custom_sections = [("Returns", "returns_as_written"), ("Raises", "raises_as_written")]
default_role = "code"  # `x` in a docstring is code, as in the Markdown pages
