"""Random valid layer graphs: chains with random labels and units plus random skip connections.

Used to seed searches, property tests and benchmarks. Every candidate edge is kept only if the
whole graph still passes `from_json`, so the result is valid by construction.
"""

from __future__ import annotations

import numpy as np

from nas_jax.arch.architecture import Architecture
from nas_jax.arch.json_io import Limits, from_json, is_valid

__all__ = ["random_architecture", "random_json"]

_CNN_BODY = ("conv3", "conv5", "conv7", "res3", "res5", "res7", "max-pool", "avg-pool")
_CNN_BODY_P = (0.2, 0.15, 0.1, 0.15, 0.1, 0.05, 0.15, 0.1)
_MLP_BODY = ("relu", "crelu", "leaky-relu", "softplus", "elu", "logistic", "tanh")
_UNITS = (8, 16, 32, 64, 128, 256)


def random_json(
  kind: str,
  rng: np.random.Generator,
  *,
  min_layers: int = 5,
  max_layers: int = 20,
  max_skips: int = 4,
  decision: str | None = None,
  limits: Limits | None = None,
) -> dict:
  """A random valid architecture in interchange JSON.

  Args:
    kind: "cnn" or "mlp".
    rng: numpy Generator (the only source of randomness).
    min_layers, max_layers: bounds on the total number of layers, ip/decision/op included.
    max_skips: how many extra (non-chain) edges to try.
    decision: decision label; "softmax" for CNNs and "linear" for MLPs by default.
    limits: search-space limits the result must satisfy.

  Returns:
    A JSON dict that `from_json` accepts.
  """
  if kind not in ("cnn", "mlp"):
    raise ValueError(f"random_json: kind {kind!r} is unknown; allowed: cnn, mlp")
  if not 4 <= min_layers <= max_layers:
    raise ValueError(f"random_json: need 4 <= min_layers <= max_layers, got {min_layers}, {max_layers}")
  limits = Limits() if limits is None else limits
  decision = decision or ("softmax" if kind == "cnn" else "linear")
  n_dec = 2 if rng.random() < 0.2 and max_layers >= 5 else 1
  n_body = int(rng.integers(min_layers, max_layers + 1)) - 2 - n_dec
  n_body = max(n_body, 1)
  body = []
  if kind == "cnn":
    n_fc = int(rng.integers(0, min(2, n_body - 1) + 1))
    for _ in range(n_body - n_fc):
      label = str(rng.choice(_CNN_BODY, p=_CNN_BODY_P))
      layer = {"label": label}
      if not label.endswith("pool"):
        layer["units"] = int(rng.choice(_UNITS))
        layer["stride"] = 2 if rng.random() < 0.15 else 1
      body.append(layer)
    body += [{"label": "fc", "units": int(rng.choice(_UNITS))} for _ in range(n_fc)]
  else:
    body = [{"label": str(rng.choice(_MLP_BODY)), "units": int(rng.choice(_UNITS))} for _ in range(n_body)]
  layers = [{"label": "ip"}] + body + [{"label": decision}] * n_dec + [{"label": "op"}]
  last_body, op = len(body), len(layers) - 1
  edges = [[i, i + 1] for i in range(last_body + 1)]
  edges += [[last_body, d] for d in range(last_body + 2, op)]  # extra decision layers
  edges += [[d, op] for d in range(last_body + 1, op)]
  obj = {"kind": kind, "layers": layers, "edges": edges}
  for _ in range(max_skips):
    u, v = sorted(rng.choice(last_body + 1, size=2, replace=False).tolist())
    if v == u + 1 or v == 0:
      continue
    trial = {**obj, "edges": obj["edges"] + [[u, v]]}
    if is_valid(trial, limits):
      obj = trial
  if not is_valid(obj, limits):
    raise ValueError(f"random_json: could not build a valid {kind} within {limits}; relax the bounds")
  return obj


def random_architecture(kind: str, rng: np.random.Generator, *, pad_to: int | None = None, **kwargs) -> Architecture:
  """`random_json(kind, rng, **kwargs)` as an Architecture padded to `pad_to`."""
  return from_json(random_json(kind, rng, **kwargs), pad_to=pad_to, limits=kwargs.get("limits"))
