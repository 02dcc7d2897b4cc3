"""Where a search's proxy comes from: `config.proxy` resolved into a `ProxyMeter` for the search
parts (`spaces.proxy_scores`). The source built here is a table of precomputed scores, a CSV with
a column `arch_str` (NB201 cells) and one column per proxy, as `launch/proxies.py` writes it.

    c.proxy = dict(path="runs/proxies/nb201_{dataset}.csv",  # {dataset}: config.task.dataset
                   column="synflow", seconds_per_score=0.0,  # 1 / the scorer's cells per second
                   # the params baseline from the NB201 table itself: path=".../nb201_200epochs.csv.gz",
                   # column="params_mb_{dataset}"
                   warmup_n=0, warmup_k=0,                    # (a) best k of n scored random cells
                   prescreen=0,                               # (c) one move in `prescreen` goes on
                   feature=False, prior_mean=False)           # (b) surrogate input / GP prior mean
"""

from __future__ import annotations

import csv
import gzip
import io
import logging
import math
import os
from types import MappingProxyType
from typing import Any, Sequence

import numpy as np

from nas_jax.spaces.proxy_scores import ProxyMeter, ProxyScores

__all__ = [
  "PROXY_FIELDS",
  "read_proxy_column",
  "proxy_table",
  "proxy_path",
  "proxy_options",
  "check_proxy",
  "proxy_meter",
]

log = logging.getLogger(__name__)

# Every field of config.proxy with its value when the section or the field is absent.
PROXY_FIELDS = MappingProxyType(
  dict(path="", column="", seconds_per_score=0.0, warmup_n=0, warmup_k=0, prescreen=0, feature=False, prior_mean=False)
)


def read_proxy_column(path: str, column: str) -> dict[str, float]:
  """arch_str -> the number in `column`, from the CSV at `path` (optionally .gz) that
  `launch/proxies.py` writes. Non-finite numbers (nan, inf, -inf) are read as they are.

  Raises:
    ValueError, one line naming config.proxy's field, the file and the line, for a file that
    cannot be read, lacks those columns, ends in a cut row (no line end: a writer killed or a
    full disk), has a row with another number of fields than its header, a non-number in the
    column, or a cell twice.
  """
  opener = gzip.open if path.endswith(".gz") else open
  where = f"config.proxy.path: {path!r}"
  try:
    with opener(path, "rt", newline="", encoding="utf-8") as f:
      text = f.read()
  except (OSError, EOFError, UnicodeDecodeError) as e:
    raise ValueError(f"{where} is not a readable CSV table: {e}") from None
  if text and not text.endswith(("\n", "\r")):
    raise ValueError(
      f"{where}, line {text.count(chr(10)) + 1}: the last row has no line end, so the file was cut while"
      " written (a killed writer, a full disk); rerun launch/proxies.py with the same --out to finish it"
    )
  reader = csv.reader(io.StringIO(text))
  try:
    header = next(reader, [])
    if "arch_str" not in header or column not in header:
      raise ValueError(
        f"{where} has columns {header}; expected 'arch_str' and the proxy column {column!r} (config.proxy.column)"
      )
    name_at, value_at = header.index("arch_str"), header.index(column)
    table, lines = {}, {}
    for row in reader:
      line = reader.line_num
      if not row:
        continue
      if len(row) != len(header):
        raise ValueError(f"{where}, line {line}: {len(row)} fields where the header has {len(header)}")
      name = row[name_at]
      if name in table:
        raise ValueError(f"{where}, line {line}: cell {name!r} again (first at line {lines[name]}); one row a cell")
      try:
        table[name], lines[name] = float(row[value_at]), line
      except ValueError:
        raise ValueError(f"{where}, line {line}: column {column!r} holds {row[value_at]!r}, not a number") from None
  except csv.Error as e:
    raise ValueError(f"{where}, line {reader.line_num}: not CSV ({e})") from None
  return table


