"""Calls for executor tests, importable by name in worker processes; stdlib only, so workers
start fast."""

import os
import time


def add(a, b):
  return a + b


def boom(message):
  raise ValueError(message)


def nan_result():
  return float("nan")


def sleep_then(seconds, value):
  time.sleep(seconds)
  return value


def hard_exit(code):
  os._exit(code)


def x64_enabled():
  import jax  # pylint: disable=g-import-not-at-top

  return bool(jax.config.jax_enable_x64)


def environ(name):
  return os.environ.get(name)


class Counter:
  """Counts its calls from `start`: a function with state, as a train task's evaluate has."""

  def __init__(self, start=0):
    self.calls = start

  def __call__(self):
    self.calls += 1
    return self.calls


def exit_once(marker, value):
  """Kills its own worker process on the first call (leaving `marker`), returns `value` after: a
  worker lost once, the call's rerun on a fresh worker succeeding."""
  if not os.path.exists(marker):
    open(marker, "w").close()
    os._exit(9)
  return value
