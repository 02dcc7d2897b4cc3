"""The asynchronous ask/tell loop (STYLE sketch 4): replay the journal, keep every worker busy,
record each finished evaluation durably before the next proposal, and write a summary (and the
caller's `files`, e.g. its plot) in the workdir it locked, never in a folder that took its name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import logging
import os
import time
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np
import tqdm

from nas_jax.search import journal, locked_dir, results
from nas_jax.search.executors import Executor
from nas_jax.search.state import Observation, to_score
from nas_jax.search.strategy import Strategy, split_proposal
from nas_jax.search.task import Task, check_task, full_fidelity

__all__ = [
  "JOURNAL",
  "SUMMARY",
  "CONFIG",
  "WorkdirInUse",
  "exclusive",
  "WorkdirReplaced",
  "run",
  "trial_seed",
  "in_flight",
]

JOURNAL, SUMMARY, CONFIG = "journal.jsonl", "summary.json", "config.json"
_META = "search.json"
_POLL_S = 1.0  # how often the loop wakes while workers run (progress bar, Ctrl-C)

log = logging.getLogger(__name__)


def trial_seed(seed: int, trial_id: int) -> int:
  """The evaluation seed of one trial: independent streams per (seed, trial_id), in [0, 2**31)."""
  return int(np.random.SeedSequence([seed, trial_id]).generate_state(1)[0] >> 1)


class WorkdirInUse(RuntimeError):
  """Another live search holds the workdir's lock, or took over its name (`WorkdirReplaced`)."""


class WorkdirReplaced(WorkdirInUse):
  """The workdir a search locked was deleted or renamed, and its name may now lead to another."""


class _Journal(NamedTuple):
  """Where a run writes: the workdir's path, the journal's, and the open descriptor of the workdir
  it locked. Every write goes to that folder by name (`nas_jax.search.locked_dir`), and only while
  the workdir's name still leads to it (`check`)."""

  workdir: str
  path: str
  dir_fd: int

  def check(self, recorded: int) -> None:
    """WorkdirReplaced if the workdir's name now leads elsewhere (`rm -rf W; mkdir W`): the run
    then writes nothing more, so two searches never write one journal."""
    if locked_dir.replaced(self.workdir, self.dir_fd):
      raise WorkdirReplaced(
        f"workdir {self.workdir!r} was deleted or replaced while this search ran; it stopped and wrote"
        f" nothing more there, so that two searches never write one workdir ({recorded} evaluations"
        " were recorded before, in the folder it had locked)"
      )

  def append(self, obs: Observation, recorded: int) -> None:
    """Appends `obs` in the locked directory, after `check`."""
    self.check(recorded)
    journal.append(self.path, obs, dir_fd=self.dir_fd)

  def write(self, name: str, data: bytes, recorded: int) -> None:
    """Replaces file `name` of the locked directory by `data` atomically, after `check`."""
    self.check(recorded)
    locked_dir.write_file(self.workdir, self.dir_fd, name, data)


@contextlib.contextmanager
def exclusive(workdir: str, what: str = "search"):
  """Holds an advisory lock on the workdir: two runs (searches, or `what`) never write one journal.
  The lock is on the folder itself, so no lock file can be deleted by mistake, and the kernel drops
  it when the process dies, so a killed run leaves no stale lock. Yields the folder's descriptor;
  WorkdirInUse when another run holds it."""
  fd = os.open(workdir, os.O_RDONLY)
  try:
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      raise WorkdirInUse(f"workdir {workdir!r}: another {what} is running in it") from None
    yield fd
  finally:
    os.close(fd)


def _check_meta(out: _Journal, task: Task) -> None:
  """A workdir belongs to one task: resuming it with another would mix incomparable values."""
  path, meta = os.path.join(out.workdir, _META), {"task": task.name, "goal": task.goal}
  if not os.path.exists(path):
    out.write(_META, locked_dir.json_bytes(meta), 0)
    return
  old = journal.load_json(path)
  if old != meta:
    raise ValueError(f"workdir {out.workdir!r} holds a search of {old}, not {meta}; use another workdir")


