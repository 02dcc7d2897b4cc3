"""NASBOT's modifiers (NASBOT App. B.2, Table 6): valid results, exact per-modifier
effects, known values on small networks, and long compound-mutation chains."""

import functools
import json

import jax
import networkx as nx
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from nas_jax.arch.graph import total_mass
from nas_jax.arch.json_io import Limits, from_json, to_json
from nas_jax.spaces import modifiers as M
from nas_jax.spaces.pools import chain, initial_pool
from nas_jax.spaces.random_arch import random_json

_KEY = lambda seed: np.random.default_rng(seed).integers(0, 2**32, 2, dtype=np.uint32)
_NEXT_POW2 = lambda n: 1 << (n - 1).bit_length()


def _start(kind, source, seed, limits=None):
  """A pool network or a random one, then a few compound mutations (to get branches)."""
  rng = np.random.default_rng(seed)
  if source == "pool":
    arch = initial_pool(kind)[seed % 10]
  else:
    arch = from_json(random_json(kind, rng, max_layers=15, limits=limits), limits=limits)
  bound = {n: functools.partial(f, limits=limits) for n, f in M.MODIFIERS.items()}
  for _ in range(int(rng.integers(0, 4))):
    arch, _ = M.compound_mutation(arch, _KEY(rng.integers(2**32)), modifiers=bound)
  return arch


def _check_valid(arch, limits=Limits()):
  """Padding consistent, valid under `limits`, exact JSON round trip (also through text)."""
  n, size = int(np.asarray(arch.mask).sum()), arch.num_slots
  np.testing.assert_array_equal(arch.mask, np.arange(size) < n)
  for leaf in (arch.labels, arch.units, arch.strides):
    assert not np.asarray(leaf)[n:].any()
  adj = np.asarray(arch.adjacency)
  assert not adj[n:].any() and not adj[:, n:].any()
  obj = to_json(arch)
  assert to_json(from_json(obj, limits=limits)) == obj
  assert to_json(from_json(json.dumps(obj), limits=limits)) == obj


def _parts(arch):
  obj = to_json(arch)
  return obj["layers"], {tuple(e) for e in obj["edges"]}


def _expected_units(u, up):
  return int(min(max(round(u * (9 / 8 if up else 7 / 8)), 8), 1024))


# --- known values --------------------------------------------------------------------------------


def test_scaled_units_known_values():
  u = np.array([64, 8, 1024, 20, 12, 9, 1000])
  np.testing.assert_array_equal(M.scaled_units(u, True, Limits()), [72, 9, 1024, 22, 14, 10, 1024])
  np.testing.assert_array_equal(M.scaled_units(u, False, Limits()), [56, 8, 896, 18, 10, 8, 875])


@pytest.mark.parametrize(
  "m, sizes",
  [
    (1, [1]),
    (3, [2, 1]),
    (4, [2, 2]),
    (5, [2, 1, 1, 1]),
    (8, [2, 2, 2, 2]),
    (9, [2, 1, 1, 1, 1, 1, 1, 1]),
    (16, [2] * 8),
  ],
)
def test_en_masse_blocks_cut_the_unit_layers_in_topological_order(m, sizes):
  arch = from_json(chain("mlp", " ".join(["relu:64"] * m), "linear"))
  blocks = M.en_masse_blocks(arch)
  assert [len(b) for b in blocks] == sizes
  assert sum(blocks, []) == list(range(1, m + 1))  # the chain's slots are its topological order


def test_unit_modifiers_decline_without_eligible_layers():
  tiny = from_json(
    {"kind": "mlp", "layers": [{"label": "ip"}, {"label": "linear"}, {"label": "op"}], "edges": [[0, 1], [1, 2]]}
  )
  for name in ("dec_single", "dec_en_masse", "inc_single", "inc_en_masse", "remove_layer", "swap_label"):
    out, reason = M.MODIFIERS[name](tiny, _KEY(0))
    assert out is tiny and reason.startswith(name + ": no ")
  at_min = from_json(chain("mlp", "relu:8", "linear"))
  assert M.dec_single(at_min, _KEY(0))[1] == "dec_single: no layer whose units can shrink within [8, 1024]"
  assert M.inc_single(at_min, _KEY(0))[1] == ""


