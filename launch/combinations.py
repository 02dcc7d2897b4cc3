"""A short search with every valid combination of the bo strategy's parts (`experiments.combinations`).

  python launch/combinations.py --budget=12 --out=runs/combinations [--spaces=nb201,cnn,...] \
    [--data=../shared/data/nasbench201] [--seed=0] [--featurizers=...] [--optimizers=...]

Objectives: nb201 the NAS-Bench-201 table (CIFAR-10 validation accuracy, %); cnn and autokeras
NASBOT's synthetic f1 of the network's layer graph; mlp f2, and conditional f2 of the point's
chain MLP (`conditional.to_architecture`). nb101 has no table here, so its rows say so.
Each combination runs with small options (`bo_config(fast=True)`) in OUT/runs/<combination>;
OUT/results.json and OUT/table.md are rewritten after each one. A rerun skips combinations
already in results.json, ok or failed; bad flags print one line on stderr and exit with 2.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import functools
import json
import os
import time

from absl import flags
import jax

from nas_jax.arch import conditional_point as cond_point
from nas_jax.experiments import combinations as combos
from nas_jax.search import loop
from nas_jax.search.executors import InlineExecutor
from nas_jax.search.task import Task, TaskResult
from nas_jax.tasks import synthetic, tabular

FLAGS = flags.FLAGS
flags.DEFINE_integer("budget", None, "Evaluations per combination.")
flags.DEFINE_string("out", None, "Output folder (resumable).")
flags.DEFINE_list("spaces", list(combos.SPACE_KINDS), "Space kinds, comma separated.")
flags.DEFINE_string("data", "../shared/data/nasbench201", "Folder of the NAS-Bench-201 table.")
flags.DEFINE_integer("seed", 0, "Search seed of every combination.")
flags.DEFINE_list("featurizers", None, "Only these featurizers (default: all).")
flags.DEFINE_list("optimizers", None, "Only these acquisition optimisers (default: all).")

RESULTS, TABLE = "results.json", "table.md"
_FIELDS = combos.Combination._fields


def _autokeras_f1(point_json: dict, seed: int) -> TaskResult:
  """f1 of an Auto-Keras network's layer graph (the morph record is no part of the network)."""
  del seed
  q = synthetic.quantities({k: v for k, v in point_json.items() if k != "morph"})
  return TaskResult(synthetic.synthetic_value("f1", q), info=q._asdict())


def _conditional_f2(max_depth: int, point_json: dict, seed: int) -> TaskResult:
  """f2 of a conditional point's chain MLP."""
  spec = cond_point.conditional_spec(max_depth)
  arch = cond_point.to_architecture(cond_point.point_from_json(point_json, spec), spec)
  return synthetic.synthetic_task("f2").evaluate(arch.to_json(), seed)


def _objective(kind: str, space) -> tuple[Task | None, str]:
  """(task, "") or (None, why there is none)."""
  if kind == "nb201":
    if not os.path.isdir(FLAGS.data):
      return None, f"NAS-Bench-201 table not found at {FLAGS.data}"
    return tabular.nb201_task(FLAGS.data), ""
  if kind in ("cnn", "mlp"):
    return synthetic.synthetic_task("f1" if kind == "cnn" else "f2"), ""
  if kind == "autokeras":
    return Task("autokeras-f1", "max", _autokeras_f1), ""
  if kind == "conditional":
    return Task("conditional-f2", "max", functools.partial(_conditional_f2, space.conditional_spec.max_depth)), ""
  return None, (
    f"no {kind} table here, and the synthetic functions read cnn/mlp layer graphs; a cell's layer graph"
    f" (kind {kind}_layers) is not one"
  )


def _run(c: combos.Combination, space, task: Task) -> dict:
  """One short search; any exception becomes a failed row, so the matrix goes on."""
  start = time.time()
  try:
    obs = loop.run(
      combos.strategy_of(c, space, task),
      task,
      InlineExecutor(),
      os.path.join(FLAGS.out, "runs", "-".join(c)),
      space=space,
      budget=FLAGS.budget,
      key=jax.random.PRNGKey(FLAGS.seed),
      progress=False,
    )
    values = [o.value for o in obs if o.ok]
    best, error = (max(values), "") if values else (None, f"none of {len(obs)} evaluations succeeded")
  except Exception as e:  # noqa: BLE001  (a failing combination is a result of the matrix)
    best, error = None, f"{type(e).__name__}: {e}".splitlines()[0]
  return dict(best=best, seconds=round(time.time() - start, 1), status="failed" if error else "ok", error=error)


