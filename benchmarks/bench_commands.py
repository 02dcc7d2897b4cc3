"""The README's two commands, timed cold: a fresh clone of this checkout's HEAD, a fresh
virtualenv, no pip cache and an empty compilation cache, as a new user runs them.

  python benchmarks/bench_commands.py --which=main   # the line after <!-- main-command --> in README.md
  python benchmarks/bench_commands.py --which=test   # the line after <!-- test-command -->
  python benchmarks/bench_commands.py --smoke        # the main command's clone, running `echo` instead

Writes the record `main_command` (wall time, the last line printed) or `test_command` (pytest's
time, the wall time with the install, pytest's summary) that benchmarks/render_results.py puts
beside the commands in the README. The clone gets this checkout's ../shared beside it when there
is one, so the tests that need its data run as they do here. Needs git and network access to the
package index, as the commands do.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import record

MARKERS = {"main": "<!-- main-command -->", "test": "<!-- test-command -->"}


def readme_command(which: str) -> str:
  """The command line two lines under the marker (the line under it opens the code block), as
  .ci/run reads it."""
  with open(os.path.join(record.ROOT, "README.md")) as f:
    lines = f.read().splitlines()
  at = lines.index(MARKERS[which])
  return lines[at + 2].strip()


def _minutes(seconds: float) -> str:
  return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--which", choices=sorted(MARKERS), default="main")
  parser.add_argument("--smoke", action="store_true", help="run `echo` in the clone instead of the command")
  args = parser.parse_args()
  command = readme_command(args.which)
  if args.smoke:
    record.smoke(args)
    command = shlex.join(["echo", f"smoke: {command}"])
  with tempfile.TemporaryDirectory() as tmp:
    clone = os.path.join(tmp, "nas_jax")
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", record.ROOT, clone], check=True)
    shared = os.path.join(os.path.dirname(record.ROOT), "shared")
    if os.path.isdir(shared):
      os.symlink(shared, os.path.join(tmp, "shared"))
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "JAX_COMPILATION_CACHE_DIR": os.path.join(tmp, "xla")}
    print(f"+ {command}  (in {clone})", flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
  lines = [line for line in done.stdout.splitlines() if line.strip()]
  if done.returncode != 0 or not lines:
    sys.exit(f"the {args.which} command failed (exit {done.returncode}):\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}")
  print(f"{_minutes(wall)}: {lines[-1]}")
  if args.which == "main":
    figures = {"wall time": _minutes(wall), "printed": lines[-1].split(": ", 1)[-1].split(", 0 failed")[0]}
    title = "The main job: NASBOT, 14 CNNs on digits, 2 workers, cold"
  else:
    summary = re.search(r"(\d+ passed.*?) in ([\d.]+)s", lines[-1])
    if summary is None:
      sys.exit(f"no pytest summary in the last line: {lines[-1]!r}")
    figures = {"pytest time": _minutes(float(summary.group(2))), "with the install": _minutes(wall)}
    figures["result"] = summary.group(1)
    title = "The default test suite on two processes, fresh virtualenv"
  note = "Wall time from a fresh clone and virtualenv with no pip cache, the install included."
  if args.which == "main":
    note = note[:-1] + "; `printed` is the search's last line, its best validation accuracy."
  record.write(f"{args.which}_command", title, figures, note=note, command=command)


if __name__ == "__main__":
  main()
