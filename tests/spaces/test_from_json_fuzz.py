"""Every parser of interchange JSON on arbitrary JSON: a point, or a ValueError/TypeError with a
short message naming what was wrong, never another exception (an OverflowError from a 400-digit
number, an AttributeError from a list where an object belongs). Hypothesis, 10,000 inputs per
parser with --runslow (.ci/run), 200 by default: each either random JSON or a valid point's JSON with
random values in some of its fields."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nas_jax.arch.morphism import Op
from nas_jax.spaces.fidelity_space import fidelity_space
from nas_jax.wiring.parts import SPACES

SCALARS = (
  st.none()
  | st.booleans()
  | st.integers(-3, 70)
  | st.integers(-(10**400), 10**400)
  | st.floats()
  | st.text(max_size=6)
  | st.sampled_from(["conv3", "relu", "ip", "op", "none", "skip_connect", "cnn", "fidelity", "kind"])
)
JSON = st.recursive(
  SCALARS,
  lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=6), children, max_size=4),
  max_leaves=8,
)
SPACE_ARGS = {"layer_graph": {"kind": "cnn"}}


pytestmark = pytest.mark.fuzz


def fuzz(examples: int):
  """Hypothesis settings for `examples` inputs."""
  return settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _near(good):
  """`good` with random values in some of its fields, one level down too (a layer, a param)."""
  if isinstance(good, dict):
    return st.fixed_dictionaries({k: st.just(v) | JSON | _near(v) for k, v in good.items()})
  if isinstance(good, list) and good:
    return st.lists(st.sampled_from(good) | JSON, min_size=len(good) - 1, max_size=len(good) + 1)
  return JSON


def _inputs(good):
  return JSON | st.fixed_dictionaries({k: st.just(v) | JSON for k, v in good.items()}) | _near(good)


def _spaces():
  out = {name: SPACES[name](**SPACE_ARGS.get(name, {})) for name in sorted(SPACES)}
  out["fidelity(nb201)"] = fidelity_space(out["nb201"], (1, 3, 9))
  return out


def _short_error(parse, obj):
  """parse(obj), or None after a ValueError/TypeError whose message is short and not empty."""
  try:
    return parse(obj)
  except (ValueError, TypeError) as e:
    assert 0 < len(str(e)) <= 600, str(e)[:300]
    return None


@pytest.mark.parametrize("name", list(_spaces()))
def test_from_json_gives_a_point_or_a_short_message(name, fuzz_examples):
  space = _spaces()[name]

  @fuzz(fuzz_examples)
  @given(_inputs(space.to_json(space.initial(1)[0])))
  def check(obj):
    point = _short_error(space.from_json, obj)
    if point is not None:
      assert space.from_json(space.to_json(point)) is not None  # what it accepts round-trips

  check()


def test_morph_op_from_json_gives_an_op_or_a_short_message(fuzz_examples):
  ops = st.tuples(st.sampled_from(["deep", "wide", "add", "concat"]), SCALARS, SCALARS, SCALARS).map(list)

  @fuzz(fuzz_examples)
  @given(JSON | ops)
  def check(obj):
    op = _short_error(Op.from_json, obj)
    if op is not None:
      assert Op.from_json(op.to_json()) == op

  check()
