"""Observation records and the sign convention: to_score by hand, JSON round trips."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nas_jax.search.state import Observation, Status, to_score


def test_to_score_keeps_max_and_negates_min():
  np.testing.assert_array_equal(to_score([1.0, -2.5, None], "max"), [1.0, -2.5, np.nan])
  np.testing.assert_array_equal(to_score([1.0, -2.5, None], "min"), [-1.0, 2.5, np.nan])
  assert float(to_score(0.25, "min")) == -0.25
  assert np.isnan(to_score(None, "max"))


def test_to_score_rejects_unknown_goal_naming_it():
  with pytest.raises(ValueError, match="'maximise'.*max, min"):
    to_score([1.0], "maximise")


def test_ok_observation_needs_a_finite_value():
  with pytest.raises(ValueError, match="status OK"):
    Observation(trial_id=0, arch_json={}, value=None, status=Status.OK, error="", seconds=0.0, worker="w")
  with pytest.raises(TypeError, match="value"):
    Observation(trial_id=0, arch_json={}, value="1.0", status=Status.OK, error="", seconds=0.0, worker="w")


_finite = st.floats(allow_nan=False, allow_infinity=False)


@given(
  trial_id=st.integers(0, 10**9),
  status=st.sampled_from(list(Status)),
  value=_finite,
  test_value=st.none() | _finite,
  error=st.text(),
  info=st.dictionaries(st.text(), st.integers() | st.text() | st.none()),
  finished_at=st.none() | st.floats(0, 4e9),
)
def test_observation_json_round_trip(trial_id, status, value, test_value, error, info, finished_at):
  obs = Observation(
    trial_id=trial_id,
    arch_json={"kind": "bits", "bits": [0, 1]},
    value=value if status == Status.OK else None,
    status=status,
    error=error,
    seconds=1.5,
    worker="process-0/pid1",
    test_value=test_value,
    info=info,
    finished_at=finished_at,
  )
  text = json.dumps(obs.to_json(), allow_nan=False)
  back = Observation.from_json(json.loads(text))
  assert back == obs
  assert isinstance(back.status, Status)


def test_observation_json_names_status_and_rejects_unknown_ones():
  obs = Observation(trial_id=3, arch_json={}, value=None, status=Status.TIMEOUT, error="t", seconds=2.0, worker="w")
  obj = obs.to_json()
  assert obj["status"] == "TIMEOUT"
  with pytest.raises(ValueError, match="status.*'LOST'"):
    Observation.from_json({**obj, "status": "LOST"})
  with pytest.raises(ValueError, match="missing.*worker"):
    Observation.from_json({k: v for k, v in obj.items() if k != "worker"})
  # Journals written before finished_at existed still load.
  assert Observation.from_json({k: v for k, v in obj.items() if k != "finished_at"}) == obs
  assert math.isnan(float(to_score(obs.value, "max")))


_GOOD = Observation(
  trial_id=7,
  arch_json={"kind": "bits", "bits": [0, 1]},
  value=0.5,
  status=Status.OK,
  error="",
  seconds=1.5,
  worker="w",
  info={"seed": 3},
  finished_at=1.0,
  objectives={"params": 2.0},
  fidelity=3.0,
  curve=[[1.0, 0.25]],
).to_json()
_SCALAR = (
  st.none()
  | st.booleans()
  | st.integers(-(10**400), 10**400)
  | st.integers(-3, 3)
  | st.floats()
  | st.text(max_size=6)
  | st.sampled_from(list(Status.__members__))
)
_ANY_JSON = st.recursive(
  _SCALAR, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4), max_leaves=8
)


@pytest.mark.fuzz
def test_from_json_gives_an_observation_or_a_short_message(fuzz_examples):
  """Any JSON, or a valid row with random values in some fields: an Observation that round-trips,
  or a ValueError/TypeError naming the field (never an OverflowError from a 400-digit number)."""

  @settings(max_examples=fuzz_examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
  @given(_ANY_JSON | st.fixed_dictionaries({k: st.just(v) | _ANY_JSON for k, v in _GOOD.items()}))
  def check(obj):
    try:
      obs = Observation.from_json(obj)
    except (ValueError, TypeError) as e:
      assert 0 < len(str(e)) <= 400, str(e)[:300]
    else:
      assert Observation.from_json(obs.to_json()) == obs

  check()


@pytest.mark.parametrize(
  "field, bad, says",
  [
    ("info", [1], r"observation\.info: \[1\] is a list; expected an object"),
    ("value", 10**400, r"observation\.value: 1000.* is too large for a float"),
    ("arch_json", "abc", r"observation\.arch_json: 'abc' is a str; expected an object"),
    ("seconds", "fast", r"observation\.seconds: 'fast' is a str"),
    ("seconds", -1.0, r"observation\.seconds: -1\.0; expected a finite number >= 0"),
    ("trial_id", -1, r"observation\.trial_id: -1; expected an integer in \[0, 2147483647\]"),
    ("trial_id", 10**15, r"observation\.trial_id: 1000000000000000; expected an integer in \[0, 2147483647\]"),
    ("worker", None, r"observation\.worker: None is a NoneType; expected a string"),
    ("fidelity", 10**400, r"observation\.fidelity: 1000.* is too large for a float"),
  ],
)
def test_from_json_names_each_bad_field(field, bad, says):
  with pytest.raises((ValueError, TypeError), match=says):
    Observation.from_json({**_GOOD, field: bad})


def test_a_failed_row_carries_no_value():
  with pytest.raises(
    ValueError, match=r"observation\.value: 1\.0 with status FAILED; only an OK observation has a value"
  ):
    Observation.from_json({**_GOOD, "status": "FAILED", "value": 1.0})
