"""Which program trains a network: its own compiled one ("specialised", `specialised.evaluate`), the
shared padded one ("padded", `population`), or the cheaper of the two by an estimate ("auto").

The padded program is compiled once per padding in a process but does the arithmetic of the whole
padding; the specialised one does only the network's arithmetic but compiles for every network.
Compiling the padded program costs at least what compiling one specialised network does, so it pays
only when later networks reuse it: a network reuses the padding of an earlier one in the process
when it fits it (a smaller network fits a bigger padding). `choose` weighs the extra arithmetic of
such a padding, in seconds at the padded program's training rate, against a compile.

Both sides of that rule are `Costs`: `default_costs`, constants that benchmarks/bench_padded.py
measures, until a `TrainerMemory` (which its owner, a train task's evaluate, keeps for its lifetime)
has measured trainings of its own, whose medians it then chooses by.
"""

from __future__ import annotations

import functools
import statistics
import time
from types import MappingProxyType
from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp

from nas_jax.arch import kinds
from nas_jax.arch.architecture import Architecture
from nas_jax.models import network_costs, padded_model
from nas_jax.training import population, specialised
from nas_jax.training.datasets import Dataset, input_spec
from nas_jax.training.train_config import TrainConfig
from nas_jax.training.train_loop import EvalResult

__all__ = [
  "TRAINERS",
  "GPU_COSTS",
  "SPECIALISED_COMPILE_SECONDS",
  "TRAINING_EFFICIENCY",
  "Costs",
  "TrainerMemory",
  "allowed",
  "choose",
  "default_costs",
  "evaluate",
  "groups",
  "macs_per_second",
  "padding_of",
  "train_group",
]

TRAINERS = ("specialised", "padded", "auto")
# Per kind: a specialised program's compile seconds on the CPU that bench_padded.py measures, its
# quickest networks' (a lower bound elsewhere: bigger inputs and networks compile longer).
SPECIALISED_COMPILE_SECONDS = MappingProxyType({"mlp": 1.2, "cnn": 3.0})
# Per kind: the padded program's training rate as a share of a lone [256, 512] x [512, 512]
# product's rate on that CPU (its backward pass and Adam on every padded parameter make it a
# fraction), set below what bench_padded.py measures so that auto errs towards the specialised
# program.
TRAINING_EFFICIENCY = MappingProxyType({"mlp": 0.15, "cnn": 0.07})


class Costs(NamedTuple):
  """The two sides of a choice between programs, for one network kind on one device.

  Attributes:
    compile_seconds: compiling one program (a padded one compiles at least as long as the
      specialised one of a network in it).
    macs_per_second: the padded program's training rate: 3 (forward and backward) times its
      forward multiply-accumulates per example, times the examples it trained on, per second.
  """

  compile_seconds: float
  macs_per_second: float


# Per kind, on a GPU (`jax.default_backend() == "gpu"`), where a timed matrix product says little
# of a small network's rate (it is mostly the kernel launch): the lowest compile seconds and padded
# training rates bench_padded.py measured on an H200. Low compiles and low rates err towards the
# specialised program, as on the CPU.
GPU_COSTS = MappingProxyType({"mlp": Costs(4.2, 7.7e10), "cnn": Costs(4.4, 2.2e11)})


def padding_of(arch: Architecture, dataset: Dataset) -> Any:
  """The padding a network trains in by default on `dataset` (its own needs, rounded up)."""
  return padded_model.model_for(arch.kind).padding_for([arch], input_spec(dataset)[0])


def allowed(kind: str) -> tuple[str, ...]:
  """The trainers a network kind can use: all for the kinds with a padded model (mlp and cnn), not
  "padded" for the others."""
  return TRAINERS if kind in padded_model.KINDS else tuple(t for t in TRAINERS if t != "padded")


@functools.lru_cache(maxsize=1)
def macs_per_second() -> float:
  """Multiply-accumulates per second of a float32 [256, 512] x [512, 512] product on the default
  device: the shape of a padded slot's step, timed once per process (best of five)."""
  a, b = jnp.ones((256, 512), jnp.float32), jnp.ones((512, 512), jnp.float32)
  product = jax.jit(jnp.matmul)
  product(a, b).block_until_ready()
  best = float("inf")
  for _ in range(5):
    t0 = time.perf_counter()
    product(a, b).block_until_ready()
    best = min(best, time.perf_counter() - t0)
  return 256 * 512 * 512 / best


