"""Final training of a finished search's best networks, as NASBOT's evaluation does (Kandasamy et
al. 2018, Sec. 5: "we trained the best models for longer" and report their test error, Table 3's
last column).

The top-K distinct networks by the search's value (its goal's direction; successful evaluations
at full fidelity only) are each retrained on the training and validation splits together for
`epochs` and scored on the test split, for seeds 0..S-1. The default schedule is the paper's ratio
of final to search training, 2.5: Sec. 5 trains CNNs for 60K iterations during the search and
150K for the final models (App. C.2 and Table 3's caption say 24K and 120K, a ratio of 5), and
MLPs by the same procedure; so E = round(2.5 x the search's epochs).

Everything lives in `workdir/final/`: `journal.jsonl`, one row per finished (network, seed),
appended durably as the search journal is (`search.journal`), `models/<rank>-<seed>/` the saved
model of each (`saved_model.save_model`), `checkpoints/<rank>-<seed>.msgpack` the state of a run
in progress, and `final.json` the result. A killed run resumes from its checkpoint and repeats no
finished (network, seed).
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, NamedTuple, Sequence

import jax
import numpy as np

from nas_jax.arch.morph_point import network_json
from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.training import saved_model
from nas_jax.wiring.final import FinalFamily, NothingToTrain, final_family
from nas_jax.experiments.report import Run, best_trials, load_run

__all__ = [
  "FINAL",
  "FINAL_JSON",
  "SCHEDULE_RATIO",
  "FIELDS",
  "Outcome",
  "default_epochs",
  "top_networks",
  "final_train",
  "format_table",
]

#: Names in a workdir: the final-training folder, its summary file, and its folders of saved models and checkpoints.
FINAL, FINAL_JSON, MODELS, CHECKPOINTS = "final", "final.json", "models", "checkpoints"
SCHEDULE_RATIO = 2.5  # NASBOT Sec. 5: 150K final / 60K search iterations
# The fields of each final.json entry, in order.
FIELDS = ("arch_json", "search_value", "test_mean", "test_sd", "seeds", "params", "seconds", "model_path")
# NAS-Bench-201's training schedule: its table's figures, and the default of cells trained here.
_NB201_EPOCHS = 200


class Outcome(NamedTuple):
  """What `final_train` did.

  Attributes:
    entries: one dict per network, best first, with the `FIELDS` (final.json's entries; a
      tabular search's table figures in the same form, without seeds, seconds or model).
    metric: what test_mean measures, e.g. "test accuracy".
    goal: the search's goal, "max" or "min" (of its value, e.g. a validation error).
    why: "" after training; else the one line saying why there was nothing to train.
    epochs: the epochs each network trained (0 when nothing was trained).
    path: final.json's path ("" when nothing was trained).
  """

  entries: list[dict]
  metric: str
  goal: str
  why: str = ""
  epochs: int = 0
  path: str = ""


def default_epochs(search_epochs: int) -> int:
  """The final schedule's epochs: `SCHEDULE_RATIO` x the search's, rounded half up (at least 1)."""
  return max(1, math.floor(SCHEDULE_RATIO * search_epochs + 0.5))


def _network(arch_json: dict) -> str:
  """A network's identity: its JSON without the Auto-Keras "morph" record of how it was reached."""
  return json.dumps(network_json(arch_json), sort_keys=True)


def top_networks(run: Run, k: int) -> list[Observation]:
  """The best observation of each of the k best distinct networks of `run` (`best_trials`' order:
  the goal's direction, the earlier trial first among equals; failures and lower fidelities left
  out); fewer when the search found fewer."""
  chosen: dict[str, Observation] = {}
  for o in best_trials(run, len(run.observations)):
    chosen.setdefault(_network(o.arch_json), o)
    if len(chosen) == k:
      break
  return list(chosen.values())


def _check_int(name: str, value: Any) -> int:
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
    raise ValueError(f"{name}: {value!r}; expected an integer >= 1")
  return int(value)


def _finished(rows: Sequence[Observation], top: Sequence[Observation], epochs: int, seeds: int, where: str) -> dict:
  """{(rank, seed): row} of the journal's rows; ValueError when a row trained another network at
  its rank or another number of epochs (the search went on since, or --epochs changed)."""
  done = {}
  for row in rows:
    rank, seed = row.info["rank"], row.info["seed"]
    if rank <= len(top) and (
      _network(row.arch_json) != _network(top[rank - 1].arch_json) or row.info["epochs"] != epochs
    ):
      raise ValueError(
        f"workdir: {where} holds the final training of another network at rank {rank} or of"
        f" {row.info['epochs']} epochs (this run: {epochs}); rerun with --epochs={row.info['epochs']},"
        " or move that folder away to start afresh"
      )
    if rank <= len(top) and seed < seeds:
      done[rank, seed] = row
  return done


def _train_one(family: FinalFamily, obs: Observation, rank: int, seed: int, epochs: int, folder: str, trial: int):
  """Trains (or continues) network `obs` at `rank` with `seed` and saves its model; returns its
  journal row and the path of its checkpoint."""
  name = f"{rank}-{seed}"
  checkpoint = os.path.join(folder, CHECKPOINTS, name + ".msgpack")
  os.makedirs(os.path.dirname(checkpoint), exist_ok=True)
  init = family.warm_start(obs) if family.warm_start is not None else None
  fit = family.fit(
    obs.arch_json, family.data, epochs, jax.random.key(seed), checkpoint_path=checkpoint, init_variables=init
  )
  model_path = saved_model.save_model(os.path.join(folder, MODELS, name), fit.spec, fit.variables)
  ok = math.isfinite(fit.test_metric)
  info = {"rank": rank, "seed": seed, "epochs": epochs, "params": fit.params, "model_path": model_path}
  info["search_trial"] = obs.trial_id
  return Observation(
    trial_id=trial,
    arch_json=obs.arch_json,
    value=fit.test_metric if ok else None,
    status=Status.OK if ok else Status.NAN,
    error="" if ok else "training diverged",
    seconds=float(fit.seconds),
    worker="final",
    test_value=fit.test_metric if ok else None,
    info=info,
  ), checkpoint


def _entry(obs: Observation, rows: list[Observation]) -> dict:
  """A final.json entry of network `obs` from its rows, seed 0 first."""
  tests = [r.test_value for r in rows]
  finite = [t for t in tests if t is not None]
  entry = {
    "arch_json": obs.arch_json,
    "search_value": obs.value,
    "test_mean": float(np.mean(finite)) if finite else None,
    "test_sd": float(np.std(finite, ddof=1)) if len(finite) > 1 else None,
    "seeds": tests,
    "params": rows[0].info["params"],
    "seconds": float(sum(r.seconds for r in rows)),
    "model_path": rows[0].info["model_path"],
  }
  return {k: entry[k] for k in FIELDS}


def _write_json(path: str, obj: Any) -> None:
  with open(path + ".tmp", "w") as f:
    json.dump(obj, f, indent=1, allow_nan=False)
    f.flush()
    os.fsync(f.fileno())
  os.replace(path + ".tmp", path)


def _lookup(run: Run, nothing: NothingToTrain, k: int) -> Outcome:
  """A tabular search's table figures of its top k, as final.json entries without training."""
  entries = []
  for o in top_networks(run, k):
    figures = nothing.lookup(o.arch_json)
    entry = dict.fromkeys(FIELDS)
    entry.update(arch_json=o.arch_json, search_value=o.value, test_mean=figures["test"], seeds=[])
    entries.append({**entry, "params": figures["params"]})
  return Outcome(entries, f"table test accuracy (%, {_NB201_EPOCHS} epochs)", run.goal, nothing.why)


def final_train(
  workdir: str,
  *,
  top_k: int,
  epochs: int | None = None,
  seeds: int = 1,
  dataset: str = "",
  progress: Callable[[str], None] = lambda line: None,
) -> Outcome:
  """Trains the top-K distinct networks of the finished search in `workdir` (module docstring).

  Args:
    workdir: the search's workdir (journal.jsonl, search.json, config.json).
    top_k: how many networks, >= 1.
    epochs: final training epochs; None: `default_epochs` of the search's (200, NB201's schedule,
      for NB201 cells trained on `dataset`).
    seeds: seeds 0..seeds-1 per network.
    dataset: an .npz of images to train a tabular NB201 search's cells on; "" for none.
    progress: called with a line after each finished (network, seed).

  Returns:
    An Outcome; after training, final.json holds its entries.

  Raises:
    ValueError (one line) for a workdir without a search, a search without a successful
    evaluation, bad top_k, epochs or seeds, or a final/ folder of another run.
  """
  top_k, seeds = _check_int("top_k", top_k), _check_int("seeds", seeds)
  if epochs is not None:
    epochs = _check_int("epochs", epochs)
  run = load_run(workdir)
  if not top_networks(run, 1):
    raise ValueError(f"workdir: {workdir!r} holds no successful evaluation at full fidelity; nothing to train")
  what = final_family(run.config, run.workdir, dataset)
  if isinstance(what, NothingToTrain):
    return _lookup(run, what, top_k) if what.lookup is not None else Outcome([], "", run.goal, what.why)
  top = top_networks(run, top_k)
  if epochs is None:
    epochs = _NB201_EPOCHS if what.search_epochs is None else default_epochs(what.search_epochs)
  folder = os.path.join(run.workdir, FINAL)
  os.makedirs(folder, exist_ok=True)
  path = os.path.join(folder, loop.JOURNAL)
  with loop.exclusive(folder, "final training"):
    rows = journal.replay(path)
    done = _finished(rows, top, epochs, seeds, folder)
    trial = max((r.trial_id for r in rows), default=-1) + 1
    for rank, obs in enumerate(top, start=1):
      for seed in range(seeds):
        if (rank, seed) in done:
          continue
        row, checkpoint = _train_one(what, obs, rank, seed, epochs, folder, trial)
        journal.append(path, row)  # after its model is saved: a journalled row always has one
        if os.path.exists(checkpoint):
          os.remove(checkpoint)
        done[rank, seed], trial = row, trial + 1
        shown = "diverged" if row.test_value is None else f"{row.test_value:.6g}"
        progress(f"network {rank} (trial {obs.trial_id}) seed {seed}: test {shown} in {row.seconds:.1f} s")
    entries = [_entry(obs, [done[rank, s] for s in range(seeds)]) for rank, obs in enumerate(top, start=1)]
    out = os.path.join(folder, FINAL_JSON)
    _write_json(out, entries)
  metric = "test accuracy" if what.data.task == "classification" else "test MSE"
  return Outcome(entries, metric, run.goal, "", epochs, out)


def _cell(value: Any, digits: int = 4) -> str:
  if value is None:
    return "-"
  if isinstance(value, float):
    return f"{value:.{digits}f}"
  return str(value)


def format_table(outcome: Outcome) -> str:
  """The entries as a text table, one row per network, best first."""
  head = (
    "rank",
    f"search value ({outcome.goal})",
    f"{outcome.metric} mean",
    "sd",
    "seeds",
    "params",
    "seconds",
    "model",
  )
  rows = [
    (
      str(rank),
      _cell(e["search_value"]),
      _cell(e["test_mean"]),
      _cell(e["test_sd"]),
      str(len(e["seeds"])),
      _cell(e["params"]),
      _cell(e["seconds"], 1),
      e["model_path"] or "-",
    )
    for rank, e in enumerate(outcome.entries, start=1)
  ]
  widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
  line = lambda cells: "  ".join(c.rjust(w) if i < len(head) - 1 else c for i, (c, w) in enumerate(zip(cells, widths)))
  return "\n".join(line(r) for r in (head, *rows))
