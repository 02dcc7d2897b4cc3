"""Every ```python block of the README and of docs/*.md runs (blocks preceded by `<!-- no-test -->`
are skipped). Blocks may register spaces or strategies; the registries are restored after each."""

import glob
import os
import re

import pytest

from nas_jax.wiring import config as config_lib
from nas_jax.wiring.parts import SPACES, STRATEGIES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
REGISTRIES = (SPACES, STRATEGIES, config_lib.TASKS, config_lib.EXECUTORS)


def _blocks(path):
  text = open(path).read()
  out = []
  for m in re.finditer(r"(<!-- no-test -->\s*)?```python\n(.*?)```", text, re.S):
    if not m.group(1):
      out.append(m.group(2))
  return out


def _params():
  for path in DOCS:
    name = os.path.relpath(path, ROOT)
    for index, code in enumerate(_blocks(path)):
      yield pytest.param(name, code, id=f"{name}-{index}")


def test_docs_have_python_blocks():
  assert os.path.join(ROOT, "docs", "extending.md") in DOCS
  assert all(_blocks(path) for path in DOCS)


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
