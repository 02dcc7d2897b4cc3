"""The search loop: budget, journal and summary; a finished search says so and runs nothing; failures recorded and the search goes on;
resume = replay with nothing re-evaluated; a simulated crash loses only unfinished evaluations;
timeouts through a process pool; one search per workdir."""

import fcntl
import functools
import json
import os
import re
import shutil
import sys

import jax
import numpy as np
import pytest

from nas_jax.search import journal, loop
from nas_jax.search.executors import InlineExecutor
from nas_jax.search.process_executor import ProcessExecutor
from nas_jax.search.state import Status
from nas_jax.search.strategies import baselines
from nas_jax.search.task import Task, TaskResult

sys.path.insert(0, os.path.dirname(__file__))
import search_helpers as h  # noqa: E402


def counting_task(calls, fn=h.onemax, goal="max", name="onemax"):
  """An in-process task that records every architecture it evaluates."""

  def evaluate(arch_json, seed):
    calls.append(tuple(arch_json["bits"]))
    return fn(arch_json, seed)

  return Task(name=name, goal=goal, evaluate=evaluate)


def run(workdir, task, *, budget, strategy=None, space=None, executor=None, seed=0, key=0, files=None):
  space = space or h.bits_space()
  strategy = strategy or baselines.random_search(space, task.goal)
  return loop.run(
    strategy,
    task,
    executor or InlineExecutor(),
    str(workdir),
    space=space,
    budget=budget,
    key=jax.random.key(key),
    seed=seed,
    progress=False,
    files=files,
  )


def test_run_records_budget_evaluations_and_summary(tmp_path):
  done = run(tmp_path, h.onemax_task(), budget=12, seed=7)
  assert [o.trial_id for o in done] == list(range(12))
  assert journal.replay(tmp_path / loop.JOURNAL) == done
  assert all(o.value == sum(o.arch_json["bits"]) for o in done)
  seeds = [o.info["seed"] for o in done]
  assert seeds == [loop.trial_seed(7, i) for i in range(12)] and len(set(seeds)) == 12
  summary = json.loads((tmp_path / loop.SUMMARY).read_text())
  best = max(done, key=lambda o: o.value)
  assert summary["best_value"] == best.value and summary["best_arch"] == best.arch_json
  assert (summary["n_evaluated"], summary["n_failed"], summary["goal"]) == (12, 0, "max")
  assert "best_test_value" not in summary
  assert not list(tmp_path.glob("*.png"))  # the loop draws nothing: the caller plots


def test_a_finished_search_says_so_and_runs_nothing(tmp_path, caplog):
  done = run(tmp_path, h.onemax_task(), budget=5)
  refuse = baselines.random_search(h.bits_space(), "max")._replace(init=lambda key: pytest.fail("replayed"))
  calls = []
  with caplog.at_level("WARNING"):
    again = run(tmp_path, counting_task(calls), budget=5, strategy=refuse)
  assert again == done and not calls
  assert "the search is finished (5 evaluations, budget 5)" in caplog.text and "--config.budget=10" in caplog.text


def test_failures_and_nans_are_recorded_and_the_search_goes_on(tmp_path):
  task = Task(name="flaky", goal="max", evaluate=h.flaky)
  done = run(tmp_path, task, budget=40)
  assert len(done) == 40
  by_status = {s: [o for o in done if o.status == s] for s in Status}
  assert by_status[Status.FAILED] and by_status[Status.NAN] and by_status[Status.OK]
  assert all(
    o.arch_json["bits"][0] == 1 and "first bit set" in o.error and o.value is None for o in by_status[Status.FAILED]
  )
  assert all(o.arch_json["bits"][:2] == [0, 1] and "nan" in o.error for o in by_status[Status.NAN])
  summary = json.loads((tmp_path / loop.SUMMARY).read_text())
  assert summary["n_failed"] == len(by_status[Status.FAILED]) + len(by_status[Status.NAN])
  assert summary["best_value"] == max(o.value for o in by_status[Status.OK])


def test_goal_min_summary_keeps_the_raw_metric_and_test_value(tmp_path):
  task = Task(name="zeros", goal="min", evaluate=h.zeros_minimised)
  done = run(tmp_path, task, budget=15)
  summary = json.loads((tmp_path / loop.SUMMARY).read_text())
  assert summary["best_value"] == min(o.value for o in done)
  assert summary["best_test_value"] == 0.5


