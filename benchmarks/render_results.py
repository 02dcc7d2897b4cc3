"""Renders docs/results.md and the README's results from the records in benchmarks/records/.

  python benchmarks/render_results.py          # rewrite both
  python benchmarks/render_results.py --check  # exit 1 if either, or a figure of the manual
                                               # (render_figures.py), differs from what the records give

Each record is one run of a benchmark or comparison (`benchmarks/record.py`). Only the latest
record of each name is shown, with its command, date, machine, load, jax version and commit, so
a figure appears in one place. tests/test_results.py checks that the committed pages equal this
script's output.
"""

import argparse
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "benchmarks", "records")
PAGE = os.path.join(ROOT, "docs", "results.md")
README = os.path.join(ROOT, "README.md")
FIELDS = ("schema", "name", "title", "command", "commit", "date", "machine", "load_average", "jax_version")
FIELDS += ("backend", "source", "direction", "note", "figures", "tables")

# The README's table: (what, record name, what to show): a figure's label, or (column name, row
# names) of the record's first table.
README_ROWS = (
  (
    "Best f1 (NASBOT's synthetic CNN objective) after 50 evaluations, 20 seeds: NASBOT, RAND, EA, random",
    "compare_synthetic_f1",
    ("best value at 50 evaluations (max)", ("nasbot_synthetic", "rand_synthetic", "ea_synthetic", "random_synthetic")),
  ),
  (
    "NAS-Bench-201 CIFAR-10 test regret after 150 queries",
    "nb201_table",
    ("cifar10 regret", ("random", "local search", "BANANAS (code preset)", "NASBOT (OTMANN GP + EI + EA)")),
  ),
  ("One NASBOT proposal with 100 CNNs evaluated (s)", "bench_propose", "proposal, median (s)"),
  ("OTMANN distances of 60 CNNs against the authors' code", "bench_otmann_authors", "speed-up"),
  ("Auto-Keras edit distances of 200 networks against a per-pair DP", "bench_autokeras", "(a) speed-up"),
)
SPANS = {
  "commands": "<!-- results:commands (benchmarks/render_results.py) -->",
  "table": "<!-- results:table (benchmarks/render_results.py) -->",
}
END = "<!-- /results -->"
COMMANDS = "benchmarks/bench_commands.py"  # times the README's commands


def load(directory: str = RECORDS) -> dict:
  """{name: the latest record of that name}; a record missing a field is an error naming it."""
  latest = {}
  for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
    with open(path) as f:
      record = json.load(f)
    missing = [k for k in FIELDS if k not in record]
    if missing:
      raise ValueError(f"{os.path.relpath(path, ROOT)}: fields {missing} are missing; a record has {FIELDS}")
    if record["direction"] not in ("higher", "lower"):
      raise ValueError(f"{os.path.relpath(path, ROOT)}: direction {record['direction']!r}; allowed: higher, lower")
    unrecorded = [k for k in ("commit", "load_average", "machine") if not record[k]]
    if record["source"] == "measured" and unrecorded:
      raise ValueError(f"{os.path.relpath(path, ROOT)}: a measured record without {', '.join(unrecorded)}")
    old = latest.get(record["name"])
    if old is None or record["date"] >= old["date"]:
      latest[record["name"]] = record
  return latest


def _cell(value) -> str:
  if isinstance(value, float):
    return format(value, "g")
  return str(value).replace("|", "\\|")


def _load(value) -> str:
  return ", ".join(map(_cell, value)) + " (1, 5, 15 min)" if isinstance(value, list) else str(value)


def _script(record: dict) -> str:
  """The script a record's command runs (`benchmarks/bench_otmann.py`); "README" for the README's
  commands, which start by making a virtualenv."""
  found = re.match(r"python ((?:benchmarks|launch)/\w+\.py)", record["command"])
  return found.group(1) if found else "README"


def _order(record: dict) -> tuple:
  """The README's commands first, then launch/ scripts, then benchmarks/, each by script and name."""
  script = _script(record)
  return (script.startswith(("benchmarks", "launch")), script.startswith("benchmarks"), script, record["name"])


def _table(columns: list, rows: list) -> list:
  lines = ["| " + " | ".join(map(_cell, columns)) + " |", "|" + "---|" * len(columns)]
  return lines + ["| " + " | ".join(map(_cell, row)) + " |" for row in rows]


def _when(record: dict) -> str:
  """Date, machine, load, jax and commit; a transcribed record leaves out what the README did not give."""
  load = f", load {_load(record['load_average'])}" if record["load_average"] is not None else ""
  commit = f", commit {record['commit']}" if record["commit"] else ""
  return f"{record['date']} on {record['machine']}{load}, jax {record['jax_version']} ({record['backend']}){commit}"


def _better(record: dict) -> str:
  """ "Higher is better." and the record's note."""
  return " ".join(filter(None, [f"{record['direction'].capitalize()} is better.", record["note"]]))


