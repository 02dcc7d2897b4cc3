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
  (tmp_path / "old.json").write_text(json.dumps({**old, "source": "s", "figures": {"a (s)": 9.0}, "tables": []}))
  table = record.markdown_table(["| method | value |", "|---|---|", "| ours | 1.5 |"], "by method")
  path = record.write("bench_x", "A benchmark", {"a (s)": 1.25}, [table], argv=["benchmarks/bench_x.py", "--n=3"])
  written = json.load(open(path))
  assert written["command"] == "python benchmarks/bench_x.py --n=3" and written["source"] == "measured"
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
