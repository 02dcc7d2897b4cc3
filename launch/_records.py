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


def write_table(name: str, title: str, table_path: str, figures: dict, *, note: str = "", direction: str = "") -> str:
  """Writes the markdown table at `table_path` (its first table) as the record `name`, with its
  note; without a direction, a column of best values "... (max)" or "... (min)" (compare.py's)
  says which way is better."""
  with open(table_path) as f:
    table = record.markdown_table(f.read().split("\n\n")[0].splitlines())
  goals = {goal for column in table["columns"] for goal in ("max", "min") if column.endswith(f"({goal})")}
  if not direction and len(goals) == 1:
    direction = {"max": "higher", "min": "lower"}[goals.pop()]
  return record.write(name, title, figures, [table], note=note, direction=direction)
