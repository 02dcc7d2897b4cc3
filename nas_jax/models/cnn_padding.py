"""The padded CNN's padding: the static shape of one compiled program (`padded_cnn`), and the
networks that fit it: the smallest padding for some networks (`padding_for`), or one that any
network up to its size fits (`coarse`).
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import NamedTuple, Sequence

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture, next_power_of_two
from nas_jax.models import arch_net, padded_mlp

__all__ = [
  "KINDS",
  "BITS",
  "EVERY",
  "Padding",
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
BITS = MappingProxyType({name: 1 << i for i, name in enumerate(KINDS)})
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
    sources: per slot, the outputs its networks' layers there read (row 0 the image, row 1 + j slot
      j's output), sorted: a slot stacks only these, not every earlier output.
    decision_sources: the outputs the decision layers read, likewise.
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
  sources: tuple[tuple[int, ...], ...]
  decision_sources: tuple[int, ...]


def check_image(image_shape: Sequence[int]) -> tuple[int, int, int]:
  """(H, W, C) as ints; ValueError unless three sizes >= 1."""
  if len(image_shape) != 3 or min(image_shape) < 1:
    raise ValueError(f"image_shape: got {tuple(image_shape)}; expected (H, W, C), each >= 1")
  return tuple(int(v) for v in image_shape)


def walk(nodes: tuple[arch_net.Node, ...], image_shape: Sequence[int]) -> list[tuple[tuple[int, int], int, int]]:
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


def _out_size(node: arch_net.Node, size: tuple[int, int]) -> tuple[int, int]:
  if node.role in (Role.CONV, Role.RES, Role.POOL):
    return tuple(-(-n // node.stride) for n in size)
  return (1, 1) if node.role in (Role.FC, Role.DECISION) else size


def kind_index(node: arch_net.Node) -> int:
  """A processing layer's index into `KINDS`."""
  if node.role == Role.POOL:
    return KINDS.index(node.label)
  return KINDS.index({Role.FC: "fc", Role.RES: "res"}.get(node.role, "conv"))


def _needs(arch: Architecture, image_shape: Sequence[int]):
  """What the network needs of a padding, unrounded, from one walk of its layers: (its nodes, one
  number per scalar `Padding` field, per processing layer in slot order (the node, its kind's bit,
  conv kernel, channels in or out, grid), the (rows, cols, channels) its decision layers read)."""
  nodes = padded_mlp.nodes_of(arch, "cnn")
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


def _conv_kernel(node: arch_net.Node) -> int:
  """A layer's conv kernel (0 for a pool or fc)."""
  return node.kernel if node.role in (Role.CONV, Role.RES) else 0


def padding_for(archs: Sequence[Architecture], image_shape: Sequence[int], *, uniform: bool = False) -> Padding:
  """The smallest padding that fits all `archs` on images of `image_shape` (H, W, C): layers,
  width and fan-in rounded up to powers of two (layers at least 8, width at least 16). The
  networks' processing layers are aligned to slots one network at a time (`_align`), so that a
  slot computes the kinds of the layers aligned to it, at their largest kernel, their most channels
  (rounded up likewise) and their largest grids. With `uniform`, the `coarse` padding: similar
  networks share its compiled program."""
  if not archs:
    raise ValueError("padding_for: no architectures given")
  needs = [_needs(a, image_shape) for a in archs]
  layers, width, fan_in, decisions, kernel = (max(v) for v in zip(*(n[1] for n in needs)))
  up = next_power_of_two
  union = []
  for _, _, slots, _ in needs:
    union = _align(union, [(bit, k, up(channels, 16), grid) for _, bit, k, channels, grid in slots])
  layers = up(len(union), 8)
  union += [(0, 0, 0, (0, 0, 0, 0))] * (layers - len(union))
  dh, dw, dc = (max(v) for v in zip(*(n[3] for n in needs)))
  scalars = (layers, up(width, 16), up(fan_in, 1), up(decisions, 1), kernel)
  padding = Padding(*scalars, *(tuple(v) for v in zip(*union)), (dh, dw, up(dc, 16)), ((),) * layers, ())
  reads: list[set] = [set() for _ in range(layers + 1)]  # per slot, then the decisions
  for nodes, _, slots, _ in needs:
    for j, rows in _placed_reads(padding, nodes, slots):
      reads[j].update(rows)
  sources = tuple(tuple(sorted(r)) for r in reads)
  padding = padding._replace(sources=sources[:layers], decision_sources=sources[layers])
  return coarse(padding, image_shape) if uniform else padding


