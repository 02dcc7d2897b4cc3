"""The padded CNN's padding: the static shape of one compiled program (`padded_cnn`), and the
networks that fit it.

A `Padding` fixes the slots, the channels of the concatenations, the parents per layer, the
decision layers, and per slot which layer kinds it computes, at what kernel, at how many channels
and on what grid of pixels. `padding_for` gives the smallest that fits some networks (each slot
computing only the kinds they have there, at their size); `coarse` one whose every slot computes
every kind at the largest kernel, the padding's width and the image's size, which any network up
to its size fits.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture
from nas_jax.tasks import models, padded_mlp

__all__ = [
  "KINDS",
  "BITS",
  "EVERY",
  "Padding",
  "cnn_nodes",
  "check_image",
  "walk",
  "kind_index",
  "padding_for",
  "coarse",
  "check_fits",
  "macs",
]

Role = labels_lib.Role
# A slot's kind is an index into this tuple; a padding's slot computes the kinds of its bits.
KINDS = ("conv", "res", "max-pool", "avg-pool", "fc")
BITS = {name: 1 << i for i, name in enumerate(KINDS)}
EVERY = (1 << len(KINDS)) - 1  # every kind


class Padding(NamedTuple):
  """The static shape of a padded CNN (with the image size, what one compiled program can run).

  Attributes:
    layers: processing-layer slots (conv, res, pool, fc).
    width: F, the channels of every concatenation (at least the image's), and so of every slot.
    fan_in: parents per layer (processing or decision).
    decisions: decision-layer slots.
    kernel: the largest conv kernel, odd; smaller kernels sit in its centre.
    kinds: per slot, the layer kinds it computes: bit i set for `KINDS[i]` (0: an empty slot).
    kernels: per slot, the kernel of its convs (odd, at most `kernel`; 0 when it has none).
    widths: per slot, the channels it computes at, in and out (at most `width`; 0 when empty).
    grids: per slot, (rows, cols) of the pixels it reads and of those it writes, from the top-left
      corner of the image (0s when empty).
    decision_input: (rows, cols, channels) that the decision layers read.
  """

  layers: int
  width: int
  fan_in: int
  decisions: int
  kernel: int
  kinds: tuple[int, ...]
  kernels: tuple[int, ...]
  widths: tuple[int, ...]
  grids: tuple[tuple[int, int, int, int], ...]
  decision_input: tuple[int, int, int]


def cnn_nodes(arch: Architecture) -> tuple[models.Node, ...]:
  """The network's nodes (`models.network_nodes`); ValueError unless it is a cnn."""
  if getattr(arch, "kind", None) != "cnn":
    raise ValueError(f"padded_cnn: a {getattr(arch, 'kind', type(arch).__name__)!r} network; it runs cnn networks")
  return models.network_nodes(arch)


def check_image(image_shape: Sequence[int]) -> tuple[int, int, int]:
  """(H, W, C) as ints; ValueError unless three sizes >= 1."""
  if len(image_shape) != 3 or min(image_shape) < 1:
    raise ValueError(f"image_shape: got {tuple(image_shape)}; expected (H, W, C), each >= 1")
  return tuple(int(v) for v in image_shape)


def walk(nodes: tuple[models.Node, ...], image_shape: Sequence[int]) -> list[tuple[tuple[int, int], int, int]]:
  """Per node: its input's real pixels (h, w), its input channels, its output channels (its output
  pixels follow from the stride: `_out_size`)."""
  h, w, c = check_image(image_shape)
  out_size, out_c, walked = [], [], []
  for node in nodes:
    if node.role == Role.IP:
      size, c_in, c_out = (h, w), 0, c
    else:
      sizes = {out_size[p] for p in node.parents}
      if len(sizes) != 1:
        raise ValueError(f"padded_cnn: layer {node.slot} concatenates inputs of sizes {sorted(sizes)}")
      (size,) = sizes
      c_in = sum(out_c[p] for p in node.parents)
      c_out = c_in if node.role == Role.POOL else node.units
    walked.append((size, c_in, c_out))
    out_size.append(_out_size(node, size))
    out_c.append(c_out)
  return walked


def _out_size(node: models.Node, size: tuple[int, int]) -> tuple[int, int]:
  if node.role in (Role.CONV, Role.RES, Role.POOL):
    return tuple(-(-n // node.stride) for n in size)
  return (1, 1) if node.role in (Role.FC, Role.DECISION) else size


def kind_index(node: models.Node) -> int:
  """A processing layer's index into `KINDS`."""
  if node.role == Role.POOL:
    return KINDS.index(node.label)
  return KINDS.index({Role.FC: "fc", Role.RES: "res"}.get(node.role, "conv"))


def _needs(arch: Architecture, image_shape: Sequence[int]):
  """What the network needs of a padding, unrounded, from one walk of its layers: (its nodes, one
  number per scalar `Padding` field, per processing layer in slot order (the node, its kind's bit,
  conv kernel, channels in or out, grid), the (rows, cols, channels) its decision layers read)."""
  nodes = cnn_nodes(arch)
  walked = list(zip(nodes, walk(nodes, image_shape)))
  slots = [
    (node, 1 << kind_index(node), _conv_kernel(node), max(c_in, c_out), (*size, *_out_size(node, size)))
    for node, (size, c_in, c_out) in walked
    if node.role in (Role.CONV, Role.RES, Role.POOL, Role.FC)
  ]
  reads = [(*size, c_in) for node, (size, c_in, _) in walked if node.role == Role.DECISION]
  scalars = (
    len(slots),
    max(max(c_in, c_out) for _, (_, c_in, c_out) in walked),
    max([1] + [len(n.parents) for n in nodes]),
    max(1, len(reads)),
    max([1] + [k for _, _, k, _, _ in slots]),
  )
  return nodes, scalars, slots, tuple(max(v) for v in zip((1, 1, 1), *reads))


def _conv_kernel(node: models.Node) -> int:
  """A layer's conv kernel (0 for a pool or fc)."""
  return node.kernel if node.role in (Role.CONV, Role.RES) else 0


def padding_for(archs: Sequence[Architecture], image_shape: Sequence[int], *, uniform: bool = False) -> Padding:
  """The smallest padding that fits all `archs` on images of `image_shape` (H, W, C): layers,
  width and fan-in rounded up to powers of two (layers at least 8, width at least 16); each slot
  computing the kinds the networks have there at their largest kernel, their most channels
  (rounded up likewise) and their largest grids. With `uniform`, the `coarse` padding: similar
  networks share its compiled program."""
  if not archs:
    raise ValueError("padding_for: no architectures given")
  needs = [_needs(a, image_shape) for a in archs]
  layers, width, fan_in, decisions, kernel = (max(v) for v in zip(*(n[1] for n in needs)))
  up = padded_mlp.round_up
  layers = up(layers, 8)
  kinds, kernels, widths, grids = [0] * layers, [0] * layers, [0] * layers, [(0, 0, 0, 0)] * layers
  for _, _, slots, _ in needs:
    for j, (_, bit, k, channels, grid) in enumerate(slots):
      kinds[j] |= bit
      kernels[j] = max(kernels[j], k)
      widths[j] = max(widths[j], up(channels, 16))
      grids[j] = tuple(max(a, b) for a, b in zip(grids[j], grid))
  dh, dw, dc = (max(v) for v in zip(*(n[3] for n in needs)))
  scalars = (layers, up(width, 16), up(fan_in, 1), up(decisions, 1), kernel)
  padding = Padding(*scalars, tuple(kinds), tuple(kernels), tuple(widths), tuple(grids), (dh, dw, up(dc, 16)))
  return coarse(padding, image_shape) if uniform else padding


def coarse(padding: Padding, image_shape: Sequence[int]) -> Padding:
  """`padding` with every slot computing every kind at the largest kernel, the padding's width and
  the image's size: what networks must share to train in one population (whose own padding is
  then `padding_for` of them all)."""
  h, w, _ = check_image(image_shape)
  lay = padding.layers
  every = dict(kinds=(EVERY,) * lay, kernels=(padding.kernel,) * lay, widths=(padding.width,) * lay)
  return padding._replace(**every, grids=((h, w, h, w),) * lay, decision_input=(h, w, padding.width))


def check_fits(padding: Padding, arch: Architecture, image_shape: Sequence[int]) -> tuple[models.Node, ...]:
  """The network's nodes. TypeError unless `padding` is a Padding; ValueError unless it is well
  formed and the network fits it: each scalar field at least what the network needs, and each of its
  layers a kind that its slot computes, at a kernel, channels and grid that the slot holds."""
  nodes, scalars, slots, decision_input = _needs(arch, image_shape)
  padded_mlp.check_fits(padding, Padding, scalars)
  h, w, _ = check_image(image_shape)
  per_slot = ("kinds", "kernels", "widths", "grids")
  if any(len(getattr(padding, f)) != padding.layers for f in per_slot):
    raise ValueError(
      f"padding.{', padding.'.join(per_slot)}: {', '.join(str(len(getattr(padding, f))) for f in per_slot)}"
      f" slots; expected padding.layers = {padding.layers} each"
    )
  bad_kernel = (
    any(k < 0 or k > padding.kernel or (k and k % 2 == 0) for k in padding.kernels) or padding.kernel % 2 == 0
  )
  dh, dw, dc = padding.decision_input
  too_big = (
    dh > h
    or dw > w
    or dc > padding.width
    or any(c > padding.width for c in padding.widths)
    or any(g[0] > h or g[2] > h or g[1] > w or g[3] > w for g in padding.grids)
  )
  if bad_kernel or too_big:
    raise ValueError(
      f"padding.kernels, .widths, .grids, .decision_input: expected odd kernels (0 for a slot without convs) up"
      f" to padding.kernel = {padding.kernel}, widths up to padding.width = {padding.width}, grids within the"
      f" {h} x {w} image; got {padding.kernels}, {padding.widths}, {padding.grids}, {padding.decision_input}"
    )
  for j, (node, bit, k, channels, grid) in enumerate(slots):
    have = (padding.kinds[j], padding.kernels[j], padding.widths[j], padding.grids[j])
    if not have[0] & bit or k > have[1] or channels > have[2] or any(a > b for a, b in zip(grid, have[3])):
      kinds = [name for name in KINDS if have[0] & BITS[name]]
      raise ValueError(
        f"padding: slot {j} computes {kinds or 'nothing'} with kernel {have[1]}, {have[2]} channels, grid"
        f" {have[3]}; the network's layer there is a {node.label} with kernel {k}, {channels} channels, grid"
        f" {grid}; use padding_for"
      )
  if any(a > b for a, b in zip(decision_input, padding.decision_input)):
    raise ValueError(
      f"padding.decision_input: the network's decision layers read {decision_input} (rows, cols, channels),"
      f" the padding has {padding.decision_input}; use padding_for"
    )
  return nodes


def macs(padding: Padding, image_shape: Sequence[int], num_outputs: int) -> int:
  """Multiply-accumulates of one example's forward pass through the padded program (convs, projection,
  fc and decision kernels; the selections and pools are left out)."""
  h, w, _ = check_image(image_shape)
  total = padding.decisions * math.prod(padding.decision_input) * num_outputs
  for kinds, k, c, (gh, gw, oh, ow) in zip(padding.kinds, padding.kernels, padding.widths, padding.grids):
    total += gh * gw * c * c * (k * k * bool(kinds & (BITS["conv"] | BITS["res"])) + gh * gw * bool(kinds & BITS["fc"]))
    total += (oh * ow * k * k + gh * gw) * c * c * bool(kinds & BITS["res"])
  return total
