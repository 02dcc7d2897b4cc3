"""Simulated workers: event order against hand-computed schedules, the pending points a freed
worker's proposal sees, sync against async, charged proposal time, resume after a budget cut or a
kill (exact where the in-flight evaluations allow it, deterministic where they do not), refusals,
and an NB201 search through launch/search.py."""

import json
import os
import shutil
import subprocess
import sys
import time

import jax
import ml_collections
import pytest

from nas_jax.experiments import compare
from nas_jax.search import journal, loop
from nas_jax.search.simulated_executor import SimulatedExecutor
from nas_jax.search.state import Observation, Status
from nas_jax.search.strategies import baselines
from nas_jax.search.strategy import Strategy
from nas_jax.search.task import Task, TaskResult
from nas_jax.wiring import config as config_lib
from nas_jax.wiring.config_files import load_config
from tests.search import search_helpers as h

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NB201 = os.path.join(ROOT, "..", "shared", "data", "nasbench201")


def costed(arch_json, seed):
  """OneMax whose cost is read from the bits: 1 + the first four bits as a binary number."""
  del seed
  bits = arch_json["bits"]
  return TaskResult(value=float(sum(bits)), info={"cost_s": 1.0 + int("".join(map(str, bits[:4])), 2)})


def cost_is(cost, seed=0):
  """A call that returns a result costing `cost` simulated seconds."""
  del seed
  return TaskResult(value=-cost, info={"cost_s": cost})


COSTED = Task(name="costed-onemax", goal="max", evaluate=costed)


def scripted(points):
  """A strategy proposing `points` in order, recording the pending points of each proposal."""
  seen = []

  def propose(state, n, pending):
    seen.append(list(pending))
    return state + 1, list(points[state : state + n])

  return Strategy(init=lambda key: 0, propose=propose, update=lambda s, obs: s), seen


def bits_of(cost):
  """The bit string whose `costed` cost is `cost` (1..16), the other bits telling points apart."""
  return tuple(int(b) for b in format(cost - 1, "04b"))


def points_of(costs):
  return [bits_of(c) + tuple(int(b) for b in format(i, "06b")) for i, c in enumerate(costs)]


def search(workdir, executor, costs=None, budget=None, strategy=None, key=0):
  """A search of `costed` on the bits space: the scripted `costs` or random search."""
  space = h.bits_space()
  if strategy is None:
    strategy = scripted(points_of(costs))[0] if costs else baselines.random_search(space)
  budget = budget or len(costs)
  return loop.run(
    strategy, COSTED, executor, str(workdir), space=space, budget=budget, key=jax.random.key(key), progress=False
  )


def times(done):
  return [(o.sim_started_at, o.sim_finished_at) for o in done]


def stable(done):
  """Rows without their wall-clock fields (what a rerun may change)."""
  return [{k: v for k, v in o.to_json().items() if k not in ("seconds", "finished_at")} for o in done]


def test_async_event_order_matches_a_hand_computed_schedule():
  ex = SimulatedExecutor(2)
  a, b = ex.submit(cost_is, 5.0), ex.submit(cost_is, 1.0)  # both start at 0
  [(t, out)] = ex.wait(None)
  assert (t, out.sim_started_at, out.sim_finished_at, out.worker) == (b, 0.0, 1.0, "sim-1")
  c = ex.submit(cost_is, 3.0)  # worker 1 is free at 1
  assert [(t, o.sim_started_at, o.sim_finished_at) for t, o in ex.wait(None)] == [(c, 1.0, 4.0)]
  assert [(t, o.sim_started_at, o.sim_finished_at, o.worker) for t, o in ex.wait(None)] == [(a, 0.0, 5.0, "sim-0")]
  assert ex.wait(None) == []


def test_ties_come_back_together_in_submission_order():
  ex = SimulatedExecutor(3)
  tickets = [ex.submit(cost_is, c) for c in (2.0, 1.0, 2.0)]
  assert [t for t, _ in ex.wait(None)] == [tickets[1]]
  assert [t for t, _ in ex.wait(None)] == [tickets[0], tickets[2]]