def default_costs(kind: str, platform: str | None = None) -> Costs:
  """The kind's `GPU_COSTS` on a GPU; on another platform its `SPECIALISED_COMPILE_SECONDS`, and
  `TRAINING_EFFICIENCY` times `macs_per_second()`. `platform` is `jax.default_backend()`'s name
  ("cpu", "gpu", "tpu"); None for the default device's."""
  if (jax.default_backend() if platform is None else platform) == "gpu":
    return GPU_COSTS[kind]
  return Costs(SPECIALISED_COMPILE_SECONDS[kind], macs_per_second() * TRAINING_EFFICIENCY[kind])


class TrainerMemory:
  """What one trainer remembers of the networks it trained: the paddings they trained in, in
  order (`seen`), and per kind the compile seconds and padded training rates its trainings
  measured (`record`), whose medians replace the `default_costs` (`costs`). A train task's evaluate
  holds one; it describes programs compiled in this process, so a pickled copy starts empty."""

  def __init__(self) -> None:
    self.seen: list[Any] = []
    self._measured: dict[str, tuple[list[float], list[float]]] = {}

  def __reduce__(self):
    return TrainerMemory, ()

  def __eq__(self, other: object) -> bool:  # what a trainer remembers is no part of which it is
    return isinstance(other, TrainerMemory)

  def __hash__(self) -> int:
    return hash(TrainerMemory)

  def costs(self, kind: str) -> Costs:
    """The median compile seconds and padded training rate of the kind's recorded trainings, each
    the kind's `default_costs` one until there is one."""
    compiles, rates = self._measured.get(kind, ((), ()))
    default = default_costs(kind)
    return Costs(
      statistics.median(compiles) if compiles else default.compile_seconds,
      statistics.median(rates) if rates else default.macs_per_second,
    )

  def record(
    self,
    kind: str,
    results: Sequence[EvalResult],
    dataset: Dataset,
    train_config: TrainConfig,
    padding_macs: float | None = None,
  ) -> None:
    """Adds what one program's training measured: `results` are its networks' (one, or a
    population's), `padding_macs` one example's forward multiply-accumulates in its padding (None
    for a specialised program, which gives a compile only). A program compiled before (0 compile
    seconds) gives no compile."""
    compiles, rates = self._measured.setdefault(kind, ([], []))
    compiled = sum(r.compile_seconds for r in results)
    if compiled > 0:
      compiles.append(compiled)
    trained = sum(r.train_seconds for r in results)
    if padding_macs is not None and trained > 0:
      epochs = max(r.epochs for r in results)  # the population runs until its last network stops
      rates.append(3 * len(results) * padding_macs * _examples(dataset, train_config) * epochs / trained)