def in_flight(pending: Sequence[tuple[int, str, float]], now: float) -> str:
  """The progress bar's word on the oldest evaluation in flight: "#id origin Ns", from
  (trial_id, origin, submitted at) triples; "" when nothing runs. It moves from the first second,
  while the first networks of a search spend minutes compiling."""
  if not pending:
    return ""
  trial_id, origin, t0 = min(pending, key=lambda p: p[2])
  return " ".join(x for x in (f"#{trial_id}", origin, f"{now - t0:.0f}s") if x)


def _origin(notes: Any) -> str:
  """The "origin" a strategy noted for a point ("" if it noted none)."""
  return str(notes.get("origin", "")) if isinstance(notes, dict) else ""


def _check_proposal(proposal: Any, task: Task, seeds: dict) -> tuple[Any, float | None, int | None]:
  """(point, fidelity, continues) of a strategy's proposal (`split_proposal`): a plain point of a
  multi-fidelity task is evaluated at full fidelity. ValueError (a strategy's bug, so it stops
  the search) for a fidelity the task does not accept or a continuation of an unknown trial."""
  point, fidelity, continues = split_proposal(proposal)
  if fidelity is None:
    return point, full_fidelity(task), None
  if fidelity not in task.fidelities:
    allowed = ", ".join(f"{f:g}" for f in task.fidelities) or "none (a single-fidelity task)"
    raise ValueError(f"strategy proposed fidelity {fidelity:g} for task {task.name!r}; its fidelities: {allowed}")
  if continues is not None and seeds.get(continues) is None:
    raise ValueError(f"strategy proposed to continue trial {continues!r}, which this search has not run")
  return point, fidelity, continues


def _warn_if_rows_lost(workdir: str, rows: int) -> None:
  """Warns in one line when summary.json counts more evaluations than the journal holds (a
  journal truncated or deleted by hand): those trials are run again, as the journal is the record."""
  try:
    counted = journal.load_json(os.path.join(workdir, SUMMARY)).get("n_evaluated")
  except (OSError, ValueError, AttributeError):
    return
  if isinstance(counted, int) and counted > rows:
    log.warning(
      "workdir %r: %s holds %d evaluations but %s says %d; the missing %d are run again",
      workdir,
      JOURNAL,
      rows,
      SUMMARY,
      counted,
      counted - rows,
    )


def _check_run_args(budget: Any, seed: Any, workdir: Any) -> None:
  if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
    raise ValueError(f"run: budget={budget!r}; expected an integer >= 1 (evaluations)")
  if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
    raise ValueError(f"run: seed={seed!r}; expected an integer >= 0")
  if not isinstance(workdir, (str, os.PathLike)) or not os.fspath(workdir):
    raise ValueError(f"run: workdir={workdir!r}; expected a non-empty path")


