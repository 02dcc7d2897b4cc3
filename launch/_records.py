"""`--record=NAME` of the comparison scripts: the run's table as a JSON record in benchmarks/records/.

The record (command, commit, date, machine, load, jax, the table) is written by
`benchmarks/record.py`, which the benchmarks use too; `benchmarks/render_results.py` renders
docs/results.md from the records.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import record  # noqa: E402

DOC = "Also write the table as the JSON record NAME in benchmarks/records/ (for docs/results.md); '': none."


def write_table(name: str, title: str, table_path: str, figures: dict) -> str:
  """Writes the markdown table at `table_path` (its first table) as the record `name`."""
  with open(table_path) as f:
    lines = f.read().split("\n\n")[0].splitlines()
  return record.write(name, title, figures, [record.markdown_table(lines)])
