"""Sphinx extension: links to the documentation of jax, numpy, flax, optax and ott-jax, made offline.

intersphinx would download each project's objects.inv when the manual is built, and the machines
that build it (CI included) reach no network beyond the package registries, so the build would
fail. Instead, a reference that Sphinx cannot resolve here (`jax.Array` in a signature,
`jnp.where` in a docstring) and whose name starts with one of these projects is linked by the
URL pattern that project's documentation follows:

- jax: https://docs.jax.dev/en/latest/_autosummary/jax.numpy.where.html (one page per object;
  a module such as `jax.numpy` has https://docs.jax.dev/en/latest/jax.numpy.html);
- numpy: https://numpy.org/doc/stable/reference/generated/numpy.where.html (one page per object;
  `numpy.random.Generator` and `numpy.typing` names are anchors of their one page);
- flax, optax, ott-jax: their API pages group many objects, so without objects.inv the page of
  an object is not known; the link is the documentation's search for the full name
  (https://optax.readthedocs.io/en/latest/search.html?q=optax.adam), whose first hit it is.

`jnp.` and `np.` are read as `jax.numpy.` and `numpy.`, and a name by the path of its definition
(`jax.jaxlib._jax.Array`, what an annotation `jax.Array` evaluates to) by its shortest public path
(`jax.Array`). Any other reference is left to Sphinx, so a broken `nas_jax` name stays an error of
the strict (nitpicky) build.
"""

import itertools

from api_reference import find
from docutils import nodes

ALIASES = (("jnp.", "jax.numpy."), ("np.", "numpy."))
JAX_MODULES = ("jax.numpy", "jax.random", "jax.nn", "jax.lax", "jax.scipy", "jax.tree_util", "jax.export")
JAX_MODULES += ("jax.typing", "jax.sharding", "jax.experimental")
SEARCH = {
  "flax": "https://flax.readthedocs.io/en/latest/search.html?q=",
  "optax": "https://optax.readthedocs.io/en/latest/search.html?q=",
  "ott": "https://ott-jax.readthedocs.io/en/latest/search.html?q=",
}
NUMPY = "https://numpy.org/doc/stable/reference/"


def public_name(target: str) -> str:
  """The shortest path to the same object that keeps the first and the last part of `target`
  (`numpy.random._generator.Generator` -> `numpy.random.Generator`); for a path that does not
  import (`jax.jaxlib._jax.Array`), the shortest to an object of that name; else `target`."""
  parts = target.split(".")
  obj = find(parts)
  middle = parts[1:-1]
  for n in range(len(middle)):
    for kept in itertools.combinations(middle, n):
      found = find([parts[0], *kept, parts[-1]])
      if found is not None and (
        found is obj if obj is not None else str(getattr(found, "__name__", "")).rsplit(".", 1)[-1] == parts[-1]
      ):
        return ".".join([parts[0], *kept, parts[-1]])
  return target


def url(target: str) -> str:
  """The documentation URL of a jax, numpy, flax, optax or ott name; "" for any other name."""
  for short, full in ALIASES:
    if target.startswith(short):
      target = full + target[len(short) :]
  root = target.split(".")[0]
  if root not in ("jax", "numpy", *SEARCH):
    return ""
  target = public_name(target)
  if root == "jax":
    if target == "jax" or target in JAX_MODULES:
      return f"https://docs.jax.dev/en/latest/{target}.html"
    return f"https://docs.jax.dev/en/latest/_autosummary/{target}.html"
  if root == "numpy":
    if target in ("numpy.random.Generator", "numpy.random.default_rng"):
      return f"{NUMPY}random/generator.html#{target}"
    if target.startswith("numpy.typing."):
      return f"{NUMPY}typing.html#{target}"
    return f"{NUMPY}generated/{target}.html"
  return SEARCH[root] + target


def _missing_reference(app, env, node, contnode):
  """Links an unresolved Python reference to a jax, numpy, flax, optax or ott name."""
  if node.get("refdomain") != "py":
    return None
  found = url(node["reftarget"])
  if not found:
    return None
  reference = nodes.reference("", "", internal=False, refuri=found, reftitle=f"{node['reftarget']} (external)")
  reference += contnode
  return reference


def setup(app):
  app.connect("missing-reference", _missing_reference)
  return {"parallel_read_safe": True, "version": "1"}
