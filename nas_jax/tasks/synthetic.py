"""The paper's synthetic objectives f0-f3 on layer graphs (NASBOT App. C.4, Fig. 7): sums of
bumps in graph quantities, maximised. f1 is for CNNs, f2 and f3 for MLPs (our reading; the text swaps them).
"""

from __future__ import annotations

import functools
import math
import time
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from nas_jax.arch import graph
from nas_jax.arch.architecture import Architecture, next_power_of_two
from nas_jax.arch.json_io import Limits
from nas_jax.search.task import Task, TaskResult

__all__ = ["FUNCTIONS", "KINDS", "PERMISSIVE_LIMITS", "Quantities", "quantities", "synthetic_value", "synthetic_task"]

#: The synthetic objectives of NASBOT's App. C.4.
FUNCTIONS = ("f0", "f1", "f2", "f3")
#: The network kinds each function is defined for.
KINDS = MappingProxyType({"f0": ("cnn", "mlp"), "f1": ("cnn",), "f2": ("mlp",), "f3": ("mlp",)})
# The space decides which networks are allowed; an objective scores any valid graph.
PERMISSIVE_LIMITS = Limits(
  max_layers=1 << 20, max_edges=1 << 30, max_degree=1 << 20, max_mass=math.inf, min_units=1, max_units=1 << 30
)
_SIGMOID = ("logistic", "tanh")


class Quantities(NamedTuple):
  """The graph quantities of NASBOT App. C.4 for one network.

  Attributes:
    am: average layer mass, tm(G) / |L| (`nas_jax.layer_masses`).
    deg_i, deg_o: average in- and out-degree over all layers. Both equal |E| / |L|; the paper
      lists them apart, so f0 has two identical terms.
    delta: hops on the shortest ip -> op path.
    n_layers, n_edges: |L| (ip, op and decision layers included) and |E|.
    stride: average stride of the layers that have one (conv, res, pools); 1 when none has.
    frac_conv3: fraction of the |L| layers labelled conv3.
    frac_sigmoid: fraction of the |L| layers that are sigmoidal (logistic, tanh).
  """

  am: float
  deg_i: float
  deg_o: float
  delta: float
  n_layers: int
  n_edges: int
  stride: float
  frac_conv3: float
  frac_sigmoid: float


def quantities(arch_json: dict, mass_params: str | graph.MassParams = "paper") -> Quantities:
  """The NASBOT App. C.4 quantities of one network given as interchange JSON.

  Args:
    arch_json: a layer-graph architecture ("cnn" or "mlp").
    mass_params: mass rules for `am` (a `graph.MASS_PARAMS` name or a MassParams).
  """
  layers = arch_json.get("layers") if isinstance(arch_json, dict) else None
  # Every network of the paper's spaces (<= 60 layers) pads to 64 slots, so the jitted graph
  # functions compile once; larger ones pad to a power of two.
  pad_to = next_power_of_two(len(layers), least=64) if isinstance(layers, list) and layers else None
  arch = Architecture.from_json(arch_json, pad_to=pad_to, limits=PERMISSIVE_LIMITS)
  mask = np.asarray(arch.mask)
  n = int(mask.sum())
  n_edges = int(np.asarray(arch.adjacency)[np.ix_(mask, mask)].sum())
  names = np.asarray(arch.vocabulary)[np.asarray(arch.labels)[mask]]
  op = int(np.flatnonzero(names == "op")[0])
  shortest_from_ip = np.asarray(graph.path_lengths(arch))[0, graph.PATH_FEATURES.index("sp_ip")]
  strides = np.asarray(arch.strides)[mask]
  strides = strides[strides > 0]
  tm = float(np.asarray(graph.layer_masses(arch, graph.mass_params(mass_params))).sum())
  return Quantities(
    am=tm / n,
    deg_i=n_edges / n,
    deg_o=n_edges / n,
    delta=float(shortest_from_ip[op]),
    n_layers=n,
    n_edges=n_edges,
    stride=float(strides.mean()) if strides.size else 1.0,
    frac_conv3=float(np.mean(names == "conv3")),
    frac_sigmoid=float(np.mean(np.isin(names, _SIGMOID))),
  )


def _bump(x: float, centre: float, rate: float) -> float:
  return math.exp(-rate * abs(x - centre))


