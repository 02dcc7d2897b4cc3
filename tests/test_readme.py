"""The README and the manual (docs/**/*.md) say only what is true of this checkout.

Every ```python block runs (a block preceded by `<!-- no-test -->` is illustrative and skipped;
blocks may register spaces or strategies, and the registries are restored after each). Every
command of a ```bash block names scripts and configs that exist, with config arguments that
`get_config` accepts and `--config.<field>` overrides that are fields. Every `nas_jax.a.b` name
and every repository path the pages mention exists. Pages generated at build time
(docs/generated/, docs/_build/) are not read."""

import glob
import importlib
import os
import re
import shlex

import pytest

from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files
from nas_jax.wiring.parts import SPACES, STRATEGIES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
GENERATED = tuple(os.path.join(ROOT, "docs", d) + os.sep for d in ("generated", "_build"))
PAGES = sorted(
  p for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True) if not p.startswith(GENERATED)
)
DOCS = [README] + PAGES
REGISTRIES = (SPACES, STRATEGIES, config_lib.TASKS, config_lib.EXECUTORS)


def _text(path):
  with open(path) as f:
    return f.read()


def _blocks(path, language="python"):
  out = []
  for m in re.finditer(rf"(<!-- no-test -->\s*)?```{language}\n(.*?)```", _text(path), re.S):
    if not m.group(1):
      out.append(m.group(2))
  return out


def _params():
  for path in DOCS:
    name = os.path.relpath(path, ROOT)
    for index, code in enumerate(_blocks(path)):
      yield pytest.param(name, code, id=f"{name}-{index}")


def test_the_front_door_and_the_extension_guide_have_running_examples():
  assert os.path.join(ROOT, "docs", "extending.md") in DOCS
  assert _blocks(README) and _blocks(os.path.join(ROOT, "docs", "extending.md"))
  assert len(PAGES) >= 15, "the manual's pages are docs/*.md"


@pytest.fixture
def restore_registries():
  saved = [dict(r) for r in REGISTRIES]
  yield
  for registry, old in zip(REGISTRIES, saved):
    registry.clear()
    registry.update(old)


@pytest.mark.parametrize("name, code", list(_params()))
def test_docs_python_block_runs(name, code, tmp_path, monkeypatch, restore_registries):
  monkeypatch.chdir(tmp_path)
  exec(compile(code, name, "exec"), {"__name__": "__docs__"})


def _commands():
  """(page, argv) of every `python launch/...` or `python benchmarks/...` line of a bash block."""
  for path in DOCS:
    for block in _blocks(path, "bash"):
      for line in block.replace("\\\n", " ").splitlines():
        argv = shlex.split(line, comments=True)
        if len(argv) > 1 and argv[0] == "python" and argv[1].startswith(("launch/", "benchmarks/")):
          yield os.path.relpath(path, ROOT), argv[1:]


def test_docs_commands_name_scripts_configs_and_fields_that_exist():
  commands = list(_commands())
  assert len(commands) > 30
  loaded = {}
  for page, (script, *flags) in commands:
    assert os.path.isfile(os.path.join(ROOT, script)), f"{page}: {script} does not exist"
    specs = [f.split("=", 1)[1] for f in flags if f.startswith("--config=")]
    specs += [s for f in flags if f.startswith("--configs=") for s in f.split("=", 1)[1].split(",")]
    fields = [f[len("--config.") :].split("=", 1)[0] for f in flags if f.startswith("--config.")]
    fields += [f[len("--set=") :].split("=", 1)[0] for f in flags if f.startswith("--set=")]
    for spec in specs:
      if spec not in loaded:
        loaded[spec] = config_files.load_config(os.path.join(ROOT, spec))  # get_config(arg) accepts the arg
      missing = config_files.first_missing_field(loaded[spec], fields)
      assert missing is None, f"{page}: {script} --config={spec}: {missing}"


def _resolves(dotted):
  parts = dotted.split(".")
  for cut in range(len(parts), 0, -1):
    try:
      obj = importlib.import_module(".".join(parts[:cut]))
    except ImportError:
      continue
    for attr in parts[cut:]:
      if not hasattr(obj, attr):
        return False
      obj = getattr(obj, attr)
    return True
  return False


def test_docs_name_only_modules_objects_and_files_that_exist():
  for path in DOCS:
    text, page = _text(path), os.path.relpath(path, ROOT)
    for dotted in set(re.findall(r"`~?(nas_jax(?:\.\w+)+)", text)):
      assert _resolves(dotted), f"{page}: {dotted} does not exist"
    for name in set(
      re.findall(r"\b((?:nas_jax|configs|launch|benchmarks|tests|colabs|docs)/[\w/.-]+\.(?:py|md|ipynb))", text)
    ):
      assert os.path.exists(os.path.join(ROOT, name)), f"{page}: {name} does not exist"
