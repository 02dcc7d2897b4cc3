"""Every config: its `:smoke` variant passes `check_search_config` and runs through
`search_from_config` (training configs are slow); its docstring holds its own run command; bad
fields are rejected with errors that name `config.<field>`."""

import glob
import json
import os

import pytest

from nas_jax.search import loop
from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files
from tests.conftest import SHARED_DATA

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MINE = ("random_synthetic.py", "ea_synthetic.py", "random_cnn_digits.py", "ea_cnn_digits.py", "random_mlp_diabetes.py")
# Search configs are those whose config has a strategy (others feed launch/train.py and the like);
# configs/ is a package, whose __init__.py and common.py (the shared fields) are not configs.
SEARCH_CONFIGS = sorted(
  p
  for p in glob.glob(os.path.join(ROOT, "configs", "*.py"))
  if os.path.basename(p) not in ("__init__.py", "common.py") and "strategy" in config_files.load_config(p)
)
# Runs over ~10 s: training networks, or fitting a surrogate at every step.
_SLOW_STRATEGIES = ("nasbot", "rand", "bananas", "gp_bo", "bo")


def smoke(path, workdir):
  c = config_files.load_config(f"{path}:smoke")
  c.workdir = str(workdir)
  return c


def _run_param(path):
  c = config_files.load_config(f"{path}:smoke")
  slow = c.task.name in ("train", "morph_train", "conditional") or c.strategy in _SLOW_STRATEGIES
  return pytest.param(path, id=os.path.basename(path), marks=[pytest.mark.slow] if slow else [])


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch):
  monkeypatch.chdir(ROOT)  # configs name data by paths relative to the repository root


def _skip_without_data(config):
  if config.task.name == "nb201" and not os.path.exists(config.task.path):
    pytest.skip(f"NAS-Bench-201 table not found at {config.task.path}; it is never downloaded")


def test_my_search_configs_exist():
  assert set(MINE) <= {os.path.basename(p) for p in SEARCH_CONFIGS}


@pytest.mark.parametrize("path", SEARCH_CONFIGS, ids=os.path.basename)
def test_smoke_config_checks_and_documents_its_command(path, tmp_path):
  c = smoke(path, tmp_path)
  _skip_without_data(c)
  config_lib.check_search_config(c)
  module_doc = open(path).read().split('"""')[1]
  assert f"python launch/search.py --config=configs/{os.path.basename(path)}" in module_doc
  with pytest.raises(ValueError, match="arg must be"):
    config_files.load_config(f"{path}:large")


@pytest.mark.parametrize("path", [_run_param(p) for p in SEARCH_CONFIGS])
def test_smoke_runs(path, tmp_path):
  c = smoke(path, tmp_path)
  _skip_without_data(c)
  done = config_lib.search_from_config(c, progress=False)
  summary = json.loads((tmp_path / loop.SUMMARY).read_text())
  assert len(done) == summary["n_evaluated"] == c.budget
  assert any(o.ok for o in done)
  best = max(o.value for o in done if o.ok) if summary["goal"] == "max" else min(o.value for o in done if o.ok)
  assert summary["best_value"] == best
  if c.task.name != "synthetic":  # training and tables report a test metric
    assert summary["best_test_value"] is not None
  assert json.loads((tmp_path / "config.json").read_text())["strategy"] == c.strategy


def _bad(tmp_path, **changes):
  c = smoke(os.path.join(ROOT, "configs", "ea_synthetic.py"), tmp_path)
  for dotted, value in changes.items():
    *parents, leaf = dotted.split("__")
    section = c
    for p in parents:
      section = section[p]
    section[leaf] = value
  return c


