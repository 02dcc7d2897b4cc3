"""Executors: results, exceptions as text, NaN passed through, timeouts that kill the worker,
lost workers' calls rerun, then fail if they lose every worker they run on (never a hang), parallel
workers, functions kept by a worker, x64 copied into workers; Ray likewise; which errors are a
lost worker."""

import concurrent.futures.process

import os
import re
import subprocess
import sys
import tempfile
import time

import pytest

from nas_jax.search import journal
from nas_jax.search.executors import InlineExecutor, Outcome, lost_worker, seconds_to_block
from nas_jax.search.process_executor import ProcessExecutor
from nas_jax.search.ray_executor import RayExecutor

sys.path.insert(0, os.path.dirname(__file__))
import executor_helpers as h  # noqa: E402  (worker processes import it by name)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wait_all(ex, n, limit_s=60.0):
  """Waits until n calls have ended; returns {ticket: Outcome}."""
  out, end = {}, time.monotonic() + limit_s
  while len(out) < n:
    assert time.monotonic() < end, f"only {len(out)} of {n} calls ended in {limit_s} s"
    out.update(ex.wait(timeout=1.0))
  return out


def test_inline_runs_at_submit_and_reports_errors_as_text():
  ex = InlineExecutor()
  ok, bad = ex.submit(h.add, 2, 3), ex.submit(h.boom, "inline boom")
  done = dict(ex.wait(None))
  assert done[ok].result == 5 and done[ok].error == "" and done[ok].worker == "inline"
  assert done[bad].result is None and "ValueError: inline boom" in done[bad].error
  assert ex.wait(0.0) == []


def test_inline_rejects_bad_num_workers():
  with pytest.raises(ValueError, match="num_workers=0"):
    InlineExecutor(0)


@pytest.fixture
def pool():
  ex = ProcessExecutor(num_workers=1, timeout_s=2.0)
  yield ex
  ex.shutdown()


def test_process_results_errors_and_nan(pool):
  t_ok, t_err, t_nan = pool.submit(h.add, 1, 2), pool.submit(h.boom, "bad arch"), pool.submit(h.nan_result)
  done = wait_all(pool, 3)
  assert done[t_ok].result == 3 and not done[t_ok].timed_out
  assert "ValueError: bad arch" in done[t_err].error and "Traceback" in done[t_err].error
  assert done[t_nan].result != done[t_nan].result  # NaN comes back as a value
  assert done[t_ok].worker.startswith("process-")


def test_process_timeout_kills_the_worker_and_the_next_call_runs(pool):
  slow = pool.submit(h.sleep_then, 60.0, "never")
  t0 = time.monotonic()
  done = wait_all(pool, 1)
  assert done[slow].timed_out and "timed out after 2 s" in done[slow].error
  assert time.monotonic() - t0 < 20
  with pytest.raises(ProcessLookupError):  # the worker that ran it is gone
    killed_pid = int(done[slow].worker.split("pid")[1])
    os.kill(killed_pid, 0)
  after = pool.submit(h.add, 4, 5)
  assert wait_all(pool, 1)[after].result == 9


def test_a_lost_process_worker_reruns_its_call_on_a_fresh_one(pool, tmp_path):
  """The worker dies mid-call (as under the OOM killer or kill -9): the call is not a failure, it
  runs again on a new process and its result comes back under its own ticket."""
  t = pool.submit(h.exit_once, str(tmp_path / "died"), 7)
  done = wait_all(pool, 1, limit_s=30)
  assert (tmp_path / "died").exists()
  assert done[t].result == 7 and done[t].error == ""


def test_a_call_that_always_loses_its_worker_fails_after_its_reruns():
  """Reruns are bounded: the call's worker dies on each of 1 + retries runs while fresh workers
  keep starting, so the evaluation itself is at fault: one failed Outcome naming the worker's exit,
  and the pool runs the next call."""
  with ProcessExecutor(num_workers=1, retries=2) as ex:
    t = ex.submit(h.hard_exit, 3)
    (outcome,) = wait_all(ex, 1, limit_s=90).values()
    assert re.search(r"exited with code 3 during an evaluation, on each of its 3 runs", outcome.error)
    after = ex.submit(h.add, 2, 2)
    assert wait_all(ex, 1, limit_s=60)[after].result == 4 and t != after


