"""`check_search_config`: every field of a search config validated before anything runs, each
error naming `config.<field>`, the value and what is allowed."""

from __future__ import annotations

import math
import os
from types import MappingProxyType
from typing import Any

import ml_collections

from nas_jax.spaces.constrained import METRICS
from nas_jax.tasks import synthetic, tabular
from nas_jax.training import trainer_choice
from nas_jax.training.train_config import TrainConfig, check_config
from nas_jax.wiring.parts import SCHEDULERS, SPACES, STRATEGIES
from nas_jax.wiring.proxy_sources import check_proxy
from nas_jax.wiring.registries import COSTS, EXECUTORS, TASKS, fidelities_of

__all__ = ["check_search_config", "objectives_of", "limits_of"]


_FIELDS = (
  "strategy",
  "strategy_config",
  "space",
  "task",
  "budget",
  "num_workers",
  "executor",
  "ray_address",
  "eval_timeout_s",
  "seed",
  "workdir",
)


_TRAIN_FIELDS = (
  "dataset",
  "epochs",
  "batch_size",
  "learning_rate",
  "optimizer",
  "schedule",
  "weight_decay",
  "data_seed",
  "target",
  "task_type",
)


def _is_int(x: Any) -> bool:
  return isinstance(x, int) and not isinstance(x, bool)


def _need(ok: bool, field: str, value: Any, allowed: str) -> None:
  if not ok:
    raise ValueError(f"config.{field}: {value!r} is not allowed; {allowed}")


def _need_count(field: str, value: Any, least: int, note: str = "") -> None:
  """`value` must be an integer >= least; note follows the message's "expected ..." part."""
  _need(_is_int(value) and value >= least, field, value, f"expected an integer >= {least}{note}")


def _get(section: Any, field: str, where: str) -> Any:
  try:
    return section[field]
  except (KeyError, AttributeError):
    raise ValueError(f"config.{where}{field}: missing; every config declares it (see configs/)") from None


def _check_synthetic(c: Any, kind: str) -> None:
  fn = _get(c, "function", "task.")
  _need(fn in synthetic.FUNCTIONS, "task.function", fn, f"choose one of: {', '.join(synthetic.FUNCTIONS)}")
  _need(
    kind in synthetic.KINDS[fn],
    "task.function",
    fn,
    f"{fn} is defined for {', '.join(synthetic.KINDS[fn])} networks but config.space.kind is {kind!r}",
  )
  delay = _get(c, "delay_s", "task.")
  _need(
    isinstance(delay, (int, float)) and not isinstance(delay, bool) and 0 <= delay < math.inf,
    "task.delay_s",
    delay,
    "expected a finite number >= 0",
  )


def _check_train(c: Any, kind: str) -> None:
  for f in _TRAIN_FIELDS:
    _get(c, f, "task.")
  _need(
    isinstance(c.dataset, str) and bool(c.dataset),
    "task.dataset",
    c.dataset,
    "expected 'digits', 'diabetes' or a path to a .csv/.npz table",
  )
  _need_count("task.data_seed", c.data_seed, 0)
  fields = ("epochs", "batch_size", "learning_rate", "optimizer", "schedule", "weight_decay")
  train_config = TrainConfig(**{f: c[f] for f in fields}, patience=c.get("patience", 0))
  try:  # the fields' one check
    check_config(train_config, where="config.task")
  except TypeError as e:  # a config's every error is a ValueError
    raise ValueError(str(e)) from None
  _need(isinstance(c.target, str), "task.target", c.target, "expected a column name ('' for digits, diabetes)")
  _need(
    c.task_type in ("regression", "classification"),
    "task.task_type",
    c.task_type,
    "choose one of: regression, classification (used for tables)",
  )
  trainer = c.get("trainer", "specialised")
  allowed = trainer_choice.allowed(kind)
  _need(
    trainer in allowed,
    "task.trainer",
    trainer,
    f"choose one of: {', '.join(allowed)}",
  )
  # Layer-graph spaces give CNNs softmax and MLPs linear decision layers.
  problem = {"digits": "classification", "diabetes": "regression"}.get(c.dataset, c.task_type)
  want = "regression" if kind == "mlp" else "classification"
  _need(
    problem == want,
    "task.dataset",
    c.dataset,
    f"it is a {problem} problem, but config.space.kind={kind!r} networks solve {want} problems",
  )


