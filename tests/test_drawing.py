"""Architecture drawings: one box per real layer and one arrow per edge for every kind, layers
by longest path (networkx's topological generations), skip connections curved, bad input refused."""

import jax
import networkx as nx
import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch

import nas_jax
from nas_jax.arch import main_chain, morphism
from nas_jax.spaces.random_arch import random_architecture
from nas_jax.viz import drawing, plots

# 1 -> 3 skips conv5: the one edge that spans two layers.
SKIP_NET = {
  "kind": "cnn",
  "layers": [
    {"label": "ip"},
    {"label": "conv3", "units": 16, "stride": 2},
    {"label": "conv5", "units": 24, "stride": 1},
    {"label": "max-pool"},
    {"label": "fc", "units": 32},
    {"label": "softmax"},
    {"label": "op"},
  ],
  "edges": [[0, 1], [1, 2], [2, 3], [1, 3], [3, 4], [4, 5], [5, 6]],
}


def _artists(ax):
  nodes = {t.get_gid(): t for t in ax.texts if (t.get_gid() or "").startswith(drawing.NODE_GID + ":")}
  arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
  return nodes, arrows


def _real_edges(arch):
  m = np.asarray(arch.mask)
  adj = np.asarray(arch.adjacency) & m[:, None] & m[None, :]
  return {(int(i), int(j)) for i, j in zip(*np.nonzero(adj))}


def _examples():
  cells = [nas_jax.nb201_space().sample(jax.random.key(s), 1)[0] for s in range(3)]
  cells += [nas_jax.nb101_space().sample(jax.random.key(s), 1)[0] for s in range(3)]
  rng = np.random.default_rng(0)
  return (
    [nas_jax.Architecture.from_json(SKIP_NET)]
    + nas_jax.initial_pool("cnn")[:2]
    + nas_jax.initial_pool("mlp")[:2]
    + [random_architecture(k, rng, pad_to=40) for k in ("cnn", "mlp") * 3]
    + [nas_jax.cell_to_architecture(c) for c in cells]
    + cells
    + _autokeras()
  )


def _autokeras():
  """G1 and G0 after morphs that add a concat-skip and deepen (every autokeras vertex kind)."""
  g0, g1 = morphism.initial_architectures(width=8)
  a, b, _ = main_chain.chain_view(g0).convs
  return [
    g1,
    morphism.replay(g0, [morphism.Op("concat", b, a), morphism.Op("deep", a, kernel=5), morphism.Op("add", b, a)]),
  ]


@pytest.mark.parametrize("arch", _examples(), ids=lambda a: f"{a.kind}-{type(a).__name__}")
def test_one_box_per_real_layer_and_one_arrow_per_edge(arch):
  ax = plots.draw(arch)
  drawn = nas_jax.cell_to_architecture(arch) if isinstance(arch, nas_jax.Cell) else arch
  nodes, arrows = _artists(ax)
  real = np.flatnonzero(np.asarray(drawn.mask))
  assert set(nodes) == {f"node:{i}" for i in real}
  assert {tuple(map(int, p.get_gid().split(":")[1].split("-"))) for p in arrows} == _real_edges(drawn)
  assert len(arrows) == len(_real_edges(drawn))
  names = nas_jax.vocabulary(drawn.kind)
  for i in real:
    text = nodes[f"node:{i}"].get_text()
    assert text.split("\n")[0] == names[int(drawn.labels[i])]
    if int(drawn.units[i]):
      assert str(int(drawn.units[i])) in text.split("\n")[1]


@pytest.mark.parametrize("arch", _examples()[:10], ids=lambda a: a.kind)
def test_layers_are_longest_path_generations_and_skips_are_curved(arch):
  lay = drawing.layout(arch)
  g = nx.DiGraph(sorted(_real_edges(arch)))
  want = {v: d for d, gen in enumerate(nx.topological_generations(g)) for v in gen}
  assert dict(zip(lay.nodes.tolist(), lay.depth.tolist())) == want
  depth = dict(zip(lay.nodes.tolist(), lay.depth.tolist()))
  _, arrows = _artists(plots.draw(arch))
  for p in arrows:
    i, j = map(int, p.get_gid().split(":")[1].split("-"))
    is_skip = depth[j] - depth[i] > 1
    assert p.get_gid().startswith("skip:" if is_skip else "edge:")
    rad = float(p.get_connectionstyle().rad)
    assert (rad != 0) == is_skip


def test_the_skip_connection_of_a_known_network_is_the_one_curved_arrow():
  _, arrows = _artists(plots.draw(nas_jax.Architecture.from_json(SKIP_NET)))
  assert sorted(p.get_gid() for p in arrows if p.get_gid().startswith("skip")) == ["skip:1-3"]
  assert sum(p.get_gid().startswith("edge") for p in arrows) == 6


def test_units_and_stride_are_shown():
  arch = nas_jax.Architecture.from_json(SKIP_NET)
  assert drawing.node_text(arch, 1) == "conv3\n16 /2"
  assert drawing.node_text(arch, 2) == "conv5\n24"
  assert drawing.node_text(arch, 3) == "max-pool\n/2"
  assert drawing.node_text(arch, 0) == "ip"


def test_padding_and_slot_order_do_not_change_the_drawing():
  arch = nas_jax.Architecture.from_json(SKIP_NET)
  padded = nas_jax.pad(arch, 30)
  a, b = drawing.layout(arch), drawing.layout(padded)
  np.testing.assert_array_equal(a.nodes, b.nodes)
  np.testing.assert_array_equal(a.xy, b.xy)
  assert len(_artists(plots.draw(padded))[0]) == 7


def test_draws_on_the_given_axes_and_returns_it():
  ax = Figure().add_subplot()
  assert plots.draw(nas_jax.initial_pool("mlp")[0], ax=ax, title="t") is ax
  assert ax.get_title() == "t"


def test_bad_input_is_refused_with_a_named_argument():
  pool = nas_jax.initial_pool("cnn")
  with pytest.raises(ValueError, match=r"arch: a batch \(labels shape \(2, "):
    plots.draw(nas_jax.stack(pool[:2]))
  with pytest.raises(TypeError, match="arch: got a dict; expected an Architecture or a Cell"):
    plots.draw(SKIP_NET)
  with pytest.raises(TypeError, match="ax: got a str"):
    plots.draw(pool[0], ax="left")
  cyclic = pool[0].replace(adjacency=np.asarray(pool[0].adjacency) | np.eye(pool[0].num_slots, k=-1, dtype=bool))
  with pytest.raises(ValueError, match="arch.adjacency: has a cycle"):
    plots.draw(cyclic)
  empty = pool[0].replace(mask=np.zeros(pool[0].num_slots, bool))
  with pytest.raises(ValueError, match="arch: no real layers"):
    plots.draw(empty)
  cells = nas_jax.nb201_space().sample(jax.random.key(0), 2)
  batch = jax.tree.map(lambda *x: np.stack(x), *cells)
  with pytest.raises(ValueError, match="arch: a batch of cells"):
    plots.draw(batch)
