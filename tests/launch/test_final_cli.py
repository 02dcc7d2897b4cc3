"""launch/final.py end to end on tiny finished searches: the top networks trained, tested, saved
and tabled; a kill -9 after the first finished seed, then a rerun that repeats nothing and ends
with the uninterrupted run's final.json; the tabular and synthetic searches' one line; bad input
in one line."""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import nas_jax
from nas_jax.experiments import final_training
from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.training import datasets
from nas_jax.training.final_fit import merge_train_val
from nas_jax.spaces.space import layer_graph_space
from nas_jax.wiring import config_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _final(workdir, *flags):
  return ["launch/final.py", f"--workdir={workdir}", "--noprogress", *flags]


@pytest.fixture(scope="module")
def mlp_search(launch, tmp_path_factory):
  """A finished smoke search: two MLPs on diabetes, one epoch each."""
  workdir = tmp_path_factory.mktemp("search") / "mlp"
  p = launch(
    "launch/search.py", "--config=configs/random_mlp_diabetes.py:smoke", f"--config.workdir={workdir}", "--noprogress"
  )
  assert p.returncode == 0, p.stderr[-3000:]
  return workdir


def _entries(workdir):
  with open(os.path.join(workdir, final_training.FINAL, final_training.FINAL_JSON)) as f:
    return json.load(f)


def test_the_top_networks_are_trained_tested_saved_and_tabled(launch, mlp_search, tmp_path):
  workdir = tmp_path / "w"
  shutil.copytree(mlp_search, workdir)
  p = launch(*_final(workdir, "--top_k=2", "--epochs=2"))
  assert p.returncode == 0, p.stderr[-3000:]
  entries = _entries(workdir)
  assert len(entries) == 2 and all(list(e) == list(final_training.FIELDS) for e in entries)
  searched = sorted((o for o in journal.replay(workdir / loop.JOURNAL) if o.ok), key=lambda o: o.value)
  assert [e["arch_json"] for e in entries] == [o.arch_json for o in searched]  # MSE: the least first
  assert [e["search_value"] for e in entries] == [o.value for o in searched]
  lines = p.stdout.splitlines()
  assert lines[0].startswith("top 2 networks trained for 2 epochs on train+validation; see ")
  assert lines[1].split()[:4] == ["rank", "search", "value", "(min)"] and "test MSE mean" in lines[1]
  data = merge_train_val(datasets.diabetes())
  for rank, (e, line) in enumerate(zip(entries, lines[2:]), start=1):
    assert e["model_path"] == os.path.join(str(workdir), "final", "models", f"{rank}-0")
    assert line.split()[:3] == [str(rank), f"{e['search_value']:.4f}", f"{e['test_mean']:.4f}"]
    assert e["seeds"] == [e["test_mean"]] and e["test_sd"] is None and e["params"] > 0 and e["seconds"] > 0
    model = nas_jax.load_model(e["model_path"])  # the saved model predicts its reported test MSE
    assert float(np.mean((model.predict(data.x_test) - data.y_test) ** 2)) == pytest.approx(e["test_mean"], rel=1e-4)
  rows = journal.replay(workdir / "final" / loop.JOURNAL)
  assert [(r.info["rank"], r.info["seed"], r.info["epochs"]) for r in rows] == [(1, 0, 2), (2, 0, 2)]
  assert os.listdir(workdir / "final" / "checkpoints") == []  # a finished run's checkpoints are gone


def _lines(path):
  return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.slow
