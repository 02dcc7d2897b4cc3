"""launch/distance.py end to end: Fig. 1 networks to D.json and plots; bad files name the culprit."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "arch"))
from networks import FIG1A, FIG1B, FIG3_LEFT  # noqa: E402


def test_cli_writes_distances_heatmap_embedding_and_drawings(launch, tmp_path):
  archs = tmp_path / "A.json"
  archs.write_text(json.dumps([FIG1A, FIG1B, FIG3_LEFT]))
  out, heat, tsne = tmp_path / "D.json", tmp_path / "h.png", tmp_path / "t.png"
  p = launch(
    "launch/distance.py",
    f"--archs={archs}",
    "--nu_str=0.5",
    f"--out={out}",
    f"--plot={heat}",
    f"--embed={tsne}",
    f"--draw={tmp_path / 'drawings'}",
    "--draw_count=2",
  )
  assert p.returncode == 0, p.stderr[-3000:]
  record = json.loads(out.read_text())
  assert record["d"][0][1] == pytest.approx(0.5 * 275.32, rel=1e-9)  # NASBOT Fig. 1 pair, experiment masses
  assert record["d"][1][0] == record["d"][0][1] and record["d"][2][2] == 0.0
  assert record["d_bar"][0][1] == pytest.approx(137.66 / (2 * 2458.56), rel=1e-9)
  assert record["params"]["preset"] == "paper" and record["params"]["mass"]["res_mass_factor"] == 2.0
  assert heat.stat().st_size > 0 and tsne.stat().st_size > 0
  assert sorted(os.listdir(tmp_path / "drawings")) == ["arch0.png", "arch1.png"]


def test_cli_rectangular_several_nus_and_sinkhorn(launch, tmp_path):
  (tmp_path / "A.json").write_text(json.dumps([FIG1A]))
  (tmp_path / "B.json").write_text(json.dumps([FIG1B, FIG1A]))
  out = tmp_path / "D.json"
  p = launch(
    "launch/distance.py",
    f"--archs={tmp_path / 'A.json'}",
    f"--archs_b={tmp_path / 'B.json'}",
    "--nu_str=0.1,0.8",
    "--solver=sinkhorn",
    "--params=nasbot_code",
    f"--out={out}",
  )
  assert p.returncode == 0, p.stderr[-3000:]
  d = json.loads(out.read_text())["d"]
  assert d[0][0][0] == pytest.approx(27.532, rel=1e-2) and d[1][0][0] == pytest.approx(220.256, rel=1e-2)
  assert d[0][0][1] == pytest.approx(0.0, abs=1.0)


def test_cli_names_the_bad_architecture_without_a_traceback(launch, tmp_path):
  bad = json.loads(json.dumps(FIG1B))
  bad["layers"][2]["units"] = 0
  (tmp_path / "A.json").write_text(json.dumps([FIG1A, bad]))
  p = launch("launch/distance.py", f"--archs={tmp_path / 'A.json'}", f"--out={tmp_path / 'D.json'}")
  assert p.returncode != 0 and "Traceback" not in p.stderr
  assert "A.json[1]: layers[2].units: 0 is not allowed" in p.stderr
  assert not (tmp_path / "D.json").exists()


def test_cli_rejects_a_file_that_is_not_a_list(launch, tmp_path):
  (tmp_path / "A.json").write_text(json.dumps(FIG1A))
  p = launch("launch/distance.py", f"--archs={tmp_path / 'A.json'}", f"--out={tmp_path / 'D.json'}")
  assert p.returncode != 0 and "Traceback" not in p.stderr
  assert "A.json: expected a non-empty JSON list of architectures" in p.stderr
