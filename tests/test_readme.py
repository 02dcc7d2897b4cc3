"""Every ```python block of the README runs (blocks preceded by `<!-- no-test -->` are skipped)."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _blocks(path):
  text = open(path).read()
  out = []
  for m in re.finditer(r"(<!-- no-test -->\s*)?```python\n(.*?)```", text, re.S):
    if not m.group(1):
      out.append(m.group(2))
  return out


@pytest.mark.parametrize("index, code", list(enumerate(_blocks(os.path.join(ROOT, "README.md")))))
def test_readme_python_block_runs(index, code, tmp_path, monkeypatch):
  del index
  monkeypatch.chdir(tmp_path)
  exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
