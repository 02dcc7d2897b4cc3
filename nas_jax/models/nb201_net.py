"""The NAS-Bench-201 network in Flax: the benchmark's macro skeleton around a cell given by its six
edges' op codes, in a masked form (the ops are data: one program for every cell) and a
specialised form (a static cell: only its ops exist).

Skeleton (Dong & Yang 2020; `xautodl/models/cell_infers/tiny_network.py` and zero-cost-nas
`foresight/models/nasbench2.py`): stem conv 3x3 (no bias) + BN; `cells_per_stage` cells at C;
a residual reduction block (ReLU-conv3x3/2-BN, ReLU-conv3x3-BN, plus 2x2 average pool and a 1x1
conv, summed) to 2C; cells at 2C; reduction to 4C; cells at 4C; BN + ReLU, global average pool,
linear classifier. A cell's node j sums op(i -> j)(node i) over i < j; node 3 is its output. Ops,
by the codes of `nas_jax.arch.cell.NB201_OPS`: 0 none (zeros), 1 skip (identity), 2 and 3
ReLU-conv1x1/3x3-BN, 4 average pool 3x3 (stride 1, padding 1, the padding not counted).

Conventions shared with the zero-cost reference's `NAS201Model`, whose scores this network
reproduces:
* Batch norm always normalises with the batch's own statistics (training mode; eps 1e-5, biased
  variance): a network at initialisation is scored in training mode. A network trained to predict
  (`nas_jax.training.nb201_training`) sets `batch_norm`: "train" also keeps running averages
  (`batch_stats`, momentum `BN_MOMENTUM`), "running" normalises with them (inference).
* `bn=False` removes the batch norms of the stem, the cells and the head, but the reduction blocks
  keep theirs, exactly as the reference's BN-free copy (`get_prunable_copy(bn=False)`) does,
  since its reduction block ignores `use_bn`.
* `affine=False` (the reference's cells): cell convs have a bias and cell batch norms no scale or
  offset. `affine=True` (the benchmark's own `InferCell`): convs without bias, batch norms with
  scale and offset. Stem, reduction and head batch norms always have scale and offset.
* Initialisation is PyTorch's default, which the reference's `init_w_type none` keeps: conv and
  dense weights kaiming-uniform with a = sqrt(5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
  fan_in = k*k*C_in (or the input width), biases from the same interval, batch-norm scale 1 and
  offset 0. The distribution matches the reference's; the draws differ (another generator).

Masked form: edge e computes one conv with kernel m3*W3 + m1*W1 (W1 at the 3x3 kernel's centre)
and bias m3*b3 + m1*b1, its batch norm, and the mask's weighted sum of that, the input and its
pool, where m is the one-hot of the edge's op. For a one-hot m this equals the specialised op
exactly, outputs and gradients (an unselected op's parameters get zero gradient), at the price of
a 3x3 conv on every edge. Parameter paths are the same in both forms, so `specialise_params`
maps the masked parameters to a cell's specialised network by dropping the absent ops.

Each conv's and the classifier's output (before any norm) is sown as `intermediates/.../tap` and
perturbed by `perturbations/.../tap` when that collection is given; a masked edge has `tap1` and
`tap3`, its fused conv's output times the mask of conv1 and of conv3, one per conv weight (see
`nas_jax.proxies.nb201_nets`). Each ReLU sows its input's sign pattern and a weight as
`relu_codes/.../relu` (what NASWOT reads): the weight is how many of the reference's ReLU modules it
stands for, 1, or for a masked edge's ReLU 1 when a conv is the edge's op and 0 otherwise.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch.cell import NB201_EDGES

__all__ = [
  "Nb201Spec",
  "check_spec",
  "Nb201Net",
  "BATCH_NORM_MODES",
  "BN_MOMENTUM",
  "specialise_params",
  "nb201_params",
  "nb201_flops",
]

_EPS = 1e-5
# Batch norm's statistics: the batch's only (the proxies' convention), the batch's while the
# running averages are updated (training), or the running averages (inference).
BATCH_NORM_MODES = ("batch", "train", "running")
BN_MOMENTUM = 0.9  # running = 0.9 running + 0.1 batch: PyTorch's momentum 0.1, which NB201 trains with
_NONE, _SKIP, _CONV1, _CONV3, _POOL = range(5)
_CONV_OF = MappingProxyType({_CONV1: "conv1", _CONV3: "conv3"})


class Nb201Spec(NamedTuple):
  """The network's size and form (static).

  Attributes:
    channels: C, the first stage's width (16 in the benchmark).
    cells_per_stage: N, cells in each of the three stages (5 in the benchmark).
    num_classes: classifier outputs (10, 100, 120).
    image_size: input height and width (32 for CIFAR, 16 for ImageNet16-120); inputs are
      [B, image_size, image_size, 3].
    bn: batch norm in stem, cells and head (reduction blocks always keep theirs).
    affine: cell convs without bias and cell batch norms with scale and offset (the benchmark's
      cells) when True; the zero-cost reference's cells (conv bias, bare batch norm) when False.
  """

  channels: int = 16
  cells_per_stage: int = 5
  num_classes: int = 10
  image_size: int = 32
  bn: bool = True
  affine: bool = False


def check_spec(spec: Any) -> Nb201Spec:
  """`spec` if it is a valid `Nb201Spec`; TypeError or ValueError naming the field otherwise."""
  if not isinstance(spec, Nb201Spec):
    raise TypeError(f"spec: got a {type(spec).__name__}; expected an Nb201Spec")
  for field in ("channels", "cells_per_stage", "num_classes", "image_size"):
    v = getattr(spec, field)
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
      raise ValueError(f"spec.{field}: {v!r}; expected a positive integer")
  if spec.image_size % 4:
    raise ValueError(f"spec.image_size: {spec.image_size}; expected a multiple of 4 (two stride-2 reductions)")
  return spec


def _torch_uniform(fan_in: int):
  """PyTorch's default conv/linear init (kaiming-uniform, a = sqrt(5)) and its bias rule."""
  bound = 1.0 / np.sqrt(fan_in)
  return lambda key, shape, dtype=jnp.float32: jax.random.uniform(key, shape, dtype, -bound, bound)


