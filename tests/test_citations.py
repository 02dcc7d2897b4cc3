"""The manual and the code stand alone: they cite the papers (section, equation, table, appendix;
docs/bibliography.md) and the authors' public code, never files that are not in the repository.

A citation of an outside file looks like "spec §3", "spec App. R", "spec 10.3", "spec nasbot.md",
"autokeras.md 4.3", "the spec's ..." or "App. R" (no cited paper has an Appendix R). The scan reads
every text file of the repository's own trees (the package, docs, README, launch scripts, configs,
benchmarks and their records, the notebooks' JSON sources, the tests, setup.py); this file is left
out, since it spells the forms it looks for.
"""

import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THIS = os.path.abspath(__file__)
TREES = ("nas_jax", "docs", "launch", "configs", "benchmarks", "colabs", "tests")
FILES = ("README.md", "setup.py", "CITATION.cff")
TEXT = (".py", ".md", ".ipynb", ".json", ".txt", ".cfg", ".toml", ".yaml", ".yml", ".rst", ".cff")
# Build outputs and caches under the trees: not sources.
SKIP_DIRS = {"__pycache__", "_build", "generated", ".ipynb_checkpoints", ".pytest_cache"}
# The development notes' names: "<name>.md <number>" is a citation of a note even where a manual
# page of the same name exists (a manual page has no numbered sections).
NOTES = ("nasbot.md", "bananas.md", "autokeras.md", "arc_kernel.md", "zero_cost.md")

_SPEC = re.compile(r"\bspec(?:\s*§|\s+App(?:\.|endix)|\s+\d|\s+`?[\w-]+\.md\b)", re.IGNORECASE)
_THE_SPECS = re.compile(r"\bthe spec's\b", re.IGNORECASE)
_APPENDIX_R = re.compile(r"\bApp(?:\.|endix)\s*R\b")
_MD_SECTION = re.compile(r"(?<![\w/.-])([\w-]+\.md)\s+(?:§\s*)?\d")


def _resolves(name: str, folder: str) -> bool:
  """Whether `name` is a repository file seen from the citing file's folder or from the root."""
  return any(os.path.isfile(os.path.join(base, name)) for base in (folder, ROOT))


def citations(path: str) -> list[tuple[int, str]]:
  """(line number, line) of every citation of a file outside the repository in the file at `path`."""
  with open(path, encoding="utf-8", errors="replace") as f:
    lines = f.read().splitlines()
  folder, out = os.path.dirname(path), []
  for number, line in enumerate(lines, 1):
    hit = _SPEC.search(line) or _THE_SPECS.search(line) or _APPENDIX_R.search(line)
    if not hit:
      hit = next(
        (m for m in _MD_SECTION.finditer(line) if m.group(1) in NOTES or not _resolves(m.group(1), folder)),
        None,
      )
    if hit:
      out.append((number, line.strip()))
  return out


def _sources() -> list[str]:
  """Every text file of FILES and TREES but this one, build outputs and caches left out."""
  paths = [os.path.join(ROOT, name) for name in FILES if os.path.isfile(os.path.join(ROOT, name))]
  for tree in TREES:
    for folder, dirs, names in os.walk(os.path.join(ROOT, tree)):
      dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
      paths += [os.path.join(folder, n) for n in sorted(names) if n.endswith(TEXT)]
  return [p for p in paths if os.path.abspath(p) != THIS]


def test_the_scan_reads_every_tree():
  scanned = {os.path.relpath(p, ROOT).split(os.sep)[0] for p in _sources()}
  assert set(TREES) | {"README.md", "setup.py"} <= scanned


def test_nothing_cites_a_file_outside_the_repository():
  found = [f"{os.path.relpath(path, ROOT)}:{n}: {line[:160]}" for path in _sources() for n, line in citations(path)]
  assert not found, (
    "cite the paper (docs/bibliography.md: e.g. 'NASBOT App. A.3', 'BANANAS Sec. 4') or the authors'"
    " code by repository, or say 'our choice', instead of:\n" + "\n".join(found)
  )


# Lines as they stood before the citations were rewritten (issue 63), one per form.
OLD_LINES = [
  "OTMANN (NASBOT, spec §3) measures how far apart two networks are as an optimal transport problem.",
  "code (spec App. R); an `OtmannParams` overrides any constant.",
  '"""Search-space limits of spec nasbot.md 1.4 (App. B.3)."""',
  '"""Trains one architecture on a dataset and scores it by its best validation error (spec 10.3).',
  '"""Bourgain embedding of a distance matrix (autokeras.md 4.3) and its out-of-sample map (4.4):',
  "Auto-Keras (Jin et al.; spec `autokeras.md`) grows networks of one family by function-preserving",
  "Raw exp(-d) is not a valid kernel (the spec's E9 has a negative eigenvalue), so the history is",
  "# The arc paper's boxes (arc_kernel.md 4): omega and the length-scales span the same inverse",
  "ranks best (zero_cost.md 4, move proposal), e.g. the best quarter of BANANAS' mutants",
  "  (App. B.2); default constants from Appendix R.",
  "Targets are normalised, so every box is relative to Var(Y) (nasbot.md App. R). Raises",
  "    \"## The arc kernel's distance: the spec's known values\\n\",",
  "- mutation   BANANAS' candidate set (bananas.md 7): mutants of the best observed points.",
  "# Spec 12.7, as scores (nas_jax maximises): mean = -f, best = -y_min.",
]

# Lines that name a specification of something in the code, or a real file: never citations.
FINE_LINES = [
  "  masked = Nb201Net(spec)",
  '    raise TypeError(f"spec: got a {type(spec).__name__}; expected an Nb201Spec")',
  "def load_config(spec: str) -> ml_collections.ConfigDict:",
  "  spec = cond_point.conditional_spec(3)",
  '  """The spec of networks of 1..max_depth layers.',
  "BANANAS (White et al.) is BO, see [BANANAS](bananas.md) and docs/bananas.md.",
  "OTMANN ([NASBOT](bibliography.md#nasbot), Sec. 3) measures how far apart two networks are.",
  "Layer masses lm(u) (NASBOT Sec. 3; App. A.3); the authors' code (github.com/kirthevasank/nasbot).",
  "Written to WORKDIR/table.md and nmse.png; README.md 2 lines above.",
]


def test_the_matcher_catches_every_old_form(tmp_path):
  path = tmp_path / "old.py"
  path.write_text("\n".join(OLD_LINES) + "\n", encoding="utf-8")
  assert [n for n, _ in citations(str(path))] == list(range(1, len(OLD_LINES) + 1))


@pytest.mark.parametrize("line", FINE_LINES)
def test_the_matcher_leaves_code_and_real_files_alone(tmp_path, line):
  path = tmp_path / "fine.md"
  path.write_text(line + "\n", encoding="utf-8")
  assert citations(str(path)) == []


def test_a_file_that_exists_beside_the_citing_file_is_not_an_outside_citation(tmp_path):
  (tmp_path / "notes.md").write_text("# Notes\n", encoding="utf-8")
  page = tmp_path / "page.md"
  page.write_text("see notes.md 2 and missing.md 3\n", encoding="utf-8")
  assert citations(str(page)) == [(1, "see notes.md 2 and missing.md 3")]  # for missing.md
  page.write_text("see notes.md 2\n", encoding="utf-8")
  assert citations(str(page)) == []
