"""The conditional Task: it pickles, scores a point's JSON by its validation error rate (to
minimise) as the batched trainer does, and checks its arguments before any trial."""

import pickle

import numpy as np
import pytest

from nas_jax.search.task import TaskResult
from nas_jax.tasks import conditional_task
from tests.training.test_conditional import SPACE, batch, digits  # noqa: F401  (fixtures)


def test_the_task_returns_validation_error_rates_to_minimise(batch, digits):  # noqa: F811
  task = conditional_task.conditional_task("digits", epochs=2)
  assert (task.name, task.goal) == ("conditional-digits", "min")
  task = pickle.loads(pickle.dumps(task))
  points, r = batch
  result = task.evaluate(SPACE.to_json(points[1]), 7)
  assert isinstance(result, TaskResult)
  assert 0 <= result.value <= 1 and 0 <= result.test_value <= 1
  np.testing.assert_allclose(result.value, r.val_error[1], atol=1.01 / len(digits.y_val))
  assert len(result.info["val_errors"]) == 2
  with pytest.raises(ValueError, match="params.depth: missing"):
    task.evaluate({"kind": "conditional", "params": {}}, 0)


def test_bad_epochs_are_refused_when_the_task_is_made():
  with pytest.raises(ValueError, match="epochs: 0; expected an integer >= 1"):
    conditional_task.conditional_task("digits", epochs=0)
