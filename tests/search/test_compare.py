"""The comparison harness: curves by hand, the table's mean ± standard error, results.json's
layout, resumed runs, and refusal to compare different tasks."""

import dataclasses
import json
import math
import os
import types

import numpy as np
import ml_collections
import pytest

from nas_jax.experiments import compare
from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.wiring import config_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RANDOM = os.path.join(ROOT, "configs", "random_synthetic.py") + ":smoke"
EA = os.path.join(ROOT, "configs", "ea_synthetic.py") + ":smoke"


def obs(values, tests):
  return [
    Observation(
      trial_id=i,
      arch_json={},
      value=v,
      status=Status.OK if v is not None else Status.FAILED,
      error="" if v is not None else "x",
      seconds=0.0,
      worker="w",
      test_value=t,
    )
    for i, (v, t) in enumerate(zip(values, tests))
  ]


def test_run_curves_by_hand():
  o = obs([1.0, None, 3.0, 2.0], [0.1, None, 0.3, 0.2])
  best, test = compare.run_curves(o, "max", 6)
  np.testing.assert_array_equal(best, [1, 1, 3, 3, 3, 3])
  np.testing.assert_array_equal(test, [0.1, 0.1, 0.3, 0.3, 0.3, 0.3])
  best, test = compare.run_curves(obs([None, 4.0, 0.5, 2.0], [None, None, 9.0, 8.0]), "min", 3)
  np.testing.assert_array_equal(best, [np.nan, 4.0, 0.5])
  np.testing.assert_array_equal(test, [np.nan, np.nan, 9.0])


def test_run_seconds_and_best_at_seconds_by_hand():
  o = [
    Observation(trial_id=i, arch_json={}, value=v, status=Status.OK, error="", seconds=s, worker="w", finished_at=f)
    for i, (v, s, f) in enumerate(((1.0, 2.0, 102.0), (3.0, 5.0, 107.0), (2.0, 1.0, 108.0)))
  ]
  secs = compare.run_seconds(o, 4)
  np.testing.assert_array_equal(secs, [2.0, 7.0, 8.0, 8.0])  # from the first evaluation's start
  best, _ = compare.run_curves(o, "max", 4)
  assert [compare.best_at_seconds(best, secs, t) for t in (1.0, 2.0, 6.9, 7.0, 100.0)][1:] == [1.0, 1.0, 3.0, 3.0]
  assert math.isnan(compare.best_at_seconds(best, secs, 1.0))
  assert np.isnan(compare.run_seconds(obs([1.0], [None]), 2)).all()  # journals without finished_at


def test_seconds_curves_reach_the_longest_run_and_never_fall():
  results = {
    "goal": "max",
    "runs": {"fast": [[1.0, 2.0]], "slow": [[0.0, 5.0, 9.0], [-4.0, -4.0, -4.0]]},
    "seconds": {"fast": [[1.0, 2.0]], "slow": [[3.0, 50.0, 100.0], [25.0, 30.0, 40.0]]},
  }
  grid, at = compare.seconds_curves(results, points=11)
  np.testing.assert_allclose(grid, np.linspace(0, 100, 11))
  np.testing.assert_array_equal(at["fast"][0, 1:], 2.0)  # carried forward to the slow runs' end
  assert np.isnan(at["slow"][:, :3]).all()  # until both seeds have a value: seed 0 alone would fall
  np.testing.assert_array_equal(at["slow"][:, 3:].mean(axis=0), [-2.0, -2.0, 0.5, 0.5, 0.5, 0.5, 0.5, 2.5])


def test_run_name():
  assert compare.run_name("configs/ea_synthetic.py:smoke") == "ea_synthetic-smoke"
  assert compare.run_name("a/b/random_cnn_digits.py") == "random_cnn_digits"


def test_model_seconds_sum_the_strategys_timings_by_hand():
  timed = [{"origin": "sample"}, {"seconds": {"fit": 1.5, "acquisition": 0.25}}, {"seconds": {"fit": 2.0}}]
  o = [dataclasses.replace(x, info={"strategy": t}) for x, t in zip(obs([1.0, 2.0, 3.0], [None] * 3), timed)]
  assert compare.model_seconds(o) == (3.5, 0.25)
  assert compare.model_seconds(obs([1.0], [None])) == (0.0, 0.0)  # no model, no timings


