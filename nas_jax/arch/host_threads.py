"""Host work split over the cores of this process.

numpy's LAPACK calls and POT's network simplex release the GIL, so contiguous parts of a batch,
one thread per core, run at once. XLA on the CPU runs a batch of LAPACK calls on one core, and two
of its programs run at once can deadlock (seen with eigh in jax 0.10), so such batches are split
here, on the host.
"""

from __future__ import annotations

import concurrent.futures
import os
from typing import Callable, TypeVar

import numpy as np

__all__ = ["CORES", "on_cores"]

_T = TypeVar("_T")

# The cores this process may run on (its affinity, e.g. under taskset), not the machine's.
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def on_cores(fn: Callable[[np.ndarray], _T], n: int, pool: concurrent.futures.Executor | None = None) -> list[_T]:
  """[fn(part) for part in the contiguous parts of arange(n), one per core], in order.

  The parts are min(CORES, n) non-empty ones, or one empty part when n = 0, so fn always runs and
  sees its empty case. With one part fn runs on the calling thread; otherwise each part runs on a
  thread of `pool`, or of a pool made for this call. An exception in fn is raised here.
  """
  parts = np.array_split(np.arange(n), min(CORES, max(n, 1)))
  if len(parts) <= 1:
    return [fn(p) for p in parts]
  if pool is None:
    with concurrent.futures.ThreadPoolExecutor(len(parts), thread_name_prefix="on-cores") as own:
      return on_cores(fn, n, own)
  return [f.result() for f in [pool.submit(fn, p) for p in parts]]
