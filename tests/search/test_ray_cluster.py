"""A search on an existing Ray cluster, by address: a head started with `ray start` on the loopback
address, the search CLI connected to it with --config.ray_address, every evaluation journalled."""

import os
import shutil
import socket
import subprocess
import sys

import pytest

from nas_jax.search import journal, loop

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RAY = shutil.which("ray", path=os.path.dirname(sys.executable))


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


@pytest.mark.skipif(RAY is None, reason="ray is not installed (pip install -e '.[test]' installs it)")
def test_a_search_runs_on_a_ray_head_given_by_address(tmp_path, ray_alone):
  port = _free_port()
  env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "JAX_COMPILATION_CACHE_DIR": ""}
  head = [RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2"]
  subprocess.run([*head, "--include-dashboard=false"], env=env, check=True, capture_output=True, timeout=120)
  try:
    p = subprocess.run(
      [
        sys.executable,
        "launch/search.py",
        "--config=configs/ea_synthetic.py:smoke",
        f"--config.workdir={tmp_path}",
        "--config.executor=ray",
        f"--config.ray_address=127.0.0.1:{port}",
        "--config.num_workers=2",
        "--noprogress",
      ],
      cwd=ROOT,
      env=env,
      capture_output=True,
      text=True,
      timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    done = journal.replay(tmp_path / loop.JOURNAL)
    assert len(done) == 6 and all(o.ok and o.worker.startswith("ray:") for o in done)
  finally:
    subprocess.run([RAY, "stop", "--force"], env=env, capture_output=True, timeout=120)
