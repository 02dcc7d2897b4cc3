"""OTMANN distance matrix of architectures in JSON files, with an optional heatmap and t-SNE plot.

  python launch/distance.py --archs=A.json [--archs_b=B.json] --solver=exact --nu_str=0.5 \
    --params=paper --out=D.json [--plot=heatmap.png] [--embed=tsne.png] [--draw=DIR --draw_count=4]

A.json is a JSON list of architectures in the interchange format. D.json gets {"d", "d_bar",
"params"}; with several --nu_str values, d and d_bar gain a leading nu axis. --draw writes
DIR/arch<i>.png, a drawing of each of the first --draw_count architectures of --archs.
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import json
import os

from absl import app, flags
import jax
from matplotlib.backends.backend_agg import FigureCanvasAgg

from nas_jax.viz import plots
from nas_jax.arch.architecture import Architecture
from nas_jax.features import otmann, otmann_costs
from nas_jax.wiring.names import OTMANN_SOLVERS, solver_of

FLAGS = flags.FLAGS
flags.DEFINE_string("archs", None, "JSON list of architectures (rows).")
flags.DEFINE_string("archs_b", None, "JSON list of architectures (columns); default: --archs, symmetric.")
flags.DEFINE_enum("solver", "exact", list(OTMANN_SOLVERS), "Exact LP (POT), batched Sinkhorn (ott-jax) or a bound.")
flags.DEFINE_list("nu_str", ["0.5"], "Structural weight(s), comma separated.")
flags.DEFINE_enum("params", "paper", list(otmann_costs.OTMANN_PARAMS), "OTMANN constants preset.")
flags.DEFINE_string("out", None, "Output JSON file.")
flags.DEFINE_string("plot", None, "Optional heatmap PNG of d (the first nu_str).")
flags.DEFINE_string("embed", None, "Optional 2-D t-SNE PNG of d (the first nu_str; needs no --archs_b).")
flags.DEFINE_string("draw", None, "Optional folder for PNG drawings of the first --draw_count networks of --archs.")
flags.DEFINE_integer("draw_count", 4, "How many networks --draw draws.", lower_bound=1)


def _load(path: str) -> list:
  """Architectures of a JSON list; a ValueError names the file and the index of a bad entry."""
  name = os.path.basename(path)
  try:
    with open(path) as f:
      objs = json.load(f)
  except (OSError, ValueError) as e:
    raise ValueError(f"{name}: cannot read a JSON list of architectures ({e})") from None
  if not isinstance(objs, list) or not objs:
    raise ValueError(f"{name}: expected a non-empty JSON list of architectures")
  archs = []
  for i, obj in enumerate(objs):
    try:
      archs.append(Architecture.from_json(obj))
    except (ValueError, TypeError) as e:
      raise ValueError(f"{name}[{i}]: {e}") from None
    if archs[i].kind != archs[0].kind:
      raise ValueError(f"{name}[{i}]: kind {archs[i].kind!r} differs from {name}[0]'s {archs[0].kind!r}")
  return archs


def _run(nus: list) -> str:
  a = _load(FLAGS.archs)
  b = _load(FLAGS.archs_b) if FLAGS.archs_b else None
  if b is None and len(a) < 2:
    raise ValueError(f"--archs: {FLAGS.archs} holds one architecture; a distance needs two (or --archs_b)")
  if FLAGS.embed and (b is not None or len(a) < 3):
    raise ValueError("--embed needs one symmetric set (no --archs_b) of at least 3 architectures")
  out = otmann.otmann_distances(
    a, b, solver=solver_of(FLAGS.solver), nu_str=nus[0] if len(nus) == 1 else nus, params=FLAGS.params
  )
  params = otmann_costs.OTMANN_PARAMS[FLAGS.params]
  record = {
    "d": out.d.tolist(),
    "d_bar": out.d_bar.tolist(),
    "params": {
      "preset": FLAGS.params,
      "solver": FLAGS.solver,
      "nu_str": nus,
      **params._asdict(),
      "mass": params.mass._asdict(),
    },
  }
  with open(FLAGS.out, "w") as f:
    json.dump(record, f)
  first = out.d if len(nus) == 1 else out.d[0]
  title = f"OTMANN d, nu_str={nus[0]}, {FLAGS.params}"
  if FLAGS.plot:
    plots.distance_heatmap(first, FLAGS.plot, title=title)
  if FLAGS.embed:
    plots.embedding_2d(first, FLAGS.embed, title=f"t-SNE of {title}")
  if FLAGS.draw:
    os.makedirs(FLAGS.draw, exist_ok=True)
    for i, arch in enumerate(a[: FLAGS.draw_count]):
      ax = plots.draw(arch, title=f"{os.path.basename(FLAGS.archs)}[{i}]")
      FigureCanvasAgg(ax.figure).print_png(os.path.join(FLAGS.draw, f"arch{i}.png"))
  shape = "x".join(str(n) for n in out.d.shape)
  per_nu = f" ({len(nus)} values of nu_str)" if len(nus) > 1 else ""
  return f"wrote {FLAGS.out}: {shape} distances{per_nu}"


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)
  try:
    nus = [float(v) for v in FLAGS.nu_str]
  except ValueError:
    raise app.UsageError(f"--nu_str={','.join(FLAGS.nu_str)}: expected numbers") from None
  print(_run(nus))


if __name__ == "__main__":
  flags.mark_flags_as_required(["archs", "out"])
  _cli.run(main)
