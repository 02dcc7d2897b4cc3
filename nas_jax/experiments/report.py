"""The search report: a workdir (journal.jsonl, search.json, config.json, summary.json) turned into
one self-contained HTML page, with plots as base64 PNGs and a few lines of inline JS to sort the
table. It reads the journal as a resume would, so a running or killed search reports too.
"""

from __future__ import annotations

import html
import io
import json
import os
from types import MappingProxyType
from typing import Any, NamedTuple, Sequence

import numpy as np
from matplotlib.figure import Figure

from nas_jax.arch.architecture import Architecture
from nas_jax.arch.cell import Cell, cell_to_architecture
from nas_jax.features import encodings
from nas_jax.features.otmann import otmann_distances
from nas_jax.features.pairwise import VectorPair, hamming, sq_euclidean
from nas_jax.search import curves, journal, locked_dir, loop
from nas_jax.search.state import GOALS, Observation, to_score
from nas_jax.viz import drawing, plots
from nas_jax.wiring.parts import FEATURIZERS, SPACES, build
from nas_jax.experiments.report_sections import (
  at_full,
  full_fidelity,
  img,
  learning_curves_section,
  objectives_of,
  pareto_section,
  png,
)

__all__ = [
  "REPORT",
  "GP_STRATEGIES",
  "Run",
  "load_run",
  "search_state",
  "best_trials",
  "run_space",
  "to_architecture",
  "distances",
  "progress_figure",
  "objectives_of",
  "full_fidelity",
  "report_html",
  "write_report",
]

#: The report's file name in the workdir.
REPORT = "report.html"
# Strategies whose surrogate is a GP over distances between networks: the report shows those.
GP_STRATEGIES = ("nasbot", "gp_bo", "bo")
_META = "search.json"  # {"task", "goal"}: written by the loop before the first evaluation
_CONFIG = "config.json"
_DEFAULT_SPACE = MappingProxyType({"cnn": "layer_graph", "mlp": "layer_graph", "nb201": "nb201", "nb101": "nb101"})


class Run(NamedTuple):
  """What a workdir holds.

  Attributes:
    workdir: the directory.
    task, goal: from search.json ("max" or "min").
    config: config.json as a dict, or None when absent.
    summary: summary.json, or None (the search is running or was killed).
    observations: the journal's observations, in the order recorded (a torn last line skipped).
  """

  workdir: str
  task: str
  goal: str
  config: dict | None
  summary: dict | None
  observations: list[Observation]


def _read_json(path: str) -> Any:
  if not os.path.exists(path):
    return None
  return journal.load_json(path)


def _no_journal(workdir: str) -> ValueError:
  return ValueError(f"workdir: {workdir!r} has no {loop.JOURNAL}; expected the --config.workdir of a search")


def load_run(workdir: str | os.PathLike) -> Run:
  """Reads a search workdir written by `search_from_config` or `loop.run`.

  Raises:
    ValueError naming `workdir` when it holds no journal or no search.json, or `path:line` of a
    journal row that is not an observation of the config's space (`journal.replay`).
  """
  workdir = os.fspath(workdir)
  path = os.path.join(workdir, loop.JOURNAL)
  if not os.path.exists(path):
    raise _no_journal(workdir)
  meta = _read_json(os.path.join(workdir, _META))
  if not isinstance(meta, dict) or meta.get("goal") not in GOALS:
    raise ValueError(f"workdir: {workdir!r} has no valid {_META} ({meta!r}); expected {{'task', 'goal'}}")
  config = _read_json(os.path.join(workdir, _CONFIG))
  section = (config or {}).get("space")
  return Run(
    workdir=workdir,
    task=str(meta.get("task", "")),
    goal=meta["goal"],
    config=config,
    summary=_read_json(os.path.join(workdir, loop.SUMMARY)),
    observations=journal.replay(path, _space(section).from_json if section else None),
  )


def search_state(run: Run) -> str:
  """Whether the search finished, from the journal's rows against config.json's budget (not from
  summary.json, which a killed run leaves stale), and a note when summary.json disagrees."""
  budget, n = (run.config or {}).get("budget"), len(run.observations)
  if isinstance(budget, int) and not isinstance(budget, bool):
    state = f"finished ({n} of {budget} evaluations)" if n >= budget else f"not finished: {n} of {budget} evaluations"
  else:
    state = f"budget unknown (no config.json): {n} evaluations"
  if run.summary is None:
    return f"{state}; no summary.json"
  counted = run.summary.get("n_evaluated")
  if counted != n:
    return f"{state}; summary.json is stale: it counts {counted} evaluations, the journal holds {n}"
  return state


