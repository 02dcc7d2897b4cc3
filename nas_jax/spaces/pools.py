"""The paper's initial pools (NASBOT App. B.3; Figs. 20 and 21): 10 CNNs and 10 MLPs.

Each network is a chain ip -> layers -> decision -> op, written below in a compact notation:
`conv3/2:64` is a stride-2 conv3 with 64 filters, `x3` repeats a layer three times.
"""

from __future__ import annotations

from nas_jax.arch.architecture import Architecture
from nas_jax.arch.json_io import from_json

__all__ = ["CNN_POOL", "MLP_POOL", "initial_pool", "chain"]

_VGG_HEAD = "conv3:64 conv3:64 max-pool conv3:128 conv3:128 max-pool"
_FC3 = "fc:128 fc:256 fc:512"
CNN_POOL = (
  f"{_VGG_HEAD} conv3:128x2 max-pool conv3:256x2 max-pool conv3:512x2 max-pool {_FC3}",
  f"{_VGG_HEAD} conv3:128x3 max-pool conv3:256x3 max-pool conv3:512x3 max-pool {_FC3}",
  f"{_VGG_HEAD} conv3:128x4 max-pool conv3:256x4 max-pool conv3:512x4 max-pool {_FC3}",
  "conv7:64 max-pool conv3/2:64 conv3:64 conv3/2:128 conv3:128 conv3/2:256 conv3:256"
  " conv3/2:512 conv3:512 avg-pool fc:1024",
  "conv7:64 max-pool conv3/2:64 conv3:64x2 conv3/2:128 conv3:128x2 conv3/2:256 conv3:256x2"
  " conv3/2:512 conv3:512x2 avg-pool fc:1024",
  "conv7:64 max-pool conv3/2:64 conv3:64x3 conv3/2:128 conv3:128x3 conv3/2:256 conv3:256x3 avg-pool fc:512",
  "conv7:64 max-pool conv3/2:64 conv3:64x3 conv3/2:128 conv3:128x3 conv3/2:256 conv3:256x3"
  " conv3/2:512 conv3:512x3 avg-pool fc:1024",
  "conv7:64 max-pool res3/2:64 res3/2:128 res3/2:256 res3/2:512 avg-pool fc:1024",
  "conv7:64 max-pool res3/2:64 res3:64 res3/2:128 res3:128 res3/2:256 res3:256 res3/2:512 res3:512 avg-pool fc:1024",
  "conv7:64 max-pool res3/2:64 res3:64x2 res3/2:128 res3:128x2 res3/2:256 res3:256x2"
  " res3/2:512 res3:512x2 avg-pool fc:1024",
)
MLP_POOL = (
  "relu:128 relu:256 logistic:64 logistic:64 softplus:128 softplus:128",
  "softplus:128 softplus:256 logistic:512 logistic:64 elu:64 elu:128 tanh:128 tanh:256",
  "crelu:128 crelu:256 logistic:512 logistic:512 elu:64 elu:64 tanh:128 tanh:128 softplus:256 softplus:256",
  "elu:128 elu:256 elu:64 elu:64 tanh:64 tanh:64 tanh:128 tanh:128 leaky-relu:128 leaky-relu:128"
  " leaky-relu:256 leaky-relu:256",
  "crelu:128 crelu:256 tanh:512 tanh:512 leaky-relu:512 leaky-relu:64 logistic:64 logistic:128"
  " softplus:128 softplus:256 tanh:256 tanh:512",
  "softplus:128 softplus:256 tanh:512 tanh:512 relu:512 relu:512 logistic:512 logistic:64"
  " crelu:64 crelu:128 tanh:128 tanh:256 elu:256 elu:512 logistic:512 logistic:512",
  "elu:128 elu:256 elu:512 logistic:512 logistic:512 logistic:64 relu:64 relu:64 relu:128"
  " tanh:128 tanh:128 tanh:256 crelu:256 crelu:256 crelu:512 logistic:512 logistic:512"
  " logistic:512",
  "relu:128 relu:256 logistic:512 logistic:512 crelu:512 crelu:512 tanh:512 tanh:512"
  " softplus:512 softplus:64 logistic:64 logistic:128 elu:128 elu:256 tanh:256 tanh:512"
  " leaky-relu:512 leaky-relu:512 logistic:512 logistic:512",
  "softplus:128 softplus:256 softplus:512 softplus:64x3 logistic:64x3 logistic:128x3"
  " relu:128x3 relu:256x3 tanh:256x3 tanh:512x3",
  "elu:128 elu:256 elu:512 logistic:512x3 softplus:512 softplus:64x2 tanh:64 tanh:128x2"
  " relu:128 relu:256x2 logistic:256 logistic:512x2 crelu:512x3 tanh:512x3",
)


def _layer(token: str, kind: str) -> list[dict]:
  """`conv3/2:64x3` -> three layer dicts."""
  body, _, repeat = token.partition("x") if ":" in token else (token, "", "")
  name, _, units = body.partition(":")
  label, _, stride = name.partition("/")
  layer: dict = {"label": label}
  if units:
    layer["units"] = int(units)
  if kind == "cnn" and label.startswith(("conv", "res")):
    layer["stride"] = int(stride or 1)
  return [dict(layer) for _ in range(int(repeat or 1))]


def chain(kind: str, spec: str, decision: str) -> dict:
  """Interchange JSON of the chain ip -> `spec` layers -> `decision` -> op."""
  layers = [{"label": "ip"}]
  for token in spec.split():
    layers += _layer(token, kind)
  layers += [{"label": decision}, {"label": "op"}]
  return {"kind": kind, "layers": layers, "edges": [[i, i + 1] for i in range(len(layers) - 1)]}


def initial_pool(kind: str, *, decision: str | None = None) -> list[Architecture]:
  """The paper's 10 initial networks of `kind`.

  Args:
    kind: "cnn" (Fig. 20) or "mlp" (Fig. 21).
    decision: decision-layer label; default "softmax" for CNNs and "linear" (regression) for MLPs.
      Pass "softmax" for MLP classification: masses do not depend on it.

  Returns:
    10 unbatched Architectures.
  """
  pools = {"cnn": (CNN_POOL, "softmax"), "mlp": (MLP_POOL, "linear")}
  if kind not in pools:
    raise ValueError(f"initial_pool: kind {kind!r} is unknown; allowed: {', '.join(pools)}")
  specs, default = pools[kind]
  return [from_json(chain(kind, s, decision or default)) for s in specs]
