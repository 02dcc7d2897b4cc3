"""The padded MLP: one compiled program runs every MLP layer graph up to a padding.

`ArchNet` turns a network's structure into a static program, so every new network compiles anew.
Here the structure is data: a network is a `PaddedNet` of arrays (each layer's parents, activation
and unit mask) read by one program whose shapes depend only on the `Padding`. The program runs the
layer slots in topological order: slot j gathers its parents' outputs from a feature buffer (row 0
the input, row 1 + j slot j's output), applies its dense layer to each parent's block and sums them
(a dense layer on a concatenation is the sum of its row blocks), then its activation.
Padded units, slots, parents and decision layers are masked to zero, so their parameters get zero
gradients and stay at zero under Adam or SGD, and the function is `ArchNet`'s (tests copy a
specialised network's variables in and compare outputs and gradients).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture, next_power_of_two
from nas_jax.models import arch_net

__all__ = [
  "ACTIVATION_NAMES",
  "Padding",
  "PaddedNet",
  "Layout",
  "padding_for",
  "check_fits",
  "nodes_of",
  "encode",
  "apply",
  "average_decisions",
  "to_padded",
  "to_specialised",
  "init_params",
  "param_shapes",
  "net_shapes",
  "macs",
  "layout_macs",
]

Role = labels_lib.Role
# A slot's activation is an index into this tuple; crelu also writes relu(-z) to the second half.
ACTIVATION_NAMES = tuple(arch_net.ACTIVATIONS)
_FIRST_HALF = tuple(arch_net.ACTIVATIONS["relu" if n == "crelu" else n] for n in ACTIVATION_NAMES)
_CRELU = ACTIVATION_NAMES.index("crelu")


class Padding(NamedTuple):
  """The static shape of a padded MLP: what one compiled program can run.

  Attributes:
    layers: processing-layer slots (dense + activation).
    width: units per slot; a crelu slot outputs 2 * width features.
    fan_in: parents per layer (processing or decision).
    decisions: decision-layer slots.
    crelu: whether any slot may be a crelu, whose output doubles the feature buffer's width.
  """

  layers: int
  width: int
  fan_in: int
  decisions: int
  crelu: bool


class PaddedNet(NamedTuple):
  """One network as padded arrays (a pytree; a population stacks them on a leading axis).

  Attributes:
    parents: [layers + decisions, fan_in] int32 feature-buffer rows of each layer's parents, in
      concatenation order (row 0 is the input, row 1 + j processing slot j); processing slots first.
    parent_mask: [layers + decisions, fan_in] float32, 1 for a real parent.
    activation: [layers] int32 index into `ACTIVATION_NAMES` (0 on empty slots).
    unit_mask: [layers, width] float32, 1 for a real unit.
    decision_mask: [decisions] float32, 1 for a real decision layer.
  """

  parents: jax.Array
  parent_mask: jax.Array
  activation: jax.Array
  unit_mask: jax.Array
  decision_mask: jax.Array


class Layout(NamedTuple):
  """Where a network's specialised parameters sit in the padded ones (host data, from `encode`).

  Attributes:
    names: the `ArchNet` parameter name of each real layer ("3_relu"), processing layers first.
    slots: each layer's slot: processing slot j, or decision slot d.
    decision: whether each layer is a decision layer.
    rows: each layer's [fan_in_real, 2] int array: for every row of its specialised kernel (its
      concatenated input), the parent position and the feature in that parent's padded block.
    units: each layer's output units (K for a decision layer).
  """

  names: tuple[str, ...]
  slots: tuple[int, ...]
  decision: tuple[bool, ...]
  rows: tuple[np.ndarray, ...]
  units: tuple[int, ...]


def check_fits(padding: NamedTuple, expected: type, needs: Sequence[int]) -> None:
  """TypeError unless `padding` is an `expected` (a model's Padding type); ValueError naming the
  first field of `padding` below what a network `needs` of it (one number per field, in order)."""
  if not isinstance(padding, expected):
    raise TypeError(f"padding: got {type(padding).__name__}; expected a {expected.__module__}.{expected.__name__}")
  for field, have, got in zip(type(padding)._fields, padding, needs):
    if got > have:
      raise ValueError(f"padding.{field}: the network needs {got}, the padding has {have}; use padding_for")


def nodes_of(arch: Architecture, kind: str) -> tuple[arch_net.Node, ...]:
  """The network's nodes (`arch_net.network_nodes`); ValueError unless it is of the padded model's `kind`."""
  if getattr(arch, "kind", None) != kind:
    raise ValueError(
      f"padded_{kind}: a {getattr(arch, 'kind', type(arch).__name__)!r} network; it runs {kind} networks"
    )
  return arch_net.network_nodes(arch)


def padding_for(archs: Sequence[Architecture]) -> Padding:
  """The smallest padding, each field rounded up to a power of two, that fits all `archs`.

  Rounding up lets networks of similar size share one compiled program (layers at least 8,
  width at least 16).
  """
  if not archs:
    raise ValueError("padding_for: no architectures given")
  layers, width, fan_in, decisions, crelu = (max(v) for v in zip(*(_needs(nodes_of(a, "mlp")) for a in archs)))
  up = next_power_of_two
  return Padding(up(layers, 8), up(width, 16), up(fan_in), up(decisions), bool(crelu))


def _needs(nodes: tuple[arch_net.Node, ...]) -> tuple[int, int, int, int, bool]:
  """What a network of these nodes needs of each `Padding` field, unrounded."""
  body = [n for n in nodes if n.role == Role.ACT]
  return (
    len(body),
    max([1] + [n.units for n in body]),
    max([1] + [len(n.parents) for n in nodes if n.role in (Role.ACT, Role.DECISION)]),
    max(1, sum(n.role == Role.DECISION for n in nodes)),
    any(n.label == "crelu" for n in body),
  )


def encode(arch: Architecture, padding: Padding, num_inputs: int, num_outputs: int) -> tuple[PaddedNet, Layout]:
  """A network as padded arrays, and where its specialised parameters go.

  Args:
    arch: one unbatched mlp Architecture.
    padding: a Padding it fits (`padding_for`).
    num_inputs: D, the input features.
    num_outputs: K, each decision layer's outputs (the class count for softmax, 1 for linear).

  Raises:
    ValueError: if the network is not an mlp or does not fit the padding.
  """
  nodes = nodes_of(arch, "mlp")
  check_fits(padding, Padding, _needs(nodes))
  lay, w = padding.layers, padding.width
  arrays = _blank(padding)
  parents, parent_mask, activation, unit_mask, decision_mask = (arrays[k] for k in PaddedNet._fields)
  buffer_row, features = {}, {}  # per node position: its buffer row, and its features there
  names, slots, decision, rows, units = [], [], [], [], []
  n_body = n_dec = 0
  for pos, node in enumerate(nodes):
    if node.role == Role.IP:
      buffer_row[pos], features[pos] = 0, np.arange(num_inputs)
      continue
    if node.role == Role.OP:
      continue
    is_dec = node.role == Role.DECISION
    row = lay + n_dec if is_dec else n_body
    for k, q in enumerate(node.parents):
      parents[row, k], parent_mask[row, k] = buffer_row[q], 1.0
    rows.append(
      np.concatenate([np.stack([np.full(len(features[q]), k), features[q]], 1) for k, q in enumerate(node.parents)])
    )
    names.append(f"{node.slot}_{node.label}")
    slots.append(n_dec if is_dec else n_body)
    decision.append(is_dec)
    if is_dec:
      decision_mask[n_dec] = 1.0
      units.append(num_outputs)
      n_dec += 1
      continue
    activation[n_body] = ACTIVATION_NAMES.index(node.label)
    unit_mask[n_body, : node.units] = 1.0
    units.append(node.units)
    real = np.arange(node.units)
    features[pos] = np.concatenate([real, w + real]) if node.label == "crelu" else real
    buffer_row[pos] = 1 + n_body
    n_body += 1
  net = PaddedNet(**{k: jnp.asarray(a) for k, a in arrays.items()})
  return net, Layout(tuple(names), tuple(slots), tuple(decision), tuple(rows), tuple(units))


def _features(padding: Padding, num_inputs: int) -> int:
  """F, the width of the feature buffer: the input or a slot's output, whichever is wider."""
  return max(num_inputs, (1 + bool(padding.crelu)) * padding.width)


def apply(params: dict[str, Any], net: PaddedNet, x: jax.Array, decision: str) -> jax.Array:
  """Runs a padded network.

  The slots are unrolled, each with its own kernel array: on a CPU the gradient of a `lax.scan`
  over stacked kernels is slower, and slicing one stacked kernel array in an unrolled loop is as
  slow as the scan.

  Args:
    params: {"kernel": L arrays [P, F, U], "bias": L arrays [U], "decision_kernel": [Dm, P, F, K],
      "decision_bias": [Dm, K]} (`to_padded`, `init_params`).
    net: the network (`encode`).
    x: [B, D] inputs.
    decision: "softmax" (K classes) or "linear" (K = 1), as in `ArchNet`.

  Returns:
    [B, K] float32 log-probabilities (softmax) or [B] predictions (linear): `ArchNet`'s outputs.
  """
  lay = len(params["kernel"])
  _, feat, width = params["kernel"][0].shape
  x = x.astype(jnp.float32)
  buffer = jnp.zeros((lay + 1, x.shape[0], feat), jnp.float32).at[0, :, : x.shape[1]].set(x)

  def gather(buffer, parents, mask):  # [P] rows -> [P, B, F], absent parents zeroed
    # A one-hot product rather than an indexed read: its gradient is a product too, not a scatter.
    pick = jax.nn.one_hot(parents, buffer.shape[0], dtype=buffer.dtype) * mask[:, None]
    return jnp.einsum("pj,jbf->pbf", pick, buffer)

  for j in range(lay):
    z = jnp.einsum("pbf,pfu->bu", gather(buffer, net.parents[j], net.parent_mask[j]), params["kernel"][j])
    z = z + params["bias"][j]
    act, units = net.activation[j], net.unit_mask[j]
    out = jnp.stack([f(z) for f in _FIRST_HALF])[act] * units
    if feat >= 2 * width:  # room for crelu's second half: relu(-z)
      out = jnp.concatenate([out, jax.nn.relu(-z) * (act == _CRELU) * units], axis=-1)
    buffer = buffer.at[j + 1].set(jnp.pad(out, ((0, 0), (0, feat - out.shape[-1]))))
  dec_in = jax.vmap(gather, (None, 0, 0))(buffer, net.parents[lay:], net.parent_mask[lay:])  # [Dm, P, B, F]
  z = jnp.einsum("dpbf,dpfk->dbk", dec_in, params["decision_kernel"]) + params["decision_bias"][:, None]
  return average_decisions(z, net.decision_mask, decision)


def average_decisions(z: jax.Array, decision_mask: jax.Array, decision: str) -> jax.Array:
  """`ArchNet`'s op over padded decision slots: z [Dm, B, K] outputs, decision_mask [Dm].

  Returns:
    [B, K] log of the mean probability over the real slots (softmax), or [B] their mean (linear).
  """
  real = decision_mask[:, None, None] > 0
  if decision == "softmax":
    logp = jnp.where(real, jax.nn.log_softmax(z), -jnp.inf)
    return jax.nn.logsumexp(logp, axis=0) - jnp.log(decision_mask.sum())
  return jnp.where(real, z, 0.0).sum(0)[:, 0] / decision_mask.sum()


def param_shapes(padding: Padding, num_inputs: int, num_outputs: int) -> dict[str, Any]:
  """The shapes (ShapeDtypeStructs, in `apply`'s layout) of the padded params of D = num_inputs
  features and K = num_outputs outputs."""
  shapes = _stacked_shapes(padding, num_inputs, num_outputs)
  spec = lambda shape: jax.ShapeDtypeStruct(shape, jnp.float32)
  per_slot = {k: [spec(shapes[k][1:])] * padding.layers for k in ("kernel", "bias")}
  return {
    **per_slot,
    "decision_kernel": spec(shapes["decision_kernel"]),
    "decision_bias": spec(shapes["decision_bias"]),
  }


def _stacked_shapes(padding: Padding, num_inputs: int, num_outputs: int) -> dict[str, tuple[int, ...]]:
  """The host params' shapes with the slots stacked: kernel [L, P, F, U], bias [L, U]."""
  lay, w, p, dec, _ = padding
  feat = _features(padding, num_inputs)
  shapes = {"kernel": (lay, p, feat, w), "bias": (lay, w), "decision_kernel": (dec, p, feat, num_outputs)}
  shapes["decision_bias"] = (dec, num_outputs)
  return shapes


def _split(stacked: dict[str, np.ndarray]) -> dict[str, Any]:
  """`apply`'s layout: one kernel and one bias array per processing slot."""
  return {**stacked, "kernel": list(stacked["kernel"]), "bias": list(stacked["bias"])}


def _stack(params: dict[str, Any]) -> dict[str, np.ndarray]:
  return {
    k: np.stack([np.asarray(a) for a in v]) if isinstance(v, (list, tuple)) else np.asarray(v)
    for k, v in params.items()
  }


def _blank(padding: Padding) -> dict[str, np.ndarray]:
  """A `PaddedNet`'s fields as host zeros of this padding (`encode` fills them)."""
  lay, w, p, dec, _ = padding
  return {
    "parents": np.zeros((lay + dec, p), np.int32),
    "parent_mask": np.zeros((lay + dec, p), np.float32),
    "activation": np.zeros(lay, np.int32),
    "unit_mask": np.zeros((lay, w), np.float32),
    "decision_mask": np.zeros(dec, np.float32),
  }


def net_shapes(padding: Padding) -> PaddedNet:
  """The shapes of a `PaddedNet` of this padding."""
  return PaddedNet(**{k: jax.ShapeDtypeStruct(a.shape, a.dtype) for k, a in _blank(padding).items()})


def to_padded(params: dict[str, Any], layout: Layout, padding: Padding, num_inputs: int) -> dict[str, Any]:
  """Copies an `ArchNet`'s params ({name: {"kernel", "bias"}}) into padded params (zeros elsewhere)."""
  num_outputs = max([u for u, d in zip(layout.units, layout.decision) if d], default=1)
  out = {k: np.zeros(v, np.float32) for k, v in _stacked_shapes(padding, num_inputs, num_outputs).items()}
  for name, slot, is_dec, rows in zip(layout.names, layout.slots, layout.decision, layout.rows):
    prefix = "decision_" if is_dec else ""
    kernel, bias = np.asarray(params[name]["kernel"]), np.asarray(params[name]["bias"])
    out[prefix + "kernel"][slot, rows[:, 0], rows[:, 1], : kernel.shape[1]] = kernel
    out[prefix + "bias"][slot, : bias.shape[0]] = bias
  return _split(out)


def to_specialised(params: dict[str, Any], layout: Layout) -> dict[str, dict[str, np.ndarray]]:
  """The inverse of `to_padded`: the `ArchNet` params of the layout's network."""
  params, out = _stack(params), {}
  for name, slot, is_dec, rows, units in zip(layout.names, layout.slots, layout.decision, layout.rows, layout.units):
    prefix = "decision_" if is_dec else ""
    kernel = np.asarray(params[prefix + "kernel"])[slot, rows[:, 0], rows[:, 1], :units]
    out[name] = {"kernel": kernel, "bias": np.asarray(params[prefix + "bias"])[slot, :units]}
  return out


def init_params(key: jax.Array, layout: Layout, padding: Padding, num_inputs: int) -> dict[str, Any]:
  """Padded params initialised exactly as `arch_net.init_variables` initialises the `ArchNet`: the
  same kernel draws from the same key (in the order of the sorted parameter names), zero biases."""
  draw = arch_net.kernel_sampler(key)
  shapes = {name: (len(rows), units) for name, rows, units in zip(layout.names, layout.rows, layout.units)}
  params = {
    name: {"kernel": draw(shapes[name]), "bias": np.zeros(shapes[name][1], np.float32)} for name in sorted(shapes)
  }
  return to_padded(params, layout, padding, num_inputs)


def macs(padding: Padding, num_inputs: int, num_outputs: int) -> int:
  """Multiply-accumulates of one example's forward pass through the padded program."""
  feat = _features(padding, num_inputs)
  return padding.fan_in * feat * (padding.layers * padding.width + padding.decisions * num_outputs)


def layout_macs(layout: Layout) -> int:
  """Multiply-accumulates of one example's forward pass through the specialised network."""
  return sum(len(rows) * units for rows, units in zip(layout.rows, layout.units))