@pytest.mark.parametrize(
  "changes, match",
  [
    (dict(strategy="bayes"), r"config\.strategy: 'bayes'.*choose one of: .*ea, .*random"),
    (dict(space__kind="rnn"), r"config\.space\.kind: 'rnn'"),
    (dict(space__max_layers=2), r"config\.space\.max_layers: 2"),
    (dict(task__function="f2"), r"config\.task\.function: 'f2'.*defined for mlp"),
    (dict(task__name="tabular"), r"config\.task\.name: 'tabular'"),
    (dict(budget=0), r"config\.budget: 0"),
    (dict(num_workers=0), r"config\.num_workers: 0"),
    (dict(executor="slurm"), r"config\.executor: 'slurm'.*inline, local, ray"),
    (dict(eval_timeout_s=5.0), r"config\.eval_timeout_s: 5\.0.*inline executor cannot stop"),
    (
      dict(executor="inline", ray_address="127.0.0.1:6390"),
      r"config\.ray_address: '127\.0\.0\.1:6390' is not allowed; it is read by executor 'ray' only, and executor"
      r" is 'inline'",
    ),
    (dict(executor="local", ray_address="auto"), r"config\.ray_address: 'auto'.*executor is 'local'"),
    (dict(seed=-3), r"config\.seed: -3"),
  ],
)
def test_bad_fields_are_named(tmp_path, changes, match):
  with pytest.raises(ValueError, match=match):
    config_lib.check_search_config(_bad(tmp_path, **changes))


def test_a_user_registered_task_runs_through_the_config(tmp_path, monkeypatch):
  synthetic = config_lib.TASKS["synthetic"]
  monkeypatch.setitem(config_lib.TASKS, "mine", lambda section, kind: synthetic(section, kind)._replace(name="mine"))
  c = _bad(tmp_path, task__name="mine")
  done = config_lib.search_from_config(c, progress=False)
  assert len(done) == c.budget and json.loads((tmp_path / loop.SUMMARY).read_text())["task"] == "mine"


