"""The manual's figures (benchmarks/render_figures.py): each is shown on a page with a caption,
a figure whose PNG or data is missing is named with the command that makes it, and the quick
start pastes what its measured run printed. Whether a figure is stale is tests/test_results.py's."""

import glob
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import render_figures as figures  # noqa: E402


def _pages() -> dict:
  out = {}
  for path in glob.glob(os.path.join(ROOT, "docs", "*.md")):
    with open(path) as f:
      out[os.path.basename(path)] = f.read()
  return out


def test_every_figure_is_shown_on_a_page_with_a_caption():
  shown = {}
  for page, text in _pages().items():
    for name, caption in re.findall(r"```\{figure\} figures/(\w+)\.png\n(?::\w+:[^\n]*\n)*\n(.+?)```", text, re.S):
      shown[name] = (page, caption)
  assert set(shown) == set(figures.FIGURES), "every figure on a page, and no page shows a figure not drawn"
  assert all(len(caption.split()) >= 20 for _, caption in shown.values()), "a caption says what is shown"


def test_a_missing_png_or_data_file_is_named_with_the_command_that_makes_it(tmp_path):
  records = figures.render_results.load()
  data = tmp_path / "figures" / "data"
  shutil.copytree(figures.DATA_DIR, data)
  for name in figures.all_figures(records):  # a study record's figures too
    shutil.copy(os.path.join(figures.FIGURES_DIR, f"{name}.png"), data.parent)
  shutil.copy(figures.SIDECAR, data.parent)
  assert figures.stale(records, str(data.parent / "figures.json"), str(data)) == []
  (data.parent / "pareto_front.png").unlink()
  (data / "otmann_pool.json").unlink()
  lines = figures.stale(records, str(data.parent / "figures.json"), str(data))
  assert lines == [
    "figure otmann_pool_networks: docs/figures/data/otmann_pool.json is missing;"
    " run: python benchmarks/render_figures.py --measure=otmann_pool",
    "figure otmann_heatmap: docs/figures/data/otmann_pool.json is missing;"
    " run: python benchmarks/render_figures.py --measure=otmann_pool",
    "docs/figures/pareto_front.png is missing; run: python benchmarks/render_figures.py",
  ]


def test_the_quick_start_pastes_what_its_measured_run_printed():
  with open(os.path.join(figures.DATA_DIR, "quickstart.json")) as f:
    run = json.load(f)
  with open(os.path.join(ROOT, "docs", "quickstart.md")) as f:
    page = f.read()
  commands = [set(line.split()) for line in page.splitlines() if line.startswith("python launch/search.py")]
  for step in run["runs"]:
    assert step["printed"] in page and f"{step['seconds']} s" in page, "paste docs/figures/data/quickstart.json's"
    assert {*step["argv"], "--config.workdir=runs/quick"} in [c - {"python"} for c in commands]
  assert f'"best_value": {run["summary"]["best_value"]}' in page
