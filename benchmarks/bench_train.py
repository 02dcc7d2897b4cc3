"""Training cost of the paper's initial CNN pool on digits: seconds per epoch, compile seconds and
peak RSS of each network, each trained in its own process so that RSS is per network.

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_train.py [--epochs=3] [--indices=0,7]
Each child runs `training.evaluate` (same TrainConfig as configs/train_pool.py apart from epochs)
and reports its own peak RSS (getrusage, RUSAGE_SELF). The script asserts that every network
learns (validation accuracy above 0.3; chance is 0.1) and exits 1 if a network exceeds 1 GiB
(on the CPU backend only: a GPU runtime's own libraries take more host memory than that).
"""

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import time

import record

RSS_TARGET_MIB = 1024.0


def child(index: int, epochs: int, kind: str) -> None:
  """Trains pool member `index` and prints one JSON line."""
  import jax  # only children pay for jax; the parent's RSS stays small

  from nas_jax.spaces import pools
  from nas_jax.models import arch_net as models
  from nas_jax.training import datasets
  from nas_jax.training import specialised as training

  data = datasets.digits(kind)
  arch = pools.initial_pool(kind, decision="softmax")[index]
  model = models.build_model(arch, data.num_classes)
  shapes = jax.eval_shape(functools.partial(model.init, train=False), jax.random.key(0), data.x_train[:1])
  n_params = sum(leaf.size for leaf in jax.tree.leaves(shapes["params"]))
  r = training.evaluate(arch, data, training.TrainConfig(epochs=epochs), jax.random.key(index))
  print(
    json.dumps(
      {
        "index": index,
        "layers": int(arch.mask.sum()),
        "params": n_params,
        "val_accuracy": r.val_accuracy,
        "seconds_per_epoch": r.seconds_per_epoch,
        "eval_seconds": r.eval_seconds / epochs,
        "compile_seconds": r.compile_seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "jax": jax.__version__,
        "device": f"{jax.default_backend()} {jax.devices()[0].device_kind}",
      }
    )
  )


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--epochs", type=int, default=3)
  parser.add_argument("--indices", default="0,1,2,3,4,5,6,7,8,9", help="pool members, 0-based (C1 is 0)")
  parser.add_argument("--kind", default="cnn", choices=("cnn", "mlp"))
  parser.add_argument("--child", type=int, default=-1, help=argparse.SUPPRESS)
  parser.add_argument("--smoke", action="store_true", help="a run of seconds; its record goes to a temporary folder")
  args = parser.parse_args()
  if args.smoke:
    record.smoke(args, epochs=10, indices="0", kind="mlp")  # M1 learns past 0.3 in ten epochs
  if args.child >= 0:
    return child(args.child, args.epochs, args.kind)

  rows = []
  for i in (int(s) for s in args.indices.split(",")):
    t0 = time.perf_counter()
    p = subprocess.run(
      [sys.executable, __file__, f"--child={i}", f"--epochs={args.epochs}", f"--kind={args.kind}"],
      capture_output=True,
      text=True,
      check=False,
    )
    if p.returncode != 0:
      sys.exit(f"network {i} failed:\n{p.stderr[-3000:]}")
    rows.append({**json.loads(p.stdout.strip().splitlines()[-1]), "wall_seconds": time.perf_counter() - t0})
  print(
    f"{args.kind} pool on digits, {args.epochs} epochs, batch 32; {rows[0]['device']}, jax {rows[0]['jax']};"
    f" {len(os.sched_getaffinity(0))} cores of {record.cpu_model()}; load average {os.getloadavg()[0]:.1f}"
  )
  print(
    f"{'net':>4} {'layers':>6} {'params M':>8} {'val acc':>7} {'s/epoch':>7} {'eval s':>6} {'compile s':>9}"
    f" {'RSS MiB':>7} {'wall s':>6}"
  )
  for r in rows:
    print(
      f"{args.kind[0].upper()}{r['index'] + 1:<3} {r['layers']:>6} {r['params'] / 1e6:>8.2f}"
      f" {r['val_accuracy']:>7.3f} {r['seconds_per_epoch']:>7.2f} {r['eval_seconds']:>6.2f}"
      f" {r['compile_seconds']:>9.2f} {r['peak_rss_mib']:>7.0f} {r['wall_seconds']:>6.1f}"
    )
  total, peak = sum(r["wall_seconds"] for r in rows), max(r["peak_rss_mib"] for r in rows)
  # The target is the CPU backend's: a GPU runtime alone keeps more host memory than that.
  on_cpu = rows[0]["device"].startswith("cpu")
  target = f"target < {RSS_TARGET_MIB:.0f}" if on_cpu else "no target off the CPU backend"
  print(f"total wall {total:.0f} s; max RSS {peak:.0f} MiB ({target})")
  assert all(r["val_accuracy"] > 0.3 for r in rows), "a network did not learn: see val acc"
  columns = ["net", "layers", "params (M)", "validation accuracy", "s/epoch", "compile (s)", "peak RSS (MiB)"]
  table = [
    [
      f"{args.kind[0].upper()}{r['index'] + 1}",
      r["layers"],
      round(r["params"] / 1e6, 2),
      round(r["val_accuracy"], 3),
      round(r["seconds_per_epoch"], 2),
      round(r["compile_seconds"], 2),
      round(r["peak_rss_mib"]),
    ]
    for r in rows
  ]
  record.write(
    f"bench_train{record.backend_suffix()}",
    f"Training the {args.kind} pool on digits, {args.epochs} epochs, each network in its own process",
    {"total wall (s)": round(total)},
    [{"title": "", "columns": columns, "rows": table}],
    note="Seconds to compile and to train.",
    direction="lower",
  )
  # A smoke checks that the script runs, not the memory of a process started under a test runner.
  if on_cpu and not args.smoke and any(r["peak_rss_mib"] >= RSS_TARGET_MIB for r in rows):
    sys.exit(f"peak RSS of some network is over {RSS_TARGET_MIB:.0f} MiB")


if __name__ == "__main__":
  main()