def test_kill_9_after_a_finished_seed_then_a_rerun_repeats_nothing(launch, mlp_search, tmp_path):
  whole, cut = tmp_path / "whole", tmp_path / "cut"
  shutil.copytree(mlp_search, whole)
  shutil.copytree(mlp_search, cut)
  flags = ("--top_k=2", "--seeds=2", "--epochs=4")
  assert launch(*_final(whole, *flags)).returncode == 0
  path = cut / "final" / loop.JOURNAL
  p = subprocess.Popen(
    [sys.executable, *_final(cut, *flags)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
  )
  end = time.monotonic() + 300
  while _lines(path) < 1:
    assert p.poll() is None and time.monotonic() < end, "final training ended or stalled before the kill"
    time.sleep(0.05)
  os.kill(p.pid, signal.SIGKILL)
  p.wait()
  before = journal.replay(path)
  assert 1 <= len(before) < 4
  again = launch(*_final(cut, *flags))
  assert again.returncode == 0, again.stderr[-3000:]
  after = journal.replay(path)
  assert after[: len(before)] == before and len(after) == 4  # nothing finished was trained again
  assert sorted((r.info["rank"], r.info["seed"]) for r in after) == [(1, 0), (1, 1), (2, 0), (2, 1)]
  strip = lambda entries, w: [
    {**e, "seconds": None, "model_path": os.path.relpath(e["model_path"], w)} for e in entries
  ]
  a, b = strip(_entries(whole), whole), strip(_entries(cut), cut)
  for x, y in zip(a, b):
    np.testing.assert_allclose(x.pop("seeds"), y.pop("seeds"), rtol=1e-6)
    assert x.pop("test_mean") == pytest.approx(y.pop("test_mean"), rel=1e-6)
    assert x.pop("test_sd") == pytest.approx(y.pop("test_sd"), rel=1e-4, abs=1e-9)
  assert a == b


CELLS = (
  "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|",
  "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|",
  "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|",
)


def _nb201_search(workdir, table):
  """A finished NB201 search in `workdir`: three cells looked up in `table` (a tiny CSV)."""
  os.makedirs(workdir)
  with open(table, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["arch_str", "cifar10_valid_acc", "cifar10_test_acc", "params_mb_cifar10"])
    for cell, (valid, test) in zip(CELLS, ((91.5, 93.25), (85.0, 88.5), (10.0, 10.0))):
      w.writerow([cell, valid, test, 1.5])
  for i, (cell, valid) in enumerate(zip(CELLS, (91.5, 85.0, 10.0))):
    obs = Observation(i, {"kind": "nb201", "arch_str": cell}, valid, Status.OK, "", 0.1, "inline", test_value=0.0)
    journal.append(os.path.join(workdir, loop.JOURNAL), obs)
  task = {"name": "nb201", "path": str(table), "dataset": "cifar10", "report_metric": "test", "fidelities": ""}
  files = {
    "search.json": {"task": "nb201_cifar10", "goal": "max"},
    loop.CONFIG: {"space": {"name": "nb201", "kind": "nb201", "dedup_key": "string"}, "task": task},
  }
  for name, obj in files.items():
    with open(os.path.join(workdir, name), "w") as f:
      json.dump(obj, f)


def test_a_tabular_search_says_there_is_nothing_to_train_and_prints_the_tables_figures(launch, tmp_path):
  _nb201_search(tmp_path / "nb201", tmp_path / "table.csv")
  p = launch(*_final(tmp_path / "nb201", "--top_k=2"))
  assert p.returncode == 0, p.stderr[-3000:]
  lines = p.stdout.splitlines()
  assert re.match(
    r"^nothing to train: this search looked its cells up in the NAS-Bench-201 table \(cifar10\)", lines[0]
  )
  assert "table test accuracy (%, 200 epochs) mean" in lines[1]
  # the table's test figures (the journal's test_value of 0.0 is not what is shown), best first
  assert [l.split()[:3] for l in lines[2:]] == [["1", "91.5000", "93.2500"], ["2", "85.0000", "88.5000"]]
  assert [l.split()[5] for l in lines[2:]] == ["1500000", "1500000"]
  assert len(lines) == 4 and not os.path.exists(tmp_path / "nb201" / "final")


def test_a_synthetic_search_has_nothing_to_train(launch, tmp_path):
  workdir = tmp_path / "syn"
  os.makedirs(workdir)
  config = config_files.load_config(os.path.join(ROOT, "configs/random_synthetic.py:smoke"))
  (workdir / loop.CONFIG).write_text(config.to_json_best_effort())
  (workdir / "search.json").write_text(json.dumps({"task": "synthetic-f0", "goal": "max"}))
  space = layer_graph_space("cnn")
  obs = Observation(0, space.to_json(space.initial(1)[0]), 0.5, Status.OK, "", 0.1, "inline")
  journal.append(workdir / loop.JOURNAL, obs)
  p = launch(*_final(workdir, "--top_k=2"))
  assert p.returncode == 0, p.stderr[-3000:]
  lines = p.stdout.splitlines()
  assert len(lines) == 1 and not os.path.exists(workdir / "final")
  assert re.fullmatch(
    r"nothing to train: this search scored its networks with a synthetic function of their graphs \(f\d\), not by"
    r" training them",
    lines[0],
  )


def _failed_search(workdir):
  os.makedirs(workdir)
  arch = {"kind": "nb201", "arch_str": CELLS[0]}
  journal.append(os.path.join(workdir, loop.JOURNAL), Observation(0, arch, None, Status.FAILED, "boom", 0.1, "w"))
  with open(os.path.join(workdir, "search.json"), "w") as f:
    json.dump({"task": "t", "goal": "max"}, f)


@pytest.mark.parametrize(
  "flags, pattern",
  [
    (("--workdir=NONE",), r"workdir: '.*none' has no journal\.jsonl; expected the --config\.workdir of a search"),
    (("--workdir=FAILED",), r"workdir: '.*failed' holds no successful evaluation at full fidelity; nothing to train"),
    (("--workdir=FAILED", "--top_k=0"), r"top_k: 0; expected an integer >= 1"),
    (("--workdir=FAILED", "--epochs=0"), r"epochs: 0; expected an integer >= 1"),
  ],
)
def test_bad_input_is_one_line_and_exit_2(launch, tmp_path, flags, pattern):
  _failed_search(tmp_path / "failed")
  flags = [f.replace("NONE", str(tmp_path / "none")).replace("FAILED", str(tmp_path / "failed")) for f in flags]
  p = launch("launch/final.py", *flags)
  lines = [line for line in p.stderr.splitlines() if line.strip()]
  assert p.returncode == 2 and len(lines) == 1, p.stderr
  assert lines[0].startswith("final.py: error: ") and re.search(pattern, lines[0]), lines[0]


@pytest.mark.slow
def test_a_tabular_search_given_images_trains_its_top_cells_on_them(launch, tmp_path):
  _nb201_search(tmp_path / "nb201", tmp_path / "table.csv")
  rng = np.random.default_rng(0)
  y = rng.integers(0, 3, 400)
  x = rng.normal(size=(400, 8, 8, 3)) + y[:, None, None, None]  # learnable: the class shifts every pixel
  np.savez(tmp_path / "images.npz", x=x.astype(np.float32), y=y)
  p = launch(*_final(tmp_path / "nb201", "--top_k=1", "--epochs=1", f"--dataset={tmp_path / 'images.npz'}"))
  assert p.returncode == 0, p.stderr[-3000:]
  (entry,) = _entries(tmp_path / "nb201")
  assert entry["arch_json"] == {"kind": "nb201", "arch_str": CELLS[0]} and entry["search_value"] == 91.5
  model = nas_jax.load_model(entry["model_path"])
  assert model.spec.family == "nb201" and model.spec.input_shape == (8, 8, 3) and model.spec.num_outputs == 3
  data = datasets.load_images(str(tmp_path / "images.npz"))
  accuracy = float((model.predict(data.x_test).argmax(-1) == data.y_test).mean())
  assert accuracy == pytest.approx(entry["test_mean"], abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
  "config, kind",
  [("configs/autokeras_cnn_digits.py:smoke", "autokeras"), ("configs/random_conditional_digits.py:smoke", "mlp")],
)
def test_auto_keras_and_conditional_searches_train_their_winners(launch, tmp_path, config, kind):
  workdir = tmp_path / "w"
  s = launch("launch/search.py", f"--config={config}", f"--config.workdir={workdir}", "--noprogress")
  assert s.returncode == 0, s.stderr[-3000:]
  p = launch(*_final(workdir, "--top_k=1", "--epochs=1"))
  assert p.returncode == 0, p.stderr[-3000:]
  (entry,) = _entries(workdir)
  best = max if kind == "autokeras" else min  # accuracy, or the conditional task's error
  assert entry["search_value"] == best(o.value for o in journal.replay(workdir / loop.JOURNAL) if o.ok)
  model = nas_jax.load_model(entry["model_path"])
  data = merge_train_val(datasets.digits(kind))
  accuracy = float((model.predict(data.x_test).argmax(-1) == data.y_test).mean())
  assert accuracy == pytest.approx(entry["test_mean"], abs=1e-6)
