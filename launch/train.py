"""Trains the paper's initial pool on one dataset and prints one table row per network.

  python launch/train.py --config=configs/train_pool.py[:smoke] [--config.workdir=runs/pool]

Peak RSS is this process's high-water mark so far; benchmarks/bench_train.py measures each
network in its own process.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import json
import os
import resource

from absl import app, flags
import jax
from ml_collections import config_flags

from nas_jax.spaces import pools
from nas_jax.training import datasets, results_table, specialised
from nas_jax.wiring import config as search_config

FLAGS = flags.FLAGS
config_flags.DEFINE_config_file(
  "config", None, "configs/train_pool.py; append :smoke for a tiny run.", lock_config=True
)


def _device() -> str:
  """ "cpu" or e.g. "gpu (NVIDIA H100)": the backend, and the device model where it says more."""
  backend, kind = jax.default_backend(), jax.devices()[0].device_kind
  return backend if kind.lower() == backend else f"{backend} ({kind})"


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  c = FLAGS.config
  data = datasets.get_dataset(c.dataset, kind=c.kind, seed=c.seed, target=c.target, task=c.task)
  pool = pools.initial_pool(c.kind, decision="softmax" if data.task == "classification" else None)
  bad = [i for i in c.indices if not 0 <= i < len(pool)]
  if bad or not c.indices:
    raise ValueError(f"config.indices: {tuple(c.indices)}; choose a non-empty subset of 0..{len(pool) - 1}")
  train_config = search_config.train_config_of(c)
  print(
    f"{c.kind} pool on {data.name} ({data.x_train.shape[0]} train / {data.x_val.shape[0]} val), "
    f"{c.epochs} epochs, {_device()}, jax {jax.__version__}"
  )
  print(results_table.format_header(data.task), flush=True)
  rows = []
  for i in c.indices:
    name = f"{c.kind[0].upper()}{i + 1}"
    result = specialised.evaluate(pool[i], data, train_config, jax.random.fold_in(jax.random.key(c.seed), i))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(results_table.format_row(name, result, rss), flush=True)
    rows.append({"name": name, "index": i, **result._asdict(), "peak_rss_mib": rss})
  if c.workdir:
    os.makedirs(c.workdir, exist_ok=True)
    path = os.path.join(c.workdir, "train_pool.json")
    with open(path, "w") as f:
      json.dump({"config": c.to_dict(), "backend": jax.default_backend(), "results": rows}, f, indent=1)
    print(f"results: {path}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["config"])
  _cli.run(main)
