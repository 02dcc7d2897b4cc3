"""Draws the manual's figures, docs/figures/*.png, from the committed benchmark records
(benchmarks/records/*.json, read by `render_results.load`) and from the data of small runs
(docs/figures/data/*.json, written by --measure), so no figure in the manual is pasted by hand.

  python benchmarks/render_figures.py                 # redraw every figure, rewrite docs/figures/figures.json
  python benchmarks/render_figures.py --check         # exit 1 naming each figure whose inputs changed
  python benchmarks/render_figures.py --measure=NAME  # redo one small run's data, then redraw
    [--data=../shared/data/nasbench201]               # the NB201 table folder the NB201 runs read

PNG bytes differ across matplotlib versions, so the check compares no images: figures.json keeps,
per figure, the records and data files it was drawn from and a SHA-256 of their contents, and a
figure is stale when that digest differs from what the files give now (a newer record of its
name, a re-measured data file). `render_results.py --check` and tests/test_results.py run the check.
"""

import argparse
import functools
import hashlib
import json
import os
import sys
from types import MappingProxyType
from typing import Callable, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # render_results, also when loaded by a test
import render_results  # noqa: E402

ROOT = render_results.ROOT
FIGURES_DIR = os.path.join(ROOT, "docs", "figures")
DATA_DIR = os.path.join(FIGURES_DIR, "data")
SIDECAR = os.path.join(FIGURES_DIR, "figures.json")
COMMAND = "python benchmarks/render_figures.py"
NB201 = os.path.join(os.path.dirname(ROOT), "shared", "data", "nasbench201")
STUDY_REGRETS = ("valid", "test")  # a study record's two figures (nas_jax.experiments.study_results.REGRETS)


class Spec(NamedTuple):
  """One figure: the latest records of `records` and the data files `data` it is drawn from, and
  `draw(inputs, png_path)`, where inputs = {"records": {name: record}, "data": {name: data}}."""

  records: tuple
  data: tuple
  draw: Callable[[dict, str], None]


def _save(fig, path: str) -> None:
  # Imported here, as every drawing import below: --check reads JSON only, and stays fast
  # without matplotlib, jax or nas_jax.
  from matplotlib.backends.backend_agg import FigureCanvasAgg

  FigureCanvasAgg(fig).print_png(path)


def _mean_err(cell) -> tuple[float, float]:
  """A table cell "0.486 ± 0.035 (1.08x)" as (0.486, 0.035)."""
  mean, _, err = str(cell).partition("±")
  return float(mean), float(err.split()[0]) if err else 0.0


def _bars(groups: dict, columns: list, ylabel: str, title: str, path: str, *, line: float | None = None) -> None:
  """Grouped bars with standard-error whiskers: groups = {label: [(mean, err) per column]}; with
  `line`, a dashed reference line there and a log axis (errors spanning decades stay readable)."""
  import numpy as np
  from matplotlib.figure import Figure

  fig = Figure(figsize=(max(6.5, 1.6 * len(columns)) + 2.5, 4.2))
  ax = fig.add_subplot()
  width = 0.8 / len(groups)
  for i, (label, cells) in enumerate(groups.items()):
    x = np.arange(len(columns)) + (i - (len(groups) - 1) / 2) * width
    ax.bar(x, [m for m, _ in cells], width, yerr=[e for _, e in cells], capsize=2, label=label)
  if line is not None:
    ax.axhline(line, color="0.5", lw=0.8, ls="--")
    ax.set_yscale("log")
  ax.set_xticks(np.arange(len(columns)), columns)
  ax.set_ylabel(ylabel)
  ax.set_title(title, fontsize=10)
  ax.grid(axis="y", alpha=0.3)
  ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over them
  fig.tight_layout()
  _save(fig, path)


def _draw_progress(inputs: dict, path: str) -> None:
  from nas_jax.viz import plots

  run = inputs["data"]["quickstart"]
  plots.plot_progress(run["values"], run["goal"], path, title=f"{run['task']}: {len(run['values'])} evaluations")


