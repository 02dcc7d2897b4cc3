"""The paper's worked-example networks (NASBOT Fig. 1 and Fig. 3) in interchange JSON."""


def _cnn(layers, edges):
  out = []
  for l in layers:
    name, *rest = l.split(":")
    label, _, stride = name.partition("/")
    layer = {"label": label}
    if rest:
      layer["units"] = int(rest[0])
    if label.startswith(("conv", "res")):
      layer["stride"] = int(stride or 1)
    out.append(layer)
  return {"kind": "cnn", "layers": out, "edges": [list(e) for e in edges]}


def _chain(n):
  return [(i, i + 1) for i in range(n - 1)]


FIG1A = _cnn(
  ["ip", "conv3:16", "conv3:16", "conv3:32", "conv5:32", "max-pool", "fc:16", "softmax", "op"],
  _chain(9),
)
FIG1B = _cnn(
  ["ip", "conv3:16", "conv3:16", "conv3:16", "conv3:16", "conv5:32", "max-pool", "fc:16", "softmax", "op"],
  [(0, 1), (1, 2), (1, 3), (2, 4), (3, 5), (4, 5), (5, 6), (6, 7), (7, 8), (8, 9)],
)
FIG1C = _cnn(
  [
    "ip",
    "conv7:16",
    "conv5:32",
    "conv3/2:16",
    "conv3:16",
    "avg-pool",
    "max-pool",
    "max-pool",
    "fc:16",
    "conv3:16",
    "softmax",
    "max-pool",
    "fc:16",
    "softmax",
    "op",
  ],
  [
    (0, 1),
    (1, 2),
    (1, 3),
    (1, 4),
    (2, 5),
    (3, 6),
    (4, 7),
    (5, 8),
    (7, 9),
    (9, 11),
    (6, 12),
    (11, 12),
    (8, 10),
    (8, 13),
    (12, 13),
    (10, 14),
    (13, 14),
  ],
)
FIG3_LEFT = _cnn(["ip", "conv3:16", "conv3:16", "conv3:32", "max-pool", "fc:16", "softmax", "op"], _chain(8))
FIG3_RIGHT = _cnn(
  ["ip", "conv3:16", "conv3:8", "conv3:8", "conv3:32", "max-pool", "fc:16", "softmax", "op"],
  [(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8)],
)
FIG16 = {
  "kind": "mlp",
  "layers": [{"label": "ip"}, {"label": "softplus", "units": 128}, {"label": "linear"}, {"label": "op"}],
  "edges": [[0, 1], [1, 2], [2, 3]],
}
