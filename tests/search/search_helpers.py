"""Test helpers that worker processes must import by name: a toy bit-string space, its OneMax
task (known optimum: all ones) and evaluations that raise, return NaN, sleep or kill their worker.
"""

import functools
import time

import jax
import numpy as np

from nas_jax.search.task import Task, TaskResult
from nas_jax.spaces.space import Space

N_BITS = 10


def _rng(key):
  return np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())


def bits_space(n_bits=N_BITS, n_initial=10, pool_ones=1):
  """Points are tuples of n_bits 0/1 ints; 2**n_bits of them. Initial point i has `pool_ones`
  cyclically consecutive ones starting at bit i, so a strategy must search to reach the optimum."""

  def sample(key, n):
    return [tuple(int(b) for b in row) for row in _rng(key).integers(0, 2, size=(n, n_bits))]

  def mutate(point, key):
    i = int(_rng(key).integers(n_bits))
    return point[:i] + (1 - point[i],) + point[i + 1 :], True

  def from_json(obj):
    if not isinstance(obj, dict) or obj.get("kind") != "bits" or len(obj.get("bits", ())) != n_bits:
      raise ValueError(f"bits from_json: {obj!r}")
    return tuple(int(b) for b in obj["bits"])

  initial = [tuple(int((j - i) % n_bits < pool_ones) for j in range(n_bits)) for i in range(min(n_initial, n_bits))]
  return Space(
    name="bits",
    kind="bits",
    sample=sample,
    mutate=mutate,
    neighbours=lambda p: [p[:i] + (1 - p[i],) + p[i + 1 :] for i in range(n_bits)],
    canonical_key=lambda p: p,
    to_json=lambda p: {"kind": "bits", "bits": list(p)},
    from_json=from_json,
    initial=lambda n=None: initial[:n],
  )


def onemax(arch_json, seed):
  del seed
  return TaskResult(value=float(sum(arch_json["bits"])), info={"n": len(arch_json["bits"])})


def slow_onemax(delay_s, arch_json, seed):
  time.sleep(delay_s)
  return onemax(arch_json, seed)


def zeros_minimised(arch_json, seed):
  """Goal "min" version: the number of zeros."""
  del seed
  return TaskResult(value=float(len(arch_json["bits"]) - sum(arch_json["bits"])), test_value=0.5)


def onemax_task(delay_s=0.0):
  fn = onemax if not delay_s else functools.partial(slow_onemax, delay_s)
  return Task(name="onemax", goal="max", evaluate=fn)


def flaky(arch_json, seed):
  """Raises when the first bit is 1, returns NaN when the second is, else OneMax."""
  bits = arch_json["bits"]
  if bits[0]:
    raise RuntimeError("flaky: first bit set")
  if bits[1]:
    return TaskResult(value=float("nan"))
  return onemax(arch_json, seed)


def journal_writer(path, start, n):
  """Appends OK observations with trial ids start .. start + n - 1 (a concurrent writer)."""
  from nas_jax.search import journal  # pylint: disable=g-import-not-at-top
  from nas_jax.search.state import Observation, Status  # pylint: disable=g-import-not-at-top

  for i in range(start, start + n):
    journal.append(
      path,
      Observation(
        trial_id=i,
        arch_json={"i": i},
        value=float(i),
        status=Status.OK,
        error="",
        seconds=0.0,
        worker=f"writer-{start}",
      ),
    )