def test_the_loop_journals_in_simulated_finish_order_with_the_others_pending(tmp_path):
  points = points_of([5, 1, 3])
  strategy, seen = scripted(points)
  done = search(tmp_path, SimulatedExecutor(2), budget=3, strategy=strategy)
  assert [o.trial_id for o in done] == [1, 2, 0]
  assert times(done) == [(0.0, 1.0), (1.0, 4.0), (0.0, 5.0)]
  assert [o.worker for o in done] == ["sim-1", "sim-1", "sim-0"]
  # the freed worker's proposal is made while trial 0 still runs: it is passed as pending
  assert seen == [[], [points[0]], [points[0]]]
  assert journal.replay(tmp_path / loop.JOURNAL) == done
  assert compare.run_costs(done, 4).tolist() == [1.0, 4.0, 5.0, 5.0]  # the workers' clock


def test_sync_batches_start_together_and_async_ends_no_later(tmp_path):
  costs = [10, 1, 1, 1]
  fast = search(tmp_path / "async", SimulatedExecutor(2), costs)
  slow = search(tmp_path / "sync", SimulatedExecutor(2, sync=True), costs)
  assert times(fast) == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0), (0.0, 10.0)]
  assert times(slow) == [(0.0, 1.0), (0.0, 10.0), (10.0, 11.0), (10.0, 11.0)]
  assert [o.trial_id for o in slow] == [1, 0, 2, 3]
  assert fast[-1].sim_finished_at == 10.0 < slow[-1].sim_finished_at == 11.0


def test_sync_refuses_more_than_a_batch():
  ex = SimulatedExecutor(1, sync=True)
  ex.submit(cost_is, 1.0)
  with pytest.raises(ValueError, match="a batch holds num_workers=1"):
    ex.submit(cost_is, 1.0)


def test_charged_proposal_time_delays_the_start_one_proposal_after_another():
  ex = SimulatedExecutor(2, charge_model=True)
  for cost in (5.0, 1.0):
    ex.charge(2.0)
    ex.submit(cost_is, cost)  # proposals end at 2 and 4
  assert [(o.sim_started_at, o.sim_finished_at) for _, o in ex.wait(None)] == [(4.0, 5.0)]
  ex.charge(2.0)
  ex.submit(cost_is, 3.0)  # proposed from 5 (the result's time) to 7
  assert [(o.sim_started_at, o.sim_finished_at) for _, o in ex.wait(None)] == [(2.0, 7.0)]
  assert [(o.sim_started_at, o.sim_finished_at) for _, o in ex.wait(None)] == [(7.0, 10.0)]
  quiet = SimulatedExecutor(1)  # charge_model=False: charges are ignored
  quiet.charge(2.0)
  quiet.submit(cost_is, 1.0)
  assert quiet.wait(None)[0][1].sim_started_at == 0.0


def test_the_loop_charges_the_wall_time_of_each_proposal(tmp_path):
  inner, _ = scripted(points_of([1, 1, 1]))

  def slow_propose(state, n, pending):
    time.sleep(0.05)
    return inner.propose(state, n, pending)

  strategy = inner._replace(propose=slow_propose)
  charged = search(tmp_path / "c", SimulatedExecutor(1, charge_model=True), budget=3, strategy=strategy)
  free = search(tmp_path / "f", SimulatedExecutor(1), [1, 1, 1])
  assert times(free) == [(0.0, 1.0), (1.0, 2.0), (2.0, 3.0)]
  for i, (start, end) in enumerate(times(charged)):
    assert start >= i + 0.05 * (i + 1) and end == pytest.approx(start + 1.0)


class Killed(BaseException):
  """What a kill looks like to the loop (not an evaluation's failure)."""


def killed_after(strategy, n):
  """`strategy` whose update dies on its n-th call, after the loop journalled that row."""
  calls = []

  def update(state, observations):
    calls.append(1)
    if len(calls) == n:
      raise Killed
    return strategy.update(state, observations)

  return strategy._replace(update=update)


@pytest.mark.parametrize("sync", [False, True])
def test_a_budget_cut_resumes_exactly_on_one_worker_or_at_a_sync_batch(tmp_path, sync):
  workers = 2 if sync else 1
  whole = search(tmp_path / "whole", SimulatedExecutor(workers, sync=sync), budget=12)
  search(tmp_path / "cut", SimulatedExecutor(workers, sync=sync), budget=6)
  resumed = search(tmp_path / "cut", SimulatedExecutor(workers, sync=sync), budget=12)
  assert stable(resumed) == stable(whole)


