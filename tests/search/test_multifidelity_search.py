"""Multi-fidelity search end to end: the loop evaluates each proposal at its fidelity and a
promotion with its network's seed, the journal records fidelities and learning curves, a search
cut short resumes with nothing lost or repeated, summaries and comparisons read full-fidelity
values only, and configs are checked in one line. Synthetic f1 with fidelities 1, 3, 9: no data.
"""

import dataclasses
import json
import os

import numpy as np
import pytest

from nas_jax.experiments import compare
from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.tasks import synthetic, tabular
from nas_jax.wiring import config as config_lib
from nas_jax.wiring.config_files import load_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(ROOT, "..", "shared", "data", "nasbench201")


def _config(workdir, scheduler="asha", budget=40, strategy="random_synthetic.py"):
  c = load_config(os.path.join(ROOT, "configs", strategy))
  c.task.fidelities = "1,3,9"
  c.scheduler = scheduler
  c.budget, c.workdir = budget, str(workdir)
  return c


def _run(c):
  return config_lib.search_from_config(c, progress=False)


def _key(o):
  return json.dumps(o.arch_json, sort_keys=True), o.fidelity


@pytest.mark.parametrize("scheduler", ["asha", "sh", "hyperband"])
def test_a_multi_fidelity_search_records_fidelities_curves_and_promotions(tmp_path, scheduler):
  done = _run(_config(tmp_path / scheduler, scheduler))
  assert len(done) == 40 and all(o.ok for o in done)
  assert {o.fidelity for o in done} == {1.0, 3.0, 9.0}
  assert len({_key(o) for o in done}) == len(done)  # no network twice at one fidelity
  by_id = {o.trial_id: o for o in done}
  for o in done:
    assert o.curve[-1] == [o.fidelity, o.value]
    assert [f for f, _ in o.curve] == [f for f in (1.0, 3.0, 9.0) if f <= o.fidelity]
    if "continues" in o.info:  # the same network, its seed, one rung up
      parent = by_id[o.info["continues"]]
      assert parent.arch_json == o.arch_json and parent.info["seed"] == o.info["seed"]
      assert o.curve[: len(parent.curve)] == parent.curve  # one network, one learning curve
  exact = [o for o in done if o.fidelity == 9.0]
  assert all(o.value == synthetic.synthetic_value("f1", synthetic.quantities(o.arch_json, "paper")) for o in exact)
  with open(os.path.join(tmp_path / scheduler, loop.SUMMARY)) as f:
    summary = json.load(f)
  assert summary["best_value"] == max(o.value for o in exact)  # never a noisy low-fidelity value
  assert summary["n_per_fidelity"] == {f"{f:g}": sum(o.fidelity == f for o in done) for f in (1.0, 3.0, 9.0)}


def test_a_search_cut_short_resumes_to_the_same_journal(tmp_path):
  whole = _run(_config(tmp_path / "whole", "hyperband", budget=30))
  _run(_config(tmp_path / "cut", "hyperband", budget=13))  # stopped mid-bracket
  resumed = _run(_config(tmp_path / "cut", "hyperband", budget=30))
  strip = lambda obs: [(o.trial_id, _key(o), o.value, o.info.get("continues"), o.info["seed"]) for o in obs]
  assert strip(resumed) == strip(whole)


def test_evaluations_lost_in_flight_are_proposed_again_and_nothing_repeats(tmp_path):
  c = _config(tmp_path / "lost", "sh", budget=30)
  c.num_workers = 3  # three proposals in flight at a time
  done = _run(c)
  path = os.path.join(c.workdir, loop.JOURNAL)
  kept = [o for o in done if o.trial_id not in (10, 11)]  # as if killed with these two running
  os.remove(path)
  for o in kept[:20]:
    journal.append(path, o)
  resumed = _run(c)
  assert [o.trial_id for o in resumed[:20]] == [o.trial_id for o in kept[:20]]
  assert len(resumed) == 30 and len({_key(o) for o in resumed}) == 30
  for o in resumed:
    if "continues" in o.info:
      parent = next(p for p in resumed if p.trial_id == o.info["continues"])
      assert parent.ok and parent.arch_json == o.arch_json and parent.fidelity < o.fidelity


