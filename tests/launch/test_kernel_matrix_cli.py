"""launch/kernel_matrix.py on a journal of autokeras networks: MSE, shuffled baseline, heatmap."""

import os

import jax
import numpy as np

from nas_jax.search import journal, loop
from nas_jax.search.state import Observation, Status
from nas_jax.spaces.morph_space import morph_space


def test_cli_pools_workdirs_and_reports_the_mse(launch, tmp_path):
  space = morph_space(width=8)
  points = space.sample(jax.random.key(0), 12)
  rng = np.random.default_rng(0)
  for w, chunk in (("a", points[:6]), ("b", points[6:])):
    os.makedirs(tmp_path / w)
    for i, p in enumerate(chunk):
      journal.append(
        str(tmp_path / w / loop.JOURNAL),
        Observation(
          trial_id=i,
          arch_json=space.to_json(p),
          value=float(rng.uniform(0.8, 1.0)),
          status=Status.OK,
          error="",
          seconds=1.0,
          worker="test",
        ),
      )
  plot = tmp_path / "k.png"
  p = launch("launch/kernel_matrix.py", f"--workdirs={tmp_path / 'a'},{tmp_path / 'b'}", f"--plot={plot}")
  assert p.returncode == 0, p.stderr[-3000:]
  assert "networks; MSE(normal scores of K, of P) = 0." in p.stdout and "shuffled" in p.stdout
  assert plot.stat().st_size > 0
  bad = launch("launch/kernel_matrix.py", f"--workdirs={tmp_path / 'missing'}")
  assert bad.returncode != 0 and "has no journal.jsonl" in bad.stderr
