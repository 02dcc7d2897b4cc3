"""launch/report.py end to end: a search workdir gets its report.html; a folder without a journal
is refused with a message that names it, not a traceback."""

import os

from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_cli_writes_the_report_of_a_workdir(launch, tmp_path):
  c = config_files.load_config(os.path.join(ROOT, "configs", "random_synthetic.py") + ":smoke")
  c.workdir = str(tmp_path / "run")
  config_lib.search_from_config(c, progress=False)
  p = launch("launch/report.py", f"--workdir={c.workdir}", "--top_k=2")
  assert p.returncode == 0, p.stderr[-3000:]
  page = (tmp_path / "run" / "report.html").read_text()
  assert p.stdout.strip() == f"wrote {c.workdir}/report.html"
  assert page.count("data:image/png;base64,") == 1 + 2 and page.count("<tr data-trial=") == c.budget


def test_cli_names_a_workdir_without_a_journal(launch, tmp_path):
  p = launch("launch/report.py", f"--workdir={tmp_path}")
  assert p.returncode != 0 and "Traceback" not in p.stderr
  assert f"report.py: error: workdir: '{tmp_path}' has no journal.jsonl" in p.stderr
