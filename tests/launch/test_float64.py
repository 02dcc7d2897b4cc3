"""Every script that runs searches (a launch script or a benchmark) runs them in float64, as
launch/search.py does: a GP's algebra needs it (STYLE 4), and in float32 a search of the same
config and seed draws other points (test_nb201_table_cli checks one such script end to end)."""

import glob
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "launch", "*.py")) + glob.glob(os.path.join(ROOT, "benchmarks", "*.py")))
RUNS_SEARCHES = ("search_from_config(", "compare.compare(", "run_study(")


def _runs_searches(path: str) -> bool:
  with open(path) as f:
    text = f.read()
  return any(call in text for call in RUNS_SEARCHES)


@pytest.mark.parametrize("path", [p for p in SCRIPTS if _runs_searches(p)], ids=os.path.basename)
def test_a_script_that_runs_searches_runs_them_in_float64(path):
  with open(path) as f:
    assert 'jax.config.update("jax_enable_x64", True)' in f.read(), f"{os.path.relpath(path, ROOT)} runs in float32"
