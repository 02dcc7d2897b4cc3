"""Every benchmark script (benchmarks/bench_*.py, found by glob, so a new one is covered) runs its
`--smoke` mode and writes its record, into a temporary folder: a change of the library that breaks
a benchmark fails here, not months later when someone measures again.

The scripts run in this process (importing nas_jax and compiling once per process costs more than
most smokes do), each as `python benchmarks/bench_x.py --smoke` would run it: under the name
`__main__`, with its own argv, with absl's `app.run` reduced to parsing the flags and calling main
(no signal handlers, no logging set-up in the test process), and with the flags it defined removed
afterwards, so the next script may define its own of the same name. A script that lacks what it
needs exits with `record.SKIPPED` (`record.skip`), a skip here."""

import argparse
import glob
import json
import os
import re
import runpy
import sys
import tempfile
from types import MappingProxyType

import jax
import pytest
from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
SCRIPTS = sorted(glob.glob(os.path.join(BENCHMARKS, "bench_*.py")))
SKIPPED = 77  # record.SKIPPED; benchmarks/ is no package to import it from before the path is set
# Smokes that take from several to tens of seconds on 2 cores even at their smallest sizes, run
# with --runslow (.ci/run runs them on every change): script -> why it cannot be quicker.
SLOW = MappingProxyType(
  {
    "bench_autokeras": "(b) trains a parent and eight morphed children on digits, each network its own compile",
    "bench_bananas": "compiles the 5-member ensemble fit three ways (vmap, loops), then runs two BANANAS trials",
    "bench_conditional": "compiles conditional BO's proposal three ways (arc kernel; gradient, mutation only)",
    "bench_ea_screen": "a NAS-Bench-201 NASBOT search with every EA candidate also scored by exact OTMANN",
    "bench_gp": "compiles the GP fit three ways (vmapped, in chunks of one start, one start in a loop)",
    "bench_multifidelity_digits": "trains digits CNNs in two searches (NASBOT, ASHA + NASBOT)",
    "bench_nb201_trial": "two NAS-Bench-201 searches: compiles NASBOT's GP and EA, and BANANAS' ensemble",
    "bench_otmann": "compiles the exact and Sinkhorn solvers, and times the per-pair baseline",
    "bench_padded": "trains in two fresh processes, each importing nas_jax and compiling its trainer",
    "bench_propose": "compiles NASBOT's proposal four ways (Adam, L-BFGS, warm refits, in a search)",
    "bench_proxies": "compiles the masked scorers, one specialised network per cell, and each dataset's network",
    "bench_search_trainers": "two whole searches in fresh launch/search.py processes, each training CNNs",
    "bench_study": "its pool of two worker processes loads the NB201 table in each",
    "bench_train": "trains a CNN in a fresh process that imports jax and compiles its trainer",
  }
)


def _run_absl(main, argv=None):
  """absl's app.run as a test needs it: parse the flags, call main; SystemExit as app.run exits."""
  argv = flags.FLAGS(argv or sys.argv)
  sys.exit(main(argv))


@pytest.fixture
def script_process(tmp_path, monkeypatch):
  """The process state a script may change, restored after it: argv, sys.path, the working folder
  (the repository root, as the scripts' relative defaults expect), the flags it defines, x64, the
  records' folder and tempfile's (both under tmp_path)."""
  monkeypatch.syspath_prepend(BENCHMARKS)
  monkeypatch.chdir(ROOT)
  monkeypatch.setenv("NAS_JAX_RECORDS", str(tmp_path / "records"))
  monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
  monkeypatch.setattr(app, "run", _run_absl)
  before, x64 = set(flags.FLAGS), jax.config.jax_enable_x64
  yield tmp_path / "records"
  for name in set(flags.FLAGS) - before:
    delattr(flags.FLAGS, name)
  jax.config.update("jax_enable_x64", x64)


def test_smoke_sets_the_flags_and_keeps_records_out_of_the_repository(tmp_path, monkeypatch):
  monkeypatch.syspath_prepend(BENCHMARKS)
  monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
  monkeypatch.setenv("NAS_JAX_RECORDS", "")  # so that teardown restores the variable record.smoke sets
  monkeypatch.delenv("NAS_JAX_RECORDS")
  import record

  options = argparse.Namespace(n=200, repeats=5)
  scratch = record.smoke(options, n=4)
  assert options == argparse.Namespace(n=4, repeats=5) and os.path.isdir(scratch)
  assert os.environ["NAS_JAX_RECORDS"] == os.path.join(scratch, "records")
  assert scratch.startswith(str(tmp_path)) and not scratch.startswith(BENCHMARKS)
  with pytest.raises(ValueError, match="no flag size"):
    record.smoke(options, size=1)


def test_the_glob_finds_the_benchmarks():
  assert len(SCRIPTS) >= 10 and all(os.path.basename(s).startswith("bench_") for s in SCRIPTS)


def _name(script: str) -> str:
  return os.path.basename(script)[: -len(".py")]


def test_every_slow_smoke_names_a_script():
  stale = sorted(set(SLOW) - {_name(s) for s in SCRIPTS})
  assert not stale, f"SLOW names {stale}, which benchmarks/ no longer has: remove them"


@pytest.mark.parametrize(
  "script", [pytest.param(s, id=_name(s), marks=[pytest.mark.slow] if _name(s) in SLOW else []) for s in SCRIPTS]
)
def test_smoke_writes_a_record(script, script_process, monkeypatch, capsys):
  name = _name(script)
  with open(script) as f:
    assert re.search(r"[\"'](--)?smoke[\"']", f.read()), (
      f"{name} has no --smoke flag: give it one that calls record.smoke"
    )
  monkeypatch.setattr(sys, "argv", [script, "--smoke"])
  try:
    runpy.run_path(script, run_name="__main__")
  except SystemExit as e:
    if e.code == SKIPPED:
      pytest.skip(capsys.readouterr().err.strip().splitlines()[-1])
    assert e.code in (0, None), f"{name} --smoke exited with {e.code!r}"
  records = sorted(script_process.glob("*.json")) if script_process.exists() else []
  assert records, f"{name} --smoke wrote no record in NAS_JAX_RECORDS"
  for path in records:
    with open(path) as f:
      written = json.load(f)
    assert written["source"] == "measured" and written["figures"] and "smoke" in written["command"], path