def test_decline_reports_from_json_message():
  arch = from_json(chain("mlp", "relu:64", "linear"))
  out, reason = M.wedge_layer(arch, _KEY(0), limits=Limits(max_layers=4))
  assert out is arch and reason == "wedge_layer: no edge to split, or 4 layers already"
  heavy = from_json(chain("mlp", "relu:1000 relu:1000", "linear"))
  tm = float(total_mass(heavy))  # every increase adds >= 2.4% of it
  out, reason = M.inc_single(heavy, _KEY(0), limits=Limits(max_mass=1.01 * tm))
  assert out is heavy and reason.startswith("inc_single: result invalid: architecture: total mass")


def test_skip_known_sites_with_avg_pool_chains():
  # ip -> conv3 -> max-pool -> conv3 -> fc -> softmax -> op: image sizes 1, 1, 2, 2, flat.
  arch = from_json(chain("cnn", "conv3:16 max-pool conv3:16 fc:16", "softmax"))
  got = set()
  for _, new in M.single_changes(arch, ["skip"]):
    layers, edges = _parts(new)
    added = edges - {(i, i + 1) for i in range(6)}
    if len(layers) == 7:
      ((u, v),) = added
      got.add((u, v, 0))
    else:  # one stride-2 avg-pool, slot 7, between u and v
      assert len(layers) == 8 and layers[7] == {"label": "avg-pool"}
      ((u, _), (_, v)) = sorted(added, key=lambda e: e[0] == 7)
      assert added == {(u, 7), (7, v)}
      got.add((u, v, 1))
  assert got == {(0, 2, 0), (0, 3, 1), (0, 4, 1), (1, 3, 1), (1, 4, 1), (2, 4, 0)}


def test_wedge_units_are_the_mean_of_the_endpoints():
  arch = from_json(chain("mlp", "relu:64 tanh:128", "linear"))
  seen = set()
  for _, new in M.single_changes(arch, ["wedge_layer"]):
    layers, edges = _parts(new)
    (u,) = [a for a, b in edges if b == 5]
    (v,) = [b for a, b in edges if a == 5]
    assert (u, v) not in edges
    seen.add((u, v))
    assert layers[5]["units"] == {(0, 1): 64, (1, 2): 96, (2, 3): 128}[(u, v)]
  assert seen == {(0, 1), (1, 2), (2, 3)}  # never between the decision layer and op


def test_dup_path_on_a_chain_copies_the_walk():
  arch = from_json(chain("mlp", "relu:64", "linear"))
  outs = {len(_parts(new)[0]): _parts(new) for _, new in M.single_changes(arch, ["dup_path"])}
  layers, edges = outs[6]  # from ip: ip -> relu -> linear -> op, two copies
  assert layers[4:] == [{"label": "relu", "units": 64}, {"label": "linear"}]
  assert edges == {(0, 1), (1, 2), (2, 3), (0, 4), (4, 5), (5, 3)}
  layers, edges = outs[5]  # from relu: relu -> linear -> op, one copy
  assert edges == {(0, 1), (1, 2), (2, 3), (1, 4), (4, 3)}


def test_remove_layer_reconnects_orphans_known_values():
  layers = [{"label": "ip"}] + [{"label": l, "units": 16} for l in ("relu", "tanh", "elu", "softplus")]
  arch = from_json(
    {
      "kind": "mlp",
      "layers": layers + [{"label": "linear"}, {"label": "op"}],
      "edges": [[0, 1], [1, 2], [1, 3], [2, 4], [3, 5], [4, 5], [5, 6]],
    }
  )
  got = {}
  for _, new in M.single_changes(arch, ["remove_layer"]):
    layers, edges = _parts(new)
    (gone,) = {"relu", "tanh", "elu", "softplus"} - {l["label"] for l in layers}
    got[gone] = edges
  chain_ = {(3, 4), (4, 5)}
  assert got == {
    "relu": {(0, 1), (0, 2), (1, 3), (2, 4)} | chain_,  # both children lost their only parent
    "tanh": {(0, 1), (1, 2), (1, 3), (2, 4)} | chain_,  # softplus lost its only parent
    "elu": {(0, 1), (1, 2), (2, 3)} | chain_,  # nobody was orphaned
    "softplus": {(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)},  # tanh lost its only child
  }


