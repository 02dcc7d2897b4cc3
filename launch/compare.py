"""Compares search configs over seeds at one budget: a table, curves and raw results.

  python launch/compare.py --configs=configs/random_synthetic.py,configs/ea_synthetic.py \
    --seeds=5 --budget=100 --out=runs/compare_f1
  python launch/compare.py --configs=configs/nasbot_cnn_digits.py,configs/random_cnn_digits.py \
    --seeds=5 --budget=16 --set=task.epochs=3 --out=runs/compare_digits

Writes OUT/table.md (mean ± standard error of the best value at the budget), OUT/curves.png and
OUT/results.json. Each run has its own workdir, OUT/<config>/seed<s>, so rerunning resumes.
Multi-objective configs (`--set=objectives=params`) also get the hypervolume of each run against
a reference point, `--hv_ref=value=85,params=1e6` (raw units; default: the worst of each objective
over every run), in the table and OUT/hypervolume.png:
  python launch/compare.py --configs=configs/pareto_nb201.py:random,configs/pareto_nb201.py:nsga2 \
    --seeds=5 --budget=100 --hv_ref=value=87.3,params=1.53e6 --out=runs/compare_mo
Multi-fidelity configs (a scheduler) against single-fidelity ones at equal simulated time, each with
its own budget (no --budget): the table's last columns and OUT/curves_simulated.png:
  python launch/compare.py --configs=configs/multifidelity_nb201.py:asha_bananas,configs/multifidelity_nb201.py:bananas \
    --seeds=5 --sim_time=182800 --out=runs/compare_mf
"""

import _env  # noqa: F401  (before jax: one BLAS thread, the compilation cache)
import _cli
import _records
from absl import app, flags, logging
import jax

from nas_jax.wiring import config_files
from nas_jax.experiments import compare

FLAGS = flags.FLAGS
flags.DEFINE_list("configs", None, "Config files, path.py[:arg], comma separated.")
flags.DEFINE_integer("seeds", 3, "Number of seeds: runs seeds 0 .. seeds-1.", lower_bound=1)
flags.DEFINE_list("seed_list", None, "Explicit seeds, e.g. 0,3,7; overrides --seeds.")
flags.DEFINE_integer(
  "budget", None, "Evaluations per run (every config gets the same); unset: each config's own budget.", lower_bound=1
)
flags.DEFINE_string("out", None, "Output folder.")
flags.DEFINE_multi_string(
  "set", [], "dotted.field=value set in every config, e.g. --set=task.epochs=3; repeat the flag for several fields."
)
flags.DEFINE_bool("progress", False, "Show each run's progress bar.")
flags.DEFINE_float(
  "sim_time",
  None,
  "Simulated seconds at which the table compares configs whose task reports costs (NAS-Bench-201's"
  " training time); unset: the shortest run's total.",
  lower_bound=0.0,
)
flags.DEFINE_list(
  "hv_ref", None, "Hypervolume reference point of a multi-objective comparison, name=value pairs (raw units)."
)
flags.DEFINE_string("record", "", _records.DOC)
flags.DEFINE_string("record_note", "", "The record's note: what its figures mean, shown under them.")


def _hv_ref(items):
  """--hv_ref=value=85,params=1e6 -> {"value": 85.0, "params": 1e6}; None when not given."""
  if not items:
    return None
  out = {}
  for item in items:
    name, eq, text = item.partition("=")
    try:
      out[name] = float(text)
    except ValueError:
      raise app.UsageError(f"--hv_ref: {item!r}; expected name=number, e.g. value=85,params=1e6") from None
    if not eq or not name:
      raise app.UsageError(f"--hv_ref: {item!r}; expected name=number, e.g. value=85,params=1e6")
  return out


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  jax.config.update("jax_enable_x64", True)
  try:
    seeds = [int(s) for s in FLAGS.seed_list] if FLAGS.seed_list else list(range(FLAGS.seeds))
  except ValueError:
    raise app.UsageError(f"--seed_list={','.join(FLAGS.seed_list)}: expected integers") from None
  try:
    overrides = config_files.parse_overrides(FLAGS.set)
  except ValueError as e:
    raise app.UsageError(f"--set: {e}") from None
  for spec in FLAGS.configs or ():  # named here as --set, not as the library's `overrides`
    missing = config_files.first_missing_field(config_files.load_config(spec), list(overrides))
    if missing:
      raise app.UsageError(f"--set={missing[0]}=...: not a field of {spec}: {missing[1]}")
  compare.compare(
    FLAGS.configs,
    seeds,
    FLAGS.budget,
    FLAGS.out,
    progress=FLAGS.progress,
    overrides=overrides,
    hv_ref=_hv_ref(FLAGS.hv_ref),
    sim_time=FLAGS.sim_time,
  )
  with open(f"{FLAGS.out}/{compare.TABLE}") as f:
    logging.info("\n%s", f.read())
  if FLAGS.record:
    title = f"{', '.join(FLAGS.configs)}: {len(seeds)} seeds, budget {FLAGS.budget or 'each config its own'}"
    figures = {"overrides": str(overrides or "none")}
    _records.write_table(FLAGS.record, title, f"{FLAGS.out}/{compare.TABLE}", figures, note=FLAGS.record_note)
  print(f"wrote {FLAGS.out}/{compare.TABLE}, {compare.CURVES}, {compare.RESULTS}")


if __name__ == "__main__":
  flags.mark_flags_as_required(["configs", "out"])
  _cli.run(main)