def test_process_rejects_bad_retries():
  with pytest.raises(ValueError, match="retries=-1"):
    ProcessExecutor(1, retries=-1)


def test_lost_worker_tells_the_infrastructure_from_the_evaluation():
  """Ray's node, raylet, worker, actor, system and object losses are the infrastructure's; a
  call's own exception (Ray's RayTaskError, any plain exception), a cancel and Ray's memory
  monitor killing a greedy call are the evaluation's."""
  x = pytest.importorskip("ray").exceptions
  lost = [
    x.NodeDiedError("node 1 died"),
    x.LocalRayletDiedError(),
    x.WorkerCrashedError(),
    x.ActorDiedError(),
    x.RaySystemError("gcs gone"),
    x.ObjectLostError("ab" * 14, None, ""),
    x.OwnerDiedError("ab" * 14, None, ""),
    x.RpcError("unavailable"),
    concurrent.futures.process.BrokenProcessPool("a process died"),
  ]
  own = [
    ValueError("bad arch"),
    x.RayTaskError("evaluate", "Traceback ...", ValueError("bad arch")).as_instanceof_cause(),
    x.RayTaskError("evaluate", "Traceback ...", x.WorkerCrashedError()).as_instanceof_cause(),
    x.TaskCancelledError(),
    x.OutOfMemoryError("the memory monitor killed it"),
  ]
  assert [lost_worker(e) for e in lost] == [True] * len(lost)
  assert [lost_worker(e) for e in own] == [False] * len(own)


def test_process_workers_run_in_parallel():
  with ProcessExecutor(num_workers=2) as ex:
    for _ in range(2):
      ex.submit(h.add, 0, 0)
    wait_all(ex, 2, limit_s=60)  # both workers have booted
    t0 = time.monotonic()
    tickets = [ex.submit(h.sleep_then, 1.5, i) for i in range(2)]
    done = wait_all(ex, 2)
    assert sorted(done[t].result for t in tickets) == [0, 1]
    assert time.monotonic() - t0 < 2.8  # one worker would take 3 s


def test_a_worker_keeps_a_function_sent_again_with_its_state():
  """A worker keeps the functions it was sent, by their pickle: a stateful one counts on across
  calls (a train task's trainer memory lasts as long as the worker), another starts afresh."""
  with ProcessExecutor(num_workers=1) as ex:
    counter, other = h.Counter(), h.Counter(100)
    tickets = [ex.submit(counter), ex.submit(counter), ex.submit(other), ex.submit(counter)]
    done = wait_all(ex, 4)
    assert [done[t].result for t in tickets] == [1, 2, 101, 3]
    assert counter.calls == 0  # the caller's copy never ran


def test_process_submit_raises_on_unpicklable_call():
  ex = ProcessExecutor(num_workers=1)
  try:
    with pytest.raises(Exception, match="pickle|lambda"):
      ex.submit(lambda: 1)
  finally:
    ex.shutdown()


def test_process_workers_copy_x64_from_the_caller():
  import jax  # conftest enables x64

  assert jax.config.jax_enable_x64
  with ProcessExecutor(num_workers=1) as ex:
    t = ex.submit(h.x64_enabled)
    assert wait_all(ex, 1)[t].result is True


def test_process_workers_see_the_environment_of_when_they_were_made(monkeypatch):
  # The first pool starts the server the workers are forked from, with the environment of then; a
  # later pool's workers still see the caller's environment of their own time, as spawned ones do.
  with ProcessExecutor(num_workers=1) as ex:
    t = ex.submit(h.environ, "NAS_JAX_TEST_VALUE")
    first = wait_all(ex, 1)[t].result
  monkeypatch.setenv("NAS_JAX_TEST_VALUE", "set after the first pool")
  with ProcessExecutor(num_workers=1) as ex:
    t = ex.submit(h.environ, "NAS_JAX_TEST_VALUE")
    assert (first, wait_all(ex, 1)[t].result) == (None, "set after the first pool")


