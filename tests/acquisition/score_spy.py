"""A batched score function for acquisition-optimiser tests that records every call."""

import numpy as np


class ScoreSpy:
  """`list[point] -> [k]` scores by `fn`, keeping each call's points in `calls`."""

  def __init__(self, fn):
    self.fn, self.calls = fn, []

  def __call__(self, points):
    self.calls.append(list(points))
    return np.array([self.fn(p) for p in points], float)
