"""The small runs whose data the manual's figures draw (`python benchmarks/render_figures.py
--measure=NAME` writes docs/figures/data/NAME.json): each finishes in seconds to minutes on two
CPU cores; those on NAS-Bench-201 read the table folder given (never downloaded).
"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from types import MappingProxyType

import jax
import numpy as np

import nas_jax
from nas_jax.experiments import compare
from nas_jax.experiments import conditional_experiment as ce
from nas_jax.search import journal, results
from nas_jax.tasks import tabular
from nas_jax.wiring import config as config_lib
from nas_jax.wiring.config_files import apply_overrides, load_config
from nas_jax.wiring.proxy_sources import read_proxy_column

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The quick start's search (docs/quickstart.md): the smoke run, then resumed up to this budget, so
# that its progress plot has a best-so-far line to show.
QUICKSTART = ("launch/search.py", "--config=configs/nasbot_cnn_digits.py:smoke")
QUICKSTART_BUDGET = 6


def provenance(command: str) -> dict:
  """Where a data file came from: the command, the UTC date, the load average (1, 5, 15 min) when
  it started, jax's version and backend."""
  date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
  load = [round(x, 2) for x in os.getloadavg()]
  return {"command": command, "date": date, "load_average": load, "jax_version": jax.__version__} | {
    "backend": jax.default_backend()
  }


def _measure_quickstart(data: str) -> dict:
  """The quick start's two commands, as docs/quickstart.md gives them: the smoke search, then the
  same search resumed with a larger budget; what each printed and took, and the values."""
  runs = []
  with tempfile.TemporaryDirectory() as tmp:
    for extra in ((), (f"--config.budget={QUICKSTART_BUDGET}",)):
      argv = [sys.executable, *QUICKSTART, f"--config.workdir={tmp}/quick", *extra, "--progress=false"]
      start = time.monotonic()
      out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True).stdout
      printed = out.strip().splitlines()[-1].replace(tmp, "runs")
      runs.append({"argv": list(QUICKSTART + extra), "printed": printed, "seconds": round(time.monotonic() - start)})
    with open(os.path.join(tmp, "quick", "summary.json")) as f:
      summary = json.load(f)
    values = [o.value for o in journal.replay(os.path.join(tmp, "quick", "journal.jsonl"))]
  return {"runs": runs, "values": values, "goal": summary["goal"], "task": summary["task"], "summary": summary}


def _measure_nb201_regret(data: str) -> dict:
  specs = ("configs/random_nb201.py", "configs/re_nb201.py", "configs/ls_nb201.py", "configs/bananas_nb201.py")
  seeds, budget, dataset = list(range(5)), 100, "cifar10"
  table = tabular.load_nb201(os.path.join(data, tabular.NB201_FILE), dataset)
  with tempfile.TemporaryDirectory() as tmp:
    results = compare.compare(specs, seeds, budget, tmp, overrides={"task.dataset": dataset, "task.path": data})
  names = {"random_nb201": "random", "re_nb201": "regularised evolution", "ls_nb201": "local search"}
  names["bananas_nb201"] = "BANANAS (code preset)"
  regret = {
    names[n]: [[round(table.best_test - t, 4) for t in run] for run in runs] for n, runs in results["test_runs"].items()
  }
  return {"dataset": dataset, "seeds": seeds, "budget": budget, "configs": list(specs), "regret": regret}


def _measure_otmann_pool(data: str) -> dict:
  archs = nas_jax.initial_pool("cnn")[:6]
  d = nas_jax.otmann_distances(archs, solver=nas_jax.exact(), nu_str=0.5).d
  names = [f"cnn pool[{i}]" for i in range(len(archs))]
  rows = [[round(float(x), 3) for x in row] for row in d]
  return {"archs": [a.to_json() for a in archs], "names": names, "solver": "exact", "nu_str": 0.5, "d": rows}


def _measure_kernel_quality(data: str) -> dict:
  settings = {"n_points": 40, "epochs": 2, "n_splits": 3, "seed": 0, "max_depth": 3}
  with tempfile.TemporaryDirectory() as tmp:
    trained = ce.train_cached(
      tmp, names=["digits"], **{k: settings[k] for k in ("n_points", "epochs", "seed", "max_depth")}
    )
    nmse = ce.nmse_rows(trained, n_splits=settings["n_splits"], seed=0, max_depth=3, otmann=True, n_starts=4, steps=100)
  rounded = {c: {m: [round(float(x), 4) for x in v] for m, v in col.items()} for c, col in nmse.items()}
  return settings | {"dataset": "digits", "nmse": rounded}


