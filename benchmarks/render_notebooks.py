"""Runs the notebooks of colabs/ top to bottom and writes them, outputs included, to
docs/notebooks/, where the manual shows them with their plots (docs/notebooks.md says why).

  python benchmarks/render_notebooks.py            # every notebook
  python benchmarks/render_notebooks.py NAME ...   # some, e.g. nasbot_search

colabs/ stays committed without outputs, so that its diffs stay readable; tests/test_colabs.py
checks that each copy here has the cells of its notebook in colabs/ and that running the
notebook again prints what the copy shows (`printed`, `differences`: the same text, numbers within
5 %, as many plots), and tells to run this script when not.
"""

import glob
import json
import os
import re
import sys
import tempfile

import nbclient
import nbformat
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLABS = os.path.join(ROOT, "colabs")
OUT = os.path.join(ROOT, "docs", "notebooks")
LIMIT_S = 600  # one notebook, on a loaded 2-core machine
# What varies from run to run in a notebook's printed text: wall-clock times, sizes of files with
# PNGs in them, temporary folders, and the progress bars and warnings that go to stderr; `printed`
# leaves them out.
_VARYING = re.compile(r"\d+(\.\d+)?(e-?\d+)? ?(s|ms|seconds|KiB|MiB|bytes)\b")  # times, file sizes
_TEMPORARY = re.compile(re.escape(tempfile.gettempdir()) + r"/\S*")  # a notebook's scratch folders
_VERSION = re.compile(r"\b\d+\.\d+\.\d+\S*")  # "jax 0.10.2": the installed versions may differ
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def kernel_spec(folder: str) -> str:
  """A "python3" kernelspec under `folder` running this interpreter, to put first on JUPYTER_PATH,
  so a notebook imports the nas_jax of this checkout whatever kernels the machine has."""
  spec = os.path.join(folder, "kernels", "python3")
  os.makedirs(spec, exist_ok=True)
  argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
  with open(os.path.join(spec, "kernel.json"), "w") as f:
    json.dump({"argv": argv, "display_name": "Python 3", "language": "python"}, f)
  return "python3"


def execute(book, kernel_name: str = "python3", timeout: int = LIMIT_S):
  """Runs every cell of `book` in place, with colabs/ as the working directory; returns `book`."""
  nbclient.NotebookClient(
    book, timeout=timeout, kernel_name=kernel_name, resources={"metadata": {"path": COLABS}}
  ).execute()
  return book


def sources(book) -> list:
  """[(cell type, source)] of every cell: what a copy must share with its notebook in colabs/."""
  return [(c.cell_type, c.source) for c in book.cells]


def printed(book) -> list:
  """[cell index, text, plots] per code cell: its stdout and text results, times masked, and how
  many images it drew: what running a notebook again must reproduce (`differences`)."""
  out = []
  for index, cell in enumerate(book.cells):
    if cell.cell_type != "code":
      continue
    text, images = [], 0
    for o in cell.get("outputs", []):
      if o.get("output_type") == "stream" and o.get("name") == "stdout":
        text.append(o["text"])
      elif "image/png" in o.get("data", {}):
        images += 1
      elif "text/plain" in o.get("data", {}):
        text.append(o["data"]["text/plain"])
    text = _VERSION.sub("<version>", _TEMPORARY.sub("<temporary>", _relative("".join(text))))
    out.append([index, _VARYING.sub("<varies>", text), images])
  return out


def _relative(text: str) -> str:
  """Paths outside the checkout as the notebooks name them, relative to colabs/ ("../../shared/..."),
  not as this machine spells them."""
  return text.replace(os.path.dirname(ROOT) + os.sep, "../../")


def _relative_outputs(book):
  """`book` with `_relative` applied to its printed text, as the manual shows it."""
  for cell in book.cells:
    for o in cell.get("outputs", []):
      if o.get("output_type") == "stream":
        o["text"] = _relative(o["text"])
  return book


def differences(copy: list, run: list, rtol: float = 0.05) -> list[str]:
  """Where a fresh run's `printed` differs from the copy's: the same text with every number
  within `rtol` of the copy's (BLAS and XLA round differently across machines), and as many plots."""
  if [c[0] for c in copy] != [c[0] for c in run]:
    return [f"code cells {[c[0] for c in run]}, the copy has {[c[0] for c in copy]}"]
  out = []
  for (index, want, plots), (_, got, drawn) in zip(copy, run):
    if plots != drawn:
      out.append(f"cell {index}: {drawn} plots, the copy shows {plots}")
    if _NUMBER.sub("#", want).split() != _NUMBER.sub("#", got).split():  # numpy pads numbers to a width
      out.append(f"cell {index}: prints {got[:300]!r}, the copy {want[:300]!r}")
      continue
    a, b = (np.array([float(x) for x in _NUMBER.findall(t)]) for t in (want, got))
    if not np.allclose(b, a, rtol=rtol, atol=1e-6):
      worst = int(np.argmax(np.abs(b - a) - rtol * np.abs(a)))
      out.append(f"cell {index}: prints {b[worst]:g} where the copy shows {a[worst]:g}")
  return out


def main(names):
  paths = sorted(glob.glob(os.path.join(COLABS, "*.ipynb")))
  chosen = [p for p in paths if not names or os.path.basename(p)[: -len(".ipynb")] in names]
  unknown = set(names) - {os.path.basename(p)[: -len(".ipynb")] for p in paths}
  if unknown:
    sys.exit(f"render_notebooks.py: no notebook {sorted(unknown)} in colabs/")
  os.makedirs(OUT, exist_ok=True)
  os.environ["OPENBLAS_NUM_THREADS"] = "1"  # the kernels inherit it, as in tests/test_colabs.py
  with tempfile.TemporaryDirectory() as tmp:
    os.environ["JUPYTER_PATH"] = tmp + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    kernel = kernel_spec(tmp)
    for path in chosen:
      book = _relative_outputs(execute(nbformat.read(path, as_version=4), kernel))
      nbformat.write(book, os.path.join(OUT, os.path.basename(path)))
      print(f"wrote docs/notebooks/{os.path.basename(path)}")


if __name__ == "__main__":
  main(sys.argv[1:])
