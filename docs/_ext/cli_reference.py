"""Sphinx extension: the CLI reference, generated from the launch scripts' sources at every build.

For each `launch/*.py` script: its module docstring (usage and examples) and a table of its
absl flags (name, type, default, help), read from the `flags.DEFINE_*` calls with `ast`, so
nothing is imported and the page cannot drift from the scripts. Written to
docs/generated/cli.md (not committed) before Sphinx reads the sources.
"""

import ast
import glob
import os

COMMON = "`--verbose`: show the traceback of an error (also `NAS_JAX_VERBOSE=1`); every script."


def _constant(node, script_dir: str) -> str:
  """A literal's value; `module.NAME` read from launch/module.py; else the source text."""
  try:
    return repr(ast.literal_eval(node)) if not isinstance(node, ast.Constant) else repr(node.value)
  except ValueError:
    pass
  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
    path = os.path.join(script_dir, f"{node.value.id}.py")
    if os.path.exists(path):
      for stmt in ast.parse(open(path).read()).body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == node.attr for t in stmt.targets):
          return repr(ast.literal_eval(stmt.value))
  return ast.unparse(node)


def _help(node, script_dir: str) -> str:
  text = _constant(node, script_dir)
  return ast.literal_eval(text) if text[:1] in "'\"" else text


def flags_of(path: str) -> list:
  """[(flag, type, default, help)] of the DEFINE_* calls at the top level of a script."""
  rows = []
  for node in ast.walk(ast.parse(open(path).read())):
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
      continue
    define = node.func.attr
    if not define.startswith("DEFINE_") or len(node.args) < 2:
      continue
    kind = define[len("DEFINE_") :].replace("multi_string", "string, repeatable").replace("config_file", "config file")
    kw = {k.arg: k.value for k in node.keywords}
    args = list(node.args) + [None] * 4
    name = ast.literal_eval(args[0])
    helps = kw.get("help", args[3] if define == "DEFINE_enum" else args[2])
    default = _constant(args[1], os.path.dirname(path))
    if define == "DEFINE_enum":
      kind = f"one of {_constant(args[2], os.path.dirname(path))}"
    rows.append((name, kind, default, _help(helps, os.path.dirname(path)) if helps is not None else ""))
  return rows


def _cell(text: str) -> str:
  return " ".join(str(text).split()).replace("|", "\\|")


def render(root: str) -> str:
  out = [
    "# CLI reference",
    "",
    "Generated from the scripts in `launch/` when the manual is built: each script's docstring,",
    "then its flags. Run a script from the repository root as `python launch/<script>.py --flag=value`.",
    f"A mistake ends any script with one line naming the flag or field and what is allowed (exit code 2). {COMMON}",
  ]
  for path in sorted(glob.glob(os.path.join(root, "launch", "[!_]*.py"))):
    doc = ast.get_docstring(ast.parse(open(path).read())) or ""
    out += ["", f"## `launch/{os.path.basename(path)}`", "", "```text", doc.strip(), "```", ""]
    out += ["| flag | type | default | what |", "|---|---|---|---|"]
    out += [f"| `--{n}` | {_cell(k)} | `{_cell(d)}` | {_cell(h)} |" for n, k, d, h in flags_of(path)]
  return "\n".join(out) + "\n"


def generate(app) -> None:
  out = os.path.join(app.srcdir, "generated")
  os.makedirs(out, exist_ok=True)
  text = render(os.path.dirname(app.srcdir))
  path = os.path.join(out, "cli.md")
  if not os.path.exists(path) or open(path).read() != text:
    with open(path, "w") as f:
      f.write(text)


def setup(app):
  app.connect("builder-inited", generate)
  return {"parallel_read_safe": True, "version": "1"}