def test_resume_replays_and_never_re_evaluates(tmp_path):
  calls = []
  first = run(tmp_path, counting_task(calls), budget=8)
  lines = (tmp_path / loop.JOURNAL).read_text().splitlines()
  calls.clear()
  done = run(tmp_path, counting_task(calls), budget=20)
  assert len(calls) == 12 and len(done) == 20
  assert done[:8] == first
  assert (tmp_path / loop.JOURNAL).read_text().splitlines()[:8] == lines
  assert len({o.trial_id for o in done}) == 20
  assert len({tuple(o.arch_json["bits"]) for o in done}) == 20
  calls.clear()
  assert run(tmp_path, counting_task(calls), budget=20) == done and calls == []


def test_every_observation_is_durable_before_the_strategy_sees_it(tmp_path):
  space = h.bits_space()
  inner = baselines.random_search(space)
  seen_in_journal = []

  def update(state, observations):
    recorded = {o.trial_id for o in journal.replay(tmp_path / loop.JOURNAL)}
    seen_in_journal.extend(o.trial_id in recorded for o in observations)
    return inner.update(state, observations)

  strategy = inner._replace(update=update)
  run(tmp_path, h.onemax_task(), budget=10, strategy=strategy, executor=InlineExecutor(num_workers=2))
  assert seen_in_journal == [True] * 10


class CrashAfter:
  """Wraps an executor and dies (KeyboardInterrupt, as a kill would) once n outcomes went out."""

  def __init__(self, inner, n):
    self.inner, self.n, self.num_workers = inner, n, inner.num_workers

  def submit(self, fn, *args):
    return self.inner.submit(fn, *args)

  def wait(self, timeout):
    if self.n <= 0:
      raise KeyboardInterrupt("simulated kill")
    out = self.inner.wait(timeout)[: self.n]
    self.n -= len(out)
    return out

  def shutdown(self):
    self.inner.shutdown()


def test_simulated_crash_keeps_finished_work_and_loses_only_pending(tmp_path):
  calls = []
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path, counting_task(calls), budget=30, executor=CrashAfter(InlineExecutor(num_workers=3), 7))
  before = journal.replay(tmp_path / loop.JOURNAL)
  assert len(before) == 7 and len(calls) >= 9  # evaluations in flight at the kill were lost
  recorded = {tuple(o.arch_json["bits"]) for o in before}
  calls.clear()
  done = run(tmp_path, counting_task(calls), budget=30, executor=InlineExecutor(num_workers=3))
  assert len(done) == 30 and done[:7] == before
  assert not recorded & set(calls)  # nothing recorded was evaluated again
  assert len({o.trial_id for o in done}) == 30 and len({tuple(o.arch_json["bits"]) for o in done}) == 30


def test_an_exhausted_space_ends_the_search_early(tmp_path):
  space = h.bits_space(n_bits=3, n_initial=3)
  done = run(tmp_path, h.onemax_task(), budget=20, space=space)
  assert len(done) == 8 and json.loads((tmp_path / loop.SUMMARY).read_text())["best_value"] == 3.0


def test_ea_through_the_loop_with_pending_points(tmp_path):
  space = h.bits_space(n_bits=20, pool_ones=5)
  done = run(
    tmp_path,
    h.onemax_task(),
    budget=40,
    space=space,
    executor=InlineExecutor(num_workers=4),
    strategy=baselines.evolution(space, "max"),
  )
  assert [o.info["strategy"]["origin"] for o in done[:10]] == ["initial_pool"] * 10
  assert {o.info["strategy"]["origin"] for o in done[10:]} == {"mutation"}
  assert len({tuple(o.arch_json["bits"]) for o in done}) == 40


def test_timeouts_through_a_process_pool(tmp_path):
  task = Task(name="onemax", goal="max", evaluate=functools.partial(h.slow_onemax, 30.0))
  with ProcessExecutor(num_workers=2, timeout_s=1.0) as ex:
    done = run(tmp_path, task, budget=2, executor=ex)
  assert [o.status for o in done] == [Status.TIMEOUT] * 2
  assert all("timed out after 1 s" in o.error and o.seconds >= 1.0 for o in done)
  assert json.loads((tmp_path / loop.SUMMARY).read_text())["best_value"] is None