@pytest.mark.slow  # two worker processes (11 s); the default suite covers the loop inline
def test_worker_processes_evaluate_at_the_proposed_fidelity(tmp_path):
  c = _config(tmp_path / "local", "asha", budget=8)
  c.executor, c.num_workers = "local", 2
  done = _run(c)
  assert len(done) == 8 and all(o.ok and o.worker.startswith("process-") for o in done)
  assert {o.fidelity for o in done} == {1.0, 3.0} and all(o.curve[-1] == [o.fidelity, o.value] for o in done)


def test_any_strategy_samples_for_a_scheduler_through_the_config(tmp_path):
  c = _config(tmp_path / "ea", "asha", budget=16, strategy="ea_synthetic.py")
  done = _run(c)
  assert len(done) == 16 and {o.fidelity for o in done} >= {1.0, 3.0}


@pytest.mark.parametrize(
  "field, value, match",
  [
    ("scheduler", "bohb", "config.scheduler: 'bohb' is not allowed; choose one of: sh, hyperband, asha"),
    ("task.fidelities", "9,3", "config.task.fidelities: '9,3' is not allowed"),
    ("task.fidelities", "1,x", "config.task.fidelities: '1,x'; expected numbers"),
    ("objectives", "params", "config.scheduler: 'asha' is not allowed; it ranks by the value alone"),
  ],
)
def test_bad_multi_fidelity_configs_fail_in_one_line(tmp_path, field, value, match):
  c = _config(tmp_path / "bad")
  section, _, name = field.rpartition(".")
  (c[section] if section else c)[name] = value
  with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)")):
    config_lib.check_search_config(c)
  c = _config(tmp_path / "one", "asha")
  c.task.fidelities = ""
  with pytest.raises(ValueError, match="it needs a task with two fidelities or more"):
    config_lib.check_search_config(c)


def test_synthetic_noise_shrinks_with_the_fidelity_and_vanishes_at_the_last():
  draws = np.array([synthetic.fidelity_noise(seed, 1.0, 9.0, 2.0) for seed in range(4000)])
  assert abs(draws.std() - 2.0 * (1 - 1 / 9)) < 0.06 and abs(draws.mean()) < 0.06
  assert synthetic.fidelity_noise(5, 9.0, 9.0, 2.0) == 0.0
  assert synthetic.fidelity_noise(5, 3.0, 9.0, 2.0) == synthetic.fidelity_noise(5, 3.0, 9.0, 2.0)


def _obs(i, value, fidelity, cost, test=None):
  return Observation(
    trial_id=i,
    arch_json={},
    value=value,
    status=Status.OK,
    error="",
    seconds=0.0,
    worker="w",
    test_value=test,
    info={"task": {"cost_s": cost}},
    fidelity=fidelity,
  )


def test_comparisons_count_full_fidelity_values_against_simulated_time():
  o = [_obs(0, 5.0, 1.0, 1.0, 50.0), _obs(1, 2.0, 9.0, 9.0, 20.0), _obs(2, 9.0, 1.0, 1.0), _obs(3, 3.0, 9.0, 9.0, 30.0)]
  best, test = compare.run_curves(o, "max", 5, full_fidelity=9.0)
  np.testing.assert_equal(best, [np.nan, 2.0, 2.0, 3.0, 3.0])
  np.testing.assert_equal(test, [np.nan, 20.0, 20.0, 30.0, 30.0])
  np.testing.assert_equal(compare.run_costs(o, 5), [1.0, 10.0, 11.0, 20.0, 20.0])
  results = {"sim_time": 15.0, "runs": {"a": [best.tolist()]}, "sim_seconds": {"a": [compare.run_costs(o, 5)]}}
  assert compare.at_simulated_time(results) == {"a": [2.0]}  # at 15 s: trials 0-2 have ended