def _merge(slot, layer):
  """A slot (kinds, kernel, channels, grid) widened to hold a layer's (bit, kernel, channels, grid)."""
  return (slot[0] | layer[0], max(slot[1], layer[1]), max(slot[2], layer[2]), tuple(map(max, slot[3], layer[3])))


def _holds(slot, layer) -> bool:
  """Whether a slot (kinds, kernel, channels, grid) computes a layer's (bit, kernel, channels, grid)."""
  return _merge(slot, layer) == (slot[0], slot[1], slot[2], tuple(slot[3]))


def _work(slot) -> int:
  """What a slot costs one example: its multiply-accumulates (`macs`), one operation per input value
  for each kind it computes (9 for a pool's window) and one for the slot itself (its parents' stack)."""
  kinds, k, c, (gh, gw, _, _) = slot
  values = gh * gw * c
  pools = bool(kinds & BITS["max-pool"]) + bool(kinds & BITS["avg-pool"])
  return _slot_macs(*slot) + values * (1 + bin(kinds).count("1") + 8 * pools)


def _align(union: list, layers: list) -> list:
  """The union's slots (kinds, kernel, channels, grid) widened and extended to hold `layers` (a
  network's processing layers in order, each (bit, kernel, channels, grid)) at the least added
  `_work`: a sequence alignment in which a layer joins a slot (in order, so that every parent sits
  in an earlier slot), gets a new slot between them, or leaves a slot to other networks."""
  m, n = len(union), len(layers)
  inf = float("inf")
  cost = [[inf] * (n + 1) for _ in range(m + 1)]
  move = [[None] * (n + 1) for _ in range(m + 1)]
  cost[0][0] = 0
  for i in range(m + 1):
    for j in range(n + 1):
      options = []
      if i and j:
        u = union[i - 1]
        options.append((cost[i - 1][j - 1] + _work(_merge(u, layers[j - 1])) - _work(u), "join"))
      if j:
        options.append((cost[i][j - 1] + _work(layers[j - 1]), "new"))
      if i:
        options.append((cost[i - 1][j], "leave"))
      if options:
        cost[i][j], move[i][j] = min(options, key=lambda o: o[0])  # ties: join, then new
  merged, i, j = [], m, n
  while i or j:
    step = move[i][j]
    if step == "join":
      merged.append(_merge(union[i - 1], layers[j - 1]))
      i, j = i - 1, j - 1
    elif step == "new":
      merged.append(layers[j - 1])
      j -= 1
    else:
      merged.append(union[i - 1])
      i -= 1
  return merged[::-1]


def coarse(padding: Padding, image_shape: Sequence[int]) -> Padding:
  """`padding` with every slot computing every kind at the largest kernel, the padding's width and
  the image's size, and reading every earlier output: one program for any network up to its size."""
  h, w, _ = check_image(image_shape)
  lay = padding.layers
  every = dict(kinds=(EVERY,) * lay, kernels=(padding.kernel,) * lay, widths=(padding.width,) * lay)
  sources = tuple(tuple(range(j + 1)) for j in range(lay))
  return padding._replace(
    **every,
    grids=((h, w, h, w),) * lay,
    decision_input=(h, w, padding.width),
    sources=sources,
    decision_sources=tuple(range(lay + 1)),
  )