def test_in_flight_names_the_oldest_evaluation_and_its_age():
  assert loop.in_flight([], 5.0) == ""
  assert loop.in_flight([(4, "ei", 3.0), (2, "initial_pool", 1.0), (5, "", 4.5)], 42.4) == "#2 initial_pool 41s"
  assert loop.in_flight([(7, "", 2.0)], 2.2) == "#7 0s"


def test_the_bar_shows_the_evaluation_in_flight_before_any_finishes(tmp_path, capsys):
  task = Task(name="onemax", goal="max", evaluate=functools.partial(h.slow_onemax, 2.5))
  with ProcessExecutor(num_workers=1) as ex:
    loop.run(
      baselines.random_search(h.bits_space(), "max"),
      task,
      ex,
      str(tmp_path),
      space=h.bits_space(),
      budget=1,
      key=jax.random.key(0),
      progress=True,
    )
  err = capsys.readouterr().err
  assert "0/1" in err and "oldest=#0" in err and "running=1" in err


@pytest.mark.parametrize("goal, sign", [("max", 1.0), ("min", -1.0)])
def test_the_bar_ends_showing_the_best_of_the_summary(tmp_path, capsys, goal, sign):
  """Each evaluation beats the last, so a bar that lagged one evaluation would end one short."""
  calls = []
  task = counting_task(calls, fn=lambda arch_json, seed: TaskResult(value=sign * len(calls)), goal=goal)
  space = h.bits_space()
  strategy = baselines.random_search(space, goal)
  loop.run(strategy, task, InlineExecutor(), str(tmp_path), space=space, budget=5, key=jax.random.key(0))
  shown = re.findall(r"best=(-?[\d.]+)", capsys.readouterr().err)
  summary = json.loads((tmp_path / loop.SUMMARY).read_text())
  assert summary["best_value"] == sign * 5 and float(shown[-1]) == summary["best_value"]


def _returns(result, arch_json, seed):
  return result


@pytest.mark.parametrize(
  "result, reason",
  [
    (1.0, "returned a float; expected a TaskResult"),
    (None, "returned a NoneType; expected a TaskResult"),
    (TaskResult(value="abc"), "TaskResult(value='abc'); expected a number"),
    (TaskResult(value=np.ones(3)), "expected a number"),
    (TaskResult(value=1.0, test_value="x"), "TaskResult(test_value='x'); expected a number or None"),
  ],
)
def test_a_bad_task_result_is_journalled_as_failed_and_the_search_goes_on(tmp_path, result, reason):
  task = Task(name="bad", goal="max", evaluate=functools.partial(_returns, result))
  done = run(tmp_path, task, budget=3)
  assert [o.status for o in done] == [Status.FAILED] * 3 and all(reason in o.error for o in done)
  assert journal.replay(tmp_path / loop.JOURNAL) == done  # and it resumes without re-raising
  assert run(tmp_path, task, budget=3) == done


def test_numpy_and_jax_scalars_are_values(tmp_path):
  for i, value in enumerate((np.float32(0.5), jax.numpy.float32(0.5), np.asarray(0.5))):
    task = Task(name="np", goal="max", evaluate=functools.partial(_returns, TaskResult(value=value)))
    (done,) = run(tmp_path / str(i), task, budget=1)
    assert done.ok and done.value == 0.5


def test_one_search_per_workdir(tmp_path):
  fd = os.open(tmp_path, os.O_RDONLY)  # the workdir's lock: a live search holds it
  fcntl.flock(fd, fcntl.LOCK_EX)
  try:
    with pytest.raises(loop.WorkdirInUse, match="another search is running"):
      run(tmp_path, h.onemax_task(), budget=2)
    for f in tmp_path.iterdir():  # no lock file a user could delete to let a second search in
      f.unlink()
    with pytest.raises(loop.WorkdirInUse):
      run(tmp_path, h.onemax_task(), budget=2)
  finally:
    os.close(fd)
  run(tmp_path, h.onemax_task(), budget=2)
  other = Task(name="zeros", goal="min", evaluate=h.zeros_minimised)
  with pytest.raises(ValueError, match="holds a search of .*onemax"):
    run(tmp_path, other, budget=4)


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (dict(budget=0), "budget=0"),
    (dict(budget=3, seed=-1), "seed=-1"),
  ],
)
def test_run_rejects_bad_arguments(tmp_path, kwargs, match):
  with pytest.raises(ValueError, match=match):
    run(tmp_path, h.onemax_task(), **kwargs)


