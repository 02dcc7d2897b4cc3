"""The combination matrix of the bo strategy (issue item 5), and launch/combinations.py end to end."""

import json
import os

import pytest

from nas_jax.experiments import combinations as combos
from nas_jax.experiments.combinations import ACQUISITIONS
from nas_jax.experiments.combinations import Combination as C
from nas_jax.tasks import synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MATRIX = {kind: combos.valid_combinations(kind) for kind in combos.SPACE_KINDS}


@pytest.mark.parametrize(
  "combination",
  [
    *[C(k, "otmann", "gp", "ei", o) for k in ("nb201", "nb101") for o in ("ea", "mutation", "tree")],
    *[C(k, f, "ensemble", "its", "mutation") for k in ("nb201", "nb101") for f in ("path", "trunc_path")],
    *[C(k, "path", s, "ei", "mutation") for k in ("nb201", "nb101") for s in ("gp", "gp_fixed")],
    *[
      C("autokeras", f, s, "ei", o)
      for f, s in (("edit", "gp"), ("edit", "gp_fixed"), ("otmann", "gp"))
      for o in ("ea", "tree")
    ],
    *[C("conditional", f, "gp", "ei", "ea") for f in ("arc", "poor_man", "otmann")],
    C("conditional", "poor_man", "ensemble", "its", "mutation"),
    *[C(k, "otmann", "gp", "ei", "ea") for k in ("cnn", "mlp")],
    C("nb201", "path", "gp", "ei", "enumerate"),
    C("nb201", "path", "ensemble", "its", "enumerate"),
  ],
)
def test_the_issue_minimum_is_in_the_matrix(combination):
  assert combination in MATRIX[combination.space]


@pytest.mark.parametrize("kind", ["nb201", "nb101", "conditional"])
@pytest.mark.parametrize("surrogate", ["gp", "ensemble"])
def test_every_acquisition_meets_gp_and_ensemble(kind, surrogate):
  assert {c.acquisition for c in MATRIX[kind] if c.surrogate == surrogate} == set(ACQUISITIONS)


@pytest.mark.parametrize("kind", combos.SPACE_KINDS)
def test_invalid_pairs_are_absent_and_rows_are_distinct(kind):
  rows = MATRIX[kind]
  assert len(set(rows)) == len(rows) and all(c.space == kind for c in rows)
  assert not [c for c in rows if c.featurizer in ("otmann", "edit", "arc") and c.surrogate == "ensemble"]
  assert not [c for c in rows if c.featurizer in ("otmann", "arc") and c.surrogate == "gp_fixed"]
  assert (kind == "nb201") == any(c.optimizer == "enumerate" for c in rows)
  # only the acquisition rows leave the natural acquisition, on one optimiser
  assert {c.optimizer for c in rows if c.acquisition != combos.NATURAL_ACQUISITION[c.surrogate]} <= {"ea"}


@pytest.mark.parametrize(
  "kind, n_pairs, n_surrogates",
  [
    ("nb201", 5 + 4 + 4, 3),
    ("nb101", 7 + 6 + 6, 3),
    ("cnn", 1, 1),
    ("mlp", 1, 1),
    ("autokeras", 2 + 1, 2),
    ("conditional", 3 + 1 + 1, 3),
  ],
)
def test_matrix_size_is_pairs_times_optimisers_plus_other_acquisitions(kind, n_pairs, n_surrogates):
  # (featurizer, surrogate) pairs: every featurizer with gp, all but OTMANN and arc with gp_fixed, the
  # vector ones with the ensemble, each with every optimiser that takes any model; then each
  # surrogate meets the 4 acquisitions it does not use. (Optimisers with needs of their own, like
  # the conditional space's per_depth, add rows of their own.)
  general = [
    o for o in combos.optimisers_for(combos.space_of(kind)) if o in ("ea", "mutation", "random", "tree", "enumerate")
  ]
  rows = [c for c in MATRIX[kind] if c.optimizer in general]
  assert len(rows) == n_pairs * len(general) + n_surrogates * (len(ACQUISITIONS) - 1)