def test_missing_workdir_and_train_mismatch_are_named(tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", "ea_synthetic.py") + ":smoke")
  with pytest.raises(ValueError, match=r"config\.workdir: None.*--config\.workdir=DIR"):
    config_lib.check_search_config(c)
  c = smoke(os.path.join(ROOT, "configs", "random_mlp_diabetes.py"), tmp_path)
  c.task.dataset = "digits"
  with pytest.raises(ValueError, match=r"config\.task\.dataset: 'digits'.*classification problem"):
    config_lib.check_search_config(c)
  c.task.dataset, c.task.optimizer = "diabetes", "lbfgs"
  with pytest.raises(ValueError, match=r"config\.task\.optimizer: 'lbfgs'"):
    config_lib.check_search_config(c)


def test_the_padded_trainer_runs_an_mlp_search_and_is_refused_for_cnns(tmp_path):
  c = smoke(os.path.join(ROOT, "configs", "random_mlp_diabetes.py"), tmp_path)
  c.task.trainer = "padded"
  done = config_lib.search_from_config(c, progress=False)
  assert len(done) == c.budget and {r.info["task"]["trainer"] for r in done} == {"padded"}
  c.task.trainer = "fast"
  with pytest.raises(ValueError, match=r"config\.task\.trainer: 'fast'.*choose one of: specialised, padded, auto"):
    config_lib.check_search_config(c)
  c = smoke(os.path.join(ROOT, "configs", "random_cnn_digits.py"), tmp_path)
  c.task.trainer = "padded"  # CNNs have a padded model too (padded_cnn)
  config_lib.check_search_config(c)


@pytest.mark.parametrize(
  "arg, strategy, kind, function, kernel, modifiers, powers",
  [
    ("", "nasbot", "cnn", "f1", "combined", "all", (1.0, 2.0)),
    ("f2+unit", "nasbot", "mlp", "f2", "combined", "unit", (1.0, 2.0)),
    ("d_bar+smoke", "nasbot", "cnn", "f1", "d_bar", "all", (1.0, 2.0)),
    ("f3+structure+p21", "nasbot", "mlp", "f3", "combined", "structure", (2.0, 1.0)),
  ],
)
def test_synthetic_config_args_select_the_paper_ablations(arg, strategy, kind, function, kernel, modifiers, powers):
  c = config_files.load_config(os.path.join(ROOT, "configs", "nasbot_synthetic.py") + f":{arg}")
  assert (c.strategy, c.space.kind, c.task.function) == (strategy, kind, function)
  gp = c.strategy_config.surrogate_config
  assert (gp.kernel, c.space.modifiers) == (kernel, modifiers)
  assert (gp.p, gp.p_bar) == powers
  rand = config_files.load_config(os.path.join(ROOT, "configs", "rand_synthetic.py") + f":{arg}")
  assert (rand.strategy, rand.task.function, rand.space.modifiers) == ("rand", function, modifiers)


@pytest.mark.parametrize(
  "name, arg",
  [
    ("nasbot_synthetic.py", "d+d_bar"),
    ("nasbot_synthetic.py", "f1+f2"),
    ("ea_synthetic.py", "unit"),
    ("random_synthetic.py", "f4"),
  ],
)
def test_synthetic_config_args_refuse_conflicts_and_unknown_tokens(name, arg):
  with pytest.raises(ValueError, match="get_config: arg"):
    config_files.load_config(os.path.join(ROOT, "configs", name) + f":{arg}")


@pytest.mark.parametrize(
  "changes, match",
  [
    (dict(objectives="accuracy"), r"config\.objectives: 'accuracy'.*'accuracy' is not a cost metric"),
    (dict(objectives="params,params"), r"config\.objectives: 'params,params'.*names a metric twice"),
    (dict(constraints__max_params=-1.0), r"config\.constraints\.max_params: -1\.0.*finite number > 0, or 0"),
    (dict(constraints__max_weights=5.0), r"config\.constraints\.max_weights: 5\.0.*max_<metric> fields"),
  ],
)
def test_bad_costs_are_named(tmp_path, changes, match):
  with pytest.raises(ValueError, match=match):
    config_lib.check_search_config(_bad(tmp_path, **changes))


def test_a_task_that_knows_no_costs_refuses_them(tmp_path):
  c = smoke(os.path.join(ROOT, "configs", "random_conditional_digits.py"), tmp_path)
  c.objectives = "params"
  with pytest.raises(ValueError, match=r"config\.objectives: 'params'.*task 'conditional' knows the costs: none"):
    config_lib.check_search_config(c)


@pytest.mark.skipif(
  not os.path.isdir(os.path.join(SHARED_DATA, "nasbench201")),
  reason="../shared/data/nasbench201 is absent (the NB201 table, which the config check opens)",
)
def test_a_table_task_refuses_the_costs_it_does_not_know(tmp_path):
  c = smoke(os.path.join(ROOT, "configs", "random_nb201.py"), tmp_path)
  c.constraints.max_flops = 1e6
  with pytest.raises(ValueError, match=r"config\.constraints\.max_flops: 1000000\.0.*'nb201' knows the costs: params"):
    config_lib.check_search_config(c)


@pytest.mark.parametrize("strategy", ["ea", "nasbot"])
def test_a_search_under_a_parameter_budget_evaluates_nothing_above_it(tmp_path, strategy):
  c = smoke(os.path.join(ROOT, "configs", f"{strategy}_synthetic.py"), tmp_path)
  c.budget, c.objectives = 8, "params,flops"
  space, task, _ = config_lib.build_search(c)
  params = sorted(space.costs(p)["params"] for p in space.initial())
  c.constraints.max_params = params[len(params) // 2]  # the larger half of the pool is out
  done = config_lib.search_from_config(c, progress=False)
  assert len(done) == c.budget and all(o.ok for o in done)
  seen = [o.info["task"]["costs"]["params"] for o in done]
  assert max(seen) <= c.constraints.max_params and all(o.objectives["params"] == p for o, p in zip(done, seen))
  summary = json.loads((tmp_path / loop.SUMMARY).read_text())
  assert summary["objectives"] == [["value", task.goal], ["params", "min"], ["flops", "min"]]
  assert summary["pareto_front"] and {m["trial_id"] for m in summary["pareto_front"]} <= {o.trial_id for o in done}


@pytest.mark.slow  # three NB201 smoke searches a case (~20-40 s at load 1)
@pytest.mark.parametrize(
  "arg, budget, cut_at, variant_on, proposed_by_it, first",
  [
    # The chained fit (`:chain`: 4 starts, one from the previous full fit's optimum, every 7): cut
    # past the chained fit on 14, the resumed search refits the chain 7 -> 14; the GP proposes
    # from the chained fits after 14.
    pytest.param(
      ":smoke+chain", 22, 16, lambda s: s.chain_fits, lambda info: info.get("origin") == "ei", 14, id="chained"
    ),
    # The L-BFGS fit, in full every 7 evaluations and kept in between: cut between two full fits.
    pytest.param(
      ":smoke+lbfgs",
      15,
      12,
      lambda s: s.surrogate_config.fitter == "lbfgs",
      lambda info: info.get("origin") == "ei",
      0,
      id="lbfgs",
    ),
    pytest.param(
      ":smoke+screen",
      15,
      14,
      lambda s: s.optimizer_config.screen == 4,
      lambda info: info.get("screened", 0) > 0,
      0,
      id="screened_ea",
    ),
  ],
)
def test_an_nb201_nasbot_search_cut_short_resumes_to_the_same_journal(
  tmp_path, arg, budget, cut_at, variant_on, proposed_by_it, first
):
  """NASBOT (the chained fits `:chain`, the L-BFGS fit `:lbfgs`, the screened EA `:screen`) is a
  function of the journal: a search stopped after `cut_at` evaluations and resumed proposes the
  cells, with the same acquisition values, that an uninterrupted one does."""
  path = os.path.join(ROOT, "configs", "nasbot_nb201.py")
  whole, cut = (config_files.load_config(f"{path}{arg}") for _ in range(2))
  whole.workdir, cut.workdir = str(tmp_path / "whole"), str(tmp_path / "cut")
  _skip_without_data(whole)
  assert variant_on(whole.strategy_config) and whole.strategy_config.refit_every == 7 < cut_at < budget
  whole.budget = budget
  done = config_lib.search_from_config(whole, progress=False)
  cut.budget = cut_at
  config_lib.search_from_config(cut, progress=False)
  cut.budget = budget
  resumed = config_lib.search_from_config(cut, progress=False)
  strip = lambda obs: [
    (o.trial_id, o.arch_json["arch_str"], o.value, o.info["strategy"].get("acquisition")) for o in obs
  ]
  assert strip(resumed) == strip(done)
  assert sum(proposed_by_it(o.info["strategy"]) for o in done[first:]) >= 3  # the GP, or the screened EA, proposed some


def test_nasbot_nb201_screens_the_ea_only_when_asked():
  from nas_jax.search.strategies.presets import EA_SCREEN

  path = os.path.join(ROOT, "configs", "nasbot_nb201.py")
  screen = lambda arg: config_files.load_config(f"{path}{arg}").strategy_config.optimizer_config.screen
  assert (screen(""), screen(":screen"), screen(":screen+zc_prior"), screen(":smoke+screen")) == (
    0,
    EA_SCREEN,
    EA_SCREEN,
    4,
  )


def test_nasbot_nb201_takes_one_refit_schedule():
  path = os.path.join(ROOT, "configs", "nasbot_nb201.py")
  for arg in ("every1+warm", "every7+warm", "every1+every7"):
    with pytest.raises(ValueError, match="every1, every7 and warm are refit schedules, choose one"):
      config_files.load_config(f"{path}:{arg}")
  schedules = {
    arg: config_files.load_config(f"{path}:{arg}" if arg else path).strategy_config
    for arg in ("", "every7", "every1", "warm")
  }
  assert {arg: (c.refit_every, c.surrogate_config.warm_steps) for arg, c in schedules.items()} == {
    "": (7, 0),  # the authors' code's: a full fit every 7 evaluations, the hyper-parameters kept between
    "every7": (7, 0),  # the default's, by name (the commands of earlier records use it)
    "every1": (1, 0),
    "warm": (10, 20),
  }
  fast = config_files.load_config(f"{path}:lbfgs").strategy_config
  assert (fast.refit_every, fast.surrogate_config.warm_steps, fast.surrogate_config.fitter) == (7, 0, "lbfgs")


def test_nasbot_nb201_chains_four_starts_only_when_asked():
  """`:chain` fits from 4 starts, one from the previous full fit's optimum, every 7 evaluations;
  the default fits from 16 random starts, no chain."""
  path = os.path.join(ROOT, "configs", "nasbot_nb201.py")
  chain = config_files.load_config(f"{path}:chain").strategy_config
  assert (chain.chain_fits, chain.refit_every, chain.surrogate_config.n_starts) == (True, 7, 4)
  old = config_files.load_config(path).strategy_config
  assert (old.chain_fits, old.refit_every, old.surrogate_config.n_starts, old.surrogate_config.fit_steps) == (
    False,
    7,
    16,
    200,
  )
