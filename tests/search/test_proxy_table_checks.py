"""What a search's proxy table reader refuses (`wiring.proxy_sources.read_proxy_column`), each in
one line naming the file and the line: a row cut by a full disk or a kill, a row of the wrong
width, a cell twice, a non-number. And the policy for non-finite scores (naswot's -inf, jacob_cov's
nan): no score, ranked below every finite one, counted in one logged line; a column with no
finite score is refused. The three NB201 presets that read a proxy are built on such tables."""

import logging
import math
import os

import jax
import numpy as np
import pytest

from nas_jax.spaces import cells
from nas_jax.spaces.proxy_scores import ProxyMeter
from nas_jax.wiring import config as config_lib
from nas_jax.wiring import config_files
from nas_jax.wiring.proxy_sources import proxy_table, read_proxy_column
from tests.conftest import SHARED_DATA

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPACE = cells.nb201_space()
POINTS = SPACE.sample(jax.random.key(0), 10)
NAMES = [SPACE.to_json(p)["arch_str"] for p in POINTS]


def _table(tmp_path, rows, *, end="\r\n", name="t.csv"):
  path = tmp_path / name
  path.write_bytes(("arch_str,params,synflow\r\n" + "\r\n".join(rows) + end).encode())
  return str(path)


def test_a_row_cut_by_a_full_disk_is_refused_not_read(tmp_path):
  # The file: the scorer stopped by ENOSPC inside the last row's flops value.
  path = _table(tmp_path, [f"{NAMES[0]},1.5e5,1.3940209202496014e+20", f"{NAMES[1]},1.2e5,344"], end="")
  with pytest.raises(ValueError, match=r"t\.csv', line 3: the last row has no line end, so the file was cut"):
    read_proxy_column(path, "params")


@pytest.mark.parametrize(
  "rows, match",
  [
    ([f"{NAMES[0]},1.0,2.0", f"{NAMES[1]},1.0"], r"t\.csv', line 3: 2 fields where the header has 3"),
    ([f"{NAMES[0]},1.0,2.0", f"{NAMES[0]},1.0,2.0,4"], r"line 3: 4 fields where the header has 3"),
    (
      [f"{NAMES[0]},1.0,2.0", f"{NAMES[1]},1.0,2.0", f"{NAMES[0]},3.0,4.0"],
      r"t\.csv', line 4: cell '\|.*\|' again \(first at line 2\); one row a cell",
    ),
    ([f"{NAMES[0]},1.0,2.0", f"{NAMES[1]},big,2.0"], r"line 3: column 'params' holds 'big', not a number"),
  ],
)
def test_a_malformed_row_is_refused_naming_file_and_line(tmp_path, rows, match):
  with pytest.raises(ValueError, match=match) as e:
    read_proxy_column(_table(tmp_path, rows), "params")
  assert "\n" not in str(e.value) and str(e.value).startswith("config.proxy.path: ")


def test_non_finite_scores_rank_last_and_are_counted_once(tmp_path, caplog):
  values = [3.0, math.nan, 1.0, math.inf, -math.inf, 2.0]
  path = _table(tmp_path, [f"{n},{v!r},0.0" for n, v in zip(NAMES, values)])
  with caplog.at_level(logging.WARNING):
    meter = ProxyMeter(proxy_table(path, "params", SPACE), SPACE.canonical_key)
  warned = [r.getMessage() for r in caplog.records if "finite" in r.getMessage()]
  assert warned == [
    f"proxy 'params' ({path}): 3 of 6 cells have no finite score (nan or inf); they rank below every finite score"
  ]
  assert np.array_equal(meter.score(POINTS[:6]), [3.0, -np.inf, 1.0, -np.inf, -np.inf, 2.0])


def test_a_column_without_a_finite_score_is_refused(tmp_path):
  path = _table(tmp_path, [f"{n},nan,1.0" for n in NAMES])
  with pytest.raises(ValueError, match=r"column 'params' has no finite score in its 10 rows"):
    proxy_table(path, "params", SPACE)


TABLE = os.path.join(SHARED_DATA, "nasbench201", "nb201_200epochs.csv.gz")
PRESETS = ["re_nb201.py:zc_warmup+zc_prescreen", "nasbot_nb201.py:zc_prior+zc_prescreen", "bananas_nb201.py:zc_feature"]


@pytest.mark.parametrize("preset", PRESETS)
def test_the_proxy_presets_refuse_a_nan_or_duplicated_table_and_count_a_partly_nan_one(preset, tmp_path, caplog):
  if not os.path.exists(TABLE):
    pytest.skip(f"NAS-Bench-201 table not found at {TABLE}; it is never downloaded")
  some = [f"{n},{'nan' if i % 3 == 0 else float(i)},1.0" for i, n in enumerate(NAMES)]  # 4 of 10 nan
  cases = {
    "some.csv": (some, None),
    "all.csv": ([f"{n},nan,1.0" for n in NAMES], r"all\.csv': column 'params' has no finite score in its 10 rows"),
    "twice.csv": ([*some, some[1]], r"twice\.csv', line 12: cell '\|.*\|' again \(first at line 3\)"),
  }
  for name, (rows, match) in cases.items():
    c = config_files.load_config(os.path.join(ROOT, "configs", preset))
    c.task.path, c.proxy.column, c.workdir = os.path.dirname(TABLE), "params", str(tmp_path / "run")
    c.proxy.path = _table(tmp_path, rows, name=name)
    config_lib.check_search_config(c)
    caplog.clear()
    if match is None:
      with caplog.at_level(logging.WARNING):
        config_lib.build_search(c)
      assert [r.getMessage() for r in caplog.records if "no finite score" in r.getMessage()] == [
        f"proxy 'params' ({c.proxy.path}): 4 of 10 cells have no finite score (nan or inf); they rank below"
        " every finite score"
      ]
    else:
      with pytest.raises(ValueError, match=match):
        config_lib.build_search(c)
