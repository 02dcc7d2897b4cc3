"""Trains a finished search's best networks for longer and scores them on the test split, as
NASBOT's evaluation does (Kandasamy et al. 2018, Sec. 5, Table 3's last column).

  python launch/final.py --workdir=runs/nasbot_cnn_digits --top_k=3 [--epochs=E] [--seeds=S]

The top-K distinct networks by the search's value (successful evaluations at full fidelity) are
each retrained on train+validation for E epochs and tested, for seeds 0..S-1. E defaults to
round(2.5 x the search's epochs): NASBOT Sec. 5 trains CNNs for 60K iterations during the search
and 150K for the final models (App. C.2 and Table 3's caption say 24K and 120K), MLPs alike.
Writes WORKDIR/final/final.json (one entry per network), a saved model per (network, seed) under
WORKDIR/final/models/<rank>-<seed>/ and WORKDIR/final/journal.jsonl; killed, a rerun resumes from
the last checkpoint and repeats no finished seed. A search of NAS-Bench-201 cells (a table lookup)
or of a synthetic function has nothing to train: it says so; an NB201 search prints its top
cells' test figures from the table, or with --dataset=PATH trains them on those images.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import sys

from absl import app, flags

from nas_jax.experiments import final_training

FLAGS = flags.FLAGS
flags.DEFINE_string("workdir", None, "The --config.workdir of a finished search (holds journal.jsonl).")
flags.DEFINE_integer("top_k", 3, "How many of the best distinct networks to train (>= 1).")
flags.DEFINE_integer("epochs", None, "Final training epochs (>= 1); default round(2.5 x the search's epochs).")
flags.DEFINE_integer("seeds", 1, "Train each network with seeds 0..S-1 (>= 1); mean and sd over them.")
flags.DEFINE_string("dataset", "", "NB201 searches only: an .npz of images to train the top cells on.")
flags.DEFINE_bool("progress", True, "Print a line after each finished (network, seed).")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  say = (lambda line: print(line, file=sys.stderr, flush=True)) if FLAGS.progress else (lambda line: None)
  outcome = final_training.final_train(
    FLAGS.workdir, top_k=FLAGS.top_k, epochs=FLAGS.epochs, seeds=FLAGS.seeds, dataset=FLAGS.dataset, progress=say
  )
  if outcome.why:
    print(outcome.why)
  else:
    print(
      f"top {len(outcome.entries)} networks trained for {outcome.epochs} epochs on train+validation; see {outcome.path}"
    )
  if outcome.entries:
    print(final_training.format_table(outcome))


if __name__ == "__main__":
  flags.mark_flags_as_required(["workdir"])
  _cli.run(main)