def test_swap_targets_known_values():
  from nas_jax.spaces.structure_modifiers import swap_targets

  def names(kind, label):
    from nas_jax.arch.labels import label_table

    t = label_table(kind).names
    return sorted(t[b] for b in swap_targets(kind)[t.index(label)])

  assert names("cnn", "conv3") == ["conv5", "res3", "res5"]
  assert names("cnn", "res5") == ["conv3", "conv5", "conv7", "res3", "res7"]
  assert names("cnn", "max-pool") == ["avg-pool"]
  assert names("mlp", "tanh") == ["crelu", "elu", "leaky-relu", "logistic", "relu", "softplus"]


def test_every_modifier_mostly_succeeds_on_the_pools():
  for kind in ("cnn", "mlp"):
    for name, fn in M.MODIFIERS.items():
      ok = sum(not fn(a, _KEY(i))[1] for i, a in enumerate(initial_pool(kind)))
      assert ok >= 7, (kind, name, ok)


# --- per-modifier properties (Table 6) ------------------------------------------------------------


def _check_units(name, before, after):
  lb, eb = _parts(before)
  la, ea = _parts(after)
  assert ea == eb and [l["label"] for l in la] == [l["label"] for l in lb]
  assert [l.get("stride") for l in la] == [l.get("stride") for l in lb]
  up = name.startswith("inc")
  changed = [i for i in range(len(lb)) if lb[i].get("units") != la[i].get("units")]
  assert changed and all(la[i]["units"] == _expected_units(lb[i]["units"], up) for i in changed)
  if name.endswith("single"):
    assert len(changed) == 1
    return
  unit_layers = [i for i, l in enumerate(lb) if "units" in l]
  (block,) = [b for b in M.en_masse_blocks(before) if changed[0] in b]
  assert set(changed) <= set(block)
  assert all(la[i]["units"] == _expected_units(lb[i]["units"], up) for i in block)
  n_blocks = 2 if len(unit_layers) <= 4 else 4 if len(unit_layers) <= 8 else 8
  assert len(block) in (len(unit_layers) // n_blocks, -(-len(unit_layers) // n_blocks))
  # Contiguous among unit layers in some topological order: no path leaves and re-enters it.
  g = nx.DiGraph(list(eb))
  down = set().union(*(nx.descendants(g, b) for b in block)) - set(block)
  up_ = set().union(*(nx.ancestors(g, b) for b in block)) - set(block)
  assert not (down & up_ & set(unit_layers))


def _check_structure(name, before, after):
  """remove_layer, skip and dup_path."""
  lb, eb = _parts(before)
  la, ea = _parts(after)
  nb, na = len(lb), len(la)
  if name == "remove_layer":
    assert na == nb - 1
    shift = lambda x, i: i - (i > x)

    def explains(x):
      kept = {(shift(x, u), shift(x, v)) for u, v in eb if x not in (u, v)}
      bridges = {(shift(x, p), shift(x, c)) for p, _ in eb if _ == x for _, c in eb if _ == x}
      return lb[:x] + lb[x + 1 :] == la and kept <= ea and ea - kept <= bridges

    assert any(explains(x) and lb[x]["label"] not in ("ip", "op", "softmax", "linear") for x in range(nb))
    return
  assert la[:nb] == lb and eb <= ea
  new = ea - eb
  if name == "skip":
    assert na - nb == len(new) - 1 and all(l == {"label": "avg-pool"} for l in la[nb:])
    assert before.kind == "cnn" or na == nb
  else:
    k = na - nb + 2
    assert k >= 3 and len(new) == k - 1
    path = nx.dag_longest_path(nx.DiGraph(list(new)))
    assert len(path) == k and path[1:-1] == list(range(nb, na))
    # The copies equal the layers of some original path u1 -> ... -> uk.
    paths = nx.all_simple_paths(nx.DiGraph(list(eb)), path[0], path[-1], cutoff=k - 1)
    assert any(len(p) == k and [lb[i] for i in p[1:-1]] == la[nb:] for p in paths)


def _check_wedge(before, after):
  lb, eb = _parts(before)
  la, ea = _parts(after)
  w = len(lb)
  assert len(la) == w + 1 and la[:w] == lb and len(ea) == len(eb) + 1
  ((u, v),) = eb - ea
  assert ea == (eb - {(u, v)}) | {(u, w), (w, v)}
  assert lb[v]["label"] != "op"
  if lb[u]["label"] == "fc":
    assert la[w]["label"] == "fc"
  if "units" in la[w]:
    ends = [lb[x]["units"] for x in (u, v) if "units" in lb[x]]
    if ends:
      assert la[w]["units"] == int(np.clip(np.rint(np.mean(ends)), 8, 1024))


def _check_swap(before, after):
  lb, eb = _parts(before)
  la, ea = _parts(after)
  assert ea == eb and len(la) == len(lb)
  changed = [i for i in range(len(lb)) if lb[i] != la[i]]
  assert len(changed) == 1
  a, b = lb[changed[0]], la[changed[0]]
  assert (a.get("units"), a.get("stride")) == (b.get("units"), b.get("stride"))
  fam = lambda l: (
    "pool"
    if l.endswith("pool")
    else "convres"
    if l[:-1] in ("conv", "res")
    else "act"
    if l not in ("ip", "op", "fc", "softmax", "linear")
    else l
  )
  assert a["label"] != b["label"] and fam(a["label"]) == fam(b["label"]) != "fc"
  if fam(a["label"]) == "convres":
    assert abs(int(a["label"][-1]) - int(b["label"][-1])) <= 2


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["cnn", "mlp"]), source=st.sampled_from(["pool", "random"]), seed=st.integers(0, 2**31 - 1))
def test_each_modifier_has_its_exact_effect(kind, source, seed):
  arch = _start(kind, source, seed)
  for i, (name, fn) in enumerate(M.MODIFIERS.items()):
    new, reason = fn(arch, _KEY([seed, i]))
    if reason:
      assert new is arch and reason.startswith(name + ": ")
      continue
    _check_valid(new)
    n = len(_parts(new)[0])
    assert new.num_slots == (arch.num_slots if n <= arch.num_slots else _NEXT_POW2(n))
    if name in M.UNIT_MODIFIERS:
      _check_units(name, arch, new)
    elif name == "wedge_layer":
      _check_wedge(arch, new)
    elif name == "swap_label":
      _check_swap(arch, new)
    else:
      _check_structure(name, arch, new)