def run(
  strategy: Strategy,
  task: Task,
  executor: Executor,
  workdir: str,
  *,
  space: Any,
  budget: int,
  key: Any,
  seed: int = 0,
  progress: bool = True,
  prefetch: int = 0,
  config: dict | None = None,
  files: Callable[[list[Observation]], Mapping[str, bytes]] | None = None,
) -> list[Observation]:
  """Runs (or resumes) a search until `budget` evaluations are recorded in `workdir`.

  Resume is replay: the journal's observations go through `strategy.update` and are never
  evaluated again; evaluations that were running when a previous process died were never
  recorded, so their slots are proposed afresh. Each evaluation gets the seed
  `trial_seed(seed, trial_id)`, recorded in `info["seed"]`.

  Args:
    strategy: the Strategy.
    task: the Task; `task.evaluate(arch_json, seed)` runs on the executor.
    executor: keeps `executor.num_workers` evaluations in flight; the caller shuts it down.
    workdir: holds journal.jsonl, summary.json and config.json; created if missing.
    space: the Space of the strategy's points (`space.to_json` writes them to the journal).
    budget: total evaluations, failed ones included, counting those replayed.
    key: the strategy's JAX key (`strategy.init(key)`).
    seed: base of the evaluation seeds.
    progress: show a tqdm bar with evaluations, failures and the best value.
    prefetch: proposals submitted beyond the workers, waiting in the executor's queue; with one
      worker and prefetch 1, the next proposal is made while a network trains (Auto-Keras Sec. 4.4).
    config: the run's settings as JSON, written to `workdir/config.json` once the workdir is
      checked (no other live search, the same task), so a refused run changes nothing.
    files: called with every observation when the search ends, returns further files of the
      workdir (name -> content, e.g. a plot), written with the summary while the lock is held.

  Every file is written in the folder locked, and only while the name `workdir` still leads to
  it: a run whose workdir was deleted or replaced under it (`rm -rf W; mkdir W`) writes nothing
  more and raises WorkdirReplaced, from the KeyboardInterrupt when it was stopping.

  Returns:
    Every observation in the journal, in the order recorded.
  """
  check_task(task)
  _check_run_args(budget, seed, workdir)
  workdir = os.fspath(workdir)
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, JOURNAL)
  with exclusive(workdir) as dir_fd:
    out = _Journal(workdir, path, dir_fd)
    _check_meta(out, task)
    if config is not None:
      out.write(CONFIG, locked_dir.json_bytes(config), 0)
    done = journal.replay(path, space.from_json)
    _warn_if_rows_lost(workdir, len(done))
    try:
      if len(done) >= budget:
        log.warning(
          "workdir %r: the search is finished (%d evaluations, budget %d); nothing is left to run. To"
          " extend it, give a larger budget (e.g. --config.budget=%d)",
          workdir,
          len(done),
          budget,
          len(done) + budget,
        )
      else:
        _search(
          _Flight.resume(strategy, key, task, done),
          strategy,
          task,
          executor,
          out,
          space,
          budget,
          seed,
          prefetch,
          progress,
        )
    except WorkdirReplaced:
      raise  # the name leads to another search's workdir now: nothing is written there
    except BaseException as e:  # stopped early (its workers lost, Ctrl-C, SIGTERM): what it journalled
      try:
        out.write(SUMMARY, locked_dir.json_bytes(results.summarize(done, task)), len(done))
      except WorkdirReplaced as replaced:
        raise replaced from e  # the cause tells a stop that wrote nothing (rc 130) from an error
      raise
    out.write(SUMMARY, locked_dir.json_bytes(results.summarize(done, task)), len(done))
    for name, data in (files(done) if files is not None else {}).items():
      out.write(name, data, len(done))
  return done


@dataclasses.dataclass
class _Flight:
  """One run's bookkeeping: the strategy's state, the observations recorded (`done`, which the
  run appends to), what is in flight and what a continuation reuses.

  Attributes:
    pending: ticket -> (trial_id, proposal, arch_json, info, fidelity) of each evaluation in flight.
    submitted: trial_id -> monotonic time of its submission.
    seeds: trial_id -> evaluation seed, of every trial run or running.
    best: the best full-fidelity score so far (-inf before one).
  """

  state: Any
  done: list
  next_id: int
  best: float
  seeds: dict
  pending: dict = dataclasses.field(default_factory=dict)
  submitted: dict = dataclasses.field(default_factory=dict)

  @classmethod
  def resume(cls, strategy: Strategy, key: Any, task: Task, done: list) -> "_Flight":
    """The bookkeeping after replaying `done` (the journal) into a fresh strategy state."""
    state = strategy.init(key)
    if done:
      state = strategy.update(state, done)
    scores = to_score([o.value for o in results.full_fidelity_ok(done, task)], task.goal)
    best = np.nanmax(scores) if np.any(~np.isnan(scores)) else -np.inf
    seeds = {o.trial_id: o.info.get("seed") for o in done}  # what a continuation reuses
    return cls(state, done, 1 + max((o.trial_id for o in done), default=-1), best, seeds)


