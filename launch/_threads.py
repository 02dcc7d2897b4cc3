"""Imported first by every launch script: OpenBLAS's own threads fight XLA's thread pool on CPU,
which made a float64 200x200 Cholesky ~30x slower (benchmarks/bench_gp.py), so one thread."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