def _check_nb201(c: Any, kind: str) -> None:
  _need(kind == "nb201", "task.name", "nb201", f"it scores nb201 cells but config.space.kind is {kind!r}")
  path = _get(c, "path", "task.")
  _need(
    isinstance(path, str), "task.path", path, f"expected the NAS-Bench-201 table ({tabular.NB201_FILE}) or its folder"
  )
  table = os.path.join(path, tabular.NB201_FILE) if os.path.isdir(path) else path
  if not os.path.isfile(table):
    raise ValueError(
      f"config.task.path: {path!r} not found: no NAS-Bench-201 table {tabular.NB201_FILE} there (it is never"
      f" downloaded); {tabular.MAKE_TABLES}, then pass --config.task.path=DIR"
    )
  dataset, metric = _get(c, "dataset", "task."), _get(c, "report_metric", "task.")
  _need(dataset in tabular.DATASETS, "task.dataset", dataset, f"choose one of: {', '.join(tabular.DATASETS)}")
  _need(
    metric in tabular.REPORT_METRICS,
    "task.report_metric",
    metric,
    f"choose one of: {', '.join(tabular.REPORT_METRICS)}",
  )


def _check_morph_train(c: Any, kind: str) -> None:
  _need(
    kind == "autokeras", "task.name", "morph_train", f"it trains autokeras networks but config.space.kind is {kind!r}"
  )
  _check_train(c, kind)
  for f in ("weights_dir", "morph_noise"):
    _get(c, f, "task.")
  _need(isinstance(c.weights_dir, str), "task.weights_dir", c.weights_dir, "expected a path, or '' for WORKDIR/weights")
  _need(isinstance(c.morph_noise, bool), "task.morph_noise", c.morph_noise, "expected True or False")


def _check_conditional(c: Any, kind: str) -> None:
  _need(
    kind == "conditional",
    "task.name",
    "conditional",
    f"it trains points of the conditional space but config.space.kind is {kind!r}",
  )
  for f in ("dataset", "epochs", "data_seed", "max_depth"):
    _get(c, f, "task.")
  _need(
    c.dataset in ("digits", "diabetes") or (isinstance(c.dataset, str) and os.path.isfile(c.dataset)),
    "task.dataset",
    c.dataset,
    "expected 'digits', 'diabetes' or a path to a regression table",
  )
  _need_count("task.epochs", c.epochs, 1)
  _need_count("task.data_seed", c.data_seed, 0)
  _need_count("task.max_depth", c.max_depth, 1, ", the space's max_depth")


_TASK_CHECKS = MappingProxyType(
  {
    "synthetic": _check_synthetic,
    "train": _check_train,
    "nb201": _check_nb201,
    "morph_train": _check_morph_train,
    "conditional": _check_conditional,
  }
)


def objectives_of(config: ml_collections.ConfigDict) -> tuple[str, ...]:
  """The cost metrics of `config.objectives` ("params,flops" -> ("params", "flops")); () if unset."""
  text = config.get("objectives", "")
  _need(
    isinstance(text, str),
    "objectives",
    text,
    f"expected cost metrics joined by commas, e.g. 'params' ({', '.join(METRICS)})",
  )
  return tuple(name.strip() for name in text.split(",") if name.strip())


def limits_of(config: ml_collections.ConfigDict) -> dict[str, float]:
  """{metric: maximum} of the positive `config.constraints.max_<metric>` fields (0: no limit)."""
  section = config.get("constraints", None) or {}
  return {name[len("max_") :]: float(v) for name, v in section.items() if v}