def render_page(records: dict) -> str:
  """docs/results.md: one section per record name, grouped by the script that wrote it."""
  out = [
    "# Results",
    "",
    "<!-- Generated by benchmarks/render_results.py from benchmarks/records/*.json: edit those, not this. -->",
    "",
    "Every figure here is the latest run of its benchmark or comparison, read from its JSON record",
    "in `benchmarks/records/` (see [Benchmarks](benchmarks.md)), with the command that made it, the",
    "date, the machine and its load, and which way is better with what the figures mean.",
    "",
    "Records marked *transcribed* were copied once from the README's earlier tables (README.md at",
    "22e9daa), before the scripts wrote records: each keeps the machine and the load and commit",
    "where the README gave them (most gave no commit, some no load), and its date is the day the",
    "README gives or that of the README commit that added the figure; a few commands are rebuilt",
    "from the README's text. Every other record was written by its run, with its commit and load.",
  ]
  script = None
  for record in sorted(records.values(), key=_order):
    if _script(record) != script:
      script = _script(record)
      out += ["", f"## `{script}`" if "/" in script else f"## The README's commands (`{COMMANDS}`)"]
    out += ["", f"### {record['title']}", "", "```bash", record["command"], "```", "", _when(record) + "."]
    if record["source"] != "measured":
      out += ["", f"*Transcribed* from {record['source']}"]
    out += ["", _better(record)]
    if record["figures"]:
      out += [""] + _table(["figure", "value"], list(record["figures"].items()))
    for table in record["tables"]:
      out += ["", f"{table['title']}:", ""] if table.get("title") else [""]
      out += _table(table["columns"], table["rows"])
    if "curves" in record:  # a study's: drawn by render_figures.py (study_figures)
      for regret, what in (("valid", "validation"), ("test", "test")):
        out += [
          "",
          f"![{record['name']}: {what} regret against simulated hours](figures/{record['name']}_{regret}.png)",
        ]
  benches = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "benchmarks", "bench_*.py")))
  recorded = {COMMANDS if _script(r) == "README" else _script(r) for r in records.values()}
  unrecorded = [b for b in benches if b not in recorded]
  if unrecorded:
    out += ["", "## Benchmarks without a record yet", ""] + [f"- `{b}`" for b in unrecorded]
  return "\n".join(out) + "\n"


def _figure(record: dict, what) -> str:
  """A figure by label, or (column name, row names) of the first table as `row value; ...`."""
  if isinstance(what, str):
    shown = {what: record["figures"][what]} if what in record["figures"] else {}
  else:
    column, names = what
    table = (record["tables"] or [{"columns": [], "rows": []}])[0]
    if column not in table["columns"]:
      raise ValueError(f"README_ROWS: record {record['name']!r} has no column {column!r}; update README_ROWS")
    rows = {row[0]: row[table["columns"].index(column)] for row in table["rows"]}
    shown = {name: rows[name] for name in names if name in rows}
  wanted = [what] if isinstance(what, str) else what[1]
  if len(shown) < len(wanted):
    raise ValueError(
      f"README_ROWS: record {record['name']!r} has no {sorted(set(wanted) - set(shown))}; update README_ROWS"
    )
  return _cell(shown[what]) if isinstance(what, str) else "; ".join(f"{k} {_cell(v)}" for k, v in shown.items())


def render_commands(records: dict) -> str:
  main, tests = records["main_command"], records["test_command"]
  # The tests' machine is named too where it is not the main job's.
  on_tests = f" on {tests['machine']}" if main["machine"] != tests["machine"] else ""
  return (
    f"Measured on {main['machine']}: the main job {main['figures']['wall time']} cold (a fresh clone and"
    f" virtualenv, no pip cache, the install included), printing `{main['figures']['printed']}`; the"
    f" tests {tests['figures']['pytest time']} on two processes, {tests['figures']['with the install']} with the"
    f" install{on_tests} (the date and commit of each: [docs/results.md](docs/results.md)). Which worker finishes first"
    " decides what the GP sees, so another machine may pick other networks."
  )


def render_table(records: dict) -> str:
  """The README's table: each row's figure and which way is better, its record's note below."""
  lines, notes = _table(["result", "figure", "better"], []), []
  for what, name, shown in README_ROWS:
    record = records[name]
    if record["note"]:
      notes.append(f"{len(notes) + 1}. {record['note']}")
    mark = f" (note {len(notes)})" if record["note"] else ""
    lines.append(f"| {what}{mark} | {_figure(record, shown)} | {record['direction']} |")
  return (
    "\n".join(lines + [""] + notes)
    + "\n\nEvery figure with its command, date, machine and commit: [docs/results.md](docs/results.md)."
  )


def render_readme(text: str, records: dict) -> str:
  """The README with each generated span replaced by what the records give."""
  for key, render in (("commands", render_commands), ("table", render_table)):
    start = text.index(SPANS[key]) + len(SPANS[key])
    end = text.index(END, start)
    text = text[:start] + "\n" + render(records) + "\n" + text[end:]
  return text


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--check", action="store_true", help="exit 1 if a page differs from the records")
  args = ap.parse_args()
  records = load()
  with open(README) as f:
    readme = f.read()
  wanted = {PAGE: render_page(records), README: render_readme(readme, records)}
  stale = []
  for path, text in wanted.items():
    with open(path) if os.path.exists(path) else open(os.devnull) as f:
      if f.read() == text:
        continue
    stale.append(os.path.relpath(path, ROOT))
    if not args.check:
      with open(path, "w") as f:
        f.write(text)
  if args.check and stale:
    sys.exit(f"render_results.py: {', '.join(stale)} differ from benchmarks/records; run it without --check")
  if args.check:  # the manual's figures are drawn from these records too (render_figures.py)
    import render_figures

    figures = render_figures.stale(records)
    if figures:
      sys.exit("render_results.py: stale figures:\n  " + "\n  ".join(figures))
  print(f"{'stale' if args.check else 'rewrote'}: {', '.join(stale)}" if stale else "up to date")


if __name__ == "__main__":
  main()