def synthetic_value(name: str, q: Quantities) -> float:
  """f0..f3 of NASBOT App. C.4 from the quantities `q`."""
  if name not in FUNCTIONS:
    raise ValueError(f"synthetic function: {name!r} is unknown; allowed: {', '.join(FUNCTIONS)}")
  f0 = (
    _bump(q.am, 1000, 0.001)
    + _bump(q.deg_i, 5, 0.5)
    + _bump(q.deg_o, 5, 0.5)
    + _bump(q.delta, 5, 0.1)
    + _bump(q.n_layers, 30, 0.1)
    + _bump(q.n_edges, 100, 0.05)
  )
  if name == "f1":
    return f0 + _bump(q.stride, 1.5, 3) + _bump(q.n_layers, 50, 0.3) + _bump(q.am, 500, 0.001) + q.frac_conv3
  if name == "f2":
    return f0 + _bump(q.am, 2000, 0.001) + _bump(q.n_edges, 50, 0.1) + q.frac_sigmoid
  if name == "f3":
    return f0 + q.frac_sigmoid
  return f0


def fidelity_noise(seed: int, fidelity: float, full: float, scale: float) -> float:
  """The noise of a synthetic value at `fidelity` of `full`: normal with standard deviation
  scale * (1 - fidelity / full), so exact at full fidelity. Drawn from (seed, fidelity): one
  network (one seed) has one curve."""
  rng = np.random.default_rng([seed, int(round(fidelity * 1e6))])
  return float(scale * (1.0 - fidelity / full) * rng.standard_normal())


def _evaluate(
  name: str,
  delay_s: float,
  mass_params: str,
  arch_json: dict,
  seed: int,
  fidelity: float | None = None,
  *,
  fidelities: tuple = (),
  noise: float = 1.0,
) -> TaskResult:
  """Task.evaluate of `synthetic_task` (top level, so it pickles). Deterministic at full
  fidelity (seed unused); below it the value carries `fidelity_noise`, and info["cost_s"] is
  the fidelity (a simulated cost proportional to it)."""
  kind = arch_json.get("kind") if isinstance(arch_json, dict) else None
  if kind not in KINDS[name]:
    raise ValueError(f"synthetic {name}: a {kind!r} network; {name} is defined for {', '.join(KINDS[name])}")
  q = quantities(arch_json, mass_params)
  if delay_s:
    time.sleep(delay_s)
  value, info = synthetic_value(name, q), q._asdict()
  if not fidelities:
    return TaskResult(value=value, info=info)
  fidelity = fidelities[-1] if fidelity is None else float(fidelity)
  if fidelity not in fidelities:
    raise ValueError(f"fidelity: {fidelity!r}; this task has {', '.join(f'{f:g}' for f in fidelities)}")
  curve = tuple((f, value + fidelity_noise(seed, f, fidelities[-1], noise)) for f in fidelities if f <= fidelity)
  return TaskResult(value=curve[-1][1], info={**info, "cost_s": fidelity}, curve=curve)


def synthetic_task(
  name: str, *, delay_s: float = 0.0, mass_params: str = "paper", fidelities: tuple = (), noise: float = 1.0
) -> Task:
  """The synthetic objective `name` as a Task (goal "max").

  Args:
    name: "f0" (CNN or MLP), "f1" (CNN), "f2" or "f3" (MLP).
    delay_s: seconds each evaluation sleeps, to stand in for training in tests of parallel,
      timed-out or killed searches.
    mass_params: mass rules for `am`, a name in `nas_jax.MASS_PARAMS`.
    fidelities: () for the exact objective; increasing fidelities (e.g. (1, 3, 9)) for a cheap
      noisy multi-fidelity variant: below the last, the value carries normal noise of standard
      deviation noise * (1 - fidelity / last) (`fidelity_noise`) and costs `fidelity` seconds.
    noise: that noise scale.
  """
  if name not in FUNCTIONS:
    raise ValueError(f"synthetic_task: name={name!r} is unknown; allowed: {', '.join(FUNCTIONS)}")
  for what, v in (("delay_s", delay_s), ("noise", noise)):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
      raise ValueError(f"synthetic_task: {what}={v!r}; expected a finite number >= 0")
  graph.mass_params(mass_params)  # a bad name fails here, not in every worker
  fidelities = tuple(float(f) for f in fidelities)
  if any(not f > 0 for f in fidelities) or any(a >= b for a, b in zip(fidelities, fidelities[1:])):
    raise ValueError(f"synthetic_task: fidelities={fidelities!r}; expected increasing numbers > 0")
  evaluate = functools.partial(_evaluate, name, float(delay_s), mass_params, fidelities=fidelities, noise=float(noise))
  return Task(name=f"synthetic-{name}", goal="max", evaluate=evaluate, fidelities=fidelities)