class _ConvWeights(nn.Module):
  """A conv's kernel [k, k, C_in, C_out] and, if `bias`, bias [C_out] (PyTorch's init)."""

  k: int
  c_in: int
  c_out: int
  bias: bool

  @nn.compact
  def __call__(self) -> tuple[jax.Array, jax.Array | None]:
    init = _torch_uniform(self.k * self.k * self.c_in)
    w = self.param("kernel", init, (self.k, self.k, self.c_in, self.c_out))
    b = self.param("bias", init, (self.c_out,)) if self.bias else None
    return w, b


class _NormWeights(nn.Module):
  """A batch norm's scale and offset [C] (1 and 0)."""

  c: int

  @nn.compact
  def __call__(self) -> tuple[jax.Array, jax.Array]:
    return self.param("scale", nn.initializers.ones, (self.c,)), self.param("offset", nn.initializers.zeros, (self.c,))


def _normalise(module: nn.Module, x: jax.Array, mode: str, name: str = "") -> jax.Array:
  """Batch norm over (B, H, W), no scale or offset, with the statistics of `mode` (one of
  `BATCH_NORM_MODES`); other than "batch", the running averages are the module's `batch_stats`
  `<name>mean` and `<name>var` [C]."""
  if mode == "batch":
    mean = jnp.mean(x, axis=(0, 1, 2))
    return (x - mean) * jax.lax.rsqrt(jnp.mean(jnp.square(x - mean), axis=(0, 1, 2)) + _EPS)
  running_mean = module.variable("batch_stats", name + "mean", jnp.zeros, (x.shape[-1],), jnp.float32)
  running_var = module.variable("batch_stats", name + "var", jnp.ones, (x.shape[-1],), jnp.float32)
  if mode == "running":
    mean, var = running_mean.value.astype(x.dtype), running_var.value.astype(x.dtype)
  else:
    mean = jnp.mean(x, axis=(0, 1, 2))
    var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2))
    if not module.is_initializing():
      running_mean.value = BN_MOMENTUM * running_mean.value + (1 - BN_MOMENTUM) * mean.astype(jnp.float32)
      running_var.value = BN_MOMENTUM * running_var.value + (1 - BN_MOMENTUM) * var.astype(jnp.float32)
  return (x - mean) * jax.lax.rsqrt(var + _EPS)


