"""launch/_env.py: the environment every launch script sets before importing jax."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SHOW = (
  "import sys; sys.path.insert(0, 'launch'); import _env, os; "
  "print(os.environ['OPENBLAS_NUM_THREADS'], repr(os.environ['JAX_COMPILATION_CACHE_DIR']))"
)


def _env_after_import(**env):
  base = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "JAX_COMPILATION_CACHE_DIR")}
  out = subprocess.run(
    [sys.executable, "-c", _SHOW], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, check=True
  )
  return out.stdout.split(maxsplit=1)


def test_defaults_are_one_blas_thread_and_a_user_cache():
  threads, cache = _env_after_import(HOME="/tmp/nas_jax_home")
  assert threads == "1" and cache.strip() == repr("/tmp/nas_jax_home/.cache/nas_jax/xla")


def test_user_settings_win_and_an_empty_cache_dir_stays_off():
  threads, cache = _env_after_import(OPENBLAS_NUM_THREADS="2", JAX_COMPILATION_CACHE_DIR="")
  assert threads == "2" and cache.strip() == "''"