def _draw_regret_curves(inputs: dict, path: str) -> None:
  import numpy as np

  from nas_jax.viz import plots

  run = inputs["data"]["nb201_regret"]
  curves = {name: np.asarray(r, np.float64) for name, r in run["regret"].items()}
  title = f"NB201 {run['dataset']}: {len(run['seeds'])} seeds, {run['budget']} queries"
  plots.plot_curves(curves, "min", path, title=title, what="test regret (%)", xlabel="queries")


def _draw_regret_table(inputs: dict, path: str) -> None:
  table = inputs["records"]["nb201_table"]["tables"][0]
  datasets = [c.removesuffix(" regret") for c in table["columns"] if c.endswith(" regret")]
  groups = {row[0]: [_mean_err(row[table["columns"].index(f"{d} regret")]) for d in datasets] for row in table["rows"]}
  seeds = sorted({row[table["columns"].index("seeds")] for row in table["rows"]})
  title = f"NAS-Bench-201 test regret at the budget, mean ± s.e. over {'/'.join(map(str, seeds))} seeds"
  _bars(groups, datasets, "test regret (%, lower is better)", title, path)


def _pool(inputs: dict) -> tuple:
  import nas_jax

  pool = inputs["data"]["otmann_pool"]
  return [nas_jax.Architecture.from_json(a) for a in pool["archs"]], pool["names"], pool


def _draw_pool_networks(inputs: dict, path: str) -> None:
  from matplotlib.figure import Figure

  from nas_jax.viz import drawing

  archs, names, _ = _pool(inputs)
  fig = Figure(figsize=(2.4 * len(archs), 9))
  for ax, arch, name in zip(fig.subplots(1, len(archs)), archs, names):
    drawing.draw(arch, ax=ax, title=name)
  fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.96, wspace=0.05)
  _save(fig, path)


def _draw_heatmap(inputs: dict, path: str) -> None:
  from nas_jax.viz import plots

  _, names, pool = _pool(inputs)
  title = f"OTMANN distances ({pool['solver']} solver, nu_str {pool['nu_str']})"
  plots.distance_heatmap(pool["d"], path, row_labels=names, col_labels=names, title=title)


def _draw_kernel_quality(inputs: dict, path: str) -> None:
  run = inputs["data"]["kernel_quality"]
  columns = list(run["nmse"])
  groups = {m: [tuple(run["nmse"][c][m]) for c in columns] for m in run["nmse"][columns[0]]}
  title = f"Held-out NMSE, {run['n_points']} random networks, {run['epochs']} epochs, {run['n_splits']} splits"
  _bars(groups, columns, "NMSE (lower is better; 1 = predicting the mean)", title, path, line=1.0)


def _draw_pareto(inputs: dict, path: str) -> None:
  import numpy as np

  from nas_jax.viz import plots

  run = inputs["data"]["pareto"]
  names, goals = zip(*run["objectives"])
  fig = plots.pareto_figure(
    np.asarray(run["values"]), names, goals, np.asarray(run["front"]), trial_ids=run["trial_ids"]
  )
  fig.axes[0].set_title(f"{run['config']}: {len(run['values'])} queries, NB201 {run['dataset']}", fontsize=10)
  _save(fig, path)


def _draw_multifidelity(inputs: dict, path: str) -> None:
  import numpy as np
  from matplotlib.figure import Figure

  run = inputs["data"]["multifidelity"]
  fidelities = sorted(run["fidelities"])
  fig = Figure(figsize=(7, 3.6))
  ax = fig.add_subplot()
  by_network = {}
  for i, (network, fidelity, value) in enumerate(zip(run["network"], run["fidelity"], run["value"])):
    by_network.setdefault(network, []).append((i + 1, fidelities.index(fidelity)))
  for points in by_network.values():
    if len(points) > 1:  # a network promoted to the next rung: its evaluations joined
      ax.plot(*zip(*points), "-", color="C3", lw=0.8)
  values = np.asarray([np.nan if v is None else v for v in run["value"]])
  dots = ax.scatter(np.arange(1, values.size + 1), [fidelities.index(f) for f in run["fidelity"]], c=values, s=18)
  fig.colorbar(dots, ax=ax, label="validation accuracy (%)")
  ax.set_yticks(range(len(fidelities)), [f"{f:g} epochs" for f in fidelities])
  ax.set_ylim(-0.5, len(fidelities) - 0.5)
  ax.set_xlabel("evaluation (in the order recorded)")
  ax.set_title(f"{run['config']}: which network ran at which fidelity (red: promoted)", fontsize=10)
  ax.grid(alpha=0.3)
  fig.tight_layout()
  _save(fig, path)


