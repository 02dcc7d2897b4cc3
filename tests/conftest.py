"""Test-wide settings: float64 for GP algebra, the `slow` marker switch, and a compile counter."""

import os

# Before jax: OpenBLAS threads fight XLA's pool (a float64 Cholesky ~30x slower otherwise).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import contextlib  # noqa: E402

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)

SHARED_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "..", "shared", "data")


def pytest_addoption(parser):
  parser.addoption("--runslow", action="store_true", default=False, help="also run tests marked slow")


def pytest_collection_modifyitems(config, items):
  if config.getoption("--runslow"):
    return
  skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
  for item in items:
    if "slow" in item.keywords:
      item.add_marker(skip_slow)


@pytest.fixture
def count_compiles():
  """`with count_compiles() as n:` ... then `n[0]`: the XLA programs compiled inside the block
  (jax's backend-compile event; cache hits do not count)."""

  @contextlib.contextmanager
  def counting():
    count = [0]

    def listener(event, duration, **kwargs):
      if event == "/jax/core/compile/backend_compile_duration":
        count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
      yield count
    finally:
      jax.monitoring.unregister_event_duration_listener(listener)

  return counting