def _check_costs(config: ml_collections.ConfigDict, task_name: str) -> None:
  """config.objectives and config.constraints (both optional): known metrics the task can cost."""
  objectives, text = objectives_of(config), config.get("objectives", "")
  for name in objectives:
    _need(name in METRICS, "objectives", text, f"{name!r} is not a cost metric; allowed: {', '.join(METRICS)}")
  _need(len(set(objectives)) == len(objectives), "objectives", text, "it names a metric twice")
  section = config.get("constraints", None) or {}
  for name, v in section.items():
    _need(
      name.startswith("max_") and name[len("max_") :] in METRICS,
      f"constraints.{name}",
      v,
      f"constraints are max_<metric> fields, metric one of: {', '.join(METRICS)}",
    )
    _need(
      isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf,
      f"constraints.{name}",
      v,
      "expected a finite number > 0, or 0 for no limit",
    )
  known = COSTS[task_name][0] if task_name in COSTS else ()
  for name in sorted(set(objectives) | set(limits_of(config))):
    where = "objectives" if name in objectives else f"constraints.max_{name}"
    _need(
      name in known,
      where,
      text if name in objectives else section[f"max_{name}"],
      f"task {task_name!r} knows the costs: {', '.join(known) or 'none'}",
    )


# config.task.name -> what its fidelities may be, checked before the task is built.
_FIDELITY_RULES = MappingProxyType(
  {
    "nb201": (lambda f, c: f in ((), tabular.FIDELITIES), "'' or '12,200' (the benchmark's two schedules)"),
    "synthetic": (lambda f, c: True, "increasing numbers > 0, e.g. '1,3,9'"),
    "train": (
      lambda f, c: all(x == int(x) for x in f) and (not f or f[-1] == c.epochs),
      "increasing whole epochs ending at task.epochs, e.g. '1,3,9' with task.epochs=9",
    ),
  }
)


def _check_fidelities(config: ml_collections.ConfigDict, task_name: str) -> None:
  """config.task.fidelities (optional) and config.scheduler; the scheduler checks its own options
  (config.scheduler_config, `schedulers.OPTIONS`) where it is built."""
  fidelities, text = fidelities_of(config.task), config.task.get("fidelities", "")
  if task_name not in _TASK_CHECKS:  # a registered task of the user's: its builder checks its own
    rule, allowed = (lambda f, c: True), "increasing numbers > 0"
  else:
    rule, allowed = _FIDELITY_RULES.get(task_name, (lambda f, c: f == (), "'' (this task has one fidelity)"))
  increasing = all(f > 0 for f in fidelities) and all(a < b for a, b in zip(fidelities, fidelities[1:]))
  _need(increasing and rule(fidelities, config.task), "task.fidelities", text, f"expected {allowed}")
  name = config.get("scheduler", "")
  _need(name in ("", *SCHEDULERS), "scheduler", name, f"choose one of: {', '.join(SCHEDULERS)}, or '' for none")
  if name:
    _need(
      len(fidelities) >= 2 or task_name not in _TASK_CHECKS,  # a user's task may set its own in its builder
      "scheduler",
      name,
      f"it needs a task with two fidelities or more; set config.task.fidelities ({allowed})",
    )
    _need(not objectives_of(config), "scheduler", name, "it ranks by the value alone; unset config.objectives")


