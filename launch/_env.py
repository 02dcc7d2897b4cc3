"""Imported first by every launch script, to set up jax's environment before jax is imported, and
to put the repository root on sys.path, so that a config loaded by path imports its base
(`from configs import random_nb201`) from any working directory.

OpenBLAS's own threads fight XLA's thread pool on CPU and slow a float64 Cholesky many times over
(benchmarks/bench_gp.py measures it), so one thread. Compiled programs that took over a second to
compile (a network's training step) are kept in a persistent cache, so a resumed search, a
repeated network, or the seeds of a comparison evaluating the same initial pool skip recompiling
it: set JAX_COMPILATION_CACHE_DIR to move the cache, or to "" to turn it off. Worker processes
inherit both settings.
"""

import os
import sys

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "nas_jax", "xla"))
