"""The notebooks in colabs/ run top to bottom on CPU with their own small settings, and are
committed clean (no outputs, no execution counts) so that their git diffs stay readable; their
copies in docs/notebooks/, which the manual shows with outputs, have the same cells and what
running them again prints (benchmarks/render_notebooks.py)."""

import glob
import importlib.util
import json
import os
import re
import tempfile
import time

import pytest

nbformat = pytest.importorskip("nbformat", reason="the colab extra (nbformat, nbclient, ipykernel) is not installed")
pytest.importorskip("nbclient", reason="the colab extra (nbformat, nbclient, ipykernel) is not installed")
pytest.importorskip("ipykernel", reason="the colab extra (nbformat, nbclient, ipykernel) is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLABS = os.path.join(ROOT, "colabs")
NOTEBOOKS = sorted(glob.glob(os.path.join(COLABS, "*.ipynb")))
LIMIT_S = 180  # the bound for one notebook on 2 CPU cores
_DATA_PATH = re.compile(r'^DATA_PATH = ".*"$', re.M)
_spec = importlib.util.spec_from_file_location(
  "render_notebooks", os.path.join(ROOT, "benchmarks", "render_notebooks.py")
)
render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render)


@pytest.fixture
def kernel_of_this_interpreter(tmp_path, monkeypatch):
  """A "python3" kernelspec running sys.executable, found before any other on JUPYTER_PATH, so the
  notebooks import the nas_jax under test whatever kernels the machine has installed; the kernel
  inherits the suite's XLA level (conftest.py), which `render.differences`' tolerance absorbs."""
  name = render.kernel_spec(str(tmp_path / "jupyter"))
  monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
  monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")  # the kernel inherits it (see conftest.py)
  return name


def _execute(book, kernel_name):
  """Runs every cell in colabs/ as the working directory; returns (book, seconds)."""
  start = time.monotonic()
  render.execute(book, kernel_name, timeout=LIMIT_S)
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


def _copy(path):
  """The notebook's copy in docs/notebooks/, with its outputs, as the manual shows it."""
  copy = os.path.join(render.OUT, os.path.basename(path))
  assert os.path.exists(copy), f"docs/notebooks/ has no copy of {os.path.basename(path)}; run: {_rerender(path)}"
  return nbformat.read(copy, as_version=4)


def _rerender(path):
  return f"python benchmarks/render_notebooks.py {os.path.basename(path)[: -len('.ipynb')]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_the_manuals_copy_has_the_cells_of_the_notebook_and_its_plots(path):
  copy = _copy(path)
  assert render.sources(copy) == render.sources(nbformat.read(path, as_version=4)), (
    f"stale copy; run: {_rerender(path)}"
  )
  assert sum(images for _, _, images in render.printed(copy)) >= 1, f"the copy shows no plot; run: {_rerender(path)}"


# Running the notebooks checks the manual, as the strict build of docs/ does: 10-50 s each on 2
# cores, two minutes of the default suite in all. So they run with --runslow, which .ci/run uses
# for them on every change.
@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_top_to_bottom(path, kernel_of_this_interpreter):
  book, seconds = _execute(nbformat.read(path, as_version=4), kernel_of_this_interpreter)
  print(f"{os.path.basename(path)}: {seconds:.1f} s")
  assert seconds < LIMIT_S
  assert all(c.execution_count for c in book.cells if c.cell_type == "code")
  assert "image/png" in _text(book)  # every notebook draws something
  copy = _copy(path)
  if "No NAS-Bench-201 table at" in _text(book) and "No NAS-Bench-201 table at" not in _text(copy):
    pytest.skip("ran without the NAS-Bench-201 table, which the manual's copy was run with; outputs not compared")
  differ = render.differences(render.printed(copy), render.printed(book))
  assert not differ, (
    f"docs/notebooks/{os.path.basename(path)} shows other outputs; run: {_rerender(path)}\n" + "\n".join(differ)
  )


@pytest.mark.slow
def test_bananas_notebook_says_how_to_go_on_without_the_table(tmp_path, kernel_of_this_interpreter):
  book = nbformat.read(os.path.join(COLABS, "bananas_nb201.ipynb"), as_version=4)
  first = book.cells[0]
  assert _DATA_PATH.search(first.source), "the first cell sets DATA_PATH"
  first.source = _DATA_PATH.sub(f"DATA_PATH = {str(tmp_path / 'absent')!r}", first.source)
  book, _ = _execute(book, kernel_of_this_interpreter)
  text = _text(book)
  assert "No NAS-Bench-201 table at" in text and text.count("skipped: no table") == 2


def test_a_rerun_differs_from_the_copy_only_in_times_scratch_folders_and_small_numeric_noise():
  def book(*outputs):
    cells = [nbformat.v4.new_code_cell(outputs=[o]) for o in outputs]
    return nbformat.v4.new_notebook(cells=cells)

  def out(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)

  png = nbformat.v4.new_output("display_data", data={"image/png": "", "text/plain": "<Figure>"})
  tmp = tempfile.gettempdir()
  copy = render.printed(book(out("best 0.8190 after 12.5 s\n"), out(f"{tmp}/nasbot_ab1/report.html 234 KiB\n"), png))
  same = render.printed(book(out("best 0.8191 after 3.1 s\n"), out(f"{tmp}/nasbot_x9/report.html 250 KiB\n"), png))
  assert render.differences(copy, same) == []
  other = render.printed(book(out("best 0.9 after 3.1 s\n"), out("nothing\n"), out("")))
  assert render.differences(copy, other) == [
    "cell 0: prints 0.9 where the copy shows 0.819",
    "cell 1: prints 'nothing\\n', the copy '<temporary> <varies>\\n'",
    "cell 2: 0 plots, the copy shows 1",
  ]
