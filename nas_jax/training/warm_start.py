"""Warm starts: Flax variables handed to `specialised.evaluate` (e.g. morphed from a parent's best
epoch) are checked against the model's shapes, leaf by leaf, and put in the model's tree.
"""

from __future__ import annotations

from typing import Any, Mapping

import jax
import numpy as np

__all__ = ["match_variables"]


def _path_name(path: tuple[Any, ...]) -> str:
  """A jax key path as "params/3_relu/kernel"."""
  return "/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path)


def match_variables(given: Any, expected: Any) -> Any:
  """The leaves of `given`, unchanged, in the tree structure of `expected`.

  Args:
    given: Flax variables {"params": ..., "batch_stats": ...} with numpy or jax leaves (an empty
      or absent "batch_stats" for MLPs).
    expected: the model's variables as ShapeDtypeStructs (`jax.eval_shape` of its init).

  Raises:
    TypeError: `given` is not a mapping.
    ValueError: a leaf is missing or extra, or its shape differs; names the first such path.
  """
  if not isinstance(given, Mapping):
    raise TypeError(f"init_variables: got {type(given).__name__}; expected a dict {{'params': ..., ...}}")
  leaves, treedef = jax.tree_util.tree_flatten_with_path(expected)
  want = {_path_name(path): leaf.shape for path, leaf in leaves}
  got = {_path_name(path): leaf for path, leaf in jax.tree_util.tree_flatten_with_path(given)[0]}
  missing, extra = [p for p in want if p not in got], [p for p in got if p not in want]
  if missing:
    raise ValueError(
      f"init_variables: {missing[0]} is missing ({len(missing)} of the model's {len(want)} leaves"
      " are); the variables must come from this architecture"
    )
  if extra:
    raise ValueError(f"init_variables: {extra[0]} is not a variable of the model ({len(extra)} extra leaves)")
  for path, shape in want.items():
    if np.shape(got[path]) != shape:
      raise ValueError(f"init_variables: {path} has shape {np.shape(got[path])}; the model expects {shape}")
  return jax.tree.unflatten(treedef, [got[path] for path in want])
