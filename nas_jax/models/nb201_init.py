"""Initial parameters of the NAS-Bench-201 network (`nb201_net`), drawn at once: what the proxies
score at initialisation and what a trained network starts from."""

from __future__ import annotations

from typing import Any

import flax
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.models.nb201_net import Nb201Net, Nb201Spec

__all__ = ["init_params"]


def _bound(path: tuple, shapes: dict) -> float:
  """A leaf's init interval U(-bound, bound): 1/sqrt(fan_in) of its layer, for a kernel
  ([N?, k, k, C_in, C_out] conv or [C_in, C_out] dense) and for the bias beside it."""
  kernel = shapes[path[:-1] + ("kernel",)]
  fan_in = int(np.prod(kernel[-4:-1])) if len(kernel) >= 4 else kernel[-2]
  return 1.0 / np.sqrt(fan_in)


def init_params(key: jax.Array, spec: Nb201Spec) -> Any:
  """The masked network's initial parameters, drawn as `Nb201Net.init` draws them (PyTorch's
  default: kernels and biases U(-1/sqrt(fan_in), 1/sqrt(fan_in)), norm scales 1, offsets 0) but
  from ONE uniform draw split over the leaves: Flax's per-parameter generators made this the
  slowest part of the scorer's program to compile. Traceable in `key`; a cell's specialised
  network takes `specialise_params` of it."""
  x = jax.ShapeDtypeStruct((1, spec.image_size, spec.image_size, 3), jnp.float32)
  abstract = jax.eval_shape(lambda: Nb201Net(spec).init(jax.random.key(0), x, jnp.zeros(6, jnp.int32)))["params"]
  flat = flax.traverse_util.flatten_dict(abstract)
  shapes = {k: v.shape for k, v in flat.items()}
  drawn = [k for k in flat if k[-1] in ("kernel", "bias")]
  u = jax.random.uniform(key, (sum(int(np.prod(shapes[k])) for k in drawn),), jnp.float32, -1.0, 1.0)
  out, start = {}, 0
  for k, v in flat.items():
    if k[-1] in ("kernel", "bias"):
      size = int(np.prod(v.shape))
      out[k] = u[start : start + size].reshape(v.shape) * _bound(k, shapes)
      start += size
    else:
      out[k] = (jnp.ones if k[-1] == "scale" else jnp.zeros)(v.shape, jnp.float32)
  return flax.traverse_util.unflatten_dict(out)
