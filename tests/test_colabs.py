"""The notebooks in colabs/ run top to bottom on CPU with their own small settings, and are
committed clean (no outputs, no execution counts) so that their git diffs stay readable."""

import glob
import json
import os
import re
import sys
import time

import pytest

nbformat = pytest.importorskip("nbformat", reason="the colab extra (nbformat, nbclient, ipykernel) is not installed")
nbclient = pytest.importorskip("nbclient", reason="the colab extra (nbformat, nbclient, ipykernel) is not installed")
pytest.importorskip("ipykernel", reason="the colab extra (nbformat, nbclient, ipykernel) is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLABS = os.path.join(ROOT, "colabs")
NOTEBOOKS = sorted(glob.glob(os.path.join(COLABS, "*.ipynb")))
LIMIT_S = 180  # the bound for one notebook on 2 CPU cores
_DATA_PATH = re.compile(r'^DATA_PATH = ".*"$', re.M)


@pytest.fixture
def kernel_of_this_interpreter(tmp_path, monkeypatch):
  """A "python3" kernelspec running sys.executable, found before any other on JUPYTER_PATH, so the
  notebooks import the nas_jax under test whatever kernels the machine has installed."""
  spec = tmp_path / "jupyter" / "kernels" / "python3"
  spec.mkdir(parents=True)
  argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
  (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "Python 3", "language": "python"}))
  monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
  monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # the kernel inherits it (see conftest.py)
  return "python3"


def _execute(book, kernel_name):
  """Runs every cell in colabs/ as the working directory; returns (book, seconds)."""
  client = nbclient.NotebookClient(
    book, timeout=LIMIT_S, kernel_name=kernel_name, resources={"metadata": {"path": COLABS}}
  )
  start = time.monotonic()
  client.execute()
  return book, time.monotonic() - start


def _text(book) -> str:
  out = []
  for cell in book.cells:
    for o in cell.get("outputs", []):
      out.append(o.get("text", "") if o.get("output_type") == "stream" else json.dumps(o.get("data", {})))
  return "\n".join(out)


def test_there_is_a_notebook_per_workflow():
  names = {os.path.basename(p) for p in NOTEBOOKS}
  assert names == {
    "architectures_and_distances.ipynb",
    "nasbot_search.ipynb",
    "bananas_nb201.ipynb",
    "morphism_and_autokeras.ipynb",
    "arc_kernel_conditional.ipynb",
  }


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_committed_notebook_is_clean_and_valid(path):
  book = nbformat.read(path, as_version=4)
  nbformat.validate(book)
  dirty = [
    i
    for i, c in enumerate(book.cells)
    if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)
  ]
  assert not dirty, f"{os.path.basename(path)}: cells {dirty} hold outputs or execution counts; clear them"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_first_cell_installs_only_on_colab(path):
  first = nbformat.read(path, as_version=4).cells[0]
  assert first.cell_type == "code"
  assert 'if "google.colab" in sys.modules:' in first.source and "pip" in first.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_defines_no_library_code(path):
  for cell in nbformat.read(path, as_version=4).cells:
    if cell.cell_type == "code":
      assert not re.search(r"^\s*(def|class) ", cell.source, re.M), f"{path}: library code in a notebook"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_top_to_bottom(path, kernel_of_this_interpreter):
  book, seconds = _execute(nbformat.read(path, as_version=4), kernel_of_this_interpreter)
  print(f"{os.path.basename(path)}: {seconds:.1f} s")
  assert seconds < LIMIT_S
  assert all(c.execution_count for c in book.cells if c.cell_type == "code")
  assert "image/png" in _text(book)  # every notebook draws something


def test_bananas_notebook_says_how_to_go_on_without_the_table(tmp_path, kernel_of_this_interpreter):
  book = nbformat.read(os.path.join(COLABS, "bananas_nb201.ipynb"), as_version=4)
  first = book.cells[0]
  assert _DATA_PATH.search(first.source), "the first cell sets DATA_PATH"
  first.source = _DATA_PATH.sub(f"DATA_PATH = {str(tmp_path / 'absent')!r}", first.source)
  book, _ = _execute(book, kernel_of_this_interpreter)
  text = _text(book)
  assert "No NAS-Bench-201 table at" in text and text.count("skipped: no table") == 2
