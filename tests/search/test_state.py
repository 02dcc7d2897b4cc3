"""Observation records and the sign convention: to_score by hand, JSON round trips."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

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