def best_trials(run: Run, k: int) -> list[Observation]:
  """The k OK observations with the best values (the earlier trial first among equals), among
  those at full fidelity (`full_fidelity`): a value after fewer epochs is not comparable."""
  ok = [o for o in run.observations if o.ok and at_full(run, o)]
  scores = to_score([o.value for o in ok], run.goal)
  order = sorted(range(len(ok)), key=lambda i: (-scores[i], ok[i].trial_id))
  return [ok[i] for i in order[:k]]


def run_space(run: Run):
  """The run's Space: built from config.json's space section, else the default space of the
  first network's kind (None for an empty journal)."""
  section = (run.config or {}).get("space")
  if not section:
    if not run.observations:
      return None
    kind = run.observations[0].arch_json.get("kind")
    section = {"name": _DEFAULT_SPACE.get(kind, "layer_graph"), "kind": kind}
  return _space(section)


def _space(section: dict):
  """The Space of a config's space section ({"name": ..., its options})."""
  return SPACES[section["name"]](**{k: v for k, v in section.items() if k != "name"})


def to_architecture(space: Any, arch_json: dict) -> Architecture:
  """A journalled network (`space.to_json` output) as an Architecture; cells are converted."""
  point = space.from_json(arch_json)
  return cell_to_architecture(point) if isinstance(point, Cell) else point


def distances(run: Run, max_networks: int = 40) -> tuple[np.ndarray, list[int], str] | None:
  """The distance matrix a GP strategy's kernel reads, over its best evaluated networks.

  Layer graphs: OTMANN d (exact solver, nu_str 0.5, the run's OTMANN `params`). Cells (gp_bo):
  Hamming distances of the run's encoding (`strategy_config.encoding`, default "path"). The bo
  strategy: OTMANN d of its networks (cells through `cell_layer_graph`) with the otmann
  featurizer, squared distances of the features with an encoding or poor_man; None otherwise.

  Args:
    run: a loaded run.
    max_networks: at most this many networks, the best ones (the exact solver's cost grows as
      their number squared).

  Returns:
    (d [n, n] float64, the n trial ids in increasing order, a title), or None when the run's
    strategy is not a GP strategy or fewer than 2 networks succeeded.
  """
  config = run.config or {}
  if config.get("strategy") not in GP_STRATEGIES:
    return None
  chosen = sorted(best_trials(run, max_networks), key=lambda o: o.trial_id)
  if len(chosen) < 2:
    return None
  space = run_space(run)
  options = config.get("strategy_config") or {}
  if config.get("strategy") == "bo":
    return _featurizer_distances(space, options, chosen)
  if config.get("strategy") != "gp_bo":  # NASBOT's kernel reads the networks' layer graphs
    archs = [to_architecture(space, o.arch_json) for o in chosen]
    params = (options.get("featurizer_config") or {}).get("params") or options.get("otmann_params", "paper")
    d = otmann_distances(archs, nu_str=0.5, params=params).d
    title = f"OTMANN d (exact, nu_str 0.5, {params})"
  else:
    name = options.get("encoding", "path")
    cells = [space.from_json(o.arch_json) for o in chosen]
    d = np.asarray(hamming(np.asarray(encodings.encode(name, cells))).sq_dist, np.float64)
    title = f"Hamming distance of {name} encodings"
  return d, [o.trial_id for o in chosen], title


def _featurizer_distances(space, options: dict, chosen: list) -> tuple[np.ndarray, list[int], str] | None:
  """The distances a bo run's featurizer gives between the chosen observations' points."""
  name = options.get("featurizer", "otmann")
  points = [space.from_json(o.arch_json) for o in chosen]
  if name == "otmann":
    params = (options.get("featurizer_config") or {}).get("params", "paper")
    f = build(FEATURIZERS, "otmann", "featurizer", dict(nu_str=(0.5,), params=params))(space)
    d = np.asarray(f.pairs(f.init(points), points, [])[0].d[0], np.float64)
    return d, [o.trial_id for o in chosen], f"OTMANN d (exact, nu_str 0.5, {params})"
  f = build(FEATURIZERS, name, "featurizer")(space)
  pair, _ = f.pairs(f.init(points), points, [])
  if not isinstance(pair, VectorPair):
    return None
  d = np.asarray(sq_euclidean(np.asarray(pair.x1, np.float64)).sq_dist)
  return d, [o.trial_id for o in chosen], f"squared distance of {name} features"


