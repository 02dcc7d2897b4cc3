"""Morphs as architecture edits (Auto-Keras Sec. 3.3): known descriptors and distances computed
by hand, the main-chain rules, replay, and descriptor bookkeeping over random morph chains."""

import collections

import hypothesis
import hypothesis.strategies as st
import numpy as np
import pytest

from nas_jax.arch import main_chain, morphism
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.morphism import Op
from nas_jax.features import edit_distance as ed

G0, G1 = morphism.initial_architectures()


def parts(arch):
  chain = main_chain.chain_view(arch)
  units = np.asarray(arch.units)
  return [int(units[c]) for c in chain.convs], [int(units[f]) for f in chain.fcs], sorted(chain.skip_triples())


def dist(a, b):
  return float(ed.edit_distances([ed.arch_descriptor(a, 10), ed.arch_descriptor(b, 10)])[0, 1])


def test_initial_networks_are_the_codes():
  assert parts(G0) == ([64, 64, 64], [], [])
  assert parts(G1) == ([64] * 7, [], [(1, 3, "add"), (3, 5, "add"), (5, 7, "add")])
  assert dist(G0, G1) == pytest.approx(7.0)  # E8


def test_known_morphs_of_spec_9_5():
  a, b, c = main_chain.chain_view(G0).convs
  deep = morphism.apply_op(G0, Op("deep", a, kernel=3))
  assert parts(deep)[0] == [64] * 4 and dist(G0, deep) == pytest.approx(1.0)
  wide = morphism.apply_op(G0, Op("wide", a))
  assert parts(wide)[0] == [128, 64, 64] and dist(G0, wide) == pytest.approx(0.5)
  add = morphism.apply_op(G0, Op("add", b, a))
  assert parts(add)[2] == [(1, 2, "add")] and dist(G0, add) == pytest.approx(1.0)
  cat = morphism.apply_op(G0, Op("concat", b, a))
  assert parts(cat)[2] == [(1, 2, "concat")] and dist(G0, cat) == pytest.approx(1.0)


def test_deep_shifts_the_skips_after_it():  # E7
  a, b, _ = main_chain.chain_view(G0).convs
  parent = morphism.apply_op(G0, Op("add", b, a))
  child = morphism.apply_op(parent, Op("deep", a, kernel=5))
  assert parts(child)[2] == [(2, 3, "add")]
  assert dist(parent, child) == pytest.approx(1 + 1 / 3)


def test_json_round_trip_keeps_slots():
  rng = np.random.default_rng(0)
  arch = G1
  for _ in range(12):
    arch = morphism.apply_op(arch, morphism.sample_ops(arch, rng)[0])
  back = Architecture.from_json(arch.to_json())
  assert back.to_json() == arch.to_json()
  assert parts(back) == parts(arch)


def test_inapplicable_ops_name_the_layer_and_reason():
  convs = main_chain.chain_view(G0).convs
  with pytest.raises(ValueError, match="layer 5: wide applies to a conv block other than the last"):
    morphism.apply_op(G0, Op("wide", convs[-1]))
  with pytest.raises(ValueError, match="skip goes forward"):
    morphism.apply_op(G0, Op("add", convs[0], convs[1]))
  with pytest.raises(ValueError, match="already has the skip"):
    morphism.apply_op(morphism.apply_op(G0, Op("add", convs[1], convs[0])), Op("add", convs[1], convs[0]))
  with pytest.raises(ValueError, match="kernel 3 or 5"):
    morphism.apply_op(G0, Op("deep", convs[0], kernel=7))
  with pytest.raises(ValueError, match="expected \\[type, target, source, kernel\\]"):
    Op.from_json(["deeper", 1, -1, 3])


def _json(names, edges, units=None):
  units = units or {}
  layers = [
    {"label": n, **({"units": units.get(i, 8)} if n in ("conv3", "conv5", "conv1", "concat", "fc") else {})}
    for i, n in enumerate(names)
  ]
  return {"kind": "autokeras", "layers": layers, "edges": edges}


def test_main_chain_rules_are_checked():
  chain = ["ip", "conv3", "conv3", "gap", "softmax", "op"]
  edges = [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]
  Architecture.from_json(_json(chain, edges))
  with pytest.raises(ValueError, match="found 2 'gap' layers"):
    Architecture.from_json(
      _json(chain[:3] + ["gap", "gap"] + chain[4:], [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6]])
    )
  with pytest.raises(ValueError, match="only conv blocks take add-skips"):
    Architecture.from_json(_json(chain + ["conv1"], edges + [[1, 6], [6, 3]]))
  three = ["ip", "conv3", "conv3", "conv3", "gap", "softmax", "op", "conv1"]
  line = [[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6]]
  Architecture.from_json(_json(three, line + [[1, 7], [7, 3]]))
  with pytest.raises(ValueError, match="an add-skip feeds exactly one conv block"):
    Architecture.from_json(_json(three, line + [[1, 7], [7, 2], [7, 3]]))
  with pytest.raises(ValueError, match="the first layer after ip must be a conv block"):
    Architecture.from_json(_json(["ip", "max-pool", "conv3", "gap", "softmax", "op"], edges))
  with pytest.raises(ValueError, match="not on the main chain"):
    Architecture.from_json(_json(chain + ["conv3"], edges + [[1, 6]]))
  with pytest.raises(ValueError, match="concat-skip starts at a conv block's output in an earlier block"):
    Architecture.from_json(
      _json(["ip", "conv3", "concat", "gap", "softmax", "op"], [[0, 1], [1, 2], [0, 2], [2, 3], [3, 4], [4, 5]])
    )


@hypothesis.settings(max_examples=25, deadline=None, derandomize=True)
@hypothesis.given(seed=st.integers(0, 2**31 - 1), start=st.sampled_from([0, 1]), steps=st.integers(1, 15))
def test_random_morph_chains_keep_the_bookkeeping(seed, start, steps):
  """Morph bookkeeping on descriptors, after every op of a random chain, and replay of the chain."""
  rng = np.random.default_rng(seed)
  arch, ops = (G0, G1)[start], []
  for _ in range(steps):
    op = morphism.sample_ops(arch, rng, n=1)[0]
    child = morphism.apply_op(arch, op)
    (pc, pf, ps), (cc, cf, cs) = parts(arch), parts(child)
    chain = main_chain.chain_view(arch)
    if op.type == "deep":  # as wide as the block's output, which a concat may have kept narrower
      read = chain.outputs[chain.convs.index(op.target)] if op.target in chain.convs else op.target
      assert sorted(cc + cf) == sorted(pc + pf + [int(np.asarray(arch.units)[read])])
      assert len(cs) == len(ps)
    elif op.type == "wide":
      assert len(cc) == len(pc) and cs == ps
      changed = [i for i, (x, y) in enumerate(zip(pc + pf, cc + cf)) if x != y]
      assert len(changed) == 1 and (cc + cf)[changed[0]] == 2 * (pc + pf)[changed[0]]
    else:
      assert (cc, cf) == (pc, pf)
      new = collections.Counter(cs) - collections.Counter(ps)
      assert list(new) == [(chain.rank[op.source], chain.rank[op.target], op.type)]
    assert max(collections.Counter(cs).values(), default=1) == 1
    Architecture.from_json(child.to_json())
    arch, ops = child, ops + [op]
  assert morphism.replay((G0, G1)[start], ops).to_json() == arch.to_json()
