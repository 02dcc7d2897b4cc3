"""Results are generated, not typed: docs/results.md and the README's results are exactly what
benchmarks/render_results.py renders from the committed records of benchmarks/records/."""

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _module(name):
  spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "benchmarks", f"{name}.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


render = _module("render_results")


def test_results_page_is_rendered_from_the_records():
  with open(render.PAGE) as f:
    assert f.read() == render.render_page(render.load()), "run: python benchmarks/render_results.py"


def test_readme_results_are_rendered_from_the_records():
  with open(render.README) as f:
    text = f.read()
  assert text == render.render_readme(text, render.load()), "run: python benchmarks/render_results.py"


def test_every_record_says_what_ran_when_and_where():
  records = render.load()
  assert {"main_command", "test_command"} <= set(records)
  for record in records.values():
    assert record["command"].startswith(("python ", "python3 ")), record["name"]
    assert record["date"][:4].isdigit() and record["date"][4] == "-", record["name"]
    assert record["machine"] and record["source"], record["name"]
    assert record["figures"] or record["tables"], f"{record['name']}: no figure"


def test_a_record_missing_a_field_is_refused(tmp_path):
  (tmp_path / "x.json").write_text(json.dumps({"name": "x"}))
  with pytest.raises(ValueError, match="fields .* are missing"):
    render.load(str(tmp_path))


def test_a_written_record_is_the_latest_of_its_name_and_rendered(tmp_path, monkeypatch):
  record = _module("record")
  monkeypatch.setenv("NAS_JAX_RECORDS", str(tmp_path))
  old = {"schema": 1, "name": "bench_x", "title": "t", "command": "python benchmarks/bench_x.py", "commit": ""}
  old |= {"date": "2000-01-01", "machine": "m", "load_average": "1", "jax_version": "0", "backend": "cpu"}
  old |= {"direction": "lower", "note": ""}
  (tmp_path / "old.json").write_text(json.dumps({**old, "source": "s", "figures": {"a (s)": 9.0}, "tables": []}))
  table = record.markdown_table(["| method | value |", "|---|---|", "| ours | 1.5 |"], "by method")
  argv = ["benchmarks/bench_x.py", "--n=3"]
  path = record.write("bench_x", "A benchmark", {"a (s)": 1.25}, [table], note="Seconds.", direction="lower", argv=argv)
  written = json.load(open(path))
  assert written["command"] == "python benchmarks/bench_x.py --n=3" and written["source"] == "measured"
  assert written["direction"] == "lower" and written["note"] == "Seconds." and written["commit"]
  assert written["cpu_count"] == os.cpu_count() and len(written["load_average"]) == 3
  latest = render.load(str(tmp_path))
  assert latest["bench_x"]["figures"] == {"a (s)": 1.25}
  page = render.render_page(latest)
  assert "| a (s) | 1.25 |" in page and "| ours | 1.5 |" in page and "| a (s) | 9 |" not in page


def test_a_readme_row_reads_its_column_by_name():
  """A table's columns may be reordered (nb201_table added one); the README keeps its figure."""
  table = {"columns": ["method", "seeds", "queries", "cifar10 regret"], "rows": [["ours", 20, 150, "0.1 ± 0.0"]]}
  record = {"name": "t", "figures": {}, "tables": [table]}
  assert render._figure(record, ("cifar10 regret", ("ours",))) == "ours 0.1 ± 0.0"
  with pytest.raises(ValueError, match="record 't' has no column 'cifar100 regret'; update README_ROWS"):
    render._figure(record, ("cifar100 regret", ("ours",)))


figures = _module("render_figures")


def test_the_manuals_figures_are_drawn_from_what_the_records_and_their_data_give_now():
  """PNG bytes differ across matplotlib versions: docs/figures/figures.json keeps the digest of
  each figure's inputs instead (benchmarks/render_figures.py)."""
  stale = figures.stale(render.load())
  assert not stale, "\n".join(stale)


def test_a_newer_record_makes_the_figure_drawn_from_it_stale():
  records = render.load()
  newer = {**records["nb201_table"], "date": "2999-01-01T00:00Z"}
  (line,) = figures.stale({**records, "nb201_table": newer})
  assert line.startswith("docs/figures/nb201_regret_table.png was drawn from other inputs than nb201_table (2999")
  assert line.endswith("run: python benchmarks/render_figures.py")


def test_a_record_says_which_way_is_better_and_where_it_ran(tmp_path, monkeypatch):
  record = _module("record")
  monkeypatch.setenv("NAS_JAX_RECORDS", str(tmp_path))
  with pytest.raises(ValueError, match=r"^record 'bench_x': direction=''; pass direction='higher' or 'lower'"):
    record.write("bench_x", "t", {"a": 1})  # a benchmark's kind does not say
  assert record.default_direction("main_command") == record.default_direction("nb201_table") == "lower"
  monkeypatch.setattr(record, "_commit", lambda: "")
  with pytest.raises(ValueError, match=r"^record 'bench_x': no commit to record; run it in a git checkout"):
    record.write("bench_x", "t", {"a": 1}, direction="lower")
  assert not list(tmp_path.iterdir())


def test_a_measured_record_without_its_commit_or_load_is_refused(tmp_path):
  fields = {k: "x" for k in render.FIELDS} | {"direction": "higher", "source": "measured", "load_average": None}
  (tmp_path / "x.json").write_text(json.dumps(fields))
  with pytest.raises(ValueError, match="x.json: a measured record without load_average"):
    render.load(str(tmp_path))
  (tmp_path / "x.json").write_text(json.dumps(fields | {"direction": "up"}))
  with pytest.raises(ValueError, match="direction 'up'; allowed: higher, lower"):
    render.load(str(tmp_path))


def test_the_readme_table_shows_which_way_is_better_and_each_rows_note():
  records = render.load()
  table = render.render_table(records)
  f1 = records["compare_synthetic_f1"]
  assert f1["direction"] == "higher" and "random_synthetic 3.770" in table
  assert "Random networks (3.770) beat NASBOT (3.258)" in f1["note"] and f"1. {f1['note']}" in table
  row = next(line for line in table.splitlines() if line.startswith("| NAS-Bench-201"))
  assert row.endswith("| lower |") and "(note 2)" in row
  transcribed = [r for r in records.values() if r["source"] != "measured"]
  assert transcribed and all(r["load_average"] is None or r["load_average"] for r in transcribed)
  assert "not recorded" not in render.render_page(records)


def test_a_comparison_table_says_which_way_is_better_by_its_goal(tmp_path, monkeypatch):
  spec = importlib.util.spec_from_file_location("_records", os.path.join(ROOT, "launch", "_records.py"))
  records = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(records)
  monkeypatch.setenv("NAS_JAX_RECORDS", str(tmp_path))
  (tmp_path / "table.md").write_text("| config | best value at 5 evaluations (min) |\n|---|---|\n| a | 0.1 |\n\nmore")
  path = records.write_table("compare_x", "t", str(tmp_path / "table.md"), {}, note="Errors.")
  written = json.load(open(path))
  assert (
    written["direction"] == "lower" and written["note"] == "Errors." and written["tables"][0]["rows"] == [["a", "0.1"]]
  )
