"""Drawings of one architecture: a layered DAG layout computed here (longest-path layers from a
topological order, barycentre ordering within a layer) and drawn with matplotlib only.

Each layer is a text box (label name, units, stride); each edge an arrow. An edge that skips over
at least one layer is curved, so skip connections stay visible instead of running through boxes.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.cell import Cell, cell_to_architecture
from nas_jax.arch.graph import host_topological_order

__all__ = ["Layout", "layout", "node_text", "draw", "NODE_GID", "EDGE_GID", "SKIP_GID"]

# Artist gids: tests and the report find nodes and edges by these prefixes.
NODE_GID, EDGE_GID, SKIP_GID = "node", "edge", "skip"
_SKIP_RAD = 0.35  # curvature of skip arrows; alternating sign keeps parallel skips apart
_ROLE_COLOURS = MappingProxyType(
  {  # light fills, one per role, so conv/pool/fc (or activations) read at a glance
    labels_lib.Role.IP: "#d9d9d9",
    labels_lib.Role.OP: "#d9d9d9",
    labels_lib.Role.CONV: "#9ecae1",
    labels_lib.Role.RES: "#c6dbef",
    labels_lib.Role.POOL: "#fdd0a2",
    labels_lib.Role.FC: "#c7e9c0",
    labels_lib.Role.ACT: "#9ecae1",
    labels_lib.Role.DECISION: "#fcbba1",
    labels_lib.Role.CELL_OP: "#dadaeb",
    labels_lib.Role.SKIP: "#deebf7",
    labels_lib.Role.CONCAT: "#c6dbef",
    labels_lib.Role.GAP: "#fdd0a2",
  }
)
_SIGMOID_COLOUR = "#c7e9c0"  # MLP "sig" group (logistic, tanh) apart from the rectifiers


class Layout(NamedTuple):
  """Where the real layers of one architecture go.

  Attributes:
    nodes: [n] int, slot index of each real layer, in topological order.
    depth: [n] int, longest-path distance from a source (0 for `ip`).
    xy: [n, 2] float, positions: x within the layer (centred on 0), y = -depth.
    edges: [E, 2] int, (parent, child) slot indices.
    skip: [E] bool, True where the edge spans more than one layer.
  """

  nodes: np.ndarray
  depth: np.ndarray
  xy: np.ndarray
  edges: np.ndarray
  skip: np.ndarray


def _single(arch: Any) -> Architecture:
  """The Architecture to draw: a Cell is converted; a batch or another type is refused."""
  if isinstance(arch, Cell):
    if np.ndim(arch.ops) != 1:
      raise ValueError(f"arch: a batch of cells (ops shape {np.shape(arch.ops)}); draw one cell at a time")
    return cell_to_architecture(arch)
  if not isinstance(arch, Architecture):
    raise TypeError(f"arch: got a {type(arch).__name__}; expected an Architecture or a Cell")
  if np.ndim(arch.labels) != 1:
    raise ValueError(
      f"arch: a batch (labels shape {np.shape(arch.labels)}); draw one architecture at a"
      " time, e.g. nas_jax.unstack(batch)[0]"
    )
  return arch


def layout(arch: Architecture) -> Layout:
  """Layered layout of one architecture's real layers (padding is ignored).

  Layers: longest path from the sources along a topological order (Kahn's). Within a layer,
  nodes are sorted by the mean x of their parents (one barycentre sweep), which removes most
  crossings of NASBOT's near-chain networks.

  Raises:
    ValueError if `arch` has no real layer or its edges form a cycle.
  """
  arch = _single(arch)
  mask = np.asarray(arch.mask, bool)
  nodes = np.flatnonzero(mask)
  if nodes.size == 0:
    raise ValueError("arch: no real layers (mask is all False); nothing to draw")
  adj = np.asarray(arch.adjacency, bool)[np.ix_(nodes, nodes)]
  order = host_topological_order(adj)
  if order is None:
    raise ValueError("arch.adjacency: has a cycle; an architecture is a DAG")
  depth = np.zeros(nodes.size, int)
  for u in order:
    for v in np.flatnonzero(adj[u]):
      depth[v] = max(depth[v], depth[u] + 1)
  x = np.zeros(nodes.size)
  for d in range(depth.max() + 1):
    members = np.flatnonzero(depth == d)
    bary = [x[np.flatnonzero(adj[:, v])].mean() if adj[:, v].any() else 0.0 for v in members]
    ranked = members[np.lexsort((members, bary))]
    x[ranked] = np.arange(ranked.size) - (ranked.size - 1) / 2
  order = np.asarray(order)
  parents, children = np.nonzero(adj)
  return Layout(
    nodes=nodes[order],
    depth=depth[order],
    xy=np.stack([x, -depth], 1)[order].astype(float),
    edges=np.stack([nodes[parents], nodes[children]], 1).reshape(-1, 2),
    skip=depth[children] - depth[parents] > 1,
  )


def node_text(arch: Architecture, slot: int) -> str:
  """A layer's box text: its label name, then units and stride where it has them ("conv3\\n16 /2")."""
  name = labels_lib.vocabulary(arch.kind)[int(arch.labels[slot])]
  units, stride = int(arch.units[slot]), int(arch.strides[slot])
  extra = " ".join(s for s in (str(units) if units else "", f"/{stride}" if stride > 1 else "") if s)
  return f"{name}\n{extra}" if extra else name


def _colour(arch: Architecture, slot: int) -> str:
  table = labels_lib.label_table(arch.kind)
  label = int(arch.labels[slot])
  groups = labels_lib.group_names(arch.kind)
  if "sig" in groups and table.groups[groups.index("sig"), label]:
    return _SIGMOID_COLOUR
  return _ROLE_COLOURS[labels_lib.Role(int(table.role[label]))]


def draw(arch: Any, ax: Axes | None = None, *, title: str | None = None) -> Axes:
  """Draws one architecture as a layered DAG, inputs at the top.

  Args:
    arch: one `Architecture` (labels [N]; any kind: cnn, mlp, nb201, nb101) or one cell `Cell`
      (converted by `cell_to_architecture`). Padded slots are not drawn.
    ax: the Axes to draw on; default a new Figure (Agg, no pyplot state) sized to the network.
    title: the Axes title; default "<kind>, <n> layers".

  Returns:
    The Axes. Layers are `Text` artists with gid "node:<slot>"; edges are `FancyArrowPatch`es
    with gid "edge:<i>-<j>", or "skip:<i>-<j>" (curved) for edges that span several layers.

  Raises:
    TypeError for anything but an Architecture or a Cell; ValueError for a batch, an empty
    architecture or a cyclic one.
  """
  arch = _single(arch)
  if ax is not None and not isinstance(ax, Axes):
    raise TypeError(f"ax: got a {type(ax).__name__}; expected a matplotlib Axes or None")
  lay = layout(arch)
  arch = jax.tree.map(np.asarray, arch)  # one device-to-host copy, not one per node
  width, height = np.ptp(lay.xy[:, 0]) + 1, int(lay.depth.max()) + 1
  if ax is None:
    fig = Figure(figsize=(min(2.0 + 1.5 * width, 16.0), 0.8 + 0.6 * height))
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.02, top=1 - 0.35 / fig.get_figheight())
    ax = fig.add_subplot()
  # A box of two text lines needs ~4.5 font sizes of height; shrink the text in a crowded Axes.
  row_pt = ax.get_window_extent().height * 72 / ax.figure.dpi / height
  fontsize = float(np.clip(row_pt / 4.5, 3.0, 8.0))
  boxes = {}
  for slot, (x, y) in zip(lay.nodes.tolist(), lay.xy):
    # Boxes sit below the arrows: a box places its frame when drawn, and the arrows are clipped
    # to those frames (patchA/patchB), so the boxes must be drawn first.
    text = ax.text(
      x,
      y,
      node_text(arch, slot),
      ha="center",
      va="center",
      fontsize=fontsize,
      zorder=2,
      gid=f"{NODE_GID}:{slot}",
      bbox=dict(boxstyle="round,pad=0.3", fc=_colour(arch, slot), ec="0.3"),
    )
    boxes[slot] = (x, y, text)
  for k, ((i, j), skip) in enumerate(zip(lay.edges.tolist(), lay.skip)):
    (xa, ya, ta), (xb, yb, tb) = boxes[i], boxes[j]
    rad = (_SKIP_RAD if k % 2 else -_SKIP_RAD) if skip else 0.0
    ax.add_patch(
      FancyArrowPatch(
        (xa, ya),
        (xb, yb),
        arrowstyle="-|>",
        mutation_scale=10,
        connectionstyle=f"arc3,rad={rad}",
        color="tab:red" if skip else "0.25",
        lw=1.0,
        zorder=3,
        patchA=ta.get_bbox_patch(),
        patchB=tb.get_bbox_patch(),
        gid=f"{SKIP_GID if skip else EDGE_GID}:{i}-{j}",
      )
    )
  ax.set_xlim(lay.xy[:, 0].min() - 0.9, lay.xy[:, 0].max() + 0.9)
  ax.set_ylim(-height + 0.4, 0.6)
  ax.set_axis_off()
  ax.set_title(f"{arch.kind}, {lay.nodes.size} layers" if title is None else title, fontsize=9)
  return ax