def check_fits(
  padding: Padding, arch: Architecture, image_shape: Sequence[int]
) -> tuple[tuple[arch_net.Node, ...], tuple[int, ...]]:
  """(The network's nodes, the slot of each of its processing layers in order). TypeError unless
  `padding` is a Padding; ValueError unless it is well formed and the network fits it: each scalar
  field at least what the network needs, and its processing layers in order in increasing slots,
  each slot computing its layer's kind at a kernel, channels and grid that hold the layer's."""
  nodes, scalars, slots, decision_input = _needs(arch, image_shape)
  padded_mlp.check_fits(padding, Padding, scalars)
  h, w, _ = check_image(image_shape)
  per_slot = ("kinds", "kernels", "widths", "grids", "sources")
  if any(len(getattr(padding, f)) != padding.layers for f in per_slot):
    raise ValueError(
      f"padding.{', padding.'.join(per_slot)}: {', '.join(str(len(getattr(padding, f))) for f in per_slot)}"
      f" slots; expected padding.layers = {padding.layers} each"
    )
  reads = [*padding.sources, padding.decision_sources]
  if any(r < 0 or r > j for j, rows in enumerate(reads) for r in rows):
    raise ValueError(
      f"padding.sources, .decision_sources: slot j reads outputs 0 (the image) to j (slot j - 1's), the"
      f" decisions 0 to padding.layers = {padding.layers}; got {padding.sources}, {padding.decision_sources}"
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
  placed = _placed_reads(padding, nodes, slots)
  for (j, rows), node in zip(placed, [n for n, *_ in slots] + [None]):  # None: the decision layers
    allowed = padding.sources[j] if j < padding.layers else padding.decision_sources
    if not set(rows) <= set(allowed):
      where = f"slot {j}'s layer, a {node.label}," if node else "the decision layers"
      field = f"sources[{j}]" if node else "decision_sources"
      raise ValueError(
        f"padding.{field}: {where} read outputs {sorted(rows)} (0 the image, 1 + j slot j), the padding"
        f" has {list(allowed)}; use padding_for"
      )
  if any(a > b for a, b in zip(decision_input, padding.decision_input)):
    raise ValueError(
      f"padding.decision_input: the network's decision layers read {decision_input} (rows, cols, channels),"
      f" the padding has {padding.decision_input}; use padding_for"
    )
  return nodes, tuple(j for j, _ in placed[: len(slots)])


def _placed_reads(padding: Padding, nodes, slots) -> list[tuple[int, tuple[int, ...]]]:
  """Where a network sits in `padding`'s slots: (slot, the outputs it reads) for each processing
  layer in order (its `_needs` slots: node, bit, kernel, channels, grid), then (padding.layers, the
  outputs the decision layers read). Each layer takes the earliest slot after its predecessor's
  that holds it, which finds a place for every layer whenever one exists. ValueError naming the
  first layer without one."""
  row = {p: 0 for p, n in enumerate(nodes) if n.role == Role.IP}  # node position -> its output's row
  have = list(zip(padding.kinds, padding.kernels, padding.widths, padding.grids))
  placed, start = [], 0
  processing = [p for p, n in enumerate(nodes) if n.role in (Role.CONV, Role.RES, Role.POOL, Role.FC)]
  for i, (pos, (node, *layer)) in enumerate(zip(processing, slots)):
    j = next((j for j in range(start, padding.layers) if _holds(have[j], layer)), None)
    if j is None:
      kinds, k, c, g = have[start] if start < padding.layers else (0, 0, 0, "none")
      raise ValueError(
        f"padding: no slot from {start} on holds the network's layer {i}, a {node.label} with kernel {layer[1]},"
        f" {layer[2]} channels, grid {layer[3]}; slot {start} computes"
        f" {[name for name in KINDS if kinds & BITS[name]] or 'nothing'} with kernel {k}, {c} channels, grid {g};"
        " use padding_for"
      )
    placed.append((j, tuple(sorted({row[p] for p in node.parents}))))
    row[pos], start = 1 + j, j + 1
  decisions = {row[p] for n in nodes if n.role == Role.DECISION for p in n.parents}
  return placed + [(padding.layers, tuple(sorted(decisions)))]


def _slot_macs(kinds: int, k: int, c: int, grid: tuple[int, int, int, int]) -> int:
  """One example's multiply-accumulates through a slot (see `macs`)."""
  gh, gw, oh, ow = grid
  total = gh * gw * c * c * (k * k * bool(kinds & (BITS["conv"] | BITS["res"])) + gh * gw * bool(kinds & BITS["fc"]))
  return total + (oh * ow * k * k + gh * gw) * c * c * bool(kinds & BITS["res"])


def macs(padding: Padding, image_shape: Sequence[int], num_outputs: int) -> int:
  """Multiply-accumulates of one example's forward pass through the padded program (convs, projection,
  fc and decision kernels; the selections and pools are left out)."""
  h, w, _ = check_image(image_shape)
  total = padding.decisions * math.prod(padding.decision_input) * num_outputs
  return total + sum(map(_slot_macs, padding.kinds, padding.kernels, padding.widths, padding.grids))
