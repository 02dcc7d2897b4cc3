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


def write_study(name: str, results: dict, table_path: str, seconds: float, *, note: str = "") -> str:
  """Writes a study's table (`table_path`) and mean curves (`results`, `study_runner.write_results`')
  as the record `name`, with what ran: its grid, its finished trials and its seconds."""
  grid = results["grid"]
  with open(table_path) as f:
    table = record.markdown_table(f.read().splitlines(), "regrets (accuracy points) at fixed simulated hours")
  title = (
    f"Study on NAS-Bench-201: {', '.join(grid['methods'])}; {', '.join(grid['datasets'])};"
    f" {'/'.join(map(str, grid['workers']))} simulated workers"
  )
  seeds = sorted(set(grid["seeds"].values()))
  figures = {
    "trials finished": f"{grid['finished']} of {grid['trials']}",
    "seeds per method": ", ".join(f"{m} {n}" for m, n in grid["seeds"].items()) if len(seeds) > 1 else seeds[0],
    "modes": ", ".join(grid["modes"]),
    "model time": ", ".join(grid["model_time"]),
    "executor": grid["executor"],
    "study wall time (s)": round(seconds, 1),
  }
  curves = {"hours": results["hours"], "panels": results["panels"]}
  return record.write(name, title, figures, [table], note=note, direction="lower", curves=curves)
