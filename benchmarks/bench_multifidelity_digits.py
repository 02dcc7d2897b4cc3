"""Multi-fidelity search with real training (issue #20 item 5): NASBOT on digits CNNs, 9 epochs
a network, against ASHA over 1, 3 and 9 epochs with NASBOT as its sampler (a promoted network
continues from its checkpoint), at equal wall time on this machine: each method's best validation
accuracy at 9 epochs (and the test accuracy of that network) at T = the shortest run's wall time,
compilation included. Both run the same way (2 worker processes), one after the other.

  python benchmarks/bench_multifidelity_digits.py --out=runs/bench_mf_digits --seeds=3

Runs resume from OUT (each has its own workdir).
"""

import os
import time

from absl import app, flags
import jax
import numpy as np

import record
from nas_jax.experiments import compare

FLAGS = flags.FLAGS
flags.DEFINE_string("out", "runs/bench_mf_digits", "Output folder (runs resume from it).")
flags.DEFINE_integer("seeds", 3, "Seeds 0 .. seeds-1.", lower_bound=1)
flags.DEFINE_list("methods", ["nasbot", "asha_nasbot"], "Args of configs/multifidelity_digits.py.")
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")


def main(argv):
  del argv
  if FLAGS.smoke:
    scratch = record.smoke(FLAGS, methods=["nasbot+smoke", "asha_nasbot+smoke"], seeds=1)
    FLAGS.out = os.path.join(scratch, "runs")
  jax.config.update("jax_enable_x64", True)  # the searches as launch/search.py runs them
  load0, t0 = os.getloadavg()[0], time.time()
  # A smoke trains in this process (the inline executor): it may run inside another program's.
  overrides = {"executor": "inline"} if FLAGS.smoke else None
  results = compare.compare(
    [f"configs/multifidelity_digits.py:{m}" for m in FLAGS.methods],
    list(range(FLAGS.seeds)),
    None,
    FLAGS.out,
    overrides=overrides,
  )
  ends = [s[-1] for runs in results["seconds"].values() for s in runs]
  t = float(min(ends))
  print(f"equal wall time T = {t:.0f} s (the shortest run; runs took {min(ends):.0f}-{max(ends):.0f} s)")
  table = ["| method | seeds | evaluations | best validation accuracy at T | its test accuracy | at its budget |"]
  table.append("|---|---|---|---|---|---|")
  print("\n".join(table))
  for name, runs in results["runs"].items():
    at = [
      compare.best_at_seconds(np.asarray(b, float), np.asarray(s, float), t)
      for b, s in zip(runs, results["seconds"][name])
    ]
    test = [
      compare.best_at_seconds(np.asarray(b, float), np.asarray(s, float), t)
      for b, s in zip(results["test_runs"][name], results["seconds"][name])
    ]
    final = np.array([r[-1] for r in runs], float)
    stat = lambda x: f"{np.nanmean(x):.4f} ± {np.nanstd(x, ddof=1) / np.sqrt(len(x)) if len(x) > 1 else 0.0:.4f}"
    table.append(
      f"| {name} | {len(runs)} | {results['budgets'][name]} | {stat(np.array(at))} | {stat(np.array(test))} | {stat(final)} |"
    )
    print(table[-1])
  print(
    f"\nload average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end; {time.time() - t0:.0f} s in all"
  )
  record.write(
    "bench_multifidelity_digits",
    f"Digits CNNs at equal wall time: ASHA + NASBOT against NASBOT, {FLAGS.seeds} seeds",
    {"T, the shortest run (s)": round(t), "seconds in all": round(time.time() - t0)},
    [record.markdown_table(table)],
    note="Validation accuracy (test accuracy in brackets) at equal wall time T, the shortest run's.",
    direction="higher",
  )


if __name__ == "__main__":
  app.run(main)
