"""The padded CNN: one compiled program runs every CNN layer graph up to a padding, at one image size.

The CNN counterpart of `padded_mlp`. A network is a `PaddedNet` of arrays (each slot's parents and
their channel offsets in the concatenation, its layer kind, kernel taps, channel and spatial masks,
and the selection matrices of its stride), read by one program whose shapes depend only on the
`cnn_padding.Padding` and the image size. A slot works on grids of pixels from the image's top-left
corner (the padding's `grids`: the largest its networks read and write), at the padding's channels
for it (`widths`): a layer that halves its input writes its ceil(h/2) x ceil(w/2) pixels to the
top-left corner of the output grid, zeros elsewhere, so a stride is data. A slot runs its conv at
stride 1 over its input grid (a k x k kernel centred in the slot's kernel, its other taps masked),
then a selection matrix per axis picks the pixels a strided SAME conv centres on; pools do the same
with -inf (max) or a count of real pixels (avg) outside the real region. Batch norm takes its
statistics over real pixels only. An fc or decision layer flattens its grid with a kernel per
(row, column, channel), whose real part is the specialised kernel in `ArchNet`'s flatten order, and
writes its units to pixel (0, 0). Each slot reads its parents from the outputs the padding lists
for it (`sources`), cut or zero-padded to its own grid and channels. A network's layers take
increasing slots, not necessarily consecutive ones (`cnn_padding.check_fits` places them).

A slot computes the layer kinds the padding lists for it (`kinds`: those some network of the
padding has there, or all of them in a `coarse` padding) and keeps its network's. The program does
more arithmetic than a network (`cnn_padding.macs`): a few times a pool CNN's in its own
padding, thousands of times in a coarse one. The padded variables, and how a specialised network's
map into them, are `padded_cnn_variables`'. Tests copy a specialised network's variables in and
compare outputs, gradients and batch statistics with `ArchNet`'s.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture
from nas_jax.models import arch_net, cnn_padding, convolution, padded_mlp
from nas_jax.models.cnn_padding import BITS, KINDS, Padding

__all__ = ["PaddedNet", "Place", "encode", "apply", "net_shapes"]

Role = labels_lib.Role
_POOL_KERNEL = 3
_FAR = -1e30  # max-pool's value outside the real pixels: finite, so a zero selection weight keeps it out


class PaddedNet(NamedTuple):
  """One network as padded arrays (a pytree; a population stacks them on a leading axis).
  L = layers, Dm = decisions, P = fan_in, K = kernel, F = width, H x W the image; each slot reads
  the part of its rows that its grid and channels cover.

  Attributes:
    parents: [L + Dm, P] int32 each layer's parents, in concatenation order, as positions in its
      slot's `Padding.sources` (the decision layers': `decision_sources`); processing slots first.
    parent_mask: [L + Dm, P] float32, 1 for a real parent.
    offsets: [L + Dm, P] int32, each parent's first channel in the concatenation.
    kind: [L] int32 index into `KINDS`.
    taps: [L, K, K] float32, 1 on the slot's centred k x k kernel taps.
    units: [L, F] float32, 1 on the slot's real output channels.
    rows: [L, 2, H, H] float32: row r of the output takes row c of the stride-1 result where
      rows[j, m, r, c] = 1: m = 0 for the slot's kernel (3 for pools), 1 for a 1x1 projection.
    cols: [L, 2, W, W] float32, the same for columns.
    in_mask: [L, H, W] float32, 1 on the real pixels of the slot's input.
    out_mask: [L, H, W] float32, 1 on the real pixels of its output.
    projection: [L] float32, 1 where a res block's shortcut is a 1x1 conv (channels or stride change).
    decision_mask: [Dm] float32, 1 for a real decision layer.
  """

  parents: jax.Array
  parent_mask: jax.Array
  offsets: jax.Array
  kind: jax.Array
  taps: jax.Array
  units: jax.Array
  rows: jax.Array
  cols: jax.Array
  in_mask: jax.Array
  out_mask: jax.Array
  projection: jax.Array
  decision_mask: jax.Array


class Place(NamedTuple):
  """Where one real layer's specialised variables sit in the padded ones (host data).

  Attributes:
    name: its `ArchNet` variable name ("3_conv3").
    role: its `labels.Role`.
    slot: processing slot j, or decision slot d.
    kernel: its kernel size (0 for fc and decision layers).
    units: output channels (K for a decision layer; 0 for pools).
    c_in: channels of its (concatenated) input.
    size: (h, w), its input's real pixels.
    stride: its stride (0 for fc and decision layers).
    projection: whether a res block has a projection shortcut.
  """

  name: str
  role: int
  slot: int
  kernel: int
  units: int
  c_in: int
  size: tuple[int, int]
  stride: int
  projection: bool


def _selection(n: int, grid: int, stride: int, kernel: int) -> np.ndarray:
  """[grid, grid]: output pixel r < ceil(n / stride) takes the stride-1 result's pixel that a
  SAME-padded strided window centres on (`convolution.same_padding`)."""
  out, before = -(-n // stride), convolution.same_padding(n, stride, kernel)[0]
  sel = np.zeros((grid, grid), np.float32)
  r = np.arange(out)
  sel[r, r * stride - before + (kernel - 1) // 2] = 1.0
  return sel


def encode(
  arch: Architecture, padding: Padding, image_shape: Sequence[int], num_outputs: int
) -> tuple[PaddedNet, tuple[Place, ...]]:
  """A network as padded arrays, and where its specialised variables go.

  Args:
    arch: one unbatched cnn Architecture.
    padding: a Padding it fits (`cnn_padding.padding_for`).
    image_shape: (H, W, C) of the images.
    num_outputs: K, each decision layer's outputs (the class count for softmax, 1 for linear).

  Raises:
    ValueError: if the network is not a cnn or does not fit the padding.
  """
  nodes, slot_of = cnn_padding.check_fits(padding, arch, image_shape)
  gh, gw, _ = cnn_padding.check_image(image_shape)
  lay, k_max = padding.layers, padding.kernel
  arrays = _blank(padding, image_shape)
  parents, parent_mask, offsets, kind, taps, units = (arrays[k] for k in PaddedNet._fields[:6])
  rows, cols, in_mask, out_mask, projection, decision_mask = (arrays[k] for k in PaddedNet._fields[6:])
  buffer_row, out_c, places = {}, {}, []
  n_body = n_dec = 0
  for pos, (node, ((h, w), c_in, c_out)) in enumerate(zip(nodes, cnn_padding.walk(nodes, image_shape))):
    out_c[pos] = c_out
    if node.role == Role.IP:
      buffer_row[pos] = 0
      continue
    if node.role == Role.OP:
      continue
    is_dec = node.role == Role.DECISION
    j = n_dec if is_dec else slot_of[n_body]  # its decision or processing slot
    row = lay + j if is_dec else j
    sources = padding.decision_sources if is_dec else padding.sources[row]
    start = np.cumsum([0] + [out_c[q] for q in node.parents])
    for m, q in enumerate(node.parents):
      parents[row, m], offsets[row, m], parent_mask[row, m] = sources.index(buffer_row[q]), start[m], 1.0
    proj = node.role == Role.RES and (c_in != node.units or node.stride != 1)
    units_out = num_outputs if is_dec else (0 if node.role == Role.POOL else node.units)
    name = f"{node.slot}_{node.label}"
    places.append(Place(name, node.role, j, node.kernel, units_out, c_in, (h, w), node.stride, proj))
    if is_dec:
      decision_mask[j] = 1.0
      n_dec += 1
      continue
    in_mask[j, :h, :w] = 1.0
    units[j, :c_out] = 1.0
    kind[j] = cnn_padding.kind_index(node)
    if node.role == Role.FC:
      out_mask[j, 0, 0] = 1.0
    else:
      k = _POOL_KERNEL if node.role == Role.POOL else node.kernel
      if node.role != Role.POOL:
        o = (k_max - k) // 2
        taps[j, o : o + k, o : o + k] = 1.0
      for m, kk in enumerate((k, 1)):
        rows[j, m], cols[j, m] = _selection(h, gh, node.stride, kk), _selection(w, gw, node.stride, kk)
      out_mask[j, : -(-h // node.stride), : -(-w // node.stride)] = 1.0
      projection[j] = float(proj)
    buffer_row[pos] = 1 + j
    n_body += 1
  return PaddedNet(**{k: jnp.asarray(a) for k, a in arrays.items()}), tuple(places)


def _concat(buffer: jax.Array, parents: jax.Array, mask: jax.Array, offsets: jax.Array) -> jax.Array:
  """[P] buffer rows [R, B, h, w, c] -> [B, h, w, c]: the concatenation. Each real parent is written
  whole at its offset, in order, so the next one overwrites its zero channels past its own (absent
  parents are written past c and cut off). A slice update at a traced offset compiles to one
  instruction; rolling each parent to its offset (vmapped) compiles far longer."""
  c = buffer.shape[-1]
  out = jnp.zeros((*buffer.shape[1:-1], 2 * c), buffer.dtype)
  for m in range(parents.shape[0]):
    start = jnp.where(mask[m] > 0, offsets[m], c)
    out = jax.lax.dynamic_update_slice_in_dim(out, buffer[parents[m]], start, axis=-1)
  return out[..., :c]


def _fitted(outs: list, h: int, w: int, c: int) -> jax.Array:
  """[R, B, h, w, c]: each output ([B, h', w', c'], or None for an unused slot: zeros) cut or
  zero-padded to the top-left h x w pixels and first c channels."""
  batch = next(a for a in outs if a is not None).shape[0]

  def fit(a):
    if a is None:
      return jnp.zeros((batch, h, w, c), jnp.float32)
    a = a[:, :h, :w, :c]
    return jnp.pad(a, ((0, 0), (0, h - a.shape[1]), (0, w - a.shape[2]), (0, c - a.shape[3])))

  return jnp.stack([fit(a) for a in outs])


def _select(z: jax.Array, rows: jax.Array, cols: jax.Array) -> jax.Array:
  """[B, H, W, F] stride-1 results -> the strided output in the top-left corner, zeros elsewhere."""
  return jnp.einsum("rh,cw,bhwf->brcf", rows, cols, z)


def _batch_norm(z, bn, stats, mask, train):
  """flax BatchNorm over the real pixels (`mask` [H, W]) of z [B, H, W, F], which is 0 on the others
  (a selection or `keep` wrote it): statistics and their running averages in training, the running
  averages otherwise."""
  if train:
    count = jnp.maximum(z.shape[0] * mask.sum(), 1.0)  # an empty slot's statistics stay finite
    mean = z.sum((0, 1, 2)) / count
    var = jnp.maximum(jnp.square(z).sum((0, 1, 2)) / count - jnp.square(mean), 0.0)
    mom = arch_net.BN_MOMENTUM
    stats = {"mean": mom * stats["mean"] + (1 - mom) * mean, "var": mom * stats["var"] + (1 - mom) * var}
  else:
    mean, var = stats["mean"], stats["var"]
  return (z - mean) * (bn["scale"] * jax.lax.rsqrt(var + arch_net.BN_EPSILON)) + bn["bias"], stats


def _window(x: jax.Array, init: float, op) -> jax.Array:
  """3x3 stride-1 SAME window reduction over the two pixel axes of [B, H, W, F] (or [H, W])."""
  window = (1, _POOL_KERNEL, _POOL_KERNEL, 1) if x.ndim == 4 else (_POOL_KERNEL, _POOL_KERNEL)
  return jax.lax.reduce_window(x, init, op, window, (1,) * x.ndim, "SAME")


def _slot(p, stats, net: PaddedNet, j: int, x: jax.Array, train: bool, padding: Padding):
  """Slot j's output [B, oh, ow, c] on its concatenated input x [B, gh, gw, c] (its grid and
  channels in the padding), and its new batch statistics: the kinds the padding lists for the slot
  are computed, at its kernel, and the network's kept."""
  kinds, kernel, c = padding.kinds[j], padding.kernels[j], padding.widths[j]
  gh, gw, oh, ow = padding.grids[j]
  rows, cols = net.rows[j, :, :oh, :gh], net.cols[j, :, :ow, :gw]
  out = net.out_mask[j, :oh, :ow]
  keep = out[None, :, :, None] * net.units[j, :c]
  computed, new_stats = {}, {}
  if kinds & (BITS["conv"] | BITS["res"]):
    o = (net.taps.shape[-1] - kernel) // 2
    taps = net.taps[j, o : o + kernel, o : o + kernel][:, :, None, None]
    za = _select(convolution.conv_same(x, p["conv_a"] * taps, 1), rows[0], cols[0])
    ha, new_stats["bn_a"] = _batch_norm(za, p["bn_a"], stats["bn_a"], out, train)
    computed["conv"] = conv = jax.nn.relu(ha) * keep
    if kinds & BITS["res"]:
      zb = convolution.conv_same(conv, p["conv_b"] * taps, 1) * keep
      hb, new_stats["bn_b"] = _batch_norm(zb, p["bn_b"], stats["bn_b"], out, train)
      zp = _select(jnp.einsum("bhwf,fg->bhwg", x, p["projection"]), rows[1], cols[1])
      hp, new_stats["bn_p"] = _batch_norm(zp, p["bn_p"], stats["bn_p"], out, train)
      # An identity shortcut keeps the size, so its pixels lie in the output grid.
      computed["res"] = jax.nn.relu(hb + jnp.where(net.projection[j] > 0, hp, x[:, :oh, :ow]))
  if kinds & BITS["max-pool"]:
    inside = net.in_mask[j, :gh, :gw][None, :, :, None] > 0
    computed["max-pool"] = _select(_window(jnp.where(inside, x, _FAR), -jnp.inf, jax.lax.max), rows[0], cols[0])
  if kinds & BITS["avg-pool"]:
    count = jnp.maximum(_window(net.in_mask[j, :gh, :gw], 0.0, jax.lax.add), 1.0)[:, :, None]
    computed["avg-pool"] = _select(_window(x, 0.0, jax.lax.add) / count, rows[0], cols[0])
  if kinds & BITS["fc"]:
    fc = jax.nn.relu(jnp.einsum("bhwf,hwfu->bu", x, p["fc"]) + p["fc_bias"])[:, None, None, :]
    computed["fc"] = jnp.broadcast_to(fc, (x.shape[0], oh, ow, c))
  present = [name for name in KINDS if kinds & BITS[name]]
  chosen = computed[present[0]]
  if len(present) > 1:
    # The network's kind, as a position among the computed ones (a kind not computed never occurs
    # where a layer sits: `encode` checks; an unused slot's keep is 0).
    position = np.zeros(len(KINDS), np.int32)
    position[[KINDS.index(name) for name in present]] = np.arange(len(present))
    chosen = jnp.stack([computed[name] for name in present])[jnp.asarray(position)[net.kind[j]]]
  return chosen * keep, new_stats


def apply(
  params: dict[str, Any],
  batch_stats: dict[str, Any],
  net: PaddedNet,
  x: jax.Array,
  decision: str,
  train: bool,
  padding: Padding,
) -> tuple[jax.Array, dict[str, Any]]:
  """Runs a padded network; slots are unrolled, each with its own parameter arrays (see padded_mlp).

  Args:
    params, batch_stats: in `padded_cnn_variables.param_shapes`'s layout (`to_padded`,
      `init_variables` there).
    net: the network (`encode`), in `padding`.
    x: [B, H, W, C] images.
    decision: "softmax" (K classes) or "linear" (K = 1), as in `ArchNet`.
    train: batch statistics and their update (True) or running averages (False).
    padding: the padding the variables and net are of (its per-slot fields shape each slot).

  Returns:
    (`ArchNet`'s outputs: [B, K] float32 log-probabilities or [B] predictions, the batch statistics
    (updated in training)).
  """
  lay = padding.layers
  outs, new_stats = [x.astype(jnp.float32)], []  # row 0 the image, row 1 + j slot j's output
  for j in range(lay):
    if not padding.kinds[j] or not padding.sources[j]:  # a slot no network of the padding uses
      outs.append(None)
      new_stats.append({})
      continue
    gh, gw, _, _ = padding.grids[j]
    # The outputs it can read (`Padding.sources`), each cut or zero-padded to its grid and channels:
    # gathering from a buffer of every output at the whole image and width trains far slower.
    rows = _fitted([outs[r] for r in padding.sources[j]], gh, gw, padding.widths[j])
    # One possible parent is read whole at channel 0 (or, where the network has no layer in the
    # slot, masked by `keep`), so no slice updates, which compile longer.
    h = rows[0] if len(padding.sources[j]) == 1 else _concat(rows, net.parents[j], net.parent_mask[j], net.offsets[j])
    out, stats = _slot(params["slots"][j], batch_stats["slots"][j], net, j, h, train, padding)
    outs.append(out)
    new_stats.append(stats)
  rows = _fitted([outs[r] for r in padding.decision_sources], *padding.decision_input)
  dec_in = jax.vmap(_concat, (None, 0, 0, 0))(rows, net.parents[lay:], net.parent_mask[lay:], net.offsets[lay:])
  z = jnp.einsum("dbhwf,dhwfk->dbk", dec_in, params["decision_kernel"]) + params["decision_bias"][:, None]
  return padded_mlp.average_decisions(z, net.decision_mask, decision), {"slots": new_stats}


def _blank(padding: Padding, image_shape: Sequence[int]) -> dict[str, np.ndarray]:
  """A `PaddedNet`'s fields as host zeros of this padding and image size (`encode` fills them)."""
  h, w, _ = cnn_padding.check_image(image_shape)
  lay, f, p, dec, k = padding[:5]
  i32, f32 = np.int32, np.float32
  shapes = {
    "parents": ((lay + dec, p), i32),
    "parent_mask": ((lay + dec, p), f32),
    "offsets": ((lay + dec, p), i32),
    "kind": ((lay,), i32),
    "taps": ((lay, k, k), f32),
    "units": ((lay, f), f32),
    "rows": ((lay, 2, h, h), f32),
    "cols": ((lay, 2, w, w), f32),
    "in_mask": ((lay, h, w), f32),
    "out_mask": ((lay, h, w), f32),
    "projection": ((lay,), f32),
    "decision_mask": ((dec,), f32),
  }
  return {name: np.zeros(shape, dtype) for name, (shape, dtype) in shapes.items()}


def net_shapes(padding: Padding, image_shape: Sequence[int]) -> PaddedNet:
  """The shapes of a `PaddedNet` of this padding and image size."""
  blank = _blank(padding, image_shape)
  return PaddedNet(**{k: jax.ShapeDtypeStruct(a.shape, a.dtype) for k, a in blank.items()})