def _search(spec: str, overrides: dict) -> tuple:
  """Runs one search of configs/ in a temporary workdir: (its observations, its task)."""
  c = load_config(spec)
  apply_overrides(c, overrides, spec)
  with tempfile.TemporaryDirectory() as tmp:
    c.workdir = os.path.join(tmp, "run")
    return config_lib.search_from_config(c, progress=False), config_lib.build_search(c)[1]


def _measure_pareto(data: str) -> dict:
  spec = "configs/pareto_nb201.py:nsga2"
  done, task = _search(spec, {"task.path": data, "budget": 100})
  ok = results.full_fidelity_ok(done, task)
  front = {o.trial_id for o in results.pareto_front(done, task)}
  return {
    "config": spec.removeprefix("configs/"),
    "dataset": "cifar10",
    "objectives": [["validation accuracy (%)", task.goal], ["parameters", dict(task.objectives)["params"]]],
    "values": [[o.value, o.objectives["params"]] for o in ok],
    "front": [o.trial_id in front for o in ok],
    "trial_ids": [o.trial_id for o in ok],
  }


def _measure_multifidelity(data: str) -> dict:
  spec = "configs/multifidelity_nb201.py:asha_re+smoke"
  done, _ = _search(spec, {"task.path": data, "budget": 60})
  return {
    "config": spec.removeprefix("configs/"),
    "fidelities": sorted({o.fidelity for o in done}),
    "network": [json.dumps(o.arch_json.get("arch", o.arch_json), sort_keys=True) for o in done],
    "fidelity": [o.fidelity for o in done],
    "value": [o.value for o in done],
  }


def _measure_proxies(data: str) -> dict:
  dataset, proxies = "cifar10", ["synflow_signed", "params", "flops"]
  table = tabular.load_nb201(os.path.join(data, tabular.NB201_FILE), dataset)
  rows = np.random.default_rng(0).choice(len(table.arch_strs), 50, replace=False)
  cells = [table.arch_strs[r] for r in rows]
  with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "cells.txt"), "w") as f:
      f.write("\n".join(cells) + "\n")
    argv = [sys.executable, "launch/proxies.py", f"--dataset={dataset}", f"--proxies={','.join(proxies)}"]
    argv += [f"--cells={tmp}/cells.txt", f"--out={tmp}/scores.csv", "--width=4", "--batch_size=64", "--seed=0"]
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
    scored = {p: read_proxy_column(os.path.join(tmp, "scores.csv"), p) for p in proxies}
  return {
    "dataset": dataset,
    "proxies": proxies,
    "cells": cells,
    "scores": {p: [scored[p][c] for c in cells] for p in proxies},
    "valid": [float(table.valid[r]) for r in rows],
  }


_MEASURES = MappingProxyType(
  {
    "quickstart": (_measure_quickstart, f"python {' '.join(QUICKSTART)}, then --config.budget={QUICKSTART_BUDGET}"),
    "nb201_regret": (_measure_nb201_regret, "compare.compare: random, RE, LS, BANANAS; 5 seeds x 100 queries"),
    "otmann_pool": (_measure_otmann_pool, "nas_jax.otmann_distances(nas_jax.initial_pool('cnn')[:6])"),
    "kernel_quality": (_measure_kernel_quality, "conditional_experiment: 40 points, 2 epochs, digits"),
    "pareto": (_measure_pareto, "configs/pareto_nb201.py:nsga2, 100 queries"),
    "multifidelity": (_measure_multifidelity, "configs/multifidelity_nb201.py:asha_re+smoke, 60 evaluations"),
    "proxies_nb201": (_measure_proxies, "launch/proxies.py on 50 random NB201 cells"),
  }
)


NAMES = tuple(sorted(_MEASURES))


def measure(name: str, data: str) -> dict:
  """Runs the small run `name` (one of NAMES) as the launch scripts run searches (float64, configs/
  importable); its data, led by where it came from (`provenance`)."""
  jax.config.update("jax_enable_x64", True)
  sys.path.insert(0, ROOT)
  run, what = _MEASURES[name]
  return provenance(f"python benchmarks/render_figures.py --measure={name} ({what})") | run(data)