def test_process_rejects_bad_arguments():
  with pytest.raises(ValueError, match="timeout_s=0"):
    ProcessExecutor(1, timeout_s=0)
  with pytest.raises(ValueError, match="num_workers=-1"):
    ProcessExecutor(-1)


@pytest.mark.slow  # a minute of Ray starting its workers; .ci/run runs it after the default suite
def test_ray_executor_same_semantics(ray_alone):
  ray = pytest.importorskip("ray")
  here = os.path.dirname(os.path.abspath(__file__))
  ray.init(
    num_cpus=2,
    include_dashboard=False,
    log_to_driver=False,
    runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join([here] + sys.path[1:])}},
  )
  try:
    # A call's limit counts from its submission, and a Ray worker's first call boots it (importing
    # jax: seconds, more on a busy machine), so the calls that must finish get a generous limit and
    # the one that must time out gets its own executor with a short one.
    ex = RayExecutor(num_workers=2, timeout_s=120.0)
    marker = os.path.join(tempfile.mkdtemp(prefix="nas_jax_ray_"), "died")
    t_ok, t_err, t_lost = ex.submit(h.add, 1, 2), ex.submit(h.boom, "ray boom"), ex.submit(h.exit_once, marker, 5)
    done = wait_all(ex, 3, limit_s=240)
    assert done[t_ok].result == 3 and done[t_ok].worker.startswith("ray:")
    assert "ValueError: ray boom" in done[t_err].error
    assert os.path.exists(marker) and done[t_lost].result == 5 and not done[t_lost].error  # rerun
    doomed = RayExecutor(num_workers=1, retries=1)
    t_doomed = doomed.submit(h.hard_exit, 3)
    assert re.search("WorkerCrashedError.*on each of its 2 runs", wait_all(doomed, 1, limit_s=240)[t_doomed].error)
    doomed.shutdown()
    t_x64 = ex.submit(h.x64_enabled)
    assert wait_all(ex, 1, limit_s=240)[t_x64].result is True
    cutoff = RayExecutor(num_workers=1, timeout_s=2.0)
    t_slow = cutoff.submit(h.sleep_then, 120.0, "never")
    done = wait_all(cutoff, 1, limit_s=60)
    assert done[t_slow].timed_out and "timed out after 2 s" in done[t_slow].error
    cutoff.shutdown()
    ex.shutdown()
    assert ray.is_initialized()  # it did not start Ray, so it leaves it running
  finally:
    ray.shutdown()


def test_outcome_defaults_mean_success():
  o = Outcome(result=1)
  assert (o.error, o.timed_out) == ("", False)


def test_a_wait_blocks_until_its_deadline_or_the_first_time_limit():
  """At now=10, with calls started at 1 and 4: the wait's own end, or the first call's limit."""
  assert seconds_to_block(10.0, None, [1.0, 4.0], None) is None  # until a call ends
  assert seconds_to_block(10.0, 12.5, [1.0, 4.0], None) == 2.5
  assert seconds_to_block(10.0, 30.0, [4.0, 1.0], 10.0) == 1.0  # the call started at 1 ends at 11
  assert seconds_to_block(10.0, 10.5, [1.0], 10.0) == 0.5
  assert seconds_to_block(10.0, None, [1.0], 5.0) == 0.0  # past its limit: collect it now
  assert seconds_to_block(10.0, None, [], 5.0) is None


def test_a_script_without_a_main_guard_is_named_in_every_failed_trial(tmp_path):
  script = tmp_path / "unguarded.py"  # starts a search at import time, as each spawned worker imports it
  script.write_text(
    "import sys\n"
    "from nas_jax.wiring import config, config_files\n"
    f"c = config_files.load_config({os.path.join(ROOT, 'configs', 'ea_synthetic.py')!r} + ':smoke')\n"
    f"c.workdir, c.executor, c.num_workers, c.budget = {str(tmp_path / 'w')!r}, 'local', 1, 2\n"
    "config.search_from_config(c, progress=False)\n"
  )
  env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": "", "PYTHONPATH": ROOT}
  subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, timeout=300)
  done = journal.replay(tmp_path / "w" / "journal.jsonl")
  assert len(done) == 2 and all('if __name__ == "__main__":' in o.error for o in done)
