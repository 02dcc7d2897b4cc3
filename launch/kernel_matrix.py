"""The kernel-quality experiment of Auto-Keras (Sec. 5.3, Fig. 3) on finished searches: the
edit-distance kernel (Bourgain embedding, exp(-rho)) of their evaluated networks against the
performance matrix 1 - |acc_i - acc_j|, with the MSE of their normal scores and a heatmap.

  python launch/kernel_matrix.py --workdirs=runs/a,runs/b [--plot=kernel.png] [--lam=1]

Networks of several workdirs (e.g. the seeds of a comparison) are pooled; duplicates by
descriptor keep their first evaluation. The paper reports MSE 0.112 on its CIFAR10 history; the
script also prints the MSE with the values shuffled, what a kernel blind to performance gets.
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

from nas_jax.features import bourgain, edit_distance as ed  # noqa: E402
from nas_jax.search import journal, loop  # noqa: E402
from nas_jax.spaces.morph_space import morph_space  # noqa: E402
from nas_jax.arch.morph_point import descriptor_key
from nas_jax.experiments import kernel_quality as kq  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_list("workdirs", None, "Search workdirs of the autokeras space (their journals are pooled).")
flags.DEFINE_float("lam", 1.0, "Skip weight of the edit distance.", lower_bound=0.0)
flags.DEFINE_integer("num_classes", 10, "Classifier width in the descriptor.", lower_bound=1)
flags.DEFINE_string("plot", None, "Optional PNG: the two normal-score matrices side by side.")


def _networks(workdirs):
  space, seen, archs, values = morph_space(), set(), [], []
  for w in workdirs:
    path = os.path.join(w, loop.JOURNAL)
    if not os.path.exists(path):
      raise ValueError(f"--workdirs: {w} has no {loop.JOURNAL}")
    for o in journal.replay(path):
      if o.ok:
        arch = space.from_json(o.arch_json).arch
        if descriptor_key(arch) not in seen:
          seen.add(descriptor_key(arch))
          archs.append(arch)
          values.append(o.value)
  if len(archs) < 3:
    raise ValueError(f"--workdirs: {len(archs)} distinct evaluated networks; the experiment needs at least 3")
  return archs, np.array(values)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)
  archs, values = _networks(FLAGS.workdirs)
  order = np.argsort(-values)  # best first, so the heatmap shows blocks of alike performance
  archs, values = [archs[i] for i in order], values[order]
  d = ed.edit_distances([ed.arch_descriptor(a, FLAGS.num_classes) for a in archs], lam=FLAGS.lam)
  phi = bourgain.bourgain_embed(d, bourgain.bourgain_anchors(jax.random.key(123), len(archs)))
  k = np.exp(-np.linalg.norm(phi[:, None] - phi[None], axis=-1))
  mse = kq.kernel_quality(k, values)
  rng = np.random.default_rng(0)
  null = [kq.kernel_quality(k, rng.permutation(values)) for _ in range(200)]
  print(
    f"{len(archs)} networks; MSE(normal scores of K, of P) = {mse:.4f} (paper: 0.112 on CIFAR10);"
    f" with the values shuffled: {np.mean(null):.4f} +- {np.std(null):.4f} (200 shuffles)"
  )
  if FLAGS.plot:
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, m, title in zip(
      axes,
      (kq.normal_scores(k), kq.normal_scores(kq.performance_matrix(values))),
      ("kernel K (edit distance, Bourgain)", "performance 1 - |acc_i - acc_j|"),
    ):
      ax.imshow(m, cmap="viridis", vmin=-1, vmax=1)
      ax.set_title(title, fontsize=9)
    fig.suptitle(f"{len(archs)} networks, best first; MSE {mse:.4f}")
    fig.savefig(FLAGS.plot, dpi=100)
    print(f"wrote {FLAGS.plot}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["workdirs"])
  _cli.run(main)
