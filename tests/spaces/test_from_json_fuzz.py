"""Every space's `from_json` on arbitrary JSON: a point, or a ValueError/TypeError with a short
message naming what was wrong, never another exception (hypothesis: 2,000 inputs per space with
--runslow, 200 by default; each either random JSON or a valid point's JSON with random values in
some of its fields)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nas_jax.wiring.parts import SPACES

JSON = st.recursive(
  st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
  lambda children: st.lists(children, max_size=8) | st.dictionaries(st.text(max_size=10), children, max_size=6),
  max_leaves=40,
)
SPACE_ARGS = {"layer_graph": {"kind": "cnn"}}


def _inputs(space):
  good = space.to_json(space.initial(1)[0])
  near = st.fixed_dictionaries({k: st.just(v) | JSON for k, v in good.items()})
  if "params" in good:  # the conditional space: random values inside the parameters too
    params = st.fixed_dictionaries(
      {k: st.just(v) | JSON | st.integers(-(10**400), 10**400) for k, v in good["params"].items()}
    )
    near |= st.fixed_dictionaries({"kind": st.just(good["kind"]), "params": params})
  return JSON | near


@pytest.mark.parametrize("name", sorted(SPACES))
def test_from_json_gives_a_point_or_a_short_message(name, request):
  space = SPACES[name](**SPACE_ARGS.get(name, {}))
  examples = 2000 if request.config.getoption("--runslow") else 200

  @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
  @given(_inputs(space))
  def check(obj):
    try:
      point = space.from_json(obj)
    except (ValueError, TypeError) as e:
      assert 0 < len(str(e)) <= 600, str(e)[:300]
    else:
      assert space.from_json(space.to_json(point)) is not None  # what it accepts round-trips

  check()