def _conv(x: jax.Array, w: jax.Array, b: jax.Array | None, stride: int = 1) -> jax.Array:
  pad = (w.shape[0] - 1) // 2
  y = jax.lax.conv_general_dilated(
    x, w.astype(x.dtype), (stride, stride), ((pad, pad), (pad, pad)), dimension_numbers=("NHWC", "HWIO", "NHWC")
  )
  return y if b is None else y + b.astype(x.dtype)


def _tap(module: nn.Module, y: jax.Array, name: str = "tap") -> jax.Array:
  """Sows `y` as the module's tap `name` and adds its perturbation, if given."""
  module.sow("intermediates", name, y, init_fn=lambda: None, reduce_fn=lambda _, new: new)
  return module.perturb(name, y)


def _relu(module: nn.Module, x: jax.Array, weight: Any = 1.0) -> jax.Array:
  """ReLU of `x`, sowing (x > 0, weight) as the module's `relu_codes/relu`."""
  module.sow(
    "relu_codes", "relu", (x > 0, jnp.asarray(weight, x.dtype)), init_fn=lambda: None, reduce_fn=lambda _, new: new
  )
  return jax.nn.relu(x)


class _ConvBn(nn.Module):
  """conv (optionally after ReLU) then batch norm with scale and offset: stem and reduction convs."""

  k: int
  c_in: int
  c_out: int
  stride: int = 1
  relu: bool = True
  bn: bool = True
  batch_norm: str = "batch"

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    w, _ = _ConvWeights(self.k, self.c_in, self.c_out, False, name="conv")()
    y = _tap(self, _conv(_relu(self, x) if self.relu else x, w, None, self.stride))
    if not self.bn:
      return y
    scale, offset = _NormWeights(self.c_out, name="norm")()
    return _normalise(self, y, self.batch_norm) * scale + offset


class _Reduction(nn.Module):
  """The residual reduction block C -> 2C, stride 2 (its batch norms are always on)."""

  c_in: int
  batch_norm: str = "batch"

  @nn.compact
  def __call__(self, x: jax.Array) -> jax.Array:
    c = 2 * self.c_in
    h = _ConvBn(3, self.c_in, c, stride=2, batch_norm=self.batch_norm, name="conv_a")(x)
    h = _ConvBn(3, c, c, batch_norm=self.batch_norm, name="conv_b")(h)
    pooled = nn.avg_pool(x, (2, 2), strides=(2, 2))
    return h + _ConvBn(1, self.c_in, c, relu=False, bn=False, name="shortcut")(pooled)


