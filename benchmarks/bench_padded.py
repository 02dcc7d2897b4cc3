"""Specialised vs padded training of MLPs on diabetes (or CNNs on digits): seconds per network, end to end.

Run on 2 cores:  taskset -c 0,1 python benchmarks/bench_padded.py [--epochs=50] [--random=10] [--cnn_count]
                 taskset -c 0,1 python benchmarks/bench_padded.py --kind=cnn --epochs=8 --random=6

The networks are the first `--pool` of the paper's 10 pool networks (all 10 MLPs by default, no
CNNs), then `--random` random ones (`random_arch`, seeds 0..): MLPs on diabetes, or with
`--kind=cnn` CNNs on digits of at most `--max_layers` layers, each layer's units capped at
`--max_units`.
Each trainer runs in its own fresh process (no compiled program carried over; jax's persistent
cache off), over the same networks and keys, as a worker of a search would:
  specialised  `training.evaluate` per network: a program compiled per network (the baseline).
  padded       `padded_training.train_population` of each network alone, in its power-of-two
               padding: programs compiled once per padding and reused by later networks of it.
  population   `trainers.train_group` per group of networks as a search's first round groups
               them (`trainers.groups` by `default_costs`; each group one program in the padding
               of them all, vmapped over its networks).
  auto         `trainers.evaluate("auto", ...)`: per network, the cheaper by `trainers.choose`.
Prints the wall time of each (ratio = specialised / trainer; above 1 the trainer is faster), its
compile share, and the largest difference of a network's best validation error (MSE, or 1 -
accuracy) from specialised.

`--cnn_count` counts, without training, what padding costs a CNN: for each pool CNN on digits, the
multiply-accumulates of one example through `padded_cnn` in the network's own padding (each slot
its layer's kind, channels and grid) and in its coarse padding (every slot every kind, at the
padding's width, on the whole image), against the network's own (`costs.network_costs`), and the
bytes of each padding's parameters; the same for the 10 in the padding of them all; and how many
distinct own paddings (compiled programs) the pool and --random random CNNs need.

`--sizes=1,8,32` then trains populations of P copies of the first network (the first pool MLP; with
`--kind=cnn` the first random CNN, or pool CNN C1 with `--pool=1`; P keys, one program per P; the
second of two runs is timed) and prints networks trained per second for each P: what vmap buys on
this device (on an accelerator the goal of issue 19; on a CPU, nothing to expect).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import record

MODES = ("specialised", "padded", "population", "auto")


def _networks(kind: str, n_pool: int, n_random: int, max_layers: int, max_units: int):
  """The first `n_pool` pool networks of `kind`, then `n_random` random ones (seeds 0..)."""
  import numpy as np

  from nas_jax.arch.architecture import Architecture
  from nas_jax.spaces import pools, random_arch

  archs = list(pools.initial_pool(kind))[:n_pool]
  for s in range(n_random):
    if kind == "mlp":
      archs.append(random_arch.random_architecture("mlp", np.random.default_rng(s), max_layers=20))
      continue
    obj = random_arch.random_json("cnn", np.random.default_rng(s), max_layers=max_layers)
    layers = [{**a, "units": min(a["units"], max_units)} if "units" in a else a for a in obj["layers"]]
    archs.append(Architecture.from_json({**obj, "layers": layers}))
  return archs


def _dataset(kind: str):
  from nas_jax.training import datasets

  return datasets.get_dataset("diabetes" if kind == "mlp" else "digits", kind=kind, seed=0)


def child(mode: str, epochs: int, kind: str, n_pool: int, n_random: int, max_layers: int, max_units: int) -> None:
  """Trains every network with `mode` and prints one JSON line."""
  import jax

  from nas_jax.training import population as padded_training
  from nas_jax.training import specialised as training
  from nas_jax.training import trainer_choice as trainers

  data = _dataset(kind)
  config = training.TrainConfig(epochs=epochs)
  archs = _networks(kind, n_pool, n_random, max_layers, max_units)
  keys = [jax.random.key(i) for i in range(len(archs))]
  t0 = time.perf_counter()
  chosen = []
  if mode == "population":
    results = [None] * len(archs)
    for members in trainers.groups(archs, data, config):
      trained = trainers.train_group([archs[i] for i in members], data, config, [keys[i] for i in members])
      for i, r in zip(members, trained):
        results[i] = r
  elif mode == "padded":
    results = [padded_training.train_population([a], data, config, [k])[0] for a, k in zip(archs, keys)]
  elif mode == "auto":
    memory = trainers.TrainerMemory()  # what "auto" learns from the networks before each one
    pairs = [trainers.evaluate("auto", a, data, config, k, memory) for a, k in zip(archs, keys)]
    results, chosen = [p[0] for p in pairs], [p[1] for p in pairs]
  else:
    results = [training.evaluate(a, data, config, k) for a, k in zip(archs, keys)]
  wall = time.perf_counter() - t0
  out = {
    "mode": mode,
    "wall": wall,
    "compile": sum(r.compile_seconds for r in results),
    "val_errors": [r.val_error for r in results],
    "padded_chosen": sum(c == "padded" for c in chosen),
    "device": f"{jax.default_backend()} {jax.devices()[0].device_kind}",
    "jax": jax.__version__,
  }
  print(json.dumps(out))


def scaling(sizes: list[int], epochs: int, kind: str, n_pool: int, max_layers: int, max_units: int) -> None:
  """Networks per second of populations of P copies of one network (the first pool network with
  `n_pool` > 0, else the first random one), one JSON line."""
  import jax

  from nas_jax.training import population as padded_training
  from nas_jax.training import specialised as training

  data = _dataset(kind)
  arch = _networks(kind, min(n_pool, 1), 1, max_layers, max_units)[0]
  config = training.TrainConfig(epochs=epochs)
  rates = {}
  for p in sizes:
    keys = [jax.random.key(i) for i in range(p)]
    padded_training.train_population([arch] * p, data, config, keys)  # compiles the programs
    t0 = time.perf_counter()
    padded_training.train_population([arch] * p, data, config, keys)
    rates[p] = p / (time.perf_counter() - t0)
  print(json.dumps({"rates": rates}))


def cnn_count(n_random: int) -> tuple[dict, dict]:
  """Prints each pool CNN's arithmetic and parameters padded, and how many programs the pool and
  random CNNs need; returns them as a record's figures and table."""
  import numpy as np

  import jax

  from nas_jax.spaces import pools, random_arch
  from nas_jax.models import cnn_padding, padded_cnn_variables
  from nas_jax.models import network_costs as costs

  pool = pools.initial_pool("cnn")
  image = (8, 8, 1)

  def cost(padding, own):
    gib = sum(np.prod(a.shape) for a in jax.tree.leaves(padded_cnn_variables.param_shapes(padding, image, 10)[0]))
    return f"{cnn_padding.macs(padding, image, 10) / own:7.1f}x, {gib * 4 / 2**30:5.2f} GiB"

  print("pool CNNs on digits (8x8x1, 10 classes), MACs of one example's forward pass against the network's")
  print("own, and the padding's parameters (4x that with gradients and Adam), in the network's coarse")
  print("padding (every slot every kind, at the padding's width, on the whole image) and its own (each slot")
  print("its layer's kind, channels and grid):")
  total_own, rows = 0.0, []
  for i, arch in enumerate(pool):
    tight = cnn_padding.padding_for([arch], image)
    own = costs.network_costs(arch, image, 10).flops / 2
    total_own += own
    rows.append([f"C{i + 1}", tight.layers, tight.width, cost(cnn_padding.coarse(tight, image), own), cost(tight, own)])
    print(
      f"  C{i + 1} ({tight.layers} slots, width {tight.width}, kernel {tight.kernel}): coarse"
      f" {rows[-1][3]}; own {rows[-1][4]}"
    )
  union = cnn_padding.padding_for(pool, image)
  joint = cost(union, total_own / 10)
  print(f"  all 10 in the padding of them all ({union.layers} slots, width {union.width}): {joint}")
  randoms = [random_arch.random_architecture("cnn", np.random.default_rng(s), max_layers=60) for s in range(n_random)]
  distinct = lambda archs: len({cnn_padding.padding_for([a], image) for a in archs})
  coarse = len({cnn_padding.padding_for([a], image, uniform=True) for a in pool})
  print(
    f"own paddings: {distinct(pool)} distinct for the 10 pool CNNs, {distinct(randoms)} for {n_random} random CNNs"
    f" (seeds 0..{n_random - 1}); coarse: {coarse} for the pool"
  )
  figures = {
    "the 10 pool CNNs in the padding of them all": joint.strip(),
    "distinct own paddings: pool, random": f"{distinct(pool)} of 10, {distinct(randoms)} of {n_random}",
    "distinct coarse paddings of the pool": coarse,
  }
  columns = ["network", "slots", "width", "coarse padding: MACs / own, GiB", "own padding: MACs / own, GiB"]
  return figures, {"title": "", "columns": columns, "rows": rows}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--epochs", type=int, default=50, help="the MLP configs' epochs")
  parser.add_argument("--kind", default="mlp", choices=("mlp", "cnn"), help="MLPs on diabetes or CNNs on digits")
  parser.add_argument(
    "--random", type=int, default=10, help="random networks after the pool ones (the CNNs counted with --cnn_count)"
  )
  parser.add_argument("--pool", type=int, default=None, help="the first N pool networks (default: 10 MLPs, 0 CNNs)")
  parser.add_argument("--max_layers", type=int, default=8, help="--kind=cnn: the random CNNs' most layers")
  parser.add_argument("--max_units", type=int, default=32, help="--kind=cnn: each layer's units capped at this")
  parser.add_argument("--modes", default=",".join(MODES), help="'' for none")
  parser.add_argument("--sizes", default="", help="population sizes for the scaling run, e.g. 1,8,32")
  parser.add_argument("--cnn_count", action="store_true", help="count the CNN paddings' arithmetic and sharing")
  parser.add_argument("--child", default="", help=argparse.SUPPRESS)
  parser.add_argument("--smoke", action="store_true", help="a run of seconds; its record goes to a temporary folder")
  args = parser.parse_args()
  if args.smoke:
    record.smoke(args, epochs=2, kind="mlp", pool=1, random=1, modes="specialised,padded")
  if args.pool is None:
    args.pool = 10 if args.kind == "mlp" else 0
  if not 0 <= args.pool <= 10:
    sys.exit(f"--pool: {args.pool} pool networks asked for; the pool has 10 (0 to 10)")
  if args.cnn_count:
    figures, table = cnn_count(args.random)
    return record.write(
      "bench_padded_cnn_count",
      "Arithmetic of padded pool CNNs on digits (counted)",
      figures,
      [table],
      note="Arithmetic and memory of padded CNNs against each network's own, counted, not trained.",
      direction="lower",
    )
  if args.child == "scaling":
    return scaling(
      [int(p) for p in args.sizes.split(",")], args.epochs, args.kind, args.pool, args.max_layers, args.max_units
    )
  if args.child:
    return child(args.child, args.epochs, args.kind, args.pool, args.random, args.max_layers, args.max_units)
  if args.sizes:
    cmd = [sys.executable, __file__, "--child=scaling", f"--sizes={args.sizes}", f"--epochs={args.epochs}"]
    cmd += [
      f"--kind={args.kind}",
      f"--pool={args.pool}",
      f"--max_layers={args.max_layers}",
      f"--max_units={args.max_units}",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if p.returncode != 0:
      sys.exit(f"scaling failed:\n{p.stderr[-3000:]}")
    rates = json.loads(p.stdout.strip().splitlines()[-1])["rates"]
    network = (
      f"the first pool {args.kind.upper()}" if args.pool else f"the first random CNN (units <= {args.max_units})"
    )
    print(f"populations of {network}, {args.epochs} epochs, load average {os.getloadavg()[0]:.1f}:")
    print("  " + ", ".join(f"P = {k}: {v:.2f} networks/s" for k, v in rates.items()))
    record.write(
      f"bench_padded_population_{args.kind}{record.backend_suffix()}",
      f"Populations: P copies of {network}, {args.epochs} epochs",
      {f"P = {k}, networks/s": round(v, 2) for k, v in rates.items()},
      note="Networks trained per second.",
      direction="higher",
    )
  modes = [m for m in args.modes.split(",") if m]
  if not modes:
    return
  unknown = sorted(set(modes) - set(MODES))
  if unknown:
    sys.exit(f"--modes: {', '.join(unknown)} unknown; choose from {', '.join(MODES)}")
  rows, loads = {}, []
  env = {**os.environ, "JAX_ENABLE_COMPILATION_CACHE": "false"}
  for mode in modes:
    cmd = [sys.executable, __file__, f"--child={mode}", f"--epochs={args.epochs}", f"--random={args.random}"]
    cmd += [
      f"--kind={args.kind}",
      f"--pool={args.pool}",
      f"--max_layers={args.max_layers}",
      f"--max_units={args.max_units}",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if p.returncode != 0:
      sys.exit(f"{mode} failed:\n{p.stderr[-3000:]}")
    rows[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    loads.append(os.getloadavg()[0])
  n = args.pool + args.random
  first = rows[modes[0]]
  what = (
    f"{n} MLPs ({args.pool} pool + {args.random} random) on diabetes"
    if args.kind == "mlp"
    else f"{n} CNNs on digits ({args.pool} pool + {args.random} random of at most {args.max_layers} layers, units"
    f" capped at {args.max_units})"
  )
  print(
    f"{what}, {args.epochs} epochs, batch 32; {first['device']},"
    f" jax {first['jax']}; {len(os.sched_getaffinity(0))} cores of {record.cpu_model()}; load average after each"
    f" trainer {', '.join(f'{x:.1f}' for x in loads)}"
  )
  base = rows.get("specialised")
  print(f"{'trainer':>12} {'wall s':>8} {'s/network':>9} {'compile s':>9} {'ratio':>6} {'max |d val|':>10}")
  table = []
  for mode in modes:
    r = rows[mode]
    ratio = f"{base['wall'] / r['wall']:.2f}" if base else "-"
    diff = max(abs(a - b) for a, b in zip(r["val_errors"], base["val_errors"])) if base else float("nan")
    extra = f"  (padded for {r['padded_chosen']} of {n})" if mode == "auto" else ""
    print(f"{mode:>12} {r['wall']:>8.1f} {r['wall'] / n:>9.2f} {r['compile']:>9.1f} {ratio:>6} {diff:>10.2e}{extra}")
    table.append([mode + extra, round(r["wall"], 1), round(r["compile"], 1), ratio, f"{diff:.2e}"])
  columns = ["trainer", "wall (s)", "compiling (s)", "specialised / trainer", "max |d validation error|"]
  record.write(
    f"bench_padded_{args.kind}{record.backend_suffix()}",
    f"Trainers: {what}, {args.epochs} epochs",
    {"load average after each trainer": ", ".join(f"{x:.1f}" for x in loads)},
    [{"title": "", "columns": columns, "rows": table}],
    note="Seconds to train; a ratio: the specialised trainer's time over the other's (below 1x: the other is slower).",
    direction="lower",
  )


if __name__ == "__main__":
  main()