def test_compare_writes_results_table_and_curves_and_resumes(tmp_path):
  out = str(tmp_path / "cmp")
  results = compare.compare([RANDOM, EA], [0, 1], 4, out)
  on_disk = json.loads((tmp_path / "cmp" / compare.RESULTS).read_text())
  assert on_disk == results and on_disk["goal"] == "max" and on_disk["budget"] == 4
  assert set(on_disk["runs"]) == {"random_synthetic-smoke", "ea_synthetic-smoke"}
  for name, runs in on_disk["runs"].items():
    assert len(runs) == 2 and all(len(r) == 4 and r == sorted(r) for r in runs)  # best-so-far rises
    for seed, r in zip((0, 1), runs):
      done = journal.replay(tmp_path / "cmp" / name / f"seed{seed}" / loop.JOURNAL)
      assert r[-1] == max(o.value for o in done)
    assert on_disk["test_runs"][name] == [[None] * 4] * 2  # synthetic tasks have no test metric
  finals = [r[-1] for r in on_disk["runs"]["random_synthetic-smoke"]]
  mean, err = np.mean(finals), np.std(finals, ddof=1) / math.sqrt(2)
  table = (tmp_path / "cmp" / compare.TABLE).read_text()
  assert f"| random_synthetic-smoke | 2/2 | {mean:.6g} ± {err:.2g} |" in table
  assert (tmp_path / "cmp" / compare.CURVES).read_bytes()[:4] == b"\x89PNG"
  assert (tmp_path / "cmp" / compare.CURVES_SECONDS).read_bytes()[:4] == b"\x89PNG"
  for runs in on_disk["seconds"].values():
    assert all(len(r) == 4 and r == sorted(r) and r[0] >= 0 for r in runs)
  assert on_disk["model_seconds"] == {name: [[0.0, 0.0]] * 2 for name in on_disk["runs"]}  # neither has a model
  # A second call replays every run: same results, journals untouched.
  sizes = {p: os.path.getsize(p) for p in (tmp_path / "cmp").glob("*/seed*/journal.jsonl")}
  assert compare.compare([RANDOM, EA], [0, 1], 4, out) == results
  assert sizes == {p: os.path.getsize(p) for p in sizes}


def test_overrides_reach_every_config_and_the_results(tmp_path):
  assert config_files.parse_overrides(["task.function=f0", "num_workers=2", "task.delay_s=0.0"]) == {
    "task.function": "f0",
    "num_workers": 2,
    "task.delay_s": 0.0,
  }
  results = compare.compare([RANDOM, EA], [0], 3, str(tmp_path / "cmp"), overrides={"task.function": "f0"})
  assert results["overrides"] == {"task.function": "f0"}
  plain = compare.compare([RANDOM, EA], [0], 3, str(tmp_path / "plain"))
  assert results["runs"] != plain["runs"]  # f0 and f1 score the same networks differently
  with pytest.raises(ValueError, match=r"'task\.epochs' is not a field of .*random_synthetic"):
    compare.compare([RANDOM], [0], 3, str(tmp_path / "bad"), overrides={"task.epochs": 3})
  with pytest.raises(ValueError, match=r"expected dotted\.field=value"):
    config_files.parse_overrides(["epochs"])


def test_missing_field_says_what_is_there():
  c = ml_collections.ConfigDict({"budget": 3, "task": {"function": "f1", "delay_s": 0.0}, "strategy": "ea"})
  assert config_files.missing_field(c, "task.function") is None and config_files.missing_field(c, "budget") is None
  assert config_files.missing_field(c, "budgett") == (
    "config has no field 'budgett'; did you mean 'budget'? its fields are budget, strategy, task"
  )
  assert (
    config_files.missing_field(c, "task.epochs")
    == "config.task has no field 'epochs'; its fields are delay_s, function"
  )
  assert config_files.missing_field(c, "strategy.n") == "config.strategy is a str ('ea'), not a group of fields"
  with pytest.raises(ValueError, match=r"'task\.epochs' is not a field of S: config\.task has no field 'epochs'"):
    config_files.apply_overrides(c, {"task.function": "f0", "task.epochs": 3}, "S")
  assert c.task.function == "f1"  # nothing was set
  assert config_files.first_missing_field(c, ["budget", "task.epochs", "x"]) == (
    "task.epochs",
    "config.task has no field 'epochs'; its fields are delay_s, function",
  )
  config_files.apply_overrides(c, {"task.function": "f0", "budget": 5}, "S")
  assert (c.task.function, c.budget) == ("f0", 5)


