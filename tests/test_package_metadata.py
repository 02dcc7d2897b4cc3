"""The licence and the package metadata agree: LICENSE is the Apache License 2.0 as the Apache
Software Foundation publishes it, and setup.py, CITATION.cff and the README say the same licence
and version."""

import ast
import hashlib
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The MD5 of the foundation's text (http://www.apache.org/licenses/LICENSE-2.0.txt), the same file
# that jax's and Debian's copies are.
APACHE_2_MD5 = "3b83ef96387f14655fc854ddc3c6bd57"


def _read(name: str) -> str:
  with open(os.path.join(ROOT, name), encoding="utf-8") as f:
    return f.read()


def _setup_kwargs() -> dict:
  """The literal keyword arguments of setup.py's setuptools.setup(...) call."""
  tree = ast.parse(_read("setup.py"))
  call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "setup")
  out = {}
  for kw in call.keywords:
    try:
      out[kw.arg] = ast.literal_eval(kw.value)
    except ValueError:
      out[kw.arg] = None  # computed (e.g. the long description read from the README)
  return out


def test_licence_is_the_apache_2_text():
  with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
    assert hashlib.md5(f.read()).hexdigest() == APACHE_2_MD5


def test_setup_declares_the_licence_and_reads_the_readme():
  kw = _setup_kwargs()
  assert kw["license"] == "Apache-2.0"
  assert "License :: OSI Approved :: Apache Software License" in kw["classifiers"]
  assert kw["long_description_content_type"] == "text/markdown"
  assert "long_description" in kw and kw["project_urls"]


def test_citation_file_names_the_same_licence_and_version():
  yaml = pytest.importorskip("yaml", reason="PyYAML (a dependency of ray, in the test extra) is not installed")
  cff = yaml.safe_load(_read("CITATION.cff"))
  assert cff["cff-version"] == "1.2.0"
  assert cff["license"] == _setup_kwargs()["license"]
  assert str(cff["version"]) == _setup_kwargs()["version"]
  assert {"title", "authors", "message"} <= set(cff)


def test_readme_states_the_licence():
  licence = _read("README.md").split("## Licence", 1)[1]
  assert "Apache License, Version 2.0" in licence and "(LICENSE)" in licence
  assert re.search(r"keeps its own terms", licence)