class _Edge(nn.Module):
  """One edge's op; `op` a static code, or None for the masked form (`onehot` [5] selects)."""

  c: int
  bn: bool
  affine: bool
  op: int | None = None
  batch_norm: str = "batch"

  def _norm(self, name: str, y: jax.Array) -> tuple[jax.Array, Any]:
    if not self.affine:
      return y, None
    return y, _NormWeights(self.c, name=name)()

  @nn.compact
  def __call__(self, x: jax.Array, onehot: jax.Array | None) -> jax.Array:
    bias = not self.affine
    if self.op is None:
      m = onehot.astype(x.dtype)
      w3, b3 = _ConvWeights(3, self.c, self.c, bias, name="conv3")()
      w1, b1 = _ConvWeights(1, self.c, self.c, bias, name="conv1")()
      w = m[_CONV3] * w3.astype(x.dtype) + m[_CONV1] * jnp.pad(w1.astype(x.dtype), ((1, 1), (1, 1), (0, 0), (0, 0)))
      b = m[_CONV3] * b3.astype(x.dtype) + m[_CONV1] * b1.astype(x.dtype) if bias else None
      y = _conv(_relu(self, x, m[_CONV1] + m[_CONV3]), w, b)
      # One tap per conv weight (fisher pairs each weight with its layer's output): the fused
      # conv's output is conv3's when that op is on, conv1's when it is, and the other tap is 0.
      y = _tap(self, m[_CONV1] * y, "tap1") + _tap(self, m[_CONV3] * y, "tap3")
      if self.bn:
        y = _normalise(self, y, self.batch_norm)
        if self.affine:
          s3, o3 = _NormWeights(self.c, name="norm3")()
          s1, o1 = _NormWeights(self.c, name="norm1")()
          y = y * (m[_CONV3] * s3 + m[_CONV1] * s1) + (m[_CONV3] * o3 + m[_CONV1] * o1)
      pool = nn.avg_pool(x, (3, 3), strides=(1, 1), padding=((1, 1), (1, 1)), count_include_pad=False)
      return (m[_CONV3] + m[_CONV1]) * y + m[_SKIP] * x + m[_POOL] * pool
    if self.op == _NONE:
      return jnp.zeros_like(x)
    if self.op == _SKIP:
      return x
    if self.op == _POOL:
      return nn.avg_pool(x, (3, 3), strides=(1, 1), padding=((1, 1), (1, 1)), count_include_pad=False)
    name = _CONV_OF[self.op]
    w, b = _ConvWeights(1 if self.op == _CONV1 else 3, self.c, self.c, bias, name=name)()
    y = _tap(self, _conv(_relu(self, x), w, b))
    if self.bn:
      y = _normalise(self, y, self.batch_norm)
      if self.affine:
        s, o = _NormWeights(self.c, name="norm" + name[-1])()
        y = y * s + o
    return y


class _Cell(nn.Module):
  c: int
  bn: bool
  affine: bool
  cell: tuple[int, ...] | None = None
  batch_norm: str = "batch"

  @nn.compact
  def __call__(self, x: jax.Array, onehot: jax.Array | None) -> jax.Array:
    nodes = [x]
    for j in (1, 2, 3):
      terms = []
      for e, (i, t) in enumerate(NB201_EDGES):
        if t != j:
          continue
        op = None if self.cell is None else self.cell[e]
        edge = _Edge(self.c, self.bn, self.affine, op, self.batch_norm, name=f"edge{e}")
        terms.append(edge(nodes[i], None if onehot is None else onehot[e]))
      nodes.append(sum(terms))
    return nodes[3].astype(x.dtype), None  # flax's count-excluding pool divides in float64 under x64


def _stage(n: int):
  """`_Cell` scanned n times: a stage's cells share shapes, so one scanned cell (parameters
  stacked on a leading axis N) keeps the program, and its compile time, the size of one cell's."""
  return nn.scan(
    _Cell,
    variable_axes={"params": 0, "batch_stats": 0, "intermediates": 0, "perturbations": 0, "relu_codes": 0},
    split_rngs={"params": True},
    in_axes=nn.broadcast,
    length=n,
  )


class Nb201Net(nn.Module):
  """The NB201 network. `cell` None: masked, `__call__(x, ops)` with ops [6] int codes (data);
  `cell` a tuple of 6 codes: specialised, `__call__(x)` (`ops` must be None). `batch_norm`, one of
  `BATCH_NORM_MODES`: "batch" (the default) normalises with the batch's statistics and has no
  `batch_stats`; "train" too, updating the running averages (apply with mutable=["batch_stats"]);
  "running" normalises with them.

  x: [B, image_size, image_size, 3]; returns logits [B, num_classes]."""

  spec: Nb201Spec = Nb201Spec()
  cell: tuple[int, ...] | None = None
  batch_norm: str = "batch"

  @nn.compact
  def __call__(self, x: jax.Array, ops: jax.Array | None = None) -> jax.Array:
    s = self.spec
    onehot = None if self.cell is not None else jax.nn.one_hot(ops, 5, dtype=x.dtype)
    c = s.channels
    if self.batch_norm not in BATCH_NORM_MODES:
      raise ValueError(f"Nb201Net.batch_norm: {self.batch_norm!r}; allowed: {', '.join(BATCH_NORM_MODES)}")
    mode = self.batch_norm
    h = _ConvBn(3, 3, c, relu=False, bn=s.bn, batch_norm=mode, name="stem")(x)
    for stage in range(3):
      if stage:
        h = _Reduction(c, mode, name=f"reduce{stage}")(h)
        c *= 2
      h, _ = _stage(s.cells_per_stage)(c, s.bn, s.affine, self.cell, mode, name=f"stage{stage}")(h, onehot)
    if s.bn:
      scale, offset = _NormWeights(c, name="head_norm")()
      h = _normalise(self, h, mode, "head_") * scale + offset
    h = jnp.mean(_relu(self, h), axis=(1, 2))
    return _Dense(c, s.num_classes, name="classifier")(h)


