"""A whole search per trainer: seconds per evaluated network, specialised against padded (issue 19).

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_search_trainers.py [--budget=50] [--trainers=specialised,padded]

Each trainer runs `launch/search.py --config=CONFIG --config.budget=BUDGET --config.task.trainer=T`
(by default the README's main job, NASBOT over CNNs on digits with 2 worker processes) in a fresh
process and a fresh workdir, with jax's persistent compilation cache off, so every program a
search needs is compiled in that search (as on a fresh machine). The first trainer is the
baseline. Prints, per trainer: the search's wall time and seconds per evaluated network, the
ratio (baseline / trainer; above 1 the trainer is faster), what its evaluations spent compiling,
training and evaluating (summed over workers, from the journal), how many networks trained
padded, and the best value found. The searches propose the same initial pool, then follow their
own scores, so their later networks differ.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import record

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRAINERS = ("specialised", "padded", "auto")


def _journal_totals(workdir: str) -> dict:
  """Sums of the journal's per-evaluation seconds, the padded count, and the best value and its
  trial from the search's summary."""
  from nas_jax.search import journal, loop

  obs = journal.replay(os.path.join(workdir, loop.JOURNAL))
  tasks = [o.info.get("task", {}) for o in obs]
  with open(os.path.join(workdir, loop.SUMMARY)) as f:
    summary = json.load(f)
  return {
    "evaluations": len(obs),
    "failed": summary["n_failed"],
    "compile": sum(t.get("compile_seconds", 0.0) for t in tasks),
    "train": sum(t.get("train_seconds", 0.0) for t in tasks),
    "eval": sum(t.get("eval_seconds", 0.0) for t in tasks),
    "padded": sum(t.get("trainer") == "padded" for t in tasks),
    "best": summary["best_value"],
    "best_trial": summary["best_trial_id"],
  }


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--config", default="configs/nasbot_cnn_digits.py", help="a search config (path from the root)")
  parser.add_argument("--budget", type=int, default=50, help="networks evaluated per search")
  parser.add_argument("--trainers", default="specialised,padded", help="the first is the baseline")
  parser.add_argument("--override", action="append", default=[], help="more --config.X=Y flags, e.g. num_workers=2")
  parser.add_argument("--smoke", action="store_true", help="a run of seconds; its record goes to a temporary folder")
  args = parser.parse_args()
  if args.smoke:
    record.smoke(args, config="configs/nasbot_cnn_digits.py:smoke", budget=2)
  trainers = [t for t in args.trainers.split(",") if t]
  unknown = sorted(set(trainers) - set(_TRAINERS))
  if unknown or not trainers:
    sys.exit(f"--trainers: {args.trainers!r}; choose one or more of {', '.join(_TRAINERS)}")
  if args.budget < 1:
    sys.exit(f"--budget: {args.budget}; expected at least 1 network")
  env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": ""}
  rows = {}
  for trainer in trainers:
    workdir = tempfile.mkdtemp(prefix=f"bench_search_{trainer}_")
    cmd = [sys.executable, os.path.join(_ROOT, "launch", "search.py"), f"--config={os.path.join(_ROOT, args.config)}"]
    cmd += [f"--config.workdir={workdir}", f"--config.budget={args.budget}", f"--config.task.trainer={trainer}"]
    cmd += [f"--config.{o}" for o in args.override]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=_ROOT)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
      sys.exit(f"{trainer} failed (workdir {workdir}):\n{p.stderr[-3000:]}")
    rows[trainer] = {"wall": wall, "load": os.getloadavg()[0], "workdir": workdir, **_journal_totals(workdir)}
    print(json.dumps({"trainer": trainer, **rows[trainer]}), flush=True)
  loads = ", ".join(f"{r['load']:.1f}" for r in rows.values())
  print(
    f"{args.config}, budget {args.budget}, {len(os.sched_getaffinity(0))} cores, jax's compilation cache off;"
    f" load average after each search {loads}"
  )
  base = rows[trainers[0]]
  print(
    f"{'trainer':>12} {'wall s':>8} {'s/network':>9} {'ratio':>6} {'compile s':>9} {'train s':>8} {'eval s':>7}"
    f" {'padded':>6} {'best (trial)':>14}"
  )
  table = []
  for t in trainers:
    r = rows[t]
    best = "none" if r["best"] is None else f"{r['best']:.5f} ({r['best_trial']})"
    print(
      f"{t:>12} {r['wall']:>8.1f} {r['wall'] / r['evaluations']:>9.2f} {base['wall'] / r['wall']:>6.2f}"
      f" {r['compile']:>9.1f} {r['train']:>8.1f} {r['eval']:>7.1f} {r['padded']:>6} {best:>14}"
    )
    table.append([t, round(r["wall"], 1), round(r["wall"] / r["evaluations"], 2), f"{base['wall'] / r['wall']:.2f}x"])
    table[-1] += [round(r["compile"], 1), round(r["train"], 1), round(r["eval"], 1), r["padded"], best]
  columns = ["trainer", "wall (s)", "s/network", f"{trainers[0]} / trainer", "compiling (s)", "training (s)"]
  columns += ["evaluating (s)", "trained padded", "best (trial)"]
  record.write(
    f"bench_search_trainers{record.backend_suffix()}",
    f"Whole searches per trainer: {args.config}, {args.budget} networks",
    {"load average after each search": loads},
    [{"title": "", "columns": columns, "rows": table}],
    note="Seconds per network and in all; the ratio is the specialised trainer's time over the padded one's.",
    direction="lower",
  )


if __name__ == "__main__":
  main()
