"""Runs a study (`experiments.study`): every unfinished trial as one call on a process pool
(`ProcessExecutor`, one process per core by default; with one process, in this process) or as a
Ray task (`RayExecutor`, with `config.ray_address`), one progress bar over the trials; then its
results from the journals.

Resumable: a trial whose journal holds its whole budget is skipped; any other resumes from its
journal (the search loop's own resume), so a killed study reruns with nothing lost or repeated. A
trial whose worker is lost (a killed process, a dead Ray node) reruns, up to `config.worker_retries`
times, and resumes there too. It writes into the study's workdir `results.json` (the curves and
rows of `study_results.aggregate`, and the grid that ran), `table.md` (both regrets at the
reported simulated hours, `study_results.table_lines`) and `curves_valid.png`, `curves_test.png`
(mean regret ± s.e. against simulated hours, a panel per dataset and worker count).
"""

from __future__ import annotations

import json
import logging
import os
import time
from types import MappingProxyType

import ml_collections
import numpy as np
import tqdm

from nas_jax.experiments import study as study_lib
from nas_jax.experiments import study_results
from nas_jax.search import journal, loop
from nas_jax.search.executors import InlineExecutor
from nas_jax.search.loop import WorkdirInUse
from nas_jax.search.process_executor import ProcessExecutor
from nas_jax.search.ray_executor import RayExecutor  # imports Ray only when one is made
from nas_jax.tasks.tabular import load_nb201
from nas_jax.viz import plots
from nas_jax.wiring import config as config_lib
from nas_jax.wiring.registries import fidelities_of

__all__ = [
  "RESULTS",
  "TABLE",
  "CURVES",
  "run_trial",
  "trial_settings",
  "finished",
  "run_study",
  "write_results",
  "draw_curves",
]

#: The study's results (`write_results`), in its workdir.
RESULTS = "results.json"
#: The study's table (`study_results.table_lines`), in its workdir.
TABLE = "table.md"
#: The figure of each regret's curves, in the study's workdir.
CURVES = MappingProxyType({"valid": "curves_valid.png", "test": "curves_test.png"})
# A trial rerun after its worker was lost may find the lost process still holding the workdir's
# lock for a moment (a Ray worker ends a little after its raylet): it waits this long for it.
_LOCK_WAIT_S = 60.0

log = logging.getLogger(__name__)


def run_trial(settings: dict) -> int:
  """Runs (or resumes) one trial's search from its config's settings; returns its evaluations.
  Runs in a pool process or a Ray worker, so it takes and returns plain data."""
  config = ml_collections.ConfigDict(settings)
  deadline = time.monotonic() + _LOCK_WAIT_S
  while True:
    try:
      return len(config_lib.search_from_config(config, progress=False))
    except WorkdirInUse:
      if time.monotonic() > deadline:
        raise
      time.sleep(1.0)


def trial_settings(study: study_lib.Study, configs: dict) -> dict:
  """{Trial: its checked search config as plain data}, for every trial of the grid; a bad
  method config fails here, in one line, before any trial runs."""
  out = {}
  for t in study_lib.expand(study):
    c = study_lib.trial_config(study, t, configs[t.method])
    if c.task.name != "nb201":
      raise ValueError(f"config.methods.{t.method}: task {c.task.name!r}; a study's trials run NAS-Bench-201 (nb201)")
    config_lib.check_search_config(c)
    out[t] = json.loads(c.to_json_best_effort())
  return out


def finished(settings: dict) -> bool:
  """Whether a trial's journal holds its whole budget."""
  return len(journal.replay(os.path.join(settings["workdir"], loop.JOURNAL))) >= settings["budget"]


def _executor(c: ml_collections.ConfigDict, todo: int):
  if c.ray_address:
    # Ray schedules the submitted trials on the cluster's CPUs (one each); `processes` caps them.
    return RayExecutor(
      c.processes or todo,
      c.ray_address,
      retries=c.worker_retries,
      connect_timeout_s=c.ray_connect_timeout_s,
    )
  processes = min(c.processes or os.cpu_count() or 1, todo)
  if processes == 1:  # one after another: in this process, without a worker to start
    return InlineExecutor()
  return ProcessExecutor(processes, retries=c.worker_retries)


def _run_trials(executor, todo: list, settings: dict, bar, stop_at: float | None) -> tuple[dict, list, bool]:
  """Runs `todo` on `executor`, never more at once than its workers: ({trial name: worker} of those
  that ended, [names of those that failed], whether `stop_at` (time.monotonic) came first)."""
  queue, tickets, ran, failed = list(reversed(todo)), {}, {}, []
  while queue or tickets:
    left = None if stop_at is None else stop_at - time.monotonic()
    if left is not None and left <= 0:
      return ran, failed, True
    while queue and len(tickets) < executor.num_workers:
      t = queue.pop()
      tickets[executor.submit(run_trial, settings[t])] = t
    for ticket, outcome in executor.wait(left):
      t = tickets.pop(ticket)
      ran[study_lib.trial_name(t)] = outcome.worker
      if outcome.error:
        failed.append(study_lib.trial_name(t))
        log.error("trial %s failed: %s", failed[-1], outcome.error.strip().splitlines()[-1])
      bar.update(1)
  return ran, failed, False