# --- compound mutation ---------------------------------------------------------------------------


def _chain_stays_valid(kind, source, seed):
  arch = _start(kind, source, seed)
  for step in range(30):
    new, applied = M.compound_mutation(arch, _KEY([seed, step]))
    assert 1 <= len(applied) <= 5 and set(applied) <= set(M.MODIFIERS)
    _check_valid(new)
    # Each step keeps N when it fits, else pads to a power of two: N never shrinks.
    n, size = int(np.asarray(new.mask).sum()), new.num_slots
    assert size == arch.num_slots or (size > max(arch.num_slots, n - 1) and size == _NEXT_POW2(size))
    arch = new


_CHAIN_ARGS = dict(
  kind=st.sampled_from(["cnn", "mlp"]), source=st.sampled_from(["pool", "random"]), seed=st.integers(0, 2**31 - 1)
)


@settings(max_examples=6, deadline=None)
@given(**_CHAIN_ARGS)
def test_thirty_step_compound_chains_stay_valid(kind, source, seed):
  _chain_stays_valid(kind, source, seed)


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(**_CHAIN_ARGS)
def test_many_thirty_step_compound_chains_stay_valid(kind, source, seed):
  _chain_stays_valid(kind, source, seed)


@settings(max_examples=6, deadline=None)
@given(kind=st.sampled_from(["cnn", "mlp"]), seed=st.integers(0, 2**31 - 1))
# A 5-layer CNN where only wedge_layer applies: 20 weighted draws missed it before the sweep.
@example(kind="cnn", seed=7117)
def test_chains_respect_tight_limits_and_a_declared_capacity(kind, seed):
  lim = Limits(max_layers=24, max_edges=40, max_degree=3, max_mass=5e6, max_units=256)
  arch = from_json(random_json(kind, np.random.default_rng(seed), max_layers=12, limits=lim), limits=lim, pad_to=32)
  bound = {n: functools.partial(f, limits=lim, pad_to=32) for n, f in M.MODIFIERS.items()}
  for step in range(30):
    before = arch
    arch, applied = M.compound_mutation(arch, _KEY([seed, step]), modifiers=bound)
    # An empty step is allowed only where no modifier applies at all (none of a few keys).
    assert applied or all(f(before, _KEY([seed, step, i]))[1] for f in bound.values() for i in range(8))
    assert arch.num_slots == 32
    _check_valid(arch, lim)