def _search(fl: _Flight, strategy, task, executor, out: _Journal, space, budget, seed, prefetch, progress) -> None:
  """Keeps the workers busy until `budget` evaluations are recorded (or the strategy runs dry)."""
  bar = tqdm.tqdm(total=budget, initial=min(len(fl.done), budget), desc=task.name, disable=not progress)
  if hasattr(executor, "start_clock"):  # simulated workers: their clock continues from the journal
    executor.start_clock(fl.done, task.name)
  try:
    while len(fl.done) + len(fl.pending) < budget or fl.pending:
      while len(fl.pending) < executor.num_workers + prefetch and len(fl.done) + len(fl.pending) < budget:
        if not _submit(fl, strategy, task, executor, space, seed):
          break
      if not fl.pending:
        log.warning("search stopped after %d evaluations: the strategy has no unseen point left", len(fl.done))
        break
      _show(bar, fl, task)  # every poll, so the clock and the evaluations in flight show from the first second
      for ticket, outcome in executor.wait(timeout=_POLL_S):
        _record(fl, strategy, task, out, ticket, outcome)
        _show(bar, fl, task, refresh=False)  # the update below draws it: the bar's best is the journal's
        bar.update(1)
  finally:
    bar.close()


def _show(bar: tqdm.tqdm, fl: _Flight, task: Task, refresh: bool = True) -> None:
  """Sets the bar's postfix: evaluations in flight, the oldest of them, failures, the best value."""
  flying = [(t, _origin(i["strategy"]), fl.submitted[t]) for t, _, _, i, _ in fl.pending.values()]
  bar.set_postfix(
    running=len(fl.pending),
    oldest=in_flight(flying, time.monotonic()),
    failed=sum(not o.ok for o in fl.done),
    best=None if fl.best == -np.inf else float(to_score(fl.best, task.goal)),  # a score back to a value
    refresh=refresh,
  )


def _submit(fl: _Flight, strategy, task, executor, space, seed) -> bool:
  """Proposes one point and submits its evaluation; False when the strategy has none left."""
  t0 = time.perf_counter()
  fl.state, points = strategy.propose(fl.state, 1, [p[1] for p in fl.pending.values()])
  if not points:
    return False
  if hasattr(executor, "charge"):  # simulated workers: the proposal's time delays its evaluation (NASBOT Fig. 2)
    executor.charge(time.perf_counter() - t0)
  point, fidelity, continues = _check_proposal(points[0], task, fl.seeds)
  arch_json = space.to_json(point)
  info = {"seed": trial_seed(seed, fl.next_id), "strategy": strategy.notes(fl.state, points[0])}
  if continues is not None:  # the same network trained further: its first trial's seed
    info.update(seed=fl.seeds[continues], continues=continues)
  args = (arch_json, info["seed"]) if fidelity is None else (arch_json, info["seed"], fidelity)
  fl.pending[executor.submit(task.evaluate, *args)] = (fl.next_id, points[0], arch_json, info, fidelity)
  fl.seeds[fl.next_id] = info["seed"]
  fl.submitted[fl.next_id] = time.monotonic()
  fl.next_id += 1
  return True


def _record(fl: _Flight, strategy, task, out: _Journal, ticket, outcome) -> None:
  """Journals a finished evaluation (durably, before the strategy and the next proposal see it)."""
  trial_id, _, arch_json, info, fidelity = fl.pending.pop(ticket)
  fl.submitted.pop(trial_id)
  obs = results.observe(trial_id, arch_json, outcome, info, [name for name, _ in task.objectives], fidelity)
  out.append(obs, len(fl.done))
  fl.done.append(obs)
  fl.state = strategy.update(fl.state, [obs])
  if results.full_fidelity_ok([obs], task):
    fl.best = max(fl.best, float(to_score(obs.value, task.goal)))