class _Dense(nn.Module):
  c_in: int
  c_out: int

  @nn.compact
  def __call__(self, h: jax.Array) -> jax.Array:
    init = _torch_uniform(self.c_in)
    w = self.param("kernel", init, (self.c_in, self.c_out))
    b = self.param("bias", init, (self.c_out,))
    return _tap(self, h @ w.astype(h.dtype) + b.astype(h.dtype))


def specialise_params(params: Any, cell: Sequence[int]) -> Any:
  """The masked network's parameters restricted to `cell`'s ops: its specialised network's."""
  keep = {f"edge{e}": {_CONV_OF[o], "norm" + _CONV_OF[o][-1]} if o in _CONV_OF else set() for e, o in enumerate(cell)}

  def prune(tree, key=None):
    if key in keep:
      return {k: v for k, v in tree.items() if k in keep[key]}
    pruned = {k: prune(v, k) if isinstance(v, dict) else v for k, v in tree.items()}
    return {k: v for k, v in pruned.items() if not isinstance(v, dict) or v}  # an absent edge has none

  return prune(dict(params))


def _costs(ops: jax.Array, spec: Nb201Spec) -> tuple[jax.Array, jax.Array]:
  """(params, flops) of the benchmark's network (affine cells) for ops [6] int; traceable."""
  c, n, k, hw = spec.channels, spec.cells_per_stage, spec.num_classes, spec.image_size**2
  ops = jnp.asarray(ops)
  conv1, conv3 = jnp.sum(ops == _CONV1), jnp.sum(ops == _CONV3)
  params = 27 * c + 2 * c  # stem conv + BN
  macs = 27 * c * hw
  for stage in range(3):
    cs, area = c * 2**stage, hw // 4**stage
    if stage:
      ci = cs // 2
      params += 9 * ci * cs + 2 * cs + 9 * cs * cs + 2 * cs + ci * cs
      macs += (9 * ci * cs + 9 * cs * cs + ci * cs) * area
    per_cell_params = conv1 * (cs * cs + 2 * cs) + conv3 * (9 * cs * cs + 2 * cs)
    per_cell_macs = (conv1 * cs * cs + conv3 * 9 * cs * cs) * area
    params, macs = params + n * per_cell_params, macs + n * per_cell_macs
  params += 2 * 4 * c + 4 * c * k + k  # head BN + classifier
  macs += 4 * c * k + k
  return params, macs


def nb201_params(ops: jax.Array, spec: Nb201Spec) -> jax.Array:
  """Trainable parameters of the benchmark's network of cell `ops` [6] int (the `params_mb_*`
  columns x 1e6): every conv and linear weight and bias and every batch norm's scale and offset,
  with the benchmark's cells (`affine=True`). Traceable in ops; returns [] int."""
  return _costs(ops, spec)[0]


def nb201_flops(ops: jax.Array, spec: Nb201Spec) -> jax.Array:
  """The benchmark's FLOPs count of cell `ops` [6] int for one example, as its
  `get_model_infos` counts them: multiply-accumulates of every conv and linear layer plus one add
  per output for a bias (norms, pools and sums not counted); NB201's `flops` column is this / 1e6.
  Traceable in ops; returns [] int."""
  return _costs(ops, spec)[1]
