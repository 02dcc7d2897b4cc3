"""Imported first by every launch script, to set up jax's environment before jax is imported.

OpenBLAS's own threads fight XLA's thread pool on CPU and slow float64 LAPACK calls (a GP's
Cholesky) many times over (benchmarks/bench_gp.py), so one thread. Compiled programs that took
over a second to compile (a network's training step) are kept in a persistent cache, so a
resumed search, a repeated network, or the seeds of a comparison evaluating the same initial pool
skip recompiling it: set JAX_COMPILATION_CACHE_DIR to move the cache, or to "" to turn it off. Worker processes
inherit both settings.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "nas_jax", "xla"))