def _draw_proxies(inputs: dict, path: str) -> None:
  import numpy as np
  from matplotlib.figure import Figure
  from scipy import stats

  run = inputs["data"]["proxies_nb201"]
  table = inputs["records"]["bench_proxies"]["tables"][0]
  whole = {(r[0], r[1]): r[3] for r in table["rows"]}  # (dataset, proxy) -> rho (valid) over all cells
  fig = Figure(figsize=(4 * len(run["proxies"]), 3.8))
  for ax, proxy in zip(np.atleast_1d(fig.subplots(1, len(run["proxies"]))), run["proxies"]):
    x, y = np.asarray(run["scores"][proxy], np.float64), np.asarray(run["valid"], np.float64)
    rho = stats.spearmanr(x, y).statistic
    ax.scatter(x, y, s=12)
    ax.set_xscale("symlog" if (x <= 0).any() else "log")
    ax.set_xlabel(f"{proxy} score")
    ax.set_ylabel(f"{run['dataset']} validation accuracy (%)")
    all_cells = whole.get((run["dataset"], proxy))
    also = f"; all 15,625 cells: {all_cells}" if all_cells is not None else ""
    ax.set_title(f"Spearman rho {rho:.2f} ({len(x)} cells{also})", fontsize=9)
    ax.grid(alpha=0.3)
  fig.tight_layout()
  _save(fig, path)


FIGURES = MappingProxyType(
  {
    "quickstart_progress": Spec((), ("quickstart",), _draw_progress),
    "nb201_regret_curves": Spec((), ("nb201_regret",), _draw_regret_curves),
    "nb201_regret_table": Spec(("nb201_table",), (), _draw_regret_table),
    "otmann_pool_networks": Spec((), ("otmann_pool",), _draw_pool_networks),
    "otmann_heatmap": Spec((), ("otmann_pool",), _draw_heatmap),
    "kernel_quality": Spec((), ("kernel_quality",), _draw_kernel_quality),
    "pareto_front": Spec((), ("pareto",), _draw_pareto),
    "multifidelity_schedule": Spec((), ("multifidelity",), _draw_multifidelity),
    "proxies_scatter": Spec(("bench_proxies",), ("proxies_nb201",), _draw_proxies),
  }
)


def _draw_study(record: str, regret: str, inputs: dict, path: str) -> None:
  from nas_jax.experiments import study_runner

  given = inputs["records"][record]
  title = f"{record} ({given['date']}): {'validation' if regret == 'valid' else 'test'} regret, mean ± s.e."
  study_runner.draw_curves(given["curves"], regret, path, title)


def study_figures(records: dict) -> dict:
  """{figure name: Spec} of the records that carry a study's curves (`launch/study.py --record`):
  `<record>_valid` and `<record>_test`, which docs/results.md shows under the record's table."""
  return {
    f"{name}_{regret}": Spec((name,), (), functools.partial(_draw_study, name, regret))
    for name, record in sorted(records.items())
    if "curves" in record
    for regret in STUDY_REGRETS
  }


def all_figures(records: dict) -> dict:
  """Every figure of the manual: FIGURES and those of the studies' records."""
  return {**FIGURES, **study_figures(records)}