def test_a_killed_search_on_one_worker_resumes_exactly(tmp_path):
  space = h.bits_space()
  whole = search(tmp_path / "whole", SimulatedExecutor(1), budget=12)
  with pytest.raises(Killed):
    search(tmp_path / "k", SimulatedExecutor(1), budget=12, strategy=killed_after(baselines.random_search(space), 5))
  assert len(journal.replay(tmp_path / "k" / loop.JOURNAL)) == 5
  assert stable(search(tmp_path / "k", SimulatedExecutor(1), budget=12)) == stable(whole)


def test_a_killed_async_search_resumes_deterministically_from_its_clock(tmp_path):
  """Evaluations in flight at the kill were never journalled: their workers are free at the last
  recorded end, and their slots are proposed afresh there; nothing recorded is run again."""
  space = h.bits_space()
  whole = search(tmp_path / "whole", SimulatedExecutor(3), budget=14)
  with pytest.raises(Killed):
    search(tmp_path / "k", SimulatedExecutor(3), budget=14, strategy=killed_after(baselines.random_search(space), 6))
  kept = journal.replay(tmp_path / "k" / loop.JOURNAL)
  assert stable(kept) == stable(whole[:6])
  shutil.copytree(tmp_path / "k", tmp_path / "k2")
  calls = []
  counting = COSTED._replace(evaluate=lambda a, s: calls.append(1) or costed(a, s))
  space, strategy = h.bits_space(), baselines.random_search(h.bits_space())
  first = loop.run(
    strategy,
    counting,
    SimulatedExecutor(3),
    str(tmp_path / "k"),
    space=space,
    budget=14,
    key=jax.random.key(0),
    progress=False,
  )
  second = search(tmp_path / "k2", SimulatedExecutor(3), budget=14)
  assert len(calls) == 8 and stable(first) == stable(second) and stable(first[:6]) == stable(kept)
  clock = kept[-1].sim_finished_at
  assert all(o.sim_started_at >= clock for o in first[6:])
  ends = [o.sim_finished_at for o in first]
  assert ends == sorted(ends) and len({o.trial_id for o in first}) == 14
  assert len({tuple(o.arch_json["bits"]) for o in first}) == 14


def test_a_task_without_a_cost_is_refused_in_one_line(tmp_path):
  with pytest.raises(ValueError, match="task 'onemax' reports no cost") as e:
    loop.run(
      baselines.random_search(h.bits_space()),
      h.onemax_task(),
      SimulatedExecutor(2),
      str(tmp_path),
      space=h.bits_space(),
      budget=3,
      key=jax.random.key(0),
      progress=False,
    )
  assert "\n" not in str(e.value)


def test_a_journal_of_real_workers_does_not_resume_as_simulated(tmp_path):
  search(tmp_path, SimulatedExecutor(1), budget=2)
  rows = (tmp_path / loop.JOURNAL).read_text().splitlines()
  row = {**json.loads(rows[0]), "sim_started_at": None, "sim_finished_at": None}
  (tmp_path / loop.JOURNAL).write_text(json.dumps(row) + "\n")
  with pytest.raises(ValueError, match="trial 0 has no simulated times"):
    search(tmp_path, SimulatedExecutor(1), budget=3)


def _config(name, tmp_path, **fields):
  c = load_config(os.path.join(ROOT, "configs", name) + ":smoke")
  c.workdir = str(tmp_path / "w")
  for k, v in fields.items():
    c[k] = v
  return c


def test_config_checks_name_the_field(tmp_path):
  with pytest.raises(ValueError, match=r"config.executor: 'simulated'.*task 'synthetic' reports no cost"):
    config_lib.check_search_config(_config("random_synthetic.py", tmp_path, executor="simulated"))
  with pytest.raises(ValueError, match="config.sim_sync: True .*only executor 'simulated' reads it"):
    config_lib.check_search_config(_config("random_synthetic.py", tmp_path, sim_sync=True))
  with pytest.raises(ValueError, match="config.sim_charge_model: 1 .*True or False"):
    as_int = ml_collections.ConfigDict({**_config("random_synthetic.py", tmp_path).to_dict(), "sim_charge_model": 1})
    config_lib.check_search_config(as_int)
  c = _config("random_synthetic.py", tmp_path, executor="simulated")
  c.task.fidelities = "1,3,9"  # a synthetic task with fidelities reports cost_s = fidelity
  config_lib.check_search_config(c)
  c.prefetch = 1
  with pytest.raises(ValueError, match="config.prefetch: 1"):
    config_lib.check_search_config(c)