def _time_axis(observations) -> tuple[np.ndarray, str]:
  """Wall-clock seconds since the first evaluation started, when every observation has its
  `finished_at`; else (journals older than that field) evaluation seconds summed over workers."""
  if observations and all(o.finished_at is not None for o in observations):
    start = min(o.finished_at - o.seconds for o in observations)
    return np.array(
      [o.finished_at - start for o in observations]
    ), "wall-clock seconds since the first evaluation began"
  return np.cumsum([o.seconds for o in observations]), "evaluation seconds (cumulative, summed over workers)"


def progress_figure(run: Run) -> Figure:
  """Best value so far against evaluations (left) and against seconds (right, `_time_axis`)."""
  values = [o.value for o in run.observations]
  best = curves.best_so_far([v if at_full(run, o) else None for v, o in zip(values, run.observations)], run.goal)
  seconds, seconds_label = _time_axis(run.observations)
  fig = Figure(figsize=(11, 4))
  for ax, x, xlabel in zip(
    fig.subplots(1, 2), (np.arange(1, len(values) + 1), seconds), ("evaluations", seconds_label)
  ):
    ax.plot(x, [np.nan if v is None else v for v in values], ".", color="0.6", label="evaluations")
    ax.step(x, best, where="post", label="best so far")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"value ({'higher' if run.goal == 'max' else 'lower'} is better)")
    ax.grid(alpha=0.3)
    ax.legend()
  fig.subplots_adjust(left=0.07, right=0.98, bottom=0.14, top=0.95, wspace=0.25)
  return fig


def _network(arch_json: dict) -> str:
  """A short description of a network for the table."""
  if "arch_str" in arch_json:
    return str(arch_json["arch_str"])
  if "layers" in arch_json:
    return f"{len(arch_json['layers'])} layers, {len(arch_json.get('edges', []))} edges"
  return ", ".join(str(o) for o in arch_json.get("ops", []))


def _cell(value: Any) -> str:
  """A table cell; numbers carry data-sort so that the inline JS sorts them as numbers."""
  if value is None:
    return '<td data-sort="">&ndash;</td>'
  if isinstance(value, (int, float)) and not isinstance(value, bool):
    shown = f"{value:.6g}" if isinstance(value, float) else str(value)
    return f'<td data-sort="{value!r}">{shown}</td>'
  return f"<td>{html.escape(str(value))}</td>"


_COLUMNS = ("trial", "status", "value", "fidelity", "test value", "seconds", "worker", "network")


def _table(observations: Sequence[Observation]) -> str:
  head = "".join(f'<th onclick="sortTable({i})">{c}</th>' for i, c in enumerate(_COLUMNS))
  rows = []
  for o in observations:
    cells = (o.trial_id, o.status.name, o.value, o.fidelity, o.test_value, round(o.seconds, 3), o.worker)
    cells += (_network(o.arch_json),)
    rows.append(f'<tr data-trial="{o.trial_id}">' + "".join(_cell(c) for c in cells) + "</tr>")
  return f'<table id="evaluations"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _failures(observations: Sequence[Observation]) -> str:
  failed = [o for o in observations if not o.ok]
  if not failed:
    return "<p>No evaluation failed.</p>"
  items = [
    f"<li><b>trial {o.trial_id}</b>: {o.status.name} after {o.seconds:.1f} s on "
    f"{html.escape(o.worker)}<pre>{html.escape(o.error)}</pre></li>"
    for o in failed
  ]
  return f"<ul>{''.join(items)}</ul>"


def _drawings(run: Run, top_k: int) -> str:
  parts = []
  space = run_space(run)
  for rank, o in enumerate(best_trials(run, top_k), start=1):
    ax = drawing.draw(to_architecture(space, o.arch_json), title=f"#{rank}: trial {o.trial_id}, value {o.value:.6g}")
    parts.append(f'<figure class="network">{img(png(ax.figure), f"trial {o.trial_id}")}</figure>')
  return "".join(parts) or "<p>No evaluation has succeeded yet.</p>"