def inputs(name: str, records: dict, data_dir: str = DATA_DIR) -> dict:
  """What figure `name` is drawn from: {"records": {name: latest record}, "data": {name: data}}."""
  spec, data = all_figures(records)[name], {}
  missing = [r for r in spec.records if r not in records]
  if missing:
    raise ValueError(f"figure {name}: no record named {missing} in benchmarks/records")
  for d in spec.data:
    path = os.path.join(data_dir, f"{d}.json")
    if not os.path.exists(path):
      raise ValueError(f"figure {name}: docs/figures/data/{d}.json is missing; run: {COMMAND} --measure={d}")
    with open(path) as f:
      data[d] = json.load(f)
  # Of a record, what a figure may draw: its tables, figures and curves (and the date, to name it).
  drawn = {
    r: {k: records[r][k] for k in ("date", "figures", "tables", "curves") if k in records[r]} for r in spec.records
  }
  return {"records": drawn, "data": data}


def digest(given: dict) -> str:
  """SHA-256 of a figure's inputs as canonical JSON (sorted keys), the same on every machine."""
  return hashlib.sha256(json.dumps(given, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def sidecar_entry(name: str, given: dict) -> dict:
  return {
    "png": f"docs/figures/{name}.png",
    "records": [f"{r} ({rec['date']})" for r, rec in given["records"].items()],
    "data": [f"docs/figures/data/{d}.json" for d in given["data"]],
    "sha256": digest(given),
  }


def stale(records: dict | None = None, sidecar: str = SIDECAR, data_dir: str = DATA_DIR) -> list[str]:
  """One line per figure whose PNG is missing or whose inputs differ from those it was drawn from."""
  records = render_results.load() if records is None else records
  try:
    with open(sidecar) as f:
      drawn = json.load(f)
  except FileNotFoundError:
    drawn = {}
  out = []
  for name in all_figures(records):
    try:
      entry = sidecar_entry(name, inputs(name, records, data_dir))
    except ValueError as e:  # a record or data file it needs is gone
      out.append(str(e))
      continue
    if not os.path.exists(os.path.join(os.path.dirname(sidecar), f"{name}.png")):
      out.append(f"{entry['png']} is missing; run: {COMMAND}")
    elif drawn.get(name, {}).get("sha256") != entry["sha256"]:
      now = ", ".join(entry["records"] + entry["data"])
      out.append(f"{entry['png']} was drawn from other inputs than {now} give now; run: {COMMAND}")
  return out


def draw(records: dict, names) -> None:
  """Draws the figures `names` and updates their entries of figures.json."""
  # Imported here: see _save.
  import matplotlib

  matplotlib.use("Agg")
  with open(SIDECAR) if os.path.exists(SIDECAR) else open(os.devnull) as f:
    sidecar = json.loads(f.read() or "{}")
  figures = all_figures(records)
  for name in names:
    given = inputs(name, records)
    figures[name].draw(given, os.path.join(FIGURES_DIR, f"{name}.png"))
    sidecar[name] = sidecar_entry(name, given)
    print(f"drew docs/figures/{name}.png")
  with open(SIDECAR, "w") as f:
    json.dump({n: sidecar[n] for n in figures if n in sidecar}, f, indent=1)
    f.write("\n")


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--check", action="store_true", help="exit 1 if a figure was drawn from other inputs")
  ap.add_argument("--measure", help="redo this small run's data (figure_data.NAMES), then redraw its figures")
  ap.add_argument("--data", default=NB201, help="the NB201 table folder (nb201_200epochs.csv.gz)")
  args = ap.parse_args()
  if args.check:
    lines = stale()
    if lines:
      sys.exit("render_figures.py: stale figures:\n  " + "\n  ".join(lines))
    print("up to date")
    return
  if args.measure:
    import figure_data  # imported here: it imports jax and runs searches, which --check needs not

    if args.measure not in figure_data.NAMES:
      sys.exit(f"render_figures.py: --measure={args.measure!r}; allowed: {', '.join(figure_data.NAMES)}")
    measured = figure_data.measure(args.measure, args.data)  # before the file is opened: a failed run keeps it
    with open(os.path.join(DATA_DIR, f"{args.measure}.json"), "w") as f:
      json.dump(measured, f, indent=1)
      f.write("\n")
  records = render_results.load()
  figures = all_figures(records)
  names = [n for n, spec in figures.items() if args.measure in spec.data] if args.measure else list(figures)
  draw(records, names)


if __name__ == "__main__":
  main()
