"""The conditional Task: it pickles, scores a point's JSON by its validation error rate (to
minimise) as the batched trainer does, and checks its arguments before any trial."""

import pickle

import jax
import pytest

from nas_jax.search.task import TaskResult
from nas_jax.tasks import conditional_task
from nas_jax.training import conditional, datasets
from tests.training.test_conditional import SPACE, SPEC, point


def test_the_task_returns_validation_error_rates_to_minimise():
  task = conditional_task.conditional_task("digits", epochs=2)
  assert (task.name, task.goal) == ("conditional-digits", "min")
  task = pickle.loads(pickle.dumps(task))
  p = point(2, **{"layer2.activation": 1})
  result = task.evaluate(SPACE.to_json(p), 7)
  assert isinstance(result, TaskResult)
  assert 0 <= result.value <= 1 and 0 <= result.test_value <= 1
  # The batched trainer's score of the point alone, under the trial's seed as its key.
  want = conditional.evaluate_point(p, SPEC, datasets.digits("mlp"), epochs=2, key=jax.random.key(7))
  assert (result.value, result.test_value) == (float(want.val_error[0]), float(want.test_error[0]))
  assert result.info["val_errors"] == want.val_errors[0].tolist()
  with pytest.raises(ValueError, match="params.depth: missing"):
    task.evaluate({"kind": "conditional", "params": {}}, 0)


def test_bad_epochs_are_refused_when_the_task_is_made():
  with pytest.raises(ValueError, match="epochs: 0; expected an integer >= 1"):
    conditional_task.conditional_task("digits", epochs=0)
