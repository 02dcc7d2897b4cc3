"""Makes the NAS-Bench-201 tables that the NB201 configs read, from the benchmark's own release.

  python launch/nb201_data.py --source=NATS-tss-v1_0-3ffb9-simple --out=data/nasbench201

--source is the NATS-Bench topology archive folder (read with the package nats_bench: pip install
'nas_jax[nb201]'), or a NAS-Bench-201 file NAS-Bench-201-v1_0-e61699.pth or
NAS-Bench-201-v1_1-096897.pth (read with the packages nas-bench-201 and torch). Writes
OUT/nb201_200epochs.csv.gz and OUT/nb201_12epochs.csv.gz, the tables --config.task.path=OUT
reads, after checking them: every value finite, and for all 15,625 cells the published best
CIFAR-10 validation accuracy 91.607 with its test accuracy 94.373. A release that lacks cells,
datasets or a schedule is refused in one line naming what is missing; --allow_partial writes its
complete cells instead. The mapping of the benchmark's records to columns: docs/nb201_data.md.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli

from absl import flags
import tqdm

from nas_jax.tasks import nb201_release

FLAGS = flags.FLAGS
flags.DEFINE_string("source", None, "The NATS-tss-v1_0-3ffb9-simple folder, or a NAS-Bench-201-v1_*.pth file.")
flags.DEFINE_string("out", None, "Folder to write nb201_200epochs.csv.gz and nb201_12epochs.csv.gz into.")
flags.DEFINE_bool("allow_partial", False, "Write the complete cells of a partial release instead of refusing it.")
flags.DEFINE_bool("progress", True, "Show a progress bar over the cells.")


def main(argv):
  if len(argv) > 1:
    _cli.fail(f"unexpected arguments {argv[1:]}; every option is a --flag")
  bar = (lambda cells: tqdm.tqdm(cells, desc="cells", unit="cell")) if FLAGS.progress else None
  made = nb201_release.make_tables(FLAGS.source, FLAGS.out, FLAGS.allow_partial, bar)
  if made.missing:
    print(f"partial release: {nb201_release.missing_line(made.missing)}")
  for path, rows in made.written.values():
    print(f"wrote {path}: {rows} rows")
  valid, test = made.best_cifar10
  print(f"best CIFAR-10 validation accuracy {valid:.4f}, test accuracy of that cell {test:.4f}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["source", "out"])
  _cli.run(main)