@pytest.mark.parametrize("kind", combos.SPACE_KINDS)
def test_every_combination_takes_the_fast_options(kind):
  space = combos.space_of(kind)
  for c in MATRIX[kind]:
    combos.strategy_of(c, space)  # bo checks every option before any evaluation


def test_fast_options_shrink_the_parts_and_slow_ones_keep_defaults():
  fast = combos.bo_config(C("nb201", "path", "ensemble", "its", "tree"), fast=True)
  assert fast["surrogate_config"] == dict(hidden=(8, 8), epochs=20, n_members=3)
  assert fast["optimizer_config"] == dict(n_children=4, max_ops=2)
  assert (fast["initial"], fast["min_ok"]) == ("pool", 1)
  slow = combos.bo_config(C("nb201", "otmann", "gp", "ei", "ea"), fast=False)
  assert slow["surrogate_config"] == {} and slow["optimizer_config"] == {}


def test_bad_kinds_are_named():
  with pytest.raises(ValueError, match="'cells' is unknown; allowed: nb201"):
    combos.valid_combinations("cells")


def _cli(launch, *args):
  return launch("launch/combinations.py", *args)


def test_cli_writes_table_and_results_and_resumes(launch, tmp_path):
  args = ["--spaces=cnn,nb101", "--budget=3", "--optimizers=mutation", f"--out={tmp_path}"]
  p = _cli(launch, *args)
  assert p.returncode == 0, p.stderr[-3000:]
  rows = json.loads((tmp_path / "results.json").read_text())["rows"]
  cnn = [r for r in rows if r["space"] == "cnn"]
  assert [tuple(r[k] for k in C._fields) for r in cnn] == [("cnn", "otmann", "gp", "ei", "mutation")]
  # 3 evaluations are the pool's first 3 networks: the best is their best f1 value
  space = combos.space_of("cnn")
  expected = max(synthetic.synthetic_task("f1").evaluate(space.to_json(a), 0).value for a in space.initial()[:3])
  assert cnn[0]["status"] == "ok" and cnn[0]["best"] == pytest.approx(expected)
  nb101 = [r for r in rows if r["space"] == "nb101"]
  assert len(nb101) == sum(c.optimizer == "mutation" for c in MATRIX["nb101"])
  assert {r["status"] for r in nb101} == {"no objective"}
  table = (tmp_path / "table.md").read_text()
  assert f"| cnn | otmann | gp | ei | mutation | {expected:.4g} |" in table
  assert table.count("| nb101 |") == len(nb101)

  again = _cli(launch, *args)  # resumes: the cnn row is done, nb101's have nothing to run
  assert again.returncode == 0, again.stderr[-3000:]
  assert "[cnn" not in again.stdout and json.loads((tmp_path / "results.json").read_text())["rows"] == rows
  other = _cli(launch, "--spaces=cnn", "--budget=4", f"--out={tmp_path}")
  assert other.returncode == 2 and "--budget=4" in other.stderr and "budget 3" in other.stderr


@pytest.mark.parametrize(
  "args, flag",
  [
    (["--budget=3", "--spaces=cnn,cells"], "--spaces"),
    (["--budget=0"], "--budget"),
    (["--budget=x"], "--budget"),
    # an unknown part used to run nothing and exit 0 with an empty table
    (["--budget=3", "--featurizers=otman"], "--featurizers=otman: otman not on --spaces="),
    (
      ["--budget=3", "--spaces=nb201", "--optimizers=ea,tree_search"],
      "tree_search not on --spaces=nb201; choose among ea,",
    ),
  ],
)
def test_cli_bad_flags_give_one_line_and_exit_2(launch, tmp_path, args, flag):
  p = _cli(launch, *args, f"--out={tmp_path}")
  assert p.returncode == 2 and flag in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
