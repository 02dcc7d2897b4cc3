"""One line per user error for every launch script: `_cli.run(main)` in place of `app.run(main)`.

A mistake a user can make (a mistyped flag or config field, a config file or data that is missing,
a value out of range, a workdir held by another search) ends the script with

  <script>: error: <what, which flag or file, what is allowed>

on stderr and exit code 2, never a traceback; a config file that fails to import gives
`file:line: error`. SIGTERM and SIGINT stop a script with one line and exit code 130 (a search
writes its summary first; one whose workdir was deleted or replaced writes nothing and says so),
from its first import on (`_env` installs a handler until `run` installs its own). Anything else
is a bug and keeps its traceback.
`--verbose` (or NAS_JAX_VERBOSE=1) keeps the traceback of user errors too, for debugging.
Imported by launch scripts after `_env`.
"""

import logging
import os
import re
import signal
import sys
import traceback
from typing import Callable, NoReturn

from absl import app, flags

from nas_jax.search.loop import WorkdirInUse, WorkdirReplaced
from nas_jax.wiring import config_files

flags.DEFINE_bool("verbose", False, "Show the full traceback of an error (also NAS_JAX_VERBOSE=1).")

# What a user's input can raise; absl's flag errors and ml_collections' mistyped fields included.
USER_ERRORS = (ValueError, TypeError, OSError, flags.Error, app.UsageError, WorkdirInUse)


def _script() -> str:
  return os.path.basename(sys.argv[0] or "nas_jax")


def _verbose(argv: list) -> bool:
  return os.environ.get("NAS_JAX_VERBOSE", "") not in ("", "0") or "--verbose" in argv


def message(error: BaseException) -> str:
  """One line for an exception: an OSError's file and reason, other texts with newlines joined."""
  if isinstance(error, OSError) and error.filename is not None:
    return f"{error.filename}: {error.strerror}"
  text = error.args[0] if len(error.args) == 1 and isinstance(error.args[0], str) else str(error)
  return re.sub(r"\s*\n\s*", "; ", text.strip())


def _flag_value(argv: list, name: str) -> str | None:
  """The value of `--name=value` or `--name value` in argv; None if absent."""
  for i, arg in enumerate(argv):
    if arg.startswith(f"--{name}="):
      return arg.split("=", 1)[1]
    if arg == f"--{name}" and i + 1 < len(argv):
      return argv[i + 1]
  return None


def _explain(argv: list, e: Exception) -> str:
  """The line for a user error: a config file that raised or is missing names its flag."""
  config = _flag_value(argv, "config")
  inner = e
  while inner.args and isinstance(inner.args[0], BaseException):  # ml_collections wraps errors
    inner = inner.args[0]
  text = inner.args[0] if inner.args and isinstance(inner.args[0], str) else ""
  # A config file's get_config raised: ml_collections puts its whole traceback in the flag's text.
  # The flag is named from that text, which has it as `--config=X` however it was given.
  raised = re.search(r"^flag (.+?): Error whilst parsing config file:.*^(?:\w+\.)*\w+: (.+?)\s*\Z", text, re.S | re.M)
  if raised:  # the last exception line at column 0 (traceback lines are indented)
    return f"{raised.group(1)}: " + re.sub(r"\s*\n\s*", "; ", raised.group(2))
  if isinstance(e, OSError) and config is not None and not os.path.isfile(config.split(":", 1)[0]):
    return f"--config={config}: no such file; expected an existing configs/*.py file, optionally with :arg"
  return message(e)


def fail(text: str) -> NoReturn:
  """Prints `<script>: error: text` to stderr and exits with code 2."""
  print(f"{_script()}: error: {text}", file=sys.stderr)
  sys.exit(2)


def _bad_override(argv: list) -> str | None:
  """The first `--config.a.b` of argv that is not a field of the config, with why; else None.

  ml_collections says only `"'eta'"` for a field with no near name, and `string indices must be
  integers` for a field under a plain value, without naming the flag."""
  spec = _flag_value(argv, "config")
  if not spec:
    return None
  try:
    config = config_files.load_config(spec)
  except Exception:  # the config file's own error is reported as before
    return None
  keys = [arg.split("=", 1)[0][len("--config.") :] for arg in argv if arg.startswith("--config.")]
  missing = config_files.first_missing_field(config, keys)
  return f"--config.{missing[0]}: no such field in {spec}: {missing[1]}" if missing else None


def _config_file_error(argv: list, e: BaseException) -> str | None:
  """`file:line: message` for an error raised while the --config file was imported (a syntax
  error, an import that fails, a name it misspells at module level); None for any other error."""
  config = _flag_value(argv, "config")
  if not config:
    return None
  path = os.path.realpath(config.split(":", 1)[0])
  if isinstance(e, SyntaxError) and e.filename and os.path.realpath(e.filename) == path:
    return f"{e.filename}:{e.lineno}: {type(e).__name__}: {e.msg}"
  lines = [t.lineno for t in traceback.extract_tb(e.__traceback__) if os.path.realpath(t.filename) == path]
  return f"{config.split(':', 1)[0]}:{lines[-1]}: {type(e).__name__}: {message(e)}" if lines else None


def _parse(argv: list) -> list:
  try:
    return flags.FLAGS(argv)
  except (*USER_ERRORS, AttributeError, KeyError) as e:  # ml_collections: mistyped config fields
    if _verbose(argv):
      raise
    fail(_config_file_error(argv, e) or _bad_override(argv) or _explain(argv, e))
  except Exception as e:  # the config file itself failed to import
    line = _config_file_error(argv, e)
    if line is None or _verbose(argv):
      raise
    fail(line)


def _interrupt(signum, frame) -> NoReturn:
  for sig in (signal.SIGINT, signal.SIGTERM):  # one stop: a second signal would cut the shutdown
    signal.signal(sig, signal.SIG_IGN)
  raise KeyboardInterrupt(signal.Signals(signum).name)


def _stopped(interrupt: KeyboardInterrupt, kept: str) -> NoReturn:
  """Prints `<script>: stopped by SIGNAL; kept` to stderr and exits with code 130."""
  why = interrupt.args[0] if interrupt.args else "SIGINT"
  print(f"{_script()}: stopped by {why}; {kept}", file=sys.stderr)
  sys.exit(130)


def run(main: Callable[[list], None]) -> None:
  """`app.run(main)` with one-line user errors (see the module docstring)."""

  def guarded(argv: list) -> None:
    try:
      main(argv)
    except USER_ERRORS as e:
      if _verbose(sys.argv):
        raise
      if isinstance(e, WorkdirReplaced) and isinstance(e.__cause__, KeyboardInterrupt):
        _stopped(e.__cause__, message(e))  # stopped, and its workdir gone: nothing kept, nothing to resume
      fail(_explain(sys.argv, e))

  # jax logs at INFO that it found no TPU on every start; a CPU or GPU user has nothing to do about it
  logging.getLogger("jax._src.xla_bridge").setLevel(logging.WARNING)
  try:
    # `kill` stops a search as Ctrl-C does: workers stopped, the summary written from the journal
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    app.run(guarded, flags_parser=_parse)
  except KeyboardInterrupt as e:  # in main, or while the flags are parsed (a config file imports)
    if _verbose(sys.argv):
      raise
    _stopped(e, "finished evaluations are kept: rerun the command to resume")