def test_a_step_sweeps_every_type_before_giving_up():
  only = "wedge_layer"
  calls = []

  def mod(name):
    def f(arch, key):
      calls.append(name)
      return (arch + [name], "") if name == only else (arch, f"{name}: no")

    return f

  mods = {n: mod(n) for n in M.MODIFIERS}
  weights = {n: 1e-6 if n == only else 1.0 for n in M.MODIFIERS}
  for i in range(20):
    calls.clear()
    out, applied = M.compound_mutation([], _KEY(i), modifiers=mods, step_probs=(1,), weights=weights, max_attempts=2)
    assert applied == [only] and out == [only]
    # Two weighted draws, then each type at most once, stopping at the one that applies.
    assert calls[-1] == only and len(calls) <= 2 + len(M.MODIFIERS) and len(set(calls[2:])) == len(calls[2:])
  calls.clear()
  zero = {**weights, only: 0.0}
  assert M.compound_mutation([], _KEY(0), modifiers=mods, weights=zero, step_probs=(1,), max_attempts=2) == ([], [])
  assert only not in calls and len(calls) == 2 + len(M.MODIFIERS) - 1


def test_compound_step_count_follows_step_probs():
  assert sum(M.STEP_PROBS) == pytest.approx(1.0)
  always = {"a": lambda arch, key: (arch, "")}
  counts = np.bincount(
    [len(M.compound_mutation(None, _KEY(i), modifiers=always)[1]) for i in range(4000)], minlength=6
  )[1:]
  np.testing.assert_allclose(counts / 4000, M.STEP_PROBS, atol=0.025)


def test_compound_type_weights_and_retries():
  ok = lambda name: lambda arch, key: (arch + [name], "")
  mods = {n: ok(n) for n in M.MODIFIERS}
  draws = [
    n
    for i in range(600)
    for n in M.compound_mutation([], _KEY(i), modifiers=mods, step_probs=(0, 0, 0, 0, 1), weights="nasbot_code")[1]
  ]
  w = M.MODIFIER_WEIGHTS["nasbot_code"]
  freq = {n: draws.count(n) / len(draws) for n in M.MODIFIERS}
  assert all(abs(freq[n] - w[n] / sum(w.values())) < 0.03 for n in M.MODIFIERS)
  calls = []

  def flaky(arch, key):
    calls.append(1)
    return (arch, "") if len(calls) % 4 == 0 else (arch, "flaky: not this time")

  _, applied = M.compound_mutation("x", _KEY(0), modifiers={"flaky": flaky}, step_probs=(0, 1))
  assert applied == ["flaky", "flaky"] and len(calls) == 8
  never = {"never": lambda arch, key: (arch, "never: no")}
  assert M.compound_mutation("x", _KEY(0), modifiers=never, max_attempts=3) == ("x", [])


def test_compound_mutation_is_a_function_of_the_key():
  arch = initial_pool("cnn")[8]
  a = M.compound_mutation(arch, jax.random.PRNGKey(3))
  b = M.compound_mutation(arch, jax.random.key(3))  # typed key with the same data
  c = M.compound_mutation(arch, np.asarray(jax.random.PRNGKey(4)))
  assert to_json(a[0]) == to_json(b[0]) and a[1] == b[1]
  assert to_json(a[0]) != to_json(c[0])


def test_bad_options_raise_naming_the_argument():
  arch = initial_pool("mlp")[0]
  with pytest.raises(ValueError, match="step_probs"):
    M.compound_mutation(arch, _KEY(0), step_probs=(0.5, 0.4))
  with pytest.raises(ValueError, match="weights: 'greedy' is unknown"):
    M.compound_mutation(arch, _KEY(0), weights="greedy")
  with pytest.raises(ValueError, match=r"weights: no weight for modifiers \['skip'\]"):
    M.compound_mutation(arch, _KEY(0), modifiers={"skip": M.skip}, weights={"dup_path": 1.0})
  with pytest.raises(TypeError, match="key: got int"):
    M.skip(arch, 0)
  with pytest.raises(ValueError, match="names: \\['grow'\\] unknown"):
    M.single_changes(arch, ["grow"])
