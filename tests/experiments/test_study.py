"""Studies (`nas_jax.experiments.study`, `study_results`, `study_runner`, launch/study.py): the grid
and its names, each trial's config, the curves and table on hand-made journals (known values),
resume (a study stopped after its first seeds and a trial cut mid-way: finished trials skipped,
nothing repeated), the local pool of two processes, a study record rendered with its curves, and
a Ray study on a two-node loopback cluster that loses a node mid-study."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import ml_collections
import numpy as np
import pytest

from nas_jax.experiments import study_results, study_runner
from nas_jax.experiments.study import (
  TRIALS,
  Trial,
  expand,
  method_configs,
  parse_name,
  read_study,
  trial_config,
  trial_name,
)
from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files
from tests.conftest import SHARED_DATA
from tests.search.test_ray_cluster import ENV, Cluster, needs_ray  # noqa: F401  (the cluster fixture's class)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.abspath(os.path.join(SHARED_DATA, "nasbench201"))
needs_data = pytest.mark.skipif(
  not os.path.exists(os.path.join(DATA, "nb201_200epochs.csv.gz")),
  reason=f"NAS-Bench-201 table not found in {DATA}; it is never downloaded",
)


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
  monkeypatch.chdir(ROOT)  # a study names its methods' configs from the repository root


def _config(tmp_path, **fields) -> ml_collections.ConfigDict:
  c = config_files.load_config(os.path.join(ROOT, "configs", "study_nb201.py") + ":smoke")
  c.workdir, c.task.path = str(tmp_path / "study"), DATA
  for k, v in fields.items():
    c[k] = v
  return c


def test_the_grid_has_each_trial_once_seed_by_seed_and_one_worker_only_async(tmp_path):
  c = _config(tmp_path, workers="1,4", model_time="free,charged", seeds=3, seeds_of="re=1")
  trials = expand(read_study(c))
  # random: 3 seeds x (1 worker: 2 model times + 4 workers: 2 modes x 2 model times); re: 1 seed
  assert len(trials) == 3 * 6 + 6 == len(set(trials))
  assert not any(t.sync for t in trials if t.workers == 1)
  assert [t.seed for t in trials] == sorted(t.seed for t in trials)  # a study stopped early has whole seeds
  assert {t.method for t in trials if t.seed > 0} == {"random"}
  assert trials[:3] == [
    Trial("random", "cifar10", 1, False, False, 0),
    Trial("re", "cifar10", 1, False, False, 0),
    Trial("random", "cifar10", 1, False, True, 0),
  ]
  names = [trial_name(t) for t in trials]
  assert len(set(names)) == len(names) and [parse_name(n) for n in names] == trials
  assert trial_name(Trial("asha_bananas", "imagenet16", 16, True, True, 19)) == (
    "asha_bananas-imagenet16-w16-sync-charged-seed19"
  )


def test_the_study_configs_arg_picks_its_methods():
  path = os.path.join(ROOT, "configs", "study_nb201.py")
  full = config_files.load_config(path)
  assert set(full.methods) == {"nasbot", "bananas", "re", "ls", "random", "asha_random", "asha_bananas"}
  assert dict(config_files.load_config(f"{path}:ls+random").methods) == {k: full.methods[k] for k in ("ls", "random")}
  assert config_files.load_config(f"{path}:smoke").methods.re == "configs/re_nb201.py:smoke"
  with pytest.raises(ValueError, match="the smoke study's methods are random, re"):
    config_files.load_config(f"{path}:smoke+nasbot")


@pytest.mark.parametrize(
  "field, value, message",
  [
    ("workers", "1,x", r"^config\.workers: '1,x'; expected comma-separated ints >= 1$"),
    ("datasets", "cifar10,mnist", r"^config\.datasets: 'cifar10,mnist'; expected comma-separated values of cifar10"),
    ("modes", "async,async", r"^config\.modes: 'async,async' repeats a value$"),
    ("seeds_of", "nasbot=2", r"^config\.seeds_of: 'nasbot=2'; expected method=n with a method of random, re"),
    ("budget_growth", 2.0, r"^config\.budget_growth: 2\.0; expected a number in \[0, 1\]$"),
  ],
)
def test_a_bad_study_field_is_named_in_one_line(tmp_path, field, value, message):
  with pytest.raises(ValueError, match=message):
    read_study(_config(tmp_path, **{field: value}))
  with pytest.raises(ValueError, match=r"^trial name 'x-y'; expected method-dataset-wM"):
    parse_name("x-y")


def test_a_trial_config_is_its_methods_on_its_coordinates(tmp_path):
  study = read_study(_config(tmp_path, budget_growth=0.5))
  c = trial_config(study, Trial("re", "cifar100", 4, True, True, 1), method_configs(study)["re"])
  assert (c.strategy, c.task.dataset, c.seed, c.task.path) == ("regularized_evolution", "cifar100", 1, DATA)
  assert (c.executor, c.num_workers, c.sim_sync, c.sim_charge_model) == ("simulated", 4, True, True)
  assert c.budget == 30  # the smoke config's 15 evaluations x 4 ** 0.5
  assert c.workdir == os.path.join(str(tmp_path), "study", TRIALS, "re-cifar100-w4-sync-charged-seed1")
  config_lib.check_search_config(c)


def _row(i, value, test, t_hours, fidelity=None):
  return Observation(
    trial_id=i,
    arch_json={},
    value=value,
    status=Status.OK,
    error="",
    seconds=0.0,
    worker="sim-0",
    test_value=test,
    fidelity=fidelity,
    sim_started_at=0.0,
    sim_finished_at=t_hours * 3600.0,
  )


def test_curves_and_table_by_hand(tmp_path):
  """Two seeds with known regrets against the table's best (92 valid, 95 test); rows recorded out
  of simulated-time order are read in it; a 12-epoch row of a multi-fidelity trial does not count."""
  study = read_study(_config(tmp_path, report_hours="2.5,4", modes="async"))
  best = (92.0, 95.0)
  a = [_row(0, 91.0, 92.5, 3.0), _row(1, 90.0, 93.0, 1.0)]  # regrets after 1 h: 2, 2; after 3 h: 1, 2.5
  b = [_row(0, 89.0, 94.0, 2.0), _row(1, 99.0, 99.0, 3.0, fidelity=12.0), _row(2, 92.0, 95.0, 4.0, fidelity=200.0)]
  t, valid, test = study_results.trial_curve(a, 3, best)
  np.testing.assert_allclose(t, [3600.0, 3 * 3600.0, 3 * 3600.0])  # padded to the budget
  np.testing.assert_allclose(valid, [2.0, 1.0, 1.0])
  np.testing.assert_allclose(test, [2.0, 2.5, 2.5])
  _, valid_b, test_b = study_results.trial_curve(b, 3, best, full_fidelity=200.0)
  np.testing.assert_allclose(valid_b, [3.0, 3.0, 0.0])
  np.testing.assert_allclose(test_b, [1.0, 1.0, 0.0])
  trials = {
    Trial("random", "cifar10", 1, False, False, 0): study_results.trial_curve(a, 3, best),
    Trial("random", "cifar10", 1, False, False, 1): study_results.trial_curve(b, 3, best, full_fidelity=200.0),
  }
  results = study_results.aggregate(study, trials, points=5)
  assert results["hours"] == [0.0, 1.0, 2.0, 3.0, 4.0] and results["report_hours"] == [2.5, 4.0]
  (valid_panel, test_panel) = results["panels"]
  assert (valid_panel["dataset"], valid_panel["workers"], valid_panel["regret"]) == ("cifar10", "1 worker", "valid")
  # before both seeds have a value the mean is blank (None), so it never jumps when a seed starts
  assert valid_panel["series"]["random"]["mean"] == [None, None, 2.5, 2.0, 0.5]
  assert test_panel["series"]["random"]["mean"] == [None, None, 1.5, 1.75, 1.25]
  assert valid_panel["series"]["random"]["n"] == 2
  (row,) = results["rows"]
  assert row["trial"] == "random-cifar10-w1-async-free-seed0" and row["n"] == 2
  assert row["end_hours"] == 3.5  # the seeds' last results at 3 h and 4 h
  np.testing.assert_allclose(row["valid@2.5"] + row["test@2.5"], [2.5, 0.5, 1.5, 0.5])
  np.testing.assert_allclose(row["valid@4"] + row["test@4"], [0.5, 0.5, 1.25, 1.25])
  lines = study_results.table_lines(study, results)
  assert lines[0].endswith(
    "| valid regret at 2.5 h | test regret at 2.5 h | valid regret at 4 h | test regret at 4 h |"
  )
  assert lines[2] == (
    "| cifar10 | 1 | async | free | random | 2 | 3 | 3.5 | 2.500 ± 0.500 | 1.500 ± 0.500 | 0.500 ± 0.500"
    " | 1.250 ± 1.250 |"
  )
  early = study_results.aggregate(study._replace(report_hours=(0.5,)), trials, points=5)
  assert early["rows"][0]["valid@0.5"] == [None, None]  # no seed has a result yet: null in JSON, n/a in the table
  assert study_results.table_lines(study, early)[2].endswith("| n/a | n/a |")


def _stamps(workdir) -> dict:
  """{trial: [(trial id, wall time recorded)]}: a rerun trial would change them."""
  out = {}
  for name in sorted(os.listdir(os.path.join(workdir, TRIALS))):
    rows = journal.replay(os.path.join(workdir, TRIALS, name, loop.JOURNAL))
    out[name] = [(o.trial_id, o.finished_at) for o in rows]
  return out


@needs_data
def test_a_stopped_study_resumes_skipping_finished_trials_and_repeating_nothing(tmp_path):
  """The first seed's trials finish, then a trial of the second is cut after 5 of its evaluations
  (as a kill leaves it); the whole study then runs the rest: the finished trials are untouched,
  the cut one keeps its 5 rows and completes, and no trial id is recorded twice."""
  methods = ml_collections.ConfigDict({"re": "configs/re_nb201.py:smoke"})
  c = _config(tmp_path, processes=1, workers="1,2", modes="async", seeds=1, methods=methods)
  first = study_runner.run_study(c, progress=False)
  assert first["grid"]["finished"] == first["grid"]["trials"] == 2 == len(first["ran"])
  before = _stamps(c.workdir)
  c.seeds = 2
  study = read_study(c)
  cut = Trial("re", "cifar10", 2, False, False, 1)
  settings = study_runner.trial_settings(study, method_configs(study))
  partial = ml_collections.ConfigDict({**settings[cut], "budget": 5})
  config_lib.search_from_config(partial, progress=False)
  cut_rows = _stamps(c.workdir)[trial_name(cut)]
  assert len(cut_rows) == 5 and not study_runner.finished(settings[cut])
  results = study_runner.run_study(c, progress=False)
  assert results["grid"]["finished"] == results["grid"]["trials"] == 4
  assert sorted(results["ran"]) == ["re-cifar10-w1-async-free-seed1", trial_name(cut)]
  after = _stamps(c.workdir)
  assert {k: after[k] for k in before} == before
  assert after[trial_name(cut)][:5] == cut_rows
  for name, rows in after.items():
    ids = [i for i, _ in rows]
    assert len(ids) == len(set(ids)) == settings[parse_name(name)]["budget"], name
  with open(os.path.join(c.workdir, study_runner.TABLE)) as f:
    assert f.read().count("| cifar10 |") == 2  # 1 worker and 2 workers (async), 2 seeds each


@needs_data
def test_a_study_stopped_at_its_time_limit_tables_what_finished_and_resumes(tmp_path):
  methods = ml_collections.ConfigDict({"re": "configs/re_nb201.py:smoke"})
  c = _config(tmp_path, processes=1, workers="1", modes="async", seeds=1, methods=methods)
  study_runner.run_study(c, progress=False)
  before = _stamps(c.workdir)
  c.workers = "1,2"
  stopped = study_runner.run_study(c, progress=False, stop_after_s=0.0)  # 0: table what finished, run nothing
  assert stopped["stopped"] and stopped["grid"]["finished"] == 1 < stopped["grid"]["trials"] == 2
  assert stopped["ran"] == {} and _stamps(c.workdir) == before
  with open(os.path.join(c.workdir, study_runner.TABLE)) as f:
    assert f.read().count("| cifar10 |") == 1
  results = study_runner.run_study(c, progress=False, stop_after_s=600.0)
  assert not results["stopped"] and results["grid"]["finished"] == 2 and len(results["ran"]) == 1
  assert {k: v for k, v in _stamps(c.workdir).items() if k in before} == before


def _module(name):
  spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "benchmarks", f"{name}.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_a_study_record_shows_its_curves_on_the_results_page(tmp_path, monkeypatch):
  sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
  monkeypatch.setattr(sys, "path", sys.path)
  render, figures = _module("render_results"), _module("render_figures")
  series = {"random": {"mean": [None, 2.0, 1.0], "stderr": [None, 0.5, 0.0], "n": 2}}
  panels = [{"dataset": "cifar10", "workers": "1 worker", "regret": r, "series": series} for r in ("valid", "test")]
  record = {k: "x" for k in render.FIELDS} | {"name": "study_x", "direction": "lower", "figures": {}, "tables": []}
  record |= {"curves": {"hours": [0.0, 1.0, 2.0], "panels": panels}, "load_average": [1.0, 1.0, 1.0]}
  page = render.render_page({"study_x": record})
  assert "![study_x: validation regret against simulated hours](figures/study_x_valid.png)" in page
  assert "![study_x: test regret against simulated hours](figures/study_x_test.png)" in page
  specs = figures.study_figures({"study_x": record})
  assert list(specs) == ["study_x_valid", "study_x_test"] and specs["study_x_test"].records == ("study_x",)
  given = figures.inputs("study_x_test", {"study_x": record})
  assert given["records"]["study_x"]["curves"] == record["curves"]  # the digest covers the curves
  specs["study_x_test"].draw(given, str(tmp_path / "test.png"))
  assert (tmp_path / "test.png").read_bytes()[:4] == b"\x89PNG"


def _study_command(workdir, *flags):
  return [
    sys.executable,
    "launch/study.py",
    "--config=configs/study_nb201.py:smoke",
    f"--config.workdir={workdir}",
    f"--config.task.path={DATA}",
    "--noprogress",
    *flags,
  ]


@pytest.mark.slow  # two worker processes each load the table: about half a minute
@needs_data
def test_the_smoke_study_on_two_processes_writes_its_table_curves_and_record(tmp_path):
  env = {**os.environ, "NAS_JAX_RECORDS": str(tmp_path / "records")}
  cmd = _study_command(tmp_path / "study", "--config.processes=2", "--record=study_smoke")
  p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
  assert p.returncode == 0, p.stderr[-3000:]
  assert "study: 12 of 12 trials finished" in p.stdout
  assert "(12 run now, on 2 workers)" in p.stdout  # the pool's two processes
  for name in (study_runner.TABLE, *study_runner.CURVES.values()):
    assert (tmp_path / "study" / name).stat().st_size > 0
  (path,) = (tmp_path / "records").iterdir()
  record = json.loads(path.read_text())
  assert record["direction"] == "lower" and record["figures"]["trials finished"] == "12 of 12"
  assert len(record["tables"][0]["rows"]) == 6 and {p["regret"] for p in record["curves"]["panels"]} == {
    "valid",
    "test",
  }
  before = _stamps(tmp_path / "study")
  p = subprocess.run(_study_command(tmp_path / "study"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
  assert p.returncode == 0 and "study: 12 of 12 trials finished" in p.stdout, p.stderr[-3000:]
  assert "(0 run now, on 0 workers)" in p.stdout
  assert _stamps(tmp_path / "study") == before  # a rerun of a finished study runs nothing


def _freeze_a_running_task(raylet: int) -> int | None:
  """Stops (SIGSTOP) a Ray worker of the node whose raylet is `raylet` in the middle of a task;
  its pid (None: no worker ran one). A worker is the raylet's child process, named after the task
  it runs ("ray::_ray_call"; "ray::IDLE" once its result is stored): one stopped under the task's
  name has not sent its result. A short trial can end between one look and the next, so the worker
  is stopped first and then looked at again."""
  psutil = pytest.importorskip("psutil")
  try:
    workers = psutil.Process(raylet).children()
  except psutil.NoSuchProcess:
    return None
  running = lambda w: (w.cmdline() or [""])[0].startswith("ray::_ray_call")
  for w in workers:
    try:
      if not running(w):
        continue
      w.send_signal(signal.SIGSTOP)
      if running(w):
        return w.pid
      w.send_signal(signal.SIGCONT)
    except psutil.NoSuchProcess:
      continue
  return None


@pytest.fixture
def cluster(ray_alone):
  c = Cluster()
  try:
    yield c
  finally:
    c.stop()


@pytest.mark.slow  # a Ray cluster of two nodes, and Ray's tens of seconds to report a dead raylet
@needs_ray
@needs_data
def test_a_ray_study_loses_a_node_mid_study_and_completes_with_nothing_lost_or_repeated(tmp_path, cluster):
  cluster.start_node(num_cpus=1)
  node = cluster.start_node(num_cpus=1)
  workdir = tmp_path / "study"
  # 150 evaluations a trial: seconds each, so that the node runs one when it is killed
  flags = f"--config.ray_address={cluster.address}", "--config.seeds=4", "--config.budget=150"
  study = subprocess.Popen(
    _study_command(workdir, *flags), cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
  )
  end, raylet = time.monotonic() + 300, cluster.raylet(node)
  while (worker := _freeze_a_running_task(raylet)) is None:  # the node is lost in the middle of a trial
    assert study.poll() is None, study.communicate()[1][-3000:]
    assert time.monotonic() < end, "the second node ran no trial in 300 s"
    time.sleep(0.1)
  for pid in worker, raylet:  # the worker too: it is not in the node's process group
    os.kill(pid, signal.SIGKILL)
  out, err = study.communicate(timeout=600)
  assert study.returncode == 0, err[-3000:]
  assert "rerunning the evaluation" in err, err[-3000:]  # the lost node's trial ran again, on the head
  assert "study: 24 of 24 trials finished" in out and "(24 run now, on" in out
  c = _config(tmp_path, seeds=4, budget=150)
  settings = study_runner.trial_settings(read_study(c), method_configs(read_study(c)))
  assert sorted(os.listdir(workdir / TRIALS)) == sorted(trial_name(t) for t in settings)
  for t, s in settings.items():
    rows = journal.replay(workdir / TRIALS / trial_name(t) / loop.JOURNAL)
    ids = [o.trial_id for o in rows]
    assert len(ids) == len(set(ids)) == s["budget"] and all(o.ok for o in rows), trial_name(t)