def test_a_simulated_search_resumes_only_with_its_own_workers(tmp_path):
  c = _config("random_synthetic.py", tmp_path, executor="simulated", budget=3, num_workers=2)
  c.task.fidelities = "1,3,9"
  done = config_lib.search_from_config(c, progress=False)
  assert all(o.sim_finished_at is not None for o in done)
  for field, value in (("num_workers", 3), ("executor", "inline"), ("sim_sync", True)):
    changed = ml_collections.ConfigDict(c.to_dict())
    changed[field] = value
    with pytest.raises(ValueError, match=f"{field}="):
      config_lib.search_from_config(changed, progress=False)


needs_nb201 = pytest.mark.skipif(
  not os.path.isdir(NB201), reason="NAS-Bench-201 tables absent (../shared/data/nasbench201)"
)


@needs_nb201
def test_nb201_sync_search_takes_the_slowest_of_each_batch(tmp_path):
  c = _config("re_nb201.py", tmp_path, executor="simulated", num_workers=4, sim_sync=True, budget=8)
  c.task.path = NB201
  done = config_lib.search_from_config(c, progress=False)
  first, second = done[:4], done[4:]
  assert {o.sim_started_at for o in first} == {0.0}
  end = max(o.sim_finished_at for o in first)
  assert {o.sim_started_at for o in second} == {end}
  for o in done:
    assert o.sim_finished_at == pytest.approx(o.sim_started_at + o.info["task"]["cost_s"])


@pytest.mark.slow
@needs_nb201
def test_an_nb201_search_on_four_simulated_workers_from_the_command_line(tmp_path):
  cmd = [sys.executable, "launch/search.py", "--config=configs/random_nb201.py:smoke", "--noprogress"]
  cmd += [f"--config.workdir={tmp_path}", f"--config.task.path={NB201}"]
  cmd += ["--config.executor=simulated", "--config.num_workers=4"]
  p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
  assert p.returncode == 0, p.stderr[-3000:]
  done = journal.replay(tmp_path / loop.JOURNAL)
  assert len(done) == 15 and {o.worker for o in done} == {f"sim-{i}" for i in range(4)}
  ends = [o.sim_finished_at for o in done]
  assert ends == sorted(ends)
  for o in done:  # each evaluation occupies its worker for the table's training seconds
    assert o.sim_finished_at - o.sim_started_at == pytest.approx(o.info["task"]["cost_s"])
  assert sum(o.sim_started_at == 0.0 for o in done) == 4  # the first four start together


def test_observations_keep_their_simulated_times_and_old_rows_still_load():
  o = Observation(0, {}, 1.0, Status.OK, "", 0.1, "sim-0", sim_started_at=2, sim_finished_at=5.5)
  assert (o.sim_started_at, o.sim_finished_at) == (2.0, 5.5)
  assert Observation.from_json(json.loads(json.dumps(o.to_json()))) == o
  old = {k: v for k, v in o.to_json().items() if not k.startswith("sim_")}
  assert Observation.from_json(old).sim_started_at is None
  with pytest.raises(ValueError, match="expected both None or start <= end"):
    Observation(0, {}, 1.0, Status.OK, "", 0.1, "sim-0", sim_started_at=6.0, sim_finished_at=5.5)
  with pytest.raises(ValueError, match="expected both None or start <= end"):
    Observation(0, {}, 1.0, Status.OK, "", 0.1, "sim-0", sim_started_at=1.0)


def fails(seed=0):
  raise RuntimeError("the evaluation failed")


def test_a_failed_evaluation_occupies_no_time_and_a_bad_cost_is_refused():
  ex = SimulatedExecutor(1)
  ex.submit(fails)
  [(_, out)] = ex.wait(None)
  assert "the evaluation failed" in out.error and out.sim_started_at == out.sim_finished_at == 0.0
  with pytest.raises(ValueError, match=r"task 'task' reported cost_s=-1.0; expected seconds >= 0"):
    ex.submit(cost_is, -1.0)