def test_trial_seeds_differ_across_search_seeds():
  a = {loop.trial_seed(0, i) for i in range(100)}
  b = {loop.trial_seed(1, i) for i in range(100)}
  assert len(a) == 100 and not a & b
  assert all(0 <= s < 2**31 for s in a | b) and np.int32(max(a)) == max(a)


# --- several objectives ------------------------------------------------------------------------


def _ones_and_length(arch_json, seed):
  """value: the ones (max); objectives: the zeros (min) and the first bit (max)."""
  bits = arch_json["bits"]
  return TaskResult(value=float(sum(bits)), objectives={"zeros": float(len(bits) - sum(bits)), "first": bits[0]})


TWO = Task(name="two", goal="max", evaluate=_ones_and_length, objectives=(("zeros", "min"), ("first", "max")))


def test_objectives_are_journalled_and_the_summary_holds_the_pareto_front(tmp_path):
  done = run(tmp_path, TWO, budget=15)
  assert all(o.ok and o.objectives == {"zeros": h.N_BITS - o.value, "first": o.arch_json["bits"][0]} for o in done)
  assert journal.replay(tmp_path / loop.JOURNAL) == done
  summary = json.loads((tmp_path / loop.SUMMARY).read_text())
  assert summary["objectives"] == [["value", "max"], ["zeros", "min"], ["first", "max"]]
  # Brute force: o is on the front unless another is at least as good everywhere, better somewhere.
  score = lambda o: (o.value, -o.objectives["zeros"], o.objectives["first"])
  dominated = lambda o: any(all(a >= b for a, b in zip(score(q), score(o))) and score(q) != score(o) for q in done)
  want = [o.trial_id for o in done if not dominated(o)]
  assert [m["trial_id"] for m in summary["pareto_front"]] == want and want
  member = summary["pareto_front"][0]
  source = next(o for o in done if o.trial_id == member["trial_id"])
  assert member["objectives"] == source.objectives and member["arch"] == source.arch_json


@pytest.mark.parametrize(
  "objectives, reason",
  [
    ({}, "expected numbers for: zeros, first"),
    ({"zeros": 1.0}, "expected numbers for: zeros, first"),
    ({"zeros": 1.0, "first": "x"}, "expected numbers for: zeros, first"),
    ({"zeros": 1.0, "first": 0.0, "extra": 2.0}, "expected numbers for: zeros, first"),
  ],
)
def test_a_result_without_its_objectives_is_journalled_as_failed(tmp_path, objectives, reason):
  result = TaskResult(value=1.0, objectives=objectives)
  task = TWO._replace(evaluate=functools.partial(_returns, result))
  done = run(tmp_path, task, budget=2)
  assert [o.status for o in done] == [Status.FAILED] * 2 and all(reason in o.error for o in done)


def test_a_non_finite_objective_is_a_nan_observation(tmp_path):
  result = TaskResult(value=1.0, objectives={"zeros": float("inf"), "first": 0.0})
  done = run(tmp_path, TWO._replace(evaluate=functools.partial(_returns, result)), budget=2)
  assert [o.status for o in done] == [Status.NAN] * 2 and "objectives {'zeros': inf}" in done[0].error
  assert journal.replay(tmp_path / loop.JOURNAL) == done  # nothing non-finite reached the journal


def test_an_objective_named_twice_or_value_is_refused():
  for objectives in ((("value", "min"),), (("a", "min"), ("a", "max"))):
    with pytest.raises(ValueError, match="repeated or reserved"):
      loop.check_task(Task(name="t", goal="max", evaluate=_returns, objectives=objectives))
  with pytest.raises(ValueError, match="goal 'up'"):
    loop.check_task(Task(name="t", goal="max", evaluate=_returns, objectives=(("a", "up"),)))


