"""Runs, or resumes, one architecture search described by a config file.

  python launch/search.py --config=configs/ea_synthetic.py:smoke --config.workdir=runs/ea_smoke

Rerunning with the same --config.workdir resumes: finished evaluations are replayed from
workdir/journal.jsonl, never run again. Results: workdir/summary.json and workdir/progress.png.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import json
import os

from absl import app, flags
import jax
from ml_collections import config_flags

from nas_jax.wiring import config as search_config
from nas_jax.search import loop

FLAGS = flags.FLAGS
config_flags.DEFINE_config_file("config", None, "A configs/*.py file; append :smoke for a tiny run.", lock_config=True)
flags.DEFINE_bool("progress", True, "Show a progress bar (evaluations, failures, best so far).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)  # GP algebra in float64 (STYLE 4); workers copy it
  search_config.search_from_config(FLAGS.config, progress=FLAGS.progress)
  path = os.path.join(FLAGS.config.workdir, loop.SUMMARY)
  with open(path) as f:
    s = json.load(f)
  front = f", {len(s['pareto_front'])} on the Pareto front" if "pareto_front" in s else ""
  counts = s.get("n_per_fidelity")
  at = f" (at full fidelity; evaluations per fidelity {counts})" if counts else ""
  print(
    f"{s['task']}: best value {s['best_value']} (trial {s['best_trial_id']}){at} after {s['n_evaluated']}"
    f" evaluations, {s['n_failed']} failed{front}; see {path}"
  )


if __name__ == "__main__":
  flags.mark_flags_as_required(["config"])
  _cli.run(main)