def run_study(c: ml_collections.ConfigDict, *, progress: bool = True, stop_after_s: float | None = None) -> dict:
  """Runs the study config `c` (configs/study_nb201.py): the unfinished trials, then the results.

  Args:
    c: the study config.
    progress: one progress bar over the trials.
    stop_after_s: stop after this many seconds: the trials in flight are stopped (a rerun resumes
      them from their journals) and the results hold the trials finished by then.

  Returns:
    `write_results`' results, "ran": {trial name: the worker that ran it} of the trials that ended
    now (a pool process, a Ray node's worker, or "inline"), and "stopped": whether `stop_after_s`
    cut the study short. ChildProcessError, after the results of the others are written, when a
    trial failed (each failure's last line is logged). Interrupted (Ctrl-C, SIGTERM), it writes the
    results of the trials finished so far before it stops.
  """
  if isinstance(c.processes, bool) or not isinstance(c.processes, int) or c.processes < 0:
    raise ValueError(f"config.processes: {c.processes!r}; expected an integer >= 1, or 0 for one per core")
  stop_at = None if stop_after_s is None else time.monotonic() + stop_after_s
  study = study_lib.read_study(c)
  settings = trial_settings(study, study_lib.method_configs(study))
  todo = [t for t, s in settings.items() if not finished(s)]
  ran, failed, stopped = {}, [], bool(todo) and stop_after_s == 0  # 0: the results of what finished, no more
  if todo and not stopped:
    executor = _executor(c, len(todo))
    done = len(settings) - len(todo)
    try:
      with tqdm.tqdm(total=len(settings), initial=done, desc="trials", disable=not progress) as bar:
        ran, failed, stopped = _run_trials(executor, todo, settings, bar, stop_at)
    except KeyboardInterrupt:
      if any(finished(s) for s in settings.values()):
        write_results(study, settings)  # what finished is tabled before the study stops
      raise
    finally:
      executor.shutdown()
  if stopped:
    log.warning("study: stopped after %g s; rerun the same command to run the rest", stop_after_s)
  results = {**write_results(study, settings), "ran": ran, "stopped": stopped}
  if failed:
    raise ChildProcessError(
      f"study: {len(failed)} of {len(settings)} trials failed ({', '.join(failed[:3])}{', ...' if len(failed) > 3 else ''});"
      f" their errors are logged above and in {study_lib.TRIALS}/<trial>/journal; rerun to resume them"
    )
  return results


def write_results(study: study_lib.Study, settings: dict) -> dict:
  """Reads every finished trial's journal and writes results.json, table.md and the curves."""
  curves = {}
  for t, s in settings.items():
    if finished(s):
      table = load_nb201(s["task"]["path"], s["task"]["dataset"], s["task"]["report_metric"])
      fidelities = fidelities_of(s["task"])
      observations = journal.replay(os.path.join(s["workdir"], loop.JOURNAL))
      best = (table.best_valid, table.best_test)
      curves[t] = study_results.trial_curve(observations, s["budget"], best, fidelities[-1] if fidelities else None)
  results = study_results.aggregate(study, curves)
  results["grid"] = {
    "methods": dict(study.methods),
    "datasets": list(study.datasets),
    "workers": list(study.workers),
    "modes": ["sync" if s else "async" for s in study.syncs],
    "model_time": ["charged" if m else "free" for m in study.charges],
    "seeds": study.seeds,
    "executor": study.executor,
    "trials": len(settings),
    "finished": len(curves),
  }
  os.makedirs(study.workdir, exist_ok=True)
  with open(os.path.join(study.workdir, RESULTS), "w") as f:
    json.dump(results, f, allow_nan=False)
  with open(os.path.join(study.workdir, TABLE), "w") as f:
    f.write("\n".join(study_results.table_lines(study, results)) + "\n")
  for regret, name in CURVES.items():
    draw_curves(results, regret, os.path.join(study.workdir, name))
  return results


def draw_curves(results: dict, regret: str, path: str, title: str = "") -> None:
  """The PNG of one regret's mean curves, a panel per dataset and worker count (`results` as
  `write_results` gives them, or as a study's record keeps them)."""
  panels = {
    (p["dataset"], p["workers"]): {n: (_array(s["mean"]), _array(s["stderr"])) for n, s in p["series"].items()}
    for p in results["panels"]
    if p["regret"] == regret
  }
  what = f"{'validation' if regret == 'valid' else 'test'} regret (%)"
  hours = np.asarray(results["hours"], np.float64)
  plots.plot_curve_grid(panels, path, x=hours, xlabel="simulated hours", what=what, title=title or what)


def _array(values: list) -> np.ndarray:
  return np.array([np.nan if v is None else v for v in values], np.float64)
