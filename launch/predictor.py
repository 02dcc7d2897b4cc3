"""The BANANAS predictor experiment on NAS-Bench-201 (BANANAS Table 1).

  python launch/predictor.py --data=../shared/data/nasbench201 --out=runs/predictor.json
  python launch/predictor.py --data=../shared/data/nasbench201 --train_sizes=20 --n_fits=1 \
    --encodings=path --out=/tmp/p.json      # a quick check

Prints, per encoding and training size, the ensemble's MAE on its training cells and on held-out
cells (val error, percentage points), and writes them as JSON to --out.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import json

from absl import app, flags
import jax

from nas_jax.spaces import cells as cells_lib
from nas_jax.experiments import predictor_experiment
from nas_jax.tasks import tabular

FLAGS = flags.FLAGS
flags.DEFINE_string("data", None, "The NB201 CSV, or the folder holding nb201_200epochs.csv.gz.")
flags.DEFINE_enum("dataset", "cifar10", list(tabular.DATASETS), "Which dataset's val error.")
flags.DEFINE_list("encodings", ["adj_onehot", "path", "trunc_path", "path_iso"], "Encodings.")
flags.DEFINE_list("train_sizes", ["20", "100", "200"], "Training set sizes.")
flags.DEFINE_integer("n_test", 500, "Held-out cells.", lower_bound=1)
flags.DEFINE_integer("n_fits", 3, "Independent repetitions averaged.", lower_bound=1)
flags.DEFINE_integer("epochs", 150, "Training epochs (authors' code: 150; the Table 1 notebook: 200).", lower_bound=1)
flags.DEFINE_integer("seed", 0, "PRNG seed.", lower_bound=0)
flags.DEFINE_string("out", None, "Output JSON path.")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  try:
    sizes = [int(s) for s in FLAGS.train_sizes]
  except ValueError:
    raise app.UsageError(f"--train_sizes={','.join(FLAGS.train_sizes)}: expected integers") from None
  table = tabular.load_nb201(FLAGS.data, FLAGS.dataset)
  space = cells_lib.nb201_space()
  cells = [space.from_json({"kind": "nb201", "arch_str": s}) for s in table.arch_strs]
  result = predictor_experiment.predictor_mae(
    jax.random.PRNGKey(FLAGS.seed),
    cells,
    100.0 - table.valid,
    encoding_names=FLAGS.encodings,
    train_sizes=sizes,
    n_test=FLAGS.n_test,
    n_fits=FLAGS.n_fits,
    epochs=FLAGS.epochs,
  )
  for name, rows in result.items():
    for n, r in rows.items():
      print(f"{name:>11} n={n:<4} train MAE {r['train']:.3f}  test MAE {r['test']:.3f} ± {r['test_std']:.3f}")
  with open(FLAGS.out, "w") as f:
    json.dump(
      {"dataset": FLAGS.dataset, "epochs": FLAGS.epochs, "n_test": FLAGS.n_test, "n_fits": FLAGS.n_fits, "mae": result},
      f,
      indent=1,
    )


if __name__ == "__main__":
  flags.mark_flags_as_required(["data", "out"])
  _cli.run(main)
