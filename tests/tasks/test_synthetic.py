"""Synthetic objectives f0-f3 (NASBOT App. C.4): values computed by hand on two networks,
bounds and invariances on random ones, and the Task's pickling and kind checks."""

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nas_jax.search.task import TaskResult
from nas_jax.spaces import random_arch
from nas_jax.tasks import synthetic

E = math.exp

# ip -> relu(16) -> logistic(32) -> linear -> op.
MLP = {
  "kind": "mlp",
  "layers": [
    {"label": "ip"},
    {"label": "relu", "units": 16},
    {"label": "logistic", "units": 32},
    {"label": "linear"},
    {"label": "op"},
  ],
  "edges": [[0, 1], [1, 2], [2, 3], [3, 4]],
}
# Masses ("paper": zeta 0.1, floor 100): relu 16*1, logistic 32*16 = 512, so P = 528 and
# ip = op = linear = max(52.8, 100) = 100; tm = 828, am = 828 / 5 = 165.6. |E| = 4, degrees 4/5,
# shortest ip -> op path 4 hops, 1 sigmoid layer of 5.
MLP_F0 = (
  E(-0.001 * abs(165.6 - 1000))
  + 2 * E(-0.5 * abs(0.8 - 5))
  + E(-0.1 * abs(4 - 5))
  + E(-0.1 * abs(5 - 30))
  + E(-0.05 * abs(4 - 100))
)
MLP_F2 = MLP_F0 + E(-0.001 * abs(165.6 - 2000)) + E(-0.1 * abs(4 - 50)) + 0.2
MLP_F3 = MLP_F0 + 0.2

# ip -> conv3(16) -> conv5(16) -> conv3/2(32) -> max-pool -> fc(64) -> softmax -> op, with the
# skip conv3(16) -> conv3/2(32).
CNN = {
  "kind": "cnn",
  "layers": [
    {"label": "ip"},
    {"label": "conv3", "units": 16, "stride": 1},
    {"label": "conv5", "units": 16, "stride": 1},
    {"label": "conv3", "units": 32, "stride": 2},
    {"label": "max-pool"},
    {"label": "fc", "units": 64},
    {"label": "softmax"},
    {"label": "op"},
  ],
  "edges": [[0, 1], [1, 2], [1, 3], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7]],
}
# Masses: conv3 16, conv5 16*16 = 256, conv3/2 32*(16+16) = 1024, pool 32, fc 0.1*64*32 = 204.8;
# P = 1532.8, m_np = 153.28, tm = 1532.8 + 3*153.28 = 1992.64, am = 249.08. |L| = |E| = 8,
# degrees 1, shortest path ip-1-3-4-5-6-7 = 6 hops, strides (1, 1, 2, 2) average 1.5, conv3 2/8.
CNN_F0 = (
  E(-0.001 * abs(249.08 - 1000))
  + 2 * E(-0.5 * abs(1 - 5))
  + E(-0.1 * abs(6 - 5))
  + E(-0.1 * abs(8 - 30))
  + E(-0.05 * abs(8 - 100))
)
CNN_F1 = CNN_F0 + E(-3 * 0.0) + E(-0.3 * abs(8 - 50)) + E(-0.001 * abs(249.08 - 500)) + 0.25


def test_quantities_of_the_hand_built_networks():
  q = synthetic.quantities(MLP)
  assert q == pytest.approx(
    synthetic.Quantities(
      am=165.6, deg_i=0.8, deg_o=0.8, delta=4, n_layers=5, n_edges=4, stride=1.0, frac_conv3=0.0, frac_sigmoid=0.2
    )
  )
  q = synthetic.quantities(CNN)
  assert q == pytest.approx(
    synthetic.Quantities(
      am=249.08, deg_i=1.0, deg_o=1.0, delta=6, n_layers=8, n_edges=8, stride=1.5, frac_conv3=0.25, frac_sigmoid=0.0
    )
  )


@pytest.mark.parametrize(
  "name, arch, expected",
  [
    ("f0", MLP, MLP_F0),
    ("f2", MLP, MLP_F2),
    ("f3", MLP, MLP_F3),
    ("f0", CNN, CNN_F0),
    ("f1", CNN, CNN_F1),
  ],
)
def test_values_by_hand(name, arch, expected):
  result = synthetic.synthetic_task(name).evaluate(arch, 0)
  assert isinstance(result, TaskResult)
  assert result.value == pytest.approx(expected, rel=1e-12)
  assert result.test_value is None and result.info["n_layers"] == len(arch["layers"])


def test_the_res_mass_rule_is_a_parameter():
  res = {**CNN, "layers": [dict(l, label="res3") if l["label"] == "conv5" else l for l in CNN["layers"]]}
  paper = synthetic.quantities(res, "paper").am  # res x2: 2*16*16 = 512 instead of 256
  code = synthetic.quantities(res, "nasbot_code").am
  assert paper - code == pytest.approx((512 - 256) * (1 + 3 * 0.1) / 8)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), kind=st.sampled_from(["cnn", "mlp"]))
def test_bounds_and_padding_invariance_on_random_networks(seed, kind):
  obj = random_arch.random_json(kind, np.random.default_rng(seed), max_layers=14)
  q = synthetic.quantities(obj)
  f0 = synthetic.synthetic_value("f0", q)
  assert 0 < f0 <= 6
  extra = synthetic.synthetic_value("f1" if kind == "cnn" else "f2", q) - f0
  assert 0 <= extra <= (4 if kind == "cnn" else 3)
  # Renumbering the layers (reversing slot order) changes no quantity.
  n = len(obj["layers"])
  rev = {"kind": kind, "layers": obj["layers"][::-1], "edges": [[n - 1 - i, n - 1 - j] for i, j in obj["edges"]]}
  assert synthetic.quantities(rev) == pytest.approx(q)


def test_task_pickles_and_rejects_the_wrong_kind():
  task = synthetic.synthetic_task("f2", delay_s=0.0)
  assert (task.name, task.goal) == ("synthetic-f2", "max")
  again = pickle.loads(pickle.dumps(task.evaluate))
  assert again(MLP, 3).value == task.evaluate(MLP, 4).value
  with pytest.raises(ValueError, match="f2 is defined for mlp"):
    task.evaluate(CNN, 0)


@pytest.mark.parametrize(
  "kwargs, match",
  [
    (dict(name="f9"), "name='f9'"),
    (dict(name="f1", delay_s=-1), "delay_s=-1"),
    (dict(name="f1", mass_params="heavy"), "'heavy' is unknown"),
  ],
)
def test_synthetic_task_rejects_bad_arguments(kwargs, match):
  with pytest.raises(ValueError, match=match):
    synthetic.synthetic_task(**kwargs)
