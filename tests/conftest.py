"""Test-wide settings: float64 for GP algebra, a per-process XLA cache, a quick-to-compile XLA
level, the `slow` marker switch, a compile counter, a lock that keeps the Ray tests apart when
pytest-xdist runs tests side by side, and `launch`: a script run as from the command line, answered
in a fraction of a second where a fresh interpreter spends seconds importing jax
(tests/script_server.py)."""

import os

# Before jax: OpenBLAS threads fight XLA's pool (a float64 Cholesky ~30x slower otherwise).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Before jax, and inherited by the launch scripts, workers and notebook kernels the tests start:
# LLVM's lowest optimisation level for the programs XLA compiles, without its expensive passes. The
# suite compiles thousands of small programs and runs each briefly, so compiling them is much of its
# time (the second flag takes ~6% off compile-bound test files). XLA's own (HLO) optimisations are
# unchanged; the machine code may round differently, as another CPU's does, which the checks against
# stored outputs (the manual's notebooks) tolerate. Set XLA_FLAGS to run the tests compiled otherwise.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")

import contextlib  # noqa: E402
import fcntl  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402


def _session_compilation_cache() -> str | None:
  """A persistent XLA cache for this test process, shared by the launch scripts and notebook
  kernels it starts (they inherit the environment); returns the folder it made, which
  `pytest_unconfigure` removes, or None. Many tests rebuild the same jitted programs from fresh
  closures, which jax's in-memory cache does not recognise but the persistent one (keyed by the
  program) does. It also keeps the tests out of the user's own `~/.cache/nas_jax/xla`; a folder set
  before pytest started is used as given ("" turns the cache off). Each pytest-xdist worker makes
  its own, as jax's cache files are not written atomically."""
  if "JAX_COMPILATION_CACHE_DIR" not in os.environ or "NAS_JAX_TESTS_XLA_CACHE" in os.environ:
    path = tempfile.mkdtemp(prefix="nas_jax_tests_xla_")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ["NAS_JAX_TESTS_XLA_CACHE"] = path
  else:
    path = None
  os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")  # tests compile small programs
  os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")
  return path


_XLA_CACHE = _session_compilation_cache()

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")
SCRIPT_SERVER = os.path.join(ROOT, "tests", "script_server.py")


def pytest_addoption(parser):
  parser.addoption("--runslow", action="store_true", default=False, help="also run tests marked slow")


def pytest_unconfigure(config):
  if _XLA_CACHE is not None:
    shutil.rmtree(_XLA_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
  if config.getoption("--runslow"):
    return
  skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
  for item in items:
    if "slow" in item.keywords:
      item.add_marker(skip_slow)


@pytest.fixture
def fuzz_examples(request) -> int:
  """Inputs per `fuzz` test: 10,000 with --runslow (how .ci/run runs them), 200 by default, where
  the 10,000 would cost minutes of hypothesis' input generation per parser."""
  return 10_000 if request.config.getoption("--runslow") else 200


@pytest.fixture
def count_compiles():
  """`with count_compiles() as n:` ... then `n[0]`: the XLA programs compiled inside the block
  (jax's backend-compile event; cache hits do not count)."""

  @contextlib.contextmanager
  def counting():
    count = [0]

    def listener(event, duration, **kwargs):
      if event == "/jax/core/compile/backend_compile_duration":
        count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
      yield count
    finally:
      jax.monitoring.unregister_event_duration_listener(listener)

  return counting


@pytest.fixture
def ray_alone():
  """Holds a machine-wide lock for the test: one Ray test ends with `ray stop --force`, which stops
  every Ray process, so two Ray tests on two pytest-xdist workers must not overlap."""
  with open(os.path.join(tempfile.gettempdir(), "nas_jax_tests_ray.lock"), "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
    yield


class ScriptServer:
  """One script_server.py process; `run` forks a child of it per call, one call at a time."""

  def __init__(self, scratch):
    self._scratch = scratch
    self._calls = 0
    self._process = subprocess.Popen(
      [sys.executable, SCRIPT_SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )

  def run(self, *args, env=None, timeout=600) -> subprocess.CompletedProcess:
    """`python *args` in the repository root, with `env` (default: this process's environment
    without NAS_JAX_VERBOSE); raises subprocess.TimeoutExpired after `timeout` seconds."""
    if env is None:
      env = {k: v for k, v in os.environ.items() if k != "NAS_JAX_VERBOSE"}
    self._calls += 1
    out, err = (os.path.join(self._scratch, f"{self._calls}.{name}") for name in ("out", "err"))
    request = {"argv": list(map(str, args)), "cwd": ROOT, "env": env, "stdout": out, "stderr": err, "timeout": timeout}
    try:
      self._process.stdin.write(json.dumps(request) + "\n")
      self._process.stdin.flush()
      answer = self._process.stdout.readline()
    except BrokenPipeError:
      answer = ""
    if not answer:
      raise RuntimeError(f"tests/script_server.py exited with code {self._process.wait()}; its stderr says why")
    answer = json.loads(answer)
    if answer["timed_out"]:
      raise subprocess.TimeoutExpired(list(args), timeout)
    with open(out) as o, open(err) as e:
      return subprocess.CompletedProcess(list(args), answer["returncode"], o.read(), e.read())

  def close(self):
    self._process.stdin.close()
    self._process.wait(timeout=30)


@pytest.fixture(scope="session")
def launch(tmp_path_factory):
  """`launch("launch/search.py", "--config=...")`: a CompletedProcess with text stdout and stderr,
  as `subprocess.run([sys.executable, ...], cwd=ROOT, capture_output=True, text=True)` gives."""
  server = ScriptServer(str(tmp_path_factory.mktemp("launch")))
  yield server.run
  server.close()
