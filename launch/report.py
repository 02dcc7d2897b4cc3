"""Writes DIR/report.html for a search workdir: config, best-so-far plots, the sortable table of
evaluations, the best networks drawn, failures, and (GP strategies) the distance heatmap.

  python launch/report.py --workdir=runs/nasbot_cnn_digits [--top_k=3] [--max_networks=40]

It reads the journal as a resume does, so it works while the search runs or after it was killed.
The page is one file with everything embedded; open it in any browser, offline.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli

from absl import app, flags
import jax

from nas_jax.experiments import report

FLAGS = flags.FLAGS
flags.DEFINE_string("workdir", None, "The --config.workdir of a search (holds journal.jsonl).")
flags.DEFINE_integer("top_k", 3, "How many of the best networks to draw.", lower_bound=1)
flags.DEFINE_integer("max_networks", 40, "Cap on the networks of the distance heatmap (GP strategies).", lower_bound=2)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)  # OTMANN costs in float64, as in launch/distance.py
  print(f"wrote {report.write_report(FLAGS.workdir, top_k=FLAGS.top_k, max_networks=FLAGS.max_networks)}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["workdir"])
  _cli.run(main)
