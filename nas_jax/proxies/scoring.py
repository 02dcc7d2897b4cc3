"""Scoring NAS-Bench-201 cells at scale: every proxy of many cells in jitted batches of one shape
(the last batch padded), so a whole space costs one compile. Inside a batch, `width` cells at a
time run side by side under `jax.vmap` (`lax.map` over those groups): wide groups suit an
accelerator. On a CPU XLA lowers a vmapped conv with a kernel per cell to a grouped conv whose
weight gradient is many times slower in float64 than one cell at a time, so the default width is
1; forward-only proxies (`synflow_signed`) run fastest there with about 4.

Each cell's network is initialised from `fold_in(key, code)`, code = sum_e ops[e] * 5**e (the cell
itself, not its position), so a cell's scores do not depend on which batch, list or order it is
scored in.
"""

from __future__ import annotations

from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.models.nb201_net import Nb201Spec, check_spec
from nas_jax.proxies.nb201_nets import nb201_proxy_net
from nas_jax.proxies.proxy import Proxy, Reads

__all__ = ["Scorer", "cell_codes"]

_POWERS = 5 ** np.arange(6)


def cell_codes(ops: np.ndarray) -> np.ndarray:
  """[n] int: sum_e ops[e] * 5**e of ops [n, 6], a cell's number in 0 .. 15624."""
  return np.asarray(ops, np.int64) @ _POWERS


def _check_ops(ops: Any) -> np.ndarray:
  a = np.asarray(ops)
  if a.ndim != 2 or a.shape[1] != 6 or not np.issubdtype(a.dtype, np.integer):
    raise ValueError(f"ops: shape {a.shape}, dtype {a.dtype}; expected [n, 6] integer op codes")
  if a.size and (a.min() < 0 or a.max() > 4):
    raise ValueError(f"ops: codes in {a.min()}..{a.max()}; allowed 0..4")
  return a.astype(np.int32)


class Scorer:
  """Scores cells by named proxies, `batch_size` cells per call of one compiled program.

  Owns its jitted program, so `compiles` counts the compilations of this scorer's program.

  Args:
    proxies: name -> `Proxy`.
    spec: the network (classes, image size, width; `bn`/`affine` as in `Nb201Spec`).
    batch_size: cells per call; the last call is padded to it.
    width: cells vmapped side by side within a call (a divisor of batch_size).
    dtype: synflow's arithmetic (float64: the reference's) and the scores' dtype; x64 mode is
      enabled for this scorer's calls only.
  """

  def __init__(
    self,
    proxies: Mapping[str, Proxy],
    spec: Nb201Spec = Nb201Spec(),
    *,
    batch_size: int = 64,
    width: int = 1,
    dtype: Any = jnp.float64,
  ):
    if not proxies or not all(isinstance(p, Proxy) for p in proxies.values()):
      raise ValueError(f"proxies: {dict(proxies)!r}; expected a non-empty mapping of names to Proxy")
    if not isinstance(batch_size, int) or batch_size < 1:
      raise ValueError(f"batch_size: {batch_size!r}; expected a positive integer")
    if not isinstance(width, int) or width < 1 or batch_size % width:
      raise ValueError(f"width: {width!r}; expected a positive divisor of batch_size={batch_size}")
    self.proxies, self.spec, self.batch_size, self.width = dict(proxies), check_spec(spec), batch_size, width
    self.dtype = jnp.dtype(dtype)
    self.needs_data = any(p.needs_data for p in self.proxies.values())
    self._program = jax.jit(self._batch)

  def _batch(self, ops: jax.Array, key: jax.Array, batch: Any) -> dict[str, jax.Array]:
    return jax.lax.map(lambda o: self._one(o, key, batch), ops, batch_size=self.width)

  def _one(self, ops: jax.Array, key: jax.Array, batch: Any) -> dict[str, jax.Array]:
    code = jnp.sum(ops * jnp.asarray(_POWERS, ops.dtype))
    net = nb201_proxy_net(ops, jax.random.fold_in(key, code), self.spec)
    out = {}
    for name, p in self.proxies.items():
      if p.reads == Reads.CELL:
        out[name] = p.score(ops, self.spec)
      elif p.reads == Reads.BATCH:
        out[name] = p.score(net, batch)
      else:
        out[name] = p.score(net, self.dtype)
    return {k: jnp.asarray(v, self.dtype) for k, v in out.items()}

  @property
  def compiles(self) -> int:
    """How many programs this scorer has compiled (one per batch size and input shape)."""
    return self._program._cache_size()

  def __call__(self, ops: Any, key: jax.Array, batch: Any = None) -> dict[str, np.ndarray]:
    """Scores of cells `ops` [n, 6] int: name -> [n] float64 (host arrays).

    `batch` (x [B, H, W, 3], y [B] int) is required when a proxy reads data, and ignored otherwise.
    """
    ops = _check_ops(ops)
    if self.needs_data and batch is None:
      names = [n for n, p in self.proxies.items() if p.needs_data]
      raise ValueError(f"batch: None, but proxies {names} need data; pass (x, y)")
    if not self.needs_data:
      batch = None
    n, b = len(ops), self.batch_size
    padded = np.concatenate([ops, np.repeat(ops[:1], (-n) % b, axis=0)]) if n else ops
    chunks = []
    with jax.enable_x64(self.dtype == jnp.float64):
      for start in range(0, len(padded), b):
        chunks.append(jax.device_get(self._program(jnp.asarray(padded[start : start + b]), key, batch)))
    return {
      name: np.concatenate([c[name] for c in chunks])[:n].astype(np.float64) if chunks else np.zeros(0)
      for name in self.proxies
    }