def _examples(dataset: Dataset, train_config: TrainConfig) -> int:
  """The training examples of one epoch (whole batches)."""
  return (dataset.x_train.shape[0] // train_config.batch_size) * train_config.batch_size


def _seconds(macs: float, costs: Costs, dataset: Dataset, train_config: TrainConfig) -> float:
  """Seconds that `macs` more multiply-accumulates per example take over a training (forward and
  backward, 3x the forward, on every epoch's examples) at the padded program's rate."""
  return 3 * macs * _examples(dataset, train_config) * train_config.epochs / costs.macs_per_second


def choose(
  trainer: str,
  arch: Architecture,
  dataset: Dataset,
  train_config: TrainConfig,
  *,
  seen: Sequence[Any] = (),
  costs: Costs | None = None,
) -> tuple[str, Any]:
  """The trainer that trains `arch`, "specialised" or "padded", and the padding it trains in (None
  for "specialised").

  "padded" needs a kind with a padded model (mlp or cnn layer graphs). `seen` holds the paddings of
  networks trained before in this process; of those the network fits, the one with the fewest
  multiply-accumulates is the candidate. "padded" trains in it when its extra arithmetic over the
  network's own padding, over all epochs (forward and backward, 3x the forward), takes less time
  than a compile, and in its own padding otherwise; "auto" trains in it when its extra arithmetic
  over the network itself does, and specialised otherwise. Times are by `costs` (the kind's
  `default_costs` when None).

  Raises:
    ValueError: an unknown trainer, or "padded" for a network of another kind.
  """
  if trainer not in TRAINERS:
    raise ValueError(f"trainer: {trainer!r} is unknown; choose one of: {', '.join(TRAINERS)}")
  if not kinds.of(arch).padded:
    if trainer == "padded":
      raise ValueError(
        f"trainer: 'padded' trains {' and '.join(padded_model.KINDS)} networks, not {arch.kind} ones"
        " (use specialised or auto)"
      )
    return "specialised", None
  if trainer == "specialised":
    return "specialised", None
  model = padded_model.model_for(arch.kind)
  input_shape, num_outputs = input_spec(dataset)
  own = padding_of(arch, dataset)
  fitting = []
  for padding in dict.fromkeys(p for p in seen if type(p) is type(own)):
    try:
      model.encode(arch, padding, input_shape, num_outputs)
    except ValueError:
      continue
    fitting.append((model.macs(padding, input_shape, num_outputs), padding))
  if not fitting:
    return ("padded", own) if trainer == "padded" else ("specialised", None)
  best_macs, best = min(fitting, key=lambda f: f[0])
  if trainer == "padded" and best == own:
    return "padded", own
  if trainer == "padded":
    baseline = model.macs(own, input_shape, num_outputs)
  else:  # the network's own multiply-accumulates
    baseline = network_costs.network_costs(arch, input_shape, num_outputs).flops // 2
  costs = default_costs(arch.kind) if costs is None else costs
  if _seconds(best_macs - baseline, costs, dataset, train_config) < costs.compile_seconds:
    return "padded", best
  return ("padded", own) if trainer == "padded" else ("specialised", None)


def groups(
  archs: Sequence[Architecture], dataset: Dataset, train_config: TrainConfig, costs: Costs | None = None
) -> list[list[int]]:
  """Which networks of one kind train together as populations (each group one program, in the
  padding of its members): indices into `archs`, in order.

  A network joins the group whose padding grows least for it when the arithmetic that adds (every
  member in the joint padding, against the group and the network each in its own) takes less time
  than a compile, and starts a group otherwise: on a device whose arithmetic is cheap beside a
  compile, one program trains them all. Times are by `costs` (the kind's `default_costs` when None).

  Raises:
    ValueError: for networks of several kinds, or of a kind without a padded model.
  """
  names = sorted({a.kind for a in archs})
  if len(names) != 1:
    raise ValueError(f"groups: networks of kinds {names}; a population is of one kind")
  model = padded_model.model_for(names[0])
  input_shape, num_outputs = input_spec(dataset)
  costs = default_costs(names[0]) if costs is None else costs

  def cost(members):  # the population's multiply-accumulates per example, in its members' padding
    padding = model.padding_for([archs[i] for i in members], input_shape)
    return len(members) * model.macs(padding, input_shape, num_outputs)

  found: list[tuple[list[int], float]] = []  # (members, their population's macs)
  for i in range(len(archs)):
    alone = cost([i])
    added = [cost(members + [i]) - macs - alone for members, macs in found]
    g = min(range(len(found)), key=added.__getitem__, default=None)
    if g is not None and _seconds(added[g], costs, dataset, train_config) < costs.compile_seconds:
      found[g] = (found[g][0] + [i], found[g][1] + added[g] + alone)
    else:
      found.append(([i], alone))
  return [members for members, _ in found]


def evaluate(
  trainer: str,
  arch: Architecture,
  dataset: Dataset,
  train_config: TrainConfig,
  key: jax.Array,
  memory: TrainerMemory,
) -> tuple[EvalResult, str]:
  """Trains `arch` with the trainer and padding `choose` picks by what `memory` holds (the
  paddings trained in before, the costs measured); returns the result and that trainer's name,
  and adds the padding and what the training measured to `memory`."""
  padded_kind = kinds.of(arch).padded
  costs = memory.costs(arch.kind) if padded_kind and trainer != "specialised" else None
  chosen, padding = choose(trainer, arch, dataset, train_config, seen=memory.seen, costs=costs)
  if padded_kind:
    used = padding if chosen == "padded" else padding_of(arch, dataset)
    if used not in memory.seen:
      memory.seen.append(used)
  if chosen == "padded":
    (result,) = population.train_population([arch], dataset, train_config, [key], padding=padding)
    memory.record(arch.kind, [result], dataset, train_config, _padding_macs(arch.kind, padding, dataset))
  else:
    result = specialised.evaluate(arch, dataset, train_config, key)
    if padded_kind:
      memory.record(arch.kind, [result], dataset, train_config)
  return result, chosen


def train_group(
  archs: Sequence[Architecture],
  dataset: Dataset,
  train_config: TrainConfig,
  keys: Sequence[jax.Array],
  memory: TrainerMemory | None = None,
) -> list[EvalResult]:
  """`population.train_population` of networks of one kind in the padding of them all (a
  group of `groups`), adding what it measured to `memory` when one is given. (The padding
  refuses networks of another kind than the first's, with one line.)"""
  kind = archs[0].kind
  padding = padded_model.model_for(kind).padding_for(archs, input_spec(dataset)[0])
  results = population.train_population(archs, dataset, train_config, keys, padding=padding)
  if memory is not None:
    memory.record(kind, results, dataset, train_config, _padding_macs(kind, padding, dataset))
  return results


def _padding_macs(kind: str, padding: Any, dataset: Dataset) -> int:
  """One example's forward multiply-accumulates in `padding`."""
  return padded_model.model_for(kind).macs(padding, *input_spec(dataset))
