"""PopulationExecutor: queued calls of a function with a batched form run as one batch, each result
under its own ticket; a failing batch falls back to single calls; a population search through the
padded trainer journals the results of evaluating the same points one at a time."""

import os

import numpy as np
import pytest

from nas_jax.search import journal, loop
from nas_jax.search.population_executor import PopulationExecutor
from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Square:
  """A function with a batched form that records how it was called."""

  def __init__(self):
    self.batches, self.singles = [], []

  def __call__(self, x):
    self.singles.append(x)
    if x < 0:
      raise ValueError(f"negative {x}")
    return x * x

  def many(self, calls):
    self.batches.append([c[0] for c in calls])
    return [self(*c) for c in calls]


def test_queued_calls_run_as_one_batch_at_wait_each_under_its_ticket():
  fn, ex = Square(), PopulationExecutor(3)
  tickets = [ex.submit(fn, x) for x in (2, 3, 4)]
  assert fn.singles == [] and fn.batches == []  # nothing runs at submit
  done = dict(ex.wait())
  assert fn.batches == [[2, 3, 4]]
  assert [done[t].result for t in tickets] == [4, 9, 16]
  assert {o.worker for o in done.values()} == {"population of 3"}
  assert ex.wait() == []


def test_a_failing_batch_runs_its_calls_alone_so_one_bad_point_fails_alone():
  fn, ex = Square(), PopulationExecutor(3)
  tickets = [ex.submit(fn, x) for x in (2, -1, 4)]
  done = dict(ex.wait())
  assert [done[t].result for t in tickets] == [4, None, 16]
  assert "negative -1" in done[tickets[1]].error and not done[tickets[0]].error
  assert fn.singles == [2, -1, 2, -1, 4]  # the batch stopped at -1, then each call on its own


def test_functions_without_a_batched_form_run_one_by_one_and_bad_sizes_are_refused():
  ex = PopulationExecutor(2)
  a, b = ex.submit(abs, -2), ex.submit(abs, 5)
  done = dict(ex.wait())
  assert (done[a].result, done[b].result) == (2, 5) and done[a].worker == "inline"
  with pytest.raises(ValueError, match="PopulationExecutor: num_workers=0"):
    PopulationExecutor(0)


def _search(tmp_path, name, executor):
  c = config_files.load_config(os.path.join(ROOT, "configs", "random_mlp_diabetes.py") + ":smoke")
  c.workdir, c.executor, c.num_workers, c.budget = str(tmp_path / name), executor, 3, 3
  c.task.trainer = "padded"
  config_lib.search_from_config(c, progress=False)
  return sorted(journal.replay(os.path.join(c.workdir, loop.JOURNAL)), key=lambda o: o.trial_id)


def test_a_population_search_journals_what_one_at_a_time_evaluation_gives(tmp_path):
  together = _search(tmp_path, "population", "population")
  alone = _search(tmp_path, "inline", "inline")
  assert len(together) == len(alone) == 3 and all(o.ok for o in together)
  assert [o.arch_json for o in together] == [o.arch_json for o in alone]  # the same proposals
  np.testing.assert_allclose([o.value for o in together], [o.value for o in alone], rtol=1e-5)
  assert {o.info["task"]["trainer"] for o in together} == {"padded"}
  # The smoke config's MLPs are small: the arithmetic that one joint padding adds costs less than a
  # compile (`trainers.groups`), so the round of 3 proposals trained as one population.
  assert [o.info["task"]["population"] for o in together] == [3, 3, 3]