def check_search_config(config: ml_collections.ConfigDict) -> None:
  """Checks every field of a search config in plain Python, before anything is built.

  Raises:
    ValueError naming `config.<field>`, the value and what is allowed.
  """
  for f in _FIELDS[:-1]:
    _get(config, f, "")
  try:
    workdir = config.workdir
  except (KeyError, AttributeError, ValueError):  # ml_collections' RequiredValueError is a ValueError
    workdir = None
  _need(
    isinstance(workdir, str) and bool(workdir),
    "workdir",
    workdir,
    "it is required: pass --config.workdir=DIR (a new DIR starts a search, an old one resumes it)",
  )
  _need(
    not os.path.exists(workdir) or os.path.isdir(workdir),
    "workdir",
    workdir,
    "it is a file; expected a folder (created if missing)",
  )
  _need(config.strategy in STRATEGIES, "strategy", config.strategy, f"choose one of: {', '.join(sorted(STRATEGIES))}")
  space_name = _get(config.space, "name", "space.")
  _need(space_name in SPACES, "space.name", space_name, f"choose one of: {', '.join(sorted(SPACES))}")
  kind = _get(config.space, "kind", "space.")
  task_name = _get(config.task, "name", "task.")
  _need(task_name in TASKS, "task.name", task_name, f"choose one of: {', '.join(sorted(TASKS))}")
  if space_name == "layer_graph":
    _need(kind in ("cnn", "mlp"), "space.kind", kind, "choose one of: cnn, mlp")
    m = _get(config.space, "max_layers", "space.")
    _need_count("space.max_layers", m, 4, " (the paper uses 60)")
  _TASK_CHECKS.get(task_name, lambda section, kind: None)(config.task, kind)  # user tasks check themselves
  if task_name == "conditional":
    _need(
      config.space.get("max_depth", 3) == config.task.max_depth,
      "task.max_depth",
      config.task.max_depth,
      f"it must equal config.space.max_depth ({config.space.get('max_depth', 3)})",
    )
  _check_costs(config, task_name)
  _check_fidelities(config, task_name)
  _need_count("budget", config.budget, 1)
  _need_count("num_workers", config.num_workers, 1)
  _need(config.executor in EXECUTORS, "executor", config.executor, f"choose one of: {', '.join(EXECUTORS)}")
  _need(
    isinstance(config.ray_address, str),
    "ray_address",
    config.ray_address,
    "expected a string: '' (local Ray), 'auto' or 'ray://host:port'",
  )
  _need(
    not config.ray_address or config.executor == "ray",
    "ray_address",
    config.ray_address,
    f"it is read by executor 'ray' only, and executor is {config.executor!r}; set both or clear ray_address",
  )
  _need_count("worker_retries", config.get("worker_retries", 0), 0, ": reruns of an evaluation whose worker was lost")
  connect = config.get("ray_connect_timeout_s", 30.0)
  _need(
    isinstance(connect, (int, float)) and not isinstance(connect, bool) and 0 < connect < math.inf,
    "ray_connect_timeout_s",
    connect,
    "expected a number of seconds > 0",
  )
  t = config.eval_timeout_s
  _need(
    isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < math.inf,
    "eval_timeout_s",
    t,
    "expected a number of seconds > 0, or 0 for no limit",
  )
  _need(
    t == 0 or config.executor not in ("inline", "population", "simulated"),
    "eval_timeout_s",
    t,
    f"the {config.executor} executor cannot stop an evaluation; use executor 'local' or 'ray', or 0",
  )
  _need_count("seed", config.seed, 0)
  prefetch = config.get("prefetch", 0)
  _need_count("prefetch", prefetch, 0, ": proposals queued beyond the busy workers")
  _check_simulated(config, task_name)
  check_proxy(config)


def _check_simulated(config: ml_collections.ConfigDict, task_name: str) -> None:
  """config.sim_sync and config.sim_charge_model (optional), read by executor 'simulated' only,
  which needs a task that reports its cost (a user's task is checked at its first evaluation)."""
  for name in ("sim_sync", "sim_charge_model"):
    v = config.get(name, False)
    _need(isinstance(v, bool), name, v, "expected True or False")
    _need(
      not v or config.executor == "simulated", name, v, f"only executor 'simulated' reads it, not {config.executor!r}"
    )
  if config.executor == "simulated":
    costed = task_name == "nb201" or task_name == "synthetic" and bool(fidelities_of(config.task))
    allowed = "tasks that do: nb201, synthetic with task.fidelities"
    what = f"task {task_name!r} reports no cost (TaskResult.info['cost_s']) for simulated workers; {allowed}"
    _need(costed or task_name not in _TASK_CHECKS, "executor", config.executor, what)
    prefetch = config.get("prefetch", 0)
    _need(prefetch == 0, "prefetch", prefetch, "executor 'simulated' proposes when a worker frees; use 0")