def _heatmap(run: Run, max_networks: int) -> str:
  found = distances(run, max_networks)
  if found is None:
    return ""
  d, ids, title = found
  fig = plots.distance_heatmap(d, io.BytesIO(), row_labels=ids, col_labels=ids, title=title)
  return (
    f'<h2 id="distances">Distances between evaluated networks</h2><p>The {len(ids)} best networks,'
    f" ordered by trial id; the GP's kernel reads these distances.</p>{img(png(fig), title)}"
  )


_STYLE = """body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px}th{cursor:pointer;background:#eee}
pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px}img{max-width:100%}
figure.network{display:inline-block;vertical-align:top;margin:0 1em}"""
# Sorts the evaluations table by a column: numbers by data-sort (blanks last), text otherwise;
# a second click on the same column reverses the order.
_SCRIPT = """function sortTable(col){var t=document.getElementById('evaluations').tBodies[0];
var rows=Array.prototype.slice.call(t.rows);var dir=(t.dataset.col==String(col)&&t.dataset.dir=='1')?-1:1;
rows.sort(function(a,b){var x=a.cells[col],y=b.cells[col];var nx=x.dataset.sort,ny=y.dataset.sort;
if(nx!==undefined&&ny!==undefined){if(nx===''||ny==='')return (nx==='')-(ny==='');
return dir*(parseFloat(nx)-parseFloat(ny));}
return dir*x.textContent.localeCompare(y.textContent);});
rows.forEach(function(r){t.appendChild(r);});t.dataset.col=String(col);t.dataset.dir=String(dir);}"""


def report_html(run: Run, *, top_k: int = 3, max_networks: int = 40) -> str:
  """The report page of a run, as one self-contained HTML string.

  Args:
    run: from `load_run`.
    top_k: how many of the best networks are drawn.
    max_networks: cap on the networks of the distance heatmap (GP strategies only).
  """
  for name, v in (("top_k", top_k), ("max_networks", max_networks)):
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"{name}: {v!r}; expected an integer >= 1")
  obs = run.observations
  n_failed = sum(not o.ok for o in obs)
  state = search_state(run)
  best = best_trials(run, 1)
  best_line = f"best value {best[0].value:.6g} (trial {best[0].trial_id})" if best else "no successful evaluation yet"
  config = json.dumps(run.config, indent=1, sort_keys=True) if run.config is not None else "(no config.json)"
  progress = img(png(progress_figure(run)), "best so far") if obs else "<p>The journal is empty.</p>"
  strategy = (run.config or {}).get("strategy", "?")
  return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(run.task)} search report</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(strategy)} on {html.escape(run.task)}</h1>
<p id="status">{len(obs)} evaluations, {n_failed} failed; {best_line}; goal: {run.goal}. Search {state}.</p>
<h2 id="progress">Best so far</h2>{progress}
{pareto_section(run)}
{learning_curves_section(run)}
<h2 id="best">Best networks</h2>{_drawings(run, top_k)}
{_heatmap(run, max_networks)}
<h2 id="evaluations-title">Evaluations</h2><p>Click a column header to sort.</p>{_table(obs)}
<h2 id="failures-title">Failures</h2><div id="failures">{_failures(obs)}</div>
<h2 id="config">Config</h2><pre>{html.escape(config)}</pre>
<script>{_SCRIPT}</script>
</body></html>
"""


def write_report(workdir: str | os.PathLike, *, top_k: int = 3, max_networks: int = 40) -> str:
  """Writes `workdir/report.html` (see `report_html`) and returns its path.

  The page goes, atomically (a browser reloading it never sees half of it), into the folder read:
  ValueError, and nothing written, when `workdir` was deleted or replaced meanwhile.
  """
  workdir = os.fspath(workdir)
  try:
    dir_fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
  except FileNotFoundError:
    raise _no_journal(workdir) from None
  try:
    page = report_html(load_run(workdir), top_k=top_k, max_networks=max_networks)
    if locked_dir.replaced(workdir, dir_fd):
      raise ValueError(f"workdir: {workdir!r} was deleted or replaced while its report was made; nothing was written")
    locked_dir.write_file(workdir, dir_fd, REPORT, page.encode())
  finally:
    os.close(dir_fd)
  return os.path.join(workdir, REPORT)