def proxy_table(path: str, column: str, space: Any, *, seconds_per_score: float = 0.0) -> ProxyScores:
  """The proxy `column` of the CSV at `path` (`read_proxy_column`): a score per row's `arch_str`,
  looked up by the `arch_str` of a point's JSON (`space.to_json`: NB201 cells). A point the table
  lacks is a ValueError naming it.

  A non-finite score (naswot's -inf where K_H is singular, jacob_cov's nan where a cell's output
  ignores its input) is no score: `ProxyMeter` ranks it below every finite one, and their count
  is logged once here. A column without one finite score ranks nothing: a ValueError."""
  table = read_proxy_column(path, column)
  bad = sum(not math.isfinite(v) for v in table.values())
  if bad == len(table):
    raise ValueError(
      f"config.proxy.path: {path!r}: column {column!r} has no finite score in its {len(table)} rows;"
      " a proxy that ranks nothing cannot guide a search"
    )
  if bad:
    log.warning(
      "proxy %r (%s): %d of %d cells have no finite score (nan or inf); they rank below every finite score",
      column,
      path,
      bad,
      len(table),
    )

  def score(points: Sequence) -> np.ndarray:
    out = np.empty(len(points))
    for i, p in enumerate(points):
      name = space.to_json(p).get("arch_str")
      if name not in table:
        raise ValueError(
          f"proxy {column!r} ({path}): no score for cell {name!r}; the table holds {len(table)} cells"
          " (score the missing ones with launch/proxies.py --cells=FILE)"
        )
      out[i] = table[name]
    return out

  return ProxyScores(column, score, seconds_per_score)


def proxy_options(config: Any) -> dict:
  """config.proxy's fields (PROXY_FIELDS' values for those absent)."""
  section = config.get("proxy", None) if hasattr(config, "get") else None
  given = section.to_dict() if hasattr(section, "to_dict") else dict(section or {})
  return {**PROXY_FIELDS, **given}


def _field(config: Any, name: str) -> Any:
  """config.proxy.<name> with `{dataset}` replaced by config.task.dataset."""
  value = proxy_options(config)[name]
  return value.replace("{dataset}", str(config.task.get("dataset", ""))) if isinstance(value, str) else value


def proxy_path(config: Any) -> str:
  """config.proxy.path with `{dataset}` replaced by config.task.dataset."""
  return _field(config, "path")


def _used(o: dict) -> bool:
  return bool(o["warmup_k"] or o["prescreen"] or o["feature"] or o["prior_mean"])


def check_proxy(config: Any) -> None:
  """Checks config.proxy (optional) before anything runs: ValueError naming `config.proxy.<field>`."""
  o = proxy_options(config)
  unknown = sorted(set(o) - set(PROXY_FIELDS))
  if unknown:
    raise ValueError(f"config.proxy: fields {unknown} are unknown; allowed: {', '.join(PROXY_FIELDS)}")
  for f in ("warmup_n", "warmup_k", "prescreen"):
    v = o[f]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
      raise ValueError(f"config.proxy.{f}: {v!r} is not allowed; expected an integer >= 0 (0: off)")
  if o["warmup_k"] > o["warmup_n"]:
    raise ValueError(
      f"config.proxy.warmup_k: {o['warmup_k']} is more than warmup_n={o['warmup_n']}; the warm-up keeps k of n cells"
    )
  if o["prescreen"] == 1:
    raise ValueError(
      "config.proxy.prescreen: 1 is not allowed; expected 0 (off) or >= 2 (one move in that many goes on)"
    )
  for f in ("feature", "prior_mean"):
    if not isinstance(o[f], bool):
      raise ValueError(f"config.proxy.{f}: {o[f]!r} is not allowed; expected True or False")
  s = o["seconds_per_score"]
  if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 <= s < math.inf:
    raise ValueError(f"config.proxy.seconds_per_score: {s!r} is not allowed; expected a finite number of seconds >= 0")
  if not _used(o):
    return
  if not isinstance(o["column"], str) or not o["column"]:
    raise ValueError(f"config.proxy.column: {o['column']!r} is not allowed; expected the proxy's column in the CSV")
  path = proxy_path(config)
  if not isinstance(path, str) or not os.path.isfile(path):
    raise ValueError(
      f"config.proxy.path: {path!r} is not a file; expected a CSV of arch_str and proxy columns"
      " (launch/proxies.py --out=...; '{dataset}' in it stands for config.task.dataset)"
    )


def proxy_meter(config: Any, space: Any) -> tuple[ProxyMeter | None, dict]:
  """(the search's meter, config.proxy's fields); the meter is None when no part uses the proxy."""
  o = proxy_options(config)
  if not _used(o):
    return None, o
  proxy = proxy_table(
    proxy_path(config), _field(config, "column"), space, seconds_per_score=float(o["seconds_per_score"])
  )
  return ProxyMeter(proxy, space.canonical_key), o