def _write(rows: dict) -> None:
  tmp = os.path.join(FLAGS.out, RESULTS + ".tmp")
  with open(tmp, "w") as f:
    json.dump({"budget": FLAGS.budget, "seed": FLAGS.seed, "rows": list(rows.values())}, f, indent=1)
  os.replace(tmp, os.path.join(FLAGS.out, RESULTS))
  lines = [
    "| space | featurizer | surrogate | acquisition | optimizer | best | seconds | status |",
    "|---|---|---|---|---|---|---|---|",
  ]
  for r in sorted(rows.values(), key=lambda r: combos.SPACE_KINDS.index(r["space"])):
    best = "-" if r["best"] is None else f"{r['best']:.4g}"
    seconds = "-" if r["seconds"] is None else f"{r['seconds']:.1f}"
    status = r["status"] + (f": {r['error']}" if r["error"] else "")
    lines.append("| " + " | ".join(r[k] for k in _FIELDS) + f" | {best} | {seconds} | {status.replace('|', '/')} |")
  with open(os.path.join(FLAGS.out, TABLE), "w") as f:
    f.write("\n".join(lines) + "\n")


def _check_flags() -> dict:
  """The rows already in OUT/results.json; ValueError naming the flag otherwise."""
  if FLAGS.budget is None or FLAGS.budget < 1:
    raise ValueError(f"--budget={FLAGS.budget}: expected an integer >= 1")
  if FLAGS.seed < 0:
    raise ValueError(f"--seed={FLAGS.seed}: expected an integer >= 0")
  if not FLAGS.out:
    raise ValueError("--out: required (the output folder)")
  unknown = sorted(set(FLAGS.spaces) - set(combos.SPACE_KINDS))
  if unknown or not FLAGS.spaces:
    raise ValueError(f"--spaces={','.join(FLAGS.spaces)}: choose among {', '.join(combos.SPACE_KINDS)}")
  spaces = [combos.space_of(kind) for kind in FLAGS.spaces]
  for flag, names_for in (("featurizers", combos.featurizers_for), ("optimizers", combos.optimisers_for)):
    known = list(dict.fromkeys(n for space in spaces for n in names_for(space)))
    chosen = FLAGS[flag].value
    if chosen is None:
      continue
    bad = sorted(set(chosen) - set(known))
    if bad or not chosen:
      what = f"{', '.join(bad)} not on --spaces={','.join(FLAGS.spaces)}" if chosen else "empty"
      raise ValueError(f"--{flag}={','.join(chosen)}: {what}; choose among {', '.join(known)}")
  path = os.path.join(FLAGS.out, RESULTS)
  if not os.path.exists(path):
    return {}
  with open(path) as f:
    old = json.load(f)
  if (old["budget"], old["seed"]) != (FLAGS.budget, FLAGS.seed):
    raise ValueError(
      f"--budget={FLAGS.budget} --seed={FLAGS.seed}: {path} holds budget {old['budget']}, seed"
      f" {old['seed']}; use another --out"
    )
  return {"-".join(r[k] for k in _FIELDS): r for r in old["rows"]}


def main(argv):
  if len(argv) > 1:
    _cli.fail(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)
  rows = _check_flags()
  os.makedirs(FLAGS.out, exist_ok=True)
  start, counts = time.time(), {}
  for kind in FLAGS.spaces:
    space = combos.space_of(kind)
    task, reason = _objective(kind, space)
    matrix = [
      c
      for c in combos.valid_combinations(kind)
      if (FLAGS.featurizers is None or c.featurizer in FLAGS.featurizers)
      and (FLAGS.optimizers is None or c.optimizer in FLAGS.optimizers)
    ]
    for i, c in enumerate(matrix):
      name = "-".join(c)
      if rows.get(name, {}).get("status") in ("ok", "failed"):
        continue
      row = dict(best=None, seconds=None, status="no objective", error=reason) if task is None else _run(c, space, task)
      rows[name] = {**c._asdict(), **row}
      _write(rows)
      counts[row["status"]] = counts.get(row["status"], 0) + 1
      line = [f"[{kind} {i + 1}/{len(matrix)}] {' '.join(c[1:])}: {row['status']}"]
      line += [] if row["best"] is None else [f"best={row['best']:.4g}"]
      line += [] if row["seconds"] is None else [f"in {row['seconds']:.1f} s"]
      line += [row["error"]] if row["error"] else []
      print(" ".join(line), flush=True)
  print(f"wrote {FLAGS.out}/{TABLE} and {RESULTS}: {counts} in {time.time() - start:.0f} s")


if __name__ == "__main__":
  _cli.run(main)
