"""The arc-kernel paper's Table 1 experiment on bundled data (Swersky et al. 2013, Sec. 3; issue 12 item 4).

  python launch/kernel_quality.py --workdir=runs/kernel_quality [--n_points=300] [--epochs=10] \
    [--n_splits=5] [--datasets=digits,diabetes] [--otmann=true]

Trains --n_points random points of the conditional space on digits (classification error) and
diabetes (regression MSE), each on the full and on half of the training data; every result is
appended to WORKDIR/trained.jsonl, so an interrupted run resumes. Then every model (the six of the
paper, plus NASBOT's OTMANN GP on the points' layer graphs) predicts the validation error of a
held-out half of the points from the other half, raw and log, over --n_splits random splits:
WORKDIR/table.md (NMSE mean ± standard error) and WORKDIR/nmse.png.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import os

from absl import app, flags
import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from nas_jax.experiments import conditional_experiment as ce  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("workdir", None, "Output folder; holds the trained-points table (resumable).")
flags.DEFINE_integer("n_points", 300, "Random points per dataset (each trained on full and half data).", lower_bound=8)
flags.DEFINE_integer("epochs", 10, "Training epochs per point.", lower_bound=1)
flags.DEFINE_integer("n_splits", 5, "Random train/test halves per column.", lower_bound=1)
flags.DEFINE_list("datasets", list(ce.DATASETS), "Datasets: digits, diabetes.")
flags.DEFINE_bool("otmann", True, "Also score NASBOT's OTMANN GP on the points' layer graphs.")
flags.DEFINE_integer("max_depth", 3, "Deepest network of the space.", lower_bound=1)
flags.DEFINE_integer("n_starts", 8, "GP fitting restarts.", lower_bound=1)
flags.DEFINE_integer("steps", 200, "GP fitting steps.", lower_bound=1)
flags.DEFINE_integer("seed", 0, "Seed of the points, their training and the splits.", lower_bound=0)

_PAPER = {  # Swersky et al. 2013, Table 1, for the table's footer
  "separate_linear": (0.968, 0.886, 1.039, 2.120),
  "separate_gp": (0.925, 0.641, 0.860, 0.848),
  "poor_man_linear": (0.905, 0.763, 0.996, 0.851),
  "poor_man_gp": (0.907, 0.518, 1.178, 0.752),
  "separate_hierarchical_gp": (0.801, 0.627, 0.956, 0.950),
  "hierarchical_gp": (0.801, 0.441, 0.993, 0.674),
}


def _markdown(table: dict) -> str:
  columns = list(table)
  models = list(next(iter(table.values())))
  lines = ["| model | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
  for m in models:
    cells = []
    for c in columns:
      mean, err = table[c][m]
      best = min(v[0] for v in table[c].values())
      cells.append(f"**{mean:.3f}** ± {err:.3f}" if mean == best else f"{mean:.3f} ± {err:.3f}")
    lines.append(f"| {m} | " + " | ".join(cells) + " |")
  lines.append("\nNMSE on held-out halves (mean ± standard error over splits; bold: lowest in its column).")
  lines.append(
    "The paper's Table 1 (NN, NN log, NN half, NN log half): "
    + "; ".join(f"{m} {', '.join(map(str, v))}" for m, v in _PAPER.items())
  )
  return "\n".join(lines) + "\n"


def _plot(table: dict, path: str) -> None:
  columns, models = list(table), list(next(iter(table.values())))
  fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(columns)), 4))
  width = 0.8 / len(models)
  for i, m in enumerate(models):
    x = np.arange(len(columns)) + i * width
    ax.bar(x, [table[c][m][0] for c in columns], width, yerr=[table[c][m][1] for c in columns], label=m)
  ax.set_xticks(np.arange(len(columns)) + 0.4 - width / 2, columns, rotation=20)
  ax.set_ylabel("NMSE (lower is better)")
  ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
  ax.legend(fontsize=7)
  fig.tight_layout()
  fig.savefig(path, dpi=100)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)
  trained = ce.train_cached(
    FLAGS.workdir,
    n_points=FLAGS.n_points,
    epochs=FLAGS.epochs,
    seed=FLAGS.seed,
    names=FLAGS.datasets,
    max_depth=FLAGS.max_depth,
  )
  table = ce.nmse_rows(
    trained,
    n_splits=FLAGS.n_splits,
    seed=FLAGS.seed,
    max_depth=FLAGS.max_depth,
    otmann=FLAGS.otmann,
    n_starts=FLAGS.n_starts,
    steps=FLAGS.steps,
  )
  with open(os.path.join(FLAGS.workdir, "table.md"), "w") as f:
    f.write(_markdown(table))
  _plot(table, os.path.join(FLAGS.workdir, "nmse.png"))
  print(_markdown(table))
  print(f"wrote {FLAGS.workdir}/table.md and nmse.png")


if __name__ == "__main__":
  flags.mark_flags_as_required(["workdir"])
  _cli.run(main)