def test_a_comparison_of_schedulers_tables_them_at_equal_simulated_time(tmp_path):
  specs = [os.path.join(ROOT, "configs", "random_synthetic.py")]
  overrides = {"task.fidelities": "1,3,9", "scheduler": "asha"}
  results = compare.compare(specs, [0, 1], 20, str(tmp_path / "cmp"), overrides=overrides, sim_time=40.0)
  assert results["sim_time"] == 40.0 and len(results["sim_seconds"]["random_synthetic"]) == 2
  with open(tmp_path / "cmp" / compare.TABLE) as f:
    assert "best value at 40 simulated s" in f.read()
  assert os.path.exists(tmp_path / "cmp" / compare.CURVES_SIMULATED)


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="needs ../shared/data/nasbench201 (the NB201 tables)")
def test_nb201_fidelities_read_both_tables_and_cost_the_schedules():
  cell = {
    "kind": "nb201",
    "arch_str": "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2|",
  }
  task = tabular.nb201_task(SHARED, "cifar10", fidelities=(12, 200))
  short, full = task.evaluate(cell, 0, 12.0), task.evaluate(cell, 0, 200.0)
  assert short.value == pytest.approx(84.892, abs=1e-3)  # the data README: best 12-epoch validation
  assert short.info["cost_s"] == pytest.approx(full.info["cost_s"] * 12 / 200)
  assert full == task.evaluate(cell, 0) and short.curve == ((12.0, short.value),)
  with pytest.raises(ValueError, match="fidelities"):
    tabular.nb201_task(SHARED, "cifar10", fidelities=(12, 100))


def test_observations_without_fidelity_fields_still_load():
  old = {"trial_id": 0, "arch_json": {}, "value": 1.0, "status": "OK", "error": "", "seconds": 0.0, "worker": "w"}
  o = Observation.from_json(old)
  assert o.fidelity is None and o.curve == []
  assert Observation.from_json(json.loads(json.dumps(dataclasses.replace(o, fidelity=3.0).to_json()))).fidelity == 3.0


def test_a_workdir_from_before_the_scheduler_fields_resumes(tmp_path):
  c = load_config(os.path.join(ROOT, "configs", "random_synthetic.py") + ":smoke")
  c.workdir, c.budget = str(tmp_path / "old"), 2
  _run(c)
  path = os.path.join(c.workdir, loop.CONFIG)
  with open(path) as f:
    old = json.load(f)
  for k in ("scheduler", "scheduler_config"):  # as a version without multi-fidelity search wrote it
    del old[k]
  del old["task"]["fidelities"]
  with open(path, "w") as f:
    json.dump(old, f)
  c.budget = 3
  assert len(_run(c)) == 3
  c.scheduler, c.task.fidelities = "asha", "1,3,9"
  with pytest.raises(ValueError, match="holds a search with another config"):
    _run(c)


@pytest.mark.skipif(not os.path.isdir(SHARED), reason="needs ../shared/data/nasbench201 (the NB201 tables)")
def test_local_search_samples_for_asha_on_nb201(tmp_path):
  # The README's `asha_ls` row: a preset of the config, no code of its own.
  c = load_config(os.path.join(ROOT, "configs", "multifidelity_nb201.py") + ":asha_ls+smoke")
  c.task.path, c.workdir = SHARED, str(tmp_path)
  assert (c.scheduler, c.strategy) == ("asha", "local_search")
  done = _run(c)
  assert len(done) == 30 and {o.fidelity for o in done} == {12.0, 200.0}
  # Every network run at 200 epochs was also run at 12: a promotion, not a fresh sample.
  first_runs = {_key(o)[0] for o in done if o.fidelity == 12.0}
  assert all(_key(o)[0] in first_runs for o in done if o.fidelity == 200.0)
