"""`ProxyNet`s of NAS-Bench-201 cells: the masked network, whose ops are data (so the constructor
traces under `jax.vmap` over cells and keys), and the specialised network of one static cell."""

from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp

from nas_jax.models.nb201_init import init_params
from nas_jax.models.nb201_net import Nb201Net, Nb201Spec, specialise_params
from nas_jax.proxies.net import ProxyNet

__all__ = ["nb201_proxy_net", "nb201_specialised_proxy_net", "init_params"]


def _unstacked(tree: dict) -> dict:
  """A stage's cells one tree each: `stageK` holds a list of N cell trees where the scanned
  network stacks them on a leading axis, so every leaf is one layer's (a conv bias is [C], not
  [N, C]) and the proxies' per-layer sums see N layers."""
  out = dict(tree)
  for name, stacked in tree.items():
    if name.startswith("stage"):
      n = jax.tree.leaves(stacked)[0].shape[0]
      out[name] = [jax.tree.map(lambda a, i=i: a[i], stacked) for i in range(n)]
  return out


def _stacked(tree: dict) -> dict:
  """The inverse of `_unstacked`: what the scanned network reads."""
  return {k: jax.tree.map(lambda *a: jnp.stack(a), *v) if k.startswith("stage") else v for k, v in tree.items()}


def _proxy_net(model: Nb201Net, plain: Nb201Net, params: Any, spec: Nb201Spec, *ops: jax.Array) -> ProxyNet:
  def tapped(p, x, taps):
    variables = {"params": _stacked(p)} if taps is None else {"params": _stacked(p), "perturbations": _stacked(taps)}
    logits, state = model.apply(variables, x, *ops, mutable=["intermediates"])
    return logits, _unstacked(state["intermediates"])

  def codes(p, x):
    sown = model.apply({"params": _stacked(p)}, x, *ops, mutable=["relu_codes"])[1]["relu_codes"]
    pairs = jax.tree.leaves(sown, is_leaf=lambda t: isinstance(t, tuple))
    # a stage stacks its cells' codes [N, B, H, W, C] and weights [N]
    return [(c.reshape(*w.shape, x.shape[0], -1), w) for c, w in pairs]

  return ProxyNet(
    apply=lambda p, x: model.apply({"params": _stacked(p)}, x, *ops),
    params=_unstacked(params),
    plain=lambda p, x: plain.apply({"params": _stacked(p)}, x, *ops),
    tapped=tapped,
    input_shape=(spec.image_size, spec.image_size, 3),
    codes=codes,
  )


def nb201_proxy_net(ops: jax.Array, key: jax.Array, spec: Nb201Spec = Nb201Spec()) -> ProxyNet:
  """The masked NB201 network of cell `ops` [6] int (op codes, data) initialised from `key`.

  Traceable in `ops` and `key`: under `jax.vmap` it builds a batch of networks with one program.
  `plain` drops the batch norms of stem, cells and head; the reduction blocks keep theirs, as in
  the reference's BN-free copy (`nb201_net`). `tapped`'s acts are the sown conv and classifier
  outputs, one per conv weight (an edge's `tap1` and `tap3`: its fused conv's output where that
  conv is its op, zeros otherwise), in a tree shaped like `taps`. `codes` are those of the
  reference's ReLU modules: one per conv edge (a masked edge's ReLU weighs 1 when a conv is its
  op, 0 otherwise), two per reduction block and the head's.
  """
  spec = spec._replace(bn=True)
  plain = Nb201Net(spec._replace(bn=False))
  return _proxy_net(Nb201Net(spec), plain, init_params(key, spec), spec, ops)


def nb201_specialised_proxy_net(cell: Sequence[int], key: jax.Array, spec: Nb201Spec = Nb201Spec()) -> ProxyNet:
  """The specialised network of the static cell `cell` (6 op codes), with the parameters the
  masked network of the same `key` has on its ops, so its proxies equal `nb201_proxy_net`'s."""
  spec, cell = spec._replace(bn=True), tuple(int(o) for o in cell)
  params = specialise_params(init_params(key, spec), cell)
  return _proxy_net(Nb201Net(spec, cell), Nb201Net(spec._replace(bn=False), cell), params, spec)