def test_compare_refuses_different_tasks_and_bad_arguments(tmp_path):
  with pytest.raises(ValueError, match="different tasks"):
    compare.compare([RANDOM, f"{EA}+f2"], [0], 2, str(tmp_path / "out"))
  with pytest.raises(ValueError, match="repeat a name"):
    compare.compare([RANDOM, RANDOM], [0], 2, str(tmp_path / "out"))
  with pytest.raises(ValueError, match="budget=0"):
    compare.compare([RANDOM], [0], 0, str(tmp_path / "out"))
  with pytest.raises(ValueError, match="expected an existing configs"):
    compare.compare(["configs/nope.py"], [0], 2, str(tmp_path / "out"))


def test_hypervolume_curve_by_hand():
  task = types.SimpleNamespace(goal="max", objectives=(("params", "min"),))
  done = obs([1.0, None, 3.0, 2.0], [None] * 4)
  done = [dataclasses.replace(o, objectives={} if not o.ok else {"params": p}) for o, p in zip(done, [1, 0, 4, 2])]
  ref = {"value": 0.0, "params": 5.0}
  # As boxes from the reference, (value, 5 - params): (1, 4) has area 4; the failure adds nothing;
  # (3, 1) adds 3 - 1 = 2; (2, 3) adds the 1 x 2 strip between them: 4, 4, 6, 8.
  np.testing.assert_allclose(compare.hypervolume_curve(done, task, ref, 6), [4, 4, 6, 8, 8, 8])
  assert compare.reference_point([done], task) == {"value": 1.0, "params": 4.0}
  with pytest.raises(ValueError, match=r"hv_ref=\{'value': 0\.0\} lacks \['params'\]"):
    compare.hypervolume_curve(done, task, {"value": 0.0}, 4)


def test_a_multi_objective_comparison_tabulates_hypervolume(tmp_path):
  overrides = {"objectives": "params"}
  results = compare.compare([RANDOM, EA], [0, 1], 5, str(tmp_path / "mo"), overrides=overrides)
  ref = results["hv_ref"]
  assert set(ref) == {"value", "params"}
  for name, runs in results["hypervolume"].items():
    for seed, curve in zip((0, 1), runs):
      assert curve == sorted(curve) and curve[-1] > 0  # hypervolume never falls
      done = journal.replay(tmp_path / "mo" / name / f"seed{seed}" / loop.JOURNAL)
      assert all(o.value >= ref["value"] and o.objectives["params"] <= ref["params"] for o in done if o.ok)
  table = (tmp_path / "mo" / compare.TABLE).read_text()
  assert "hypervolume |" in table and f"reference point {ref}" in table
  assert (tmp_path / "mo" / compare.HV_CURVES).read_bytes()[:4] == b"\x89PNG"
  given = compare.compare([RANDOM], [0], 5, str(tmp_path / "given"), overrides=overrides, hv_ref=ref)
  assert given["hypervolume"]["random_synthetic-smoke"][0] == results["hypervolume"]["random_synthetic-smoke"][0]


def test_method_table_gives_mean_stderr_and_the_ratio_to_random():
  values = {"a": {"random": [1.0, 3.0], "re": [1.0, 1.0]}, "b": {"random": [2.0, 2.0, 2.0], "re": [4.0, 6.0, 8.0]}}
  lines = compare.method_table(values, ["random", "re"], digits=2)
  assert lines[:2] == ["| method | seeds | a | b |", "|---|---|---|---|"]
  # random on "a": mean 2, standard error std([1, 3], ddof=1) / sqrt(2) = 1; re on "b": 6 ± 2/sqrt(3)
  assert lines[2] == "| random | 3 | 2.00 ± 1.00 | 2.00 ± 0.00 |"
  assert lines[3] == "| re | 3 | 1.00 ± 0.00 (0.50x random) | 6.00 ± 1.15 (3.00x random) |"
