"""`tasks.cost_task`: cost objectives and limits on a task; nothing beyond a limit is evaluated."""

import functools
import os

import pytest

from nas_jax.arch.json_io import to_json
from nas_jax.search.task import Task, TaskResult
from nas_jax.spaces.constrained import violation
from nas_jax.spaces.pools import initial_pool
from nas_jax.models import network_costs
from nas_jax.tasks import cost_task, tabular

NB201 = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data", "nasbench201")
DIGITS = ((8, 8, 1), 10)


def _evaluate(calls, arch_json, seed):
  calls.append(seed)
  return TaskResult(value=0.5, info={"trained": True})


@functools.lru_cache(maxsize=None)
def _pool():
  return [to_json(a) for a in initial_pool("cnn")]


def _cnn_costs(arch_json):
  return cost_task.layer_graph_costs(arch_json, input_shape=DIGITS[0], num_outputs=DIGITS[1], metrics=("params",))


def test_results_carry_the_costs_and_the_cost_objectives():
  calls = []
  task = cost_task.with_costs(
    Task("t", "max", functools.partial(_evaluate, calls)), _cnn_costs, objectives=("params", "flops")
  )
  assert task.objectives == (("params", "min"), ("flops", "min"))
  arch_json = _pool()[0]
  r = task.evaluate(arch_json, 7)
  want = network_costs.network_costs(initial_pool("cnn")[0], *DIGITS)
  assert r.objectives == {"params": want.params, "flops": want.flops}
  assert r.info == {"trained": True, "costs": {"params": want.params, "flops": want.flops, "memory_mb": want.memory_mb}}
  assert calls == [7]


def test_an_architecture_beyond_a_limit_is_refused_before_it_is_evaluated():
  calls = []
  params = [network_costs.network_costs(a, *DIGITS).params for a in initial_pool("cnn")]
  limit = sorted(params)[len(params) // 2]
  check = functools.partial(violation, limits={"params": limit})
  task = cost_task.with_costs(Task("t", "max", functools.partial(_evaluate, calls)), _cnn_costs, check=check)
  assert task.objectives == ()
  for i, arch_json in enumerate(_pool()):
    if params[i] > limit:
      with pytest.raises(ValueError, match=r"infeasible architecture: params .* > max_params .*; it was not evaluated"):
        task.evaluate(arch_json, i)
    else:
      assert task.evaluate(arch_json, i).objectives == {}
  assert calls == [i for i, p in enumerate(params) if p <= limit]
  # A batch is checked whole before anything runs: one infeasible call fails it.
  calls.clear()
  big = params.index(max(params))
  with pytest.raises(ValueError, match="infeasible"):
    task.evaluate.many([(_pool()[0], 0), (_pool()[big], 1)])
  assert calls == []


def test_bad_objectives_are_named():
  task = Task("t", "max", functools.partial(_evaluate, []))
  with pytest.raises(ValueError, match="expected distinct metric names"):
    cost_task.with_costs(task, _cnn_costs, objectives=("params", "params"))
  with pytest.raises(ValueError, match=r"\['params'\] are objectives of task 't' already"):
    cost_task.with_costs(task._replace(objectives=(("params", "min"),)), _cnn_costs, objectives=("params",))
  unknown = cost_task.with_costs(task, _cnn_costs, objectives=("accuracy",))
  with pytest.raises(ValueError, match=r"costs: \['flops', 'memory_mb', 'params'\] lack the objectives \['accuracy'\]"):
    unknown.evaluate(_pool()[0], 0)


def test_latency_is_measured_only_when_asked():
  costs = functools.partial(cost_task.layer_graph_costs, input_shape=DIGITS[0], num_outputs=DIGITS[1])
  arch_json = initial_pool("cnn")[0].to_json()
  cheap = costs(arch_json, metrics=("params",))
  assert "latency_ms" not in cheap
  timed = costs(arch_json, metrics=("latency_ms",))
  assert timed["latency_ms"] > 0 and {k: timed[k] for k in cheap} == cheap


@pytest.mark.skipif(not os.path.isdir(NB201), reason="../shared/data/nasbench201 is absent (the NB201 table)")
def test_nb201_params_come_from_the_table():
  path = tabular.resolve(NB201)
  cost = lambda arch_str, ds: tabular.nb201_costs({"kind": "nb201", "arch_str": arch_str}, path=path, dataset=ds)
  best = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|"
  empty = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
  assert cost(best, "cifar10")["params"] == 1_073_466  # the table's params_mb_cifar10, 1.073466
  # Cells differ only inside: the empty cell is the smallest network, and cifar100's classifier
  # (64 features to 100 classes instead of 10) has 90 x (64 + 1) = 5850 more parameters, in every cell.
  table = tabular.load_nb201(path, "cifar10")
  assert cost(empty, "cifar10")["params"] == table.params.min()
  for arch_str in (best, empty, table.arch_strs[1234]):
    assert cost(arch_str, "cifar100")["params"] - cost(arch_str, "cifar10")["params"] == pytest.approx(5850)
  with pytest.raises(ValueError, match="arch_json"):
    cost("|bogus|", "cifar10")