@pytest.mark.parametrize("keep", [4, 0])
def test_a_journal_shorter_than_its_summary_warns_in_one_line(tmp_path, caplog, keep):
  run(tmp_path, h.onemax_task(), budget=10)
  path = tmp_path / loop.JOURNAL
  if keep:
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:keep]))
  else:
    path.unlink()  # deleted while summary.json stays
  with caplog.at_level("WARNING"):
    done = run(tmp_path, h.onemax_task(), budget=10)
  lost = [r.getMessage() for r in caplog.records if "summary.json says" in r.getMessage()]
  assert lost == [
    f"workdir {str(tmp_path)!r}: journal.jsonl holds {keep} evaluations but summary.json says 10; the missing {10 - keep} are run again"
  ]
  assert len(done) == 10
  caplog.clear()
  with caplog.at_level("WARNING"):
    run(tmp_path, h.onemax_task(), budget=10)  # the new summary agrees: no warning
  assert "summary.json says" not in caplog.text


@pytest.mark.parametrize("stopped", [False, True], ids=["runs_on", "then_SIGTERM"])
@pytest.mark.parametrize("how", ["rm -rf W; mkdir W", "mv W W.old; mkdir W"])
def test_a_replaced_workdir_stops_the_search_before_it_writes_there(tmp_path, how, stopped):
  # The workdir goes while trial 3 runs; with `stopped`, a SIGTERM follows (issue 67's reproduction
  # in one process): the search writes no summary anywhere.
  workdir, calls = tmp_path / "W", []

  def replace_then_onemax(arch_json, seed):
    if len(calls) == 3:  # trials 0-2 are journalled
      if how.startswith("rm"):
        shutil.rmtree(workdir)
      else:
        os.rename(workdir, tmp_path / "W.old")
      os.mkdir(workdir)
      if stopped:
        raise KeyboardInterrupt("SIGTERM")  # what launch/_cli.py's handler raises
    calls.append(1)
    return h.onemax(arch_json, seed)

  task = Task(name="onemax", goal="max", evaluate=replace_then_onemax)
  said = (
    r"it stopped and wrote nothing more there.*\(3 evaluations"
    if stopped
    else r"'.*W' was deleted or replaced while this search ran; it stopped"
  )
  with pytest.raises(loop.WorkdirReplaced, match=said) as e:
    run(workdir, task, budget=10)
  assert isinstance(e.value.__cause__, KeyboardInterrupt) == stopped  # launch/_cli.py answers a stop: rc 130
  assert os.listdir(workdir) == []  # the new workdir: no row, no summary of the old search
  if how.startswith("mv"):  # the folder it locked: its rows, nothing written after the rename
    assert sorted(os.listdir(tmp_path / "W.old")) == sorted([loop.JOURNAL, "search.json"])
    assert [o.trial_id for o in journal.replay(tmp_path / "W.old" / loop.JOURNAL)] == [0, 1, 2]


def test_a_stopped_search_still_writes_its_summary_and_the_files_come_at_the_end(tmp_path):
  def stop_at_4(arch_json, seed):
    if seed == loop.trial_seed(0, 4):
      raise KeyboardInterrupt("SIGINT")
    return h.onemax(arch_json, seed)

  seen = []

  def files(done):
    seen.append(len(done))
    return {"extra.txt": f"{len(done)} evaluations".encode()}

  task = Task(name="onemax", goal="max", evaluate=stop_at_4)
  with pytest.raises(KeyboardInterrupt):
    run(tmp_path, task, budget=6, files=files)
  assert json.loads((tmp_path / loop.SUMMARY).read_text())["n_evaluated"] == 4
  assert seen == [] and not (tmp_path / "extra.txt").exists()  # a stopped run writes only its summary
  done = run(tmp_path, h.onemax_task(), budget=6)  # resumed, without files
  assert len(done) == 6 and not (tmp_path / "extra.txt").exists()
  run(tmp_path, h.onemax_task(), budget=6, files=files)
  assert seen == [6] and (tmp_path / "extra.txt").read_text() == "6 evaluations"
  assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_a_summary_or_meta_nested_100000_deep_is_no_recursion_error(tmp_path):
  deep = b'{"n_evaluated": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
  (tmp_path / loop.SUMMARY).write_bytes(deep)  # unreadable: no warning to give, the search runs
  assert len(run(tmp_path, h.onemax_task(), budget=2)) == 2
  (tmp_path / "search.json").write_bytes(deep)
  with pytest.raises(ValueError, match=r"search\.json: arrays and objects nested deeper than 64 levels"):
    run(tmp_path, h.onemax_task(), budget=3)
