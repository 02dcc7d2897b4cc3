"""Every launch script answers a user's mistake with one line on stderr and exit code 2 (launch/_cli.py):
what was wrong, which flag, file or config field, what is allowed; `--verbose` keeps the traceback.
A refused search leaves the workdir as it was."""

import fcntl
import json
import os
import re

import pytest

SMOKE = "--config=configs/ea_synthetic.py:smoke"


def _one_line(p, script, pattern):
  lines = [l for l in p.stderr.splitlines() if l.strip()]
  assert p.returncode == 2, p.stderr
  assert len(lines) == 1, p.stderr
  assert lines[0].startswith(f"{script}: error: "), lines[0]
  assert re.search(pattern, lines[0]), lines[0]
  assert "Traceback" not in lines[0], lines[0]


CASES = [
  (
    ["launch/search.py", SMOKE, "--config.budgett=5", "--config.workdir=W"],
    r"--config\.budgett: no such field in configs/ea_synthetic\.py:smoke: config has no field 'budgett'; did you "
    r"mean 'budget'\? its fields are .*budget, ",
  ),
  (
    ["launch/search.py", SMOKE, "--config.task.functio=f2", "--config.workdir=W"],
    r"--config\.task\.functio: .* config\.task has no field 'functio'; did you mean 'function'\?",
  ),
  (
    # ml_collections said only "'eta'": no near name, and the flag was not named
    [
      "launch/search.py",
      "--config",
      "configs/multifidelity_nb201.py:asha_random",
      "--config.eta=3",
      "--config.workdir=W",
    ],
    r"--config\.eta: no such field in configs/multifidelity_nb201\.py:asha_random: config has no field 'eta'; its "
    r"fields are .*scheduler, scheduler_config, ",
  ),
  (
    # ml_collections said "string indices must be integers"
    ["launch/search.py", SMOKE, "--config.strategy.eta=3", "--config.workdir=W"],
    r"--config\.strategy\.eta: .* config\.strategy is a str \('ea'\), not a group of fields$",
  ),
  (["launch/search.py", "--config=configs/nope.py", "--config.workdir=W"], r"--config=configs/nope\.py: no such file"),
  (["launch/search.py"], r"--config"),
  (["launch/search.py", SMOKE, "--config.workdir=FILE"], r"config\.workdir: .* it is a file; expected a folder"),
  (
    ["launch/search.py", SMOKE, "--config.strategy=foo", "--config.workdir=W"],
    r"config\.strategy: 'foo' .* choose one of: .*nasbot",
  ),
  (["launch/search.py", SMOKE, "--config.budget=0", "--config.workdir=W"], r"config\.budget: 0"),
  (
    [
      "launch/search.py",
      "--config=configs/random_nb201.py:smoke",
      "--config.task.path=/nonexistent",
      "--config.workdir=W",
    ],
    r"config\.task\.path: '/nonexistent' not found: .* never downloaded.*launch/nb201_data\.py .*docs/nb201_data\.md",
  ),
  (["launch/report.py", "--workdir=W"], r"workdir: .* has no journal\.jsonl"),
  (["launch/compare.py", "--configs=configs/nope.py", "--out=W", "--budget=2"], r"configs/nope\.py"),
  (
    ["launch/search.py", "--config=configs/multifidelity_nb201.py:asha_foo", "--config.workdir=W"],
    r"^search\.py: error: --config=configs/multifidelity_nb201\.py:asha_foo: get_config: arg must be .* got 'asha_foo'$",
  ),
  (
    ["launch/train.py", "--config", "configs/train_pool.py:foo"],
    r"^train\.py: error: --config=configs/train_pool\.py:foo: get_config: arg must be '' or 'smoke', got 'foo'$",
  ),
  (
    ["launch/compare.py", "--configs=configs/ea_synthetic.py,configs/multifidelity_nb201.py:asha_foo", "--out=W"],
    r"configs: configs/multifidelity_nb201\.py:asha_foo: get_config: arg must be .* got 'asha_foo'$",
  ),
  (
    ["launch/compare.py", "--configs=configs/ea_synthetic.py", "--set=task.epochs=3", "--out=W"],
    r"--set=task\.epochs=\.\.\.: not a field of configs/ea_synthetic\.py: config\.task has no field 'epochs'",
  ),
  (["launch/distance.py", "--archs=/nonexistent.json", "--out=W"], r"nonexistent\.json: cannot read a JSON list"),
  (["launch/distance.py", "--archs=ONE", "--out=W"], r"--archs: .* holds one architecture; a distance needs two"),
  (["launch/nb201_table.py", "--out=W", "--datasets=mnist"], r"--datasets: \['mnist'\] unknown"),
  (["launch/search.py", SMOKE, "extra", "--config.workdir=W"], r"unexpected arguments"),
]


