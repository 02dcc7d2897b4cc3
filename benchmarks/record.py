"""One JSON record per benchmark or comparison run: the command, where and when it ran, and what
it measured.

`write(name, title, figures, tables)` adds `benchmarks/records/<name>-<UTC time>.json`, and
`benchmarks/render_results.py` renders docs/results.md and the README's results table from the
latest record of each name, so a figure is stated once, with its date and machine. Every
benchmark calls it at the end of a run; `launch/compare.py` and `launch/nb201_table.py` do with
`--record=NAME`. NAS_JAX_RECORDS=DIR writes the records elsewhere. Every `bench_*.py` has a
`--smoke` mode (`smoke`): a run of seconds whose record goes to a temporary folder, which
tests/test_benchmarks.py runs for each of them.

A record says what its figures mean: `direction`, whether higher or lower is better for its
headline figures (those its title and the README name), and `note`, what a reader needs to read
them (units, what a ratio divides, why a result looks surprising). A written record always
carries its commit, load and machine. Records whose `source` is not "measured" were transcribed
once from the README's earlier tables, before the scripts wrote records; they keep what the
README gave, and `load_average` is null (and `commit` "") where it gave none.
"""

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile

SCHEMA = 1
SKIPPED = 77  # the exit status of a --smoke run that lacks what it needs (automake's "skipped")
DIRECTIONS = ("higher", "lower")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = os.path.join(ROOT, "benchmarks", "records")


def _commit() -> str:
  """HEAD's short hash, with "-dirty" when tracked files differ from it; "" outside a checkout."""
  try:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], cwd=ROOT, capture_output=True, text=True).stdout
  except (OSError, subprocess.CalledProcessError):
    return ""
  return head.stdout.strip() + ("-dirty" if dirty.strip() else "")


def cpu_model() -> str:
  """The CPU's model name, as /proc/cpuinfo gives it."""
  try:
    with open("/proc/cpuinfo") as f:
      names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
  except OSError:
    names = []
  return names[0] if names else platform.processor() or platform.machine()


def _command(argv: list) -> str:
  """The command line as typed from the repository root: `python benchmarks/x.py --flag=...`."""
  script = os.path.relpath(os.path.abspath(argv[0]), ROOT) if argv else ""
  return shlex.join(["python", script, *argv[1:]])


def environment() -> dict:
  """Where and when this process runs: commit, UTC date, machine, load, jax and its backend."""
  import jax  # the benchmark imported it already; here only to read its version and devices

  device = jax.devices()[0]
  return {
    "commit": _commit(),
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
    "machine": f"{cpu_model()}, {os.cpu_count()} CPUs"
    + ("" if device.platform == "cpu" else f", {len(jax.devices())} x {device.device_kind}"),
    "cpu_count": os.cpu_count(),
    "load_average": _load_average(),
    "jax_version": jax.__version__,
    "backend": jax.default_backend(),
  }


def _load_average() -> list:
  """The 1, 5 and 15 minute load averages; [] where the system does not give them."""
  try:
    return [round(x, 2) for x in os.getloadavg()]
  except OSError:
    return []


def default_direction(name: str) -> str:
  """The direction a record's kind implies: "lower" for the README's timed commands (`*_command`,
  wall times) and the NAS-Bench-201 tables (`nb201_*`, test regrets); "" where the kind does not
  say (a benchmark's headline may be seconds, a speed-up or a rate)."""
  return "lower" if name.endswith("_command") or name.startswith("nb201_") else ""


def backend_suffix() -> str:
  """ "" on a CPU, else "_gpu" or "_tpu": a record name's suffix, so each device keeps its latest run."""
  import jax

  return "" if jax.default_backend() == "cpu" else f"_{jax.default_backend()}"


def markdown_table(lines: list, title: str = "") -> dict:
  """A record's table from the lines of a markdown table (a header, a rule, then rows)."""
  cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if line.strip().startswith("|")]
  return {"title": title, "columns": cells[0], "rows": cells[2:]}


