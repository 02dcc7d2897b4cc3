"""on_cores: every index once, in order, whatever the core count (n = 0: one empty part); errors
surface to the caller."""

import concurrent.futures
import threading

from hypothesis import given, settings, strategies as st
import numpy as np
import pytest

from nas_jax.arch import host_threads
from nas_jax.arch.host_threads import on_cores


@settings(max_examples=50, deadline=None)
@given(n=st.integers(0, 40), cores=st.integers(1, 5))
def test_the_parts_cover_every_index_once_in_order(n, cores):
  with pytest.MonkeyPatch.context() as mp:
    mp.setattr(host_threads, "CORES", cores)
    parts = on_cores(lambda idx: idx.copy(), n)
  assert len(parts) == min(cores, max(n, 1))  # n = 0: one empty part, so fn sees its empty case
  np.testing.assert_array_equal(np.concatenate(parts), np.arange(n))


def test_parts_run_on_their_own_threads_of_the_given_pool(monkeypatch):
  monkeypatch.setattr(host_threads, "CORES", 2)
  with concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="given") as pool:
    names = on_cores(lambda idx: threading.current_thread().name, 10, pool)
  assert len(names) == 2 and all(name.startswith("given") for name in names)
  # One item: no thread hand-off at all.
  assert on_cores(lambda idx: threading.current_thread().name, 1) == [threading.current_thread().name]


def test_an_error_in_a_part_is_raised_to_the_caller(monkeypatch):
  monkeypatch.setattr(host_threads, "CORES", 2)

  def fail_on_the_second_part(idx):
    if idx[0] > 0:
      raise ValueError("part failed")
    return idx

  with pytest.raises(ValueError, match="part failed"):
    on_cores(fail_on_the_second_part, 4)