@pytest.mark.parametrize("args, pattern", CASES, ids=[" ".join(a[:1] + a[2:3]) for a, _ in CASES])
def test_a_mistake_is_one_line_and_exit_2(launch, tmp_path, args, pattern):
  (tmp_path / "file").write_text("")
  (tmp_path / "one.json").write_text(
    json.dumps(
      [{"kind": "mlp", "layers": [{"label": "ip"}, {"label": "linear"}, {"label": "op"}], "edges": [[0, 1], [1, 2]]}]
    )
  )
  args = [
    a.replace("=W", f"={tmp_path / 'w'}")
    .replace("=FILE", f"={tmp_path / 'file'}")
    .replace("=ONE", f"={tmp_path / 'one.json'}")
    for a in args
  ]
  _one_line(launch(*args), os.path.basename(args[0]), pattern)


def test_verbose_keeps_the_traceback(launch, tmp_path):
  p = launch("launch/search.py", SMOKE, "--config.strategy=foo", f"--config.workdir={tmp_path}", "--verbose")
  assert p.returncode != 0 and "Traceback" in p.stderr and "config.strategy: 'foo'" in p.stderr


def test_a_refused_search_leaves_the_workdir_as_it_was(launch, tmp_path):
  ok = launch("launch/search.py", SMOKE, f"--config.workdir={tmp_path}", "--noprogress")
  assert ok.returncode == 0, ok.stderr
  before = {f.name: f.read_bytes() for f in tmp_path.iterdir() if f.is_file()}
  assert json.loads(before["config.json"])["task"]["function"] == "f1"

  other = launch("launch/search.py", "--config=configs/ea_synthetic.py:smoke+f2", f"--config.workdir={tmp_path}")
  _one_line(other, "search.py", r"holds a search with another config \(.*task\.function='f1' there, 'f2' here")

  fd = os.open(tmp_path, os.O_RDONLY)  # a live search holds the workdir
  fcntl.flock(fd, fcntl.LOCK_EX)
  try:
    busy = launch("launch/search.py", SMOKE, f"--config.workdir={tmp_path}", "--config.budget=8")
  finally:
    os.close(fd)
  _one_line(busy, "search.py", r"another search is running in it")
  assert {f.name: f.read_bytes() for f in tmp_path.iterdir() if f.is_file()} == before

  more = launch("launch/search.py", SMOKE, f"--config.workdir={tmp_path}", "--config.budget=8", "--noprogress")
  assert more.returncode == 0 and "after 8 evaluations" in more.stdout, more.stderr


@pytest.mark.parametrize(
  "source, says",
  [
    ("import ml_collections\ndef get_config(:\n  pass\n", r":2: SyntaxError: invalid syntax"),
    (
      "import ml_collections\nimport no_such_module_xyz\n",
      r":2: ModuleNotFoundError: No module named 'no_such_module_xyz'",
    ),
    ("X = 1\nY = undefined_name\n", r":2: NameError: name 'undefined_name' is not defined"),
  ],
  ids=["syntax", "import", "name"],
)
def test_a_config_file_that_fails_to_import_gives_its_file_and_line(launch, tmp_path, source, says):
  config = tmp_path / "broken.py"
  config.write_text(source)
  p = launch("launch/search.py", f"--config={config}", f"--config.workdir={tmp_path / 'w'}")
  _one_line(p, "search.py", re.escape(str(config)) + says)