def smoke(options, **values) -> str:
  """The `--smoke` mode of a benchmark: a run of seconds that goes through the same code, so
  tests/test_benchmarks.py notices when a change of the library breaks the script.

  Sets each of `values` (the flags of a tiny run) on `options`, absl's FLAGS or an argparse
  Namespace, and sends the records to a fresh temporary folder unless NAS_JAX_RECORDS names one,
  so that a smoke record never replaces a measured one in benchmarks/records.

  Returns:
    a fresh temporary folder for the run's other outputs (its runs, its journals).
  """
  unknown = sorted(name for name in values if not hasattr(options, name))
  if unknown:
    raise ValueError(f"smoke: no flag {', '.join(unknown)} to set; the script defines the flags it sets")
  for name, value in values.items():
    setattr(options, name, value)
  scratch = tempfile.mkdtemp(prefix="nas_jax_smoke_")
  os.environ.setdefault("NAS_JAX_RECORDS", os.path.join(scratch, "records"))
  return scratch


def require(path: str, what: str) -> None:
  """In a --smoke run: skips it (`skip`) when `path`, what it reads (`what`), is absent."""
  if not os.path.exists(path):
    skip(f"{path} is absent ({what})")


def skip(reason: str):
  """Ends a run that lacks what it needs (the NB201 tables, the authors' code): prints why and exits
  with SKIPPED, which tests/test_benchmarks.py reports as a skip with this reason."""
  print(f"skipped: {reason}", file=sys.stderr)
  sys.exit(SKIPPED)


def write(
  name: str,
  title: str,
  figures: dict,
  tables: list | None = None,
  *,
  note: str = "",
  direction: str = "",
  argv: list | None = None,
  command: str = "",
  curves: dict | None = None,
) -> str:
  """Writes one record and returns its path.

  Args:
    name: what was measured, e.g. "bench_otmann"; the renderer keeps the latest record per name.
    title: one line for the results page.
    figures: {label: number or text}, e.g. {"exact, 60 CNNs (s)": 0.187}.
    tables: [{"title": str, "columns": [str], "rows": [[cell]]}] for results with rows.
    note: what the figures mean, shown under them: units, what a ratio divides, a caveat.
    direction: "higher" or "lower", whichever is better for the headline figures; by default
      `default_direction(name)`, and a name whose kind does not say must pass it.
    argv: the command's argv (default sys.argv).
    command: the command as typed, when it is not this process's argv (a shell line it timed).
    curves: a study's mean curves ({"hours", "panels"}, `launch/study.py --record`), which
      render_figures.py draws for the results page; None for a record without curves.
  """
  if not name or not name.replace("_", "").replace("-", "").isalnum():
    raise ValueError(f"record name: {name!r}; use letters, digits, '_' and '-'")
  direction = direction or default_direction(name)
  if direction not in DIRECTIONS:
    raise ValueError(f"record {name!r}: direction={direction!r}; pass direction='higher' or 'lower' (which is better)")
  where = environment()
  missing = [k for k in ("commit", "load_average", "machine") if not where[k]]
  if missing:
    raise ValueError(
      f"record {name!r}: no {', '.join(missing)} to record; run it in a git checkout of nas_jax on Linux"
    )
  record = {
    "schema": SCHEMA,
    "name": name,
    "title": title,
    "direction": direction,
    "note": note,
    "command": command or _command(sys.argv if argv is None else argv),
    **where,
    "source": "measured",
    "figures": figures,
    "tables": tables or [],
    **({"curves": curves} if curves else {}),
  }
  directory = os.environ.get("NAS_JAX_RECORDS") or RECORDS
  os.makedirs(directory, exist_ok=True)
  path = os.path.join(directory, f"{name}-{record['date'].replace(':', '')}.json")
  with open(path, "w") as f:
    json.dump(record, f, indent=1, ensure_ascii=False)
    f.write("\n")
  shown = os.path.relpath(path)
  print(f"record: {path if shown.startswith('..') else shown}")
  return path
