"""Cell spaces (NAS-Bench-101 and NAS-Bench-201): parsing, validity, pruning, canonical keys, sampling,
mutation, neighbours, JSON and the ops-as-nodes Architecture."""

import collections
import csv
import gzip
import os

import jax
import numpy as np
import pytest
from scipy import stats

from nas_jax.acquisition.mutation import random_candidates
from nas_jax.arch import cell as cell_lib
from nas_jax.arch import graph
from nas_jax.spaces import cells as C
from tests.conftest import SHARED_DATA

NB201_CSV = os.path.join(SHARED_DATA, "nasbench201", "nb201_200epochs.csv.gz")
BEST = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|"
C10790 = "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|skip_connect~1|none~2|"
C6725 = "|skip_connect~0|+|none~0|none~1|+|skip_connect~0|nor_conv_3x3~1|none~2|"


@pytest.fixture(scope="module")
def rows():
  if not os.path.exists(NB201_CSV):
    pytest.skip(f"NAS-Bench-201 table not found at {NB201_CSV}")
  with gzip.open(NB201_CSV, "rt") as f:
    return list(csv.DictReader(f))


def nb101(edges, ops=(0, 0, 0, 0, 0)):
  a = np.zeros((7, 7), int)
  for i, j in edges:
    a[i, j] = 1
  return cell_lib.nb101_cell(a, ops)


E6 = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 6), (3, 6)]
E6P = [(0, 1), (0, 3), (1, 3), (1, 2), (3, 6), (2, 6)]


def cell(s):
  return C.nb201_space().from_json({"kind": "nb201", "arch_str": s})


# ----------------------------------------------------------------------------- NB201


def test_nb201_round_trip_and_csv_ops_on_every_row(rows):
  space = C.nb201_space()
  for r in rows:
    c = cell(r["arch_str"])
    assert space.to_json(c)["arch_str"] == r["arch_str"]
    assert c.ops.tolist() == [int(r[f"op_{i}_{j}"]) for i, j in cell_lib.NB201_EDGES]


def test_nb201_iso_keys_reproduce_iso_class(rows):
  by_key = collections.defaultdict(list)
  for r in rows:
    by_key[cell_lib.nb201_iso_key(cell(r["arch_str"]))].append(r)
  assert len(by_key) == 6466
  for members in by_key.values():
    assert {r["iso_class"] for r in members} == {str(min(int(r["index"]) for r in members))}
  sizes = collections.Counter(len(m) for m in by_key.values())
  assert sizes[1] == 5116 and max(sizes) == 275 and sizes[275] == 3


def test_nb201_iso_key_known_values():
  assert cell_lib.nb201_iso_key(cell(C10790)) == cell_lib.nb201_iso_key(cell(C6725)) == "#+(0)@nor_conv_3x3+0"
  assert cell_lib.nb201_iso_key(cell_lib.nb201_cell([0] * 6)) == "#+#+#"
  assert C.nb201_space("iso").canonical_key(cell(C10790)) == "#+(0)@nor_conv_3x3+0"
  assert C.nb201_space().canonical_key(cell(C10790)) == C10790


@pytest.mark.parametrize(
  "bad",
  [
    "|nor_conv_3x3~0|+|none~0|",
    "|conv~0|+|none~0|none~1|+|none~0|none~1|none~2|",
    "|none~1|+|none~0|none~1|+|none~0|none~1|none~2|",
  ],
)
def test_nb201_from_json_rejects_bad_strings(bad):
  with pytest.raises(ValueError, match="arch_str"):
    cell(bad)


def test_nb201_sampling_is_uniform_per_edge():
  pts = C.nb201_space().sample(jax.random.PRNGKey(0), 5000)
  ops = np.stack([p.ops for p in pts])
  for e in range(6):
    counts = np.bincount(ops[:, e], minlength=5)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_nb201_mutation_change_probabilities():
  space = C.nb201_space()
  parent = cell(BEST)
  keys = jax.random.split(jax.random.PRNGKey(1), 4000)
  children, oks = zip(*(space.mutate(parent, k) for k in keys))
  changed = np.array([(c.ops != parent.ops).sum() for c in children])
  np.testing.assert_array_equal(oks, changed > 0)  # ok=False exactly when the draw changed nothing
  expected = stats.binom(6, 0.25).pmf(np.arange(7)) * len(keys)
  observed = np.bincount(changed, minlength=7)
  assert abs(observed[0] / len(keys) - 0.177979) < 0.02
  assert stats.chisquare(observed[:5], expected[:5] * observed[:5].sum() / expected[:5].sum()).pvalue > 1e-3


@pytest.mark.parametrize(
  "space, parent",
  [
    (C.nb201_space("iso"), cell(C10790)),
    (C.nb201_space(), cell(BEST)),
    (C.nb101_space(), nb101(E6, (1, 0, 2, 0, 0))),
    (C.nb101_space("iso"), nb101(E6, (1, 0, 2, 0, 0))),
  ],
  ids=["nb201-iso", "nb201-string", "nb101-path", "nb101-iso"],
)
def test_require_change_always_changes_the_key_and_reports_ok(space, parent):
  for k in jax.random.split(jax.random.PRNGKey(2), 200):
    child, ok = space.mutate(parent, k, require_change=True)
    assert ok and space.canonical_key(child) != space.canonical_key(parent)


def test_nb201_neighbours_are_the_24_single_edge_changes():
  parent = cell(BEST)
  nbs = C.nb201_space().neighbours(parent)
  assert len(nbs) == 24
  assert len({tuple(n.ops.tolist()) for n in nbs}) == 24
  assert all((n.ops != parent.ops).sum() == 1 for n in nbs)


def test_nb201_architecture_path_lengths():
  arch = cell_lib.cell_to_architecture(cell(BEST))
  feats = np.asarray(graph.path_lengths(arch))[0]  # group "all": sp_ip, lp_ip, ... per node
  out = int(np.flatnonzero(np.asarray(arch.labels) == 1)[0])
  assert feats[0, out] == 2  # input -> skip -> output
  assert feats[1, out] == 4  # input -> conv3 (e0) -> conv3 (e2) -> conv1 (e5) -> output


def test_nb201_dead_cell_architecture_has_no_edges():
  arch = cell_lib.cell_to_architecture(cell_lib.nb201_cell([0] * 6))
  assert arch.labels.tolist() == [0, 1] and not arch.adjacency.any()


# ----------------------------------------------------------------------------- NB101


@pytest.mark.parametrize(
  "edges, ops, pruned_edges",
  [
    ([(0, 6)], (1, 2, 0, 1, 2), 1),
    ([(0, 1), (1, 2), (2, 3), (3, 6)], (0, 1, 2, 0, 0), 4),
    ([(0, 1), (0, 2), (0, 3), (0, 6), (1, 6), (2, 6), (3, 6)], (0, 1, 2, 0, 0), 7),
    ([(0, 1), (1, 2), (2, 6), (0, 6)], (0, 0, 0, 0, 0), 4),
    ([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)], (0, 0, 0, 0, 0), 6),
    (E6, (1, 0, 2, 0, 0), 6),
    ([(0, 1), (0, 2), (0, 3), (0, 5), (1, 6), (2, 6), (3, 4), (4, 6), (5, 6)], (1, 0, 0, 0, 2), 9),
  ],
)
def test_nb101_examples_are_valid_with_known_pruned_edges(edges, ops, pruned_edges):
  c = nb101(edges, ops)
  assert cell_lib.nb101_is_valid(c)
  assert cell_lib.nb101_prune(c)[0].sum() == pruned_edges


def test_nb101_validity_rules():
  ten = [(0, k) for k in range(1, 6)] + [(k, 6) for k in range(1, 6)]
  assert not cell_lib.nb101_is_valid(nb101(ten))
  dangling = [(0, k) for k in range(1, 5)] + [(k, 6) for k in range(1, 5)] + [(0, 6), (4, 5)]
  assert cell_lib.nb101_is_valid(nb101(dangling))
  assert cell_lib.nb101_prune(nb101(dangling))[0].sum() == 9
  assert not cell_lib.nb101_is_valid(nb101([(0, 1), (2, 6)]))


def test_nb101_canonical_keys():
  e6 = nb101(E6, (1, 0, 2, 0, 0))
  assert cell_lib.nb101_iso_key(e6) == cell_lib.nb101_iso_key(nb101(E6P, (1, 2, 0, 0, 0)))
  assert cell_lib.nb101_iso_key(e6) == cell_lib.nb101_iso_key(nb101(E6 + [(0, 4), (4, 5)], (1, 0, 2, 0, 0)))
  e7a, e7b = nb101([(0, 1), (1, 6)]), nb101([(0, 1), (0, 2), (1, 6), (2, 6)])
  assert cell_lib.nb101_iso_key(e7a) != cell_lib.nb101_iso_key(e7b)
  path_space = C.nb101_space("path")
  assert path_space.canonical_key(e7a) == (1,) and path_space.canonical_key(e7b) == (1, 1)  # naszilla: multiplicity
  # the same two paths (maxpool, conv3x3) met in either order are one cell: naszilla sorts the indices
  assert path_space.canonical_key(nb101([(0, 1), (0, 2), (1, 6), (2, 6)], (2, 0, 0, 0, 0))) == (1, 3)
  assert path_space.canonical_key(nb101([(0, 1), (0, 2), (1, 6), (2, 6)], (0, 2, 0, 0, 0))) == (1, 3)


def _code_path_indices(c):
  """The authors' path indices, as their code computes them on the raw 7x7 matrix: paths grown
  vertex by vertex (source outer, target inner), one index per path reaching the output, in
  that order (naszilla's `get_path_indices` then sorts them)."""
  a, ops = np.asarray(c.adjacency), np.asarray(c.ops)
  paths = [[[]] if a[0, j] else [] for j in range(7)]
  for i in range(1, 6):
    for j in range(1, 7):
      if a[i, j]:
        paths[j] += [[*p, int(ops[i - 1])] for p in paths[i]]
  return tuple(sum(3**k * (d + 1) for k, d in enumerate(p)) for p in paths[6])


def _classes(cells, key):
  """The de-duplication classes of `cells` under `key`: the set of index sets of equal keys."""
  groups = {}
  for i, c in enumerate(cells):
    groups.setdefault(key(c), set()).add(i)
  return {frozenset(g) for g in groups.values()}


def test_nb101_path_key_dedups_as_naszillas_sorted_path_indices_on_random_cells():
  space = C.nb101_space("path")
  cells = space.sample(jax.random.key(3), 312)
  naszilla = _classes(cells, lambda c: tuple(sorted(_code_path_indices(c))))
  assert _classes(cells, space.canonical_key) == naszilla
  assert _classes(cells, _code_path_indices) != naszilla  # the order of the paths would split some
  assert any(len(set(k)) < len(k) for k in map(space.canonical_key, cells))  # a multiset: repeats kept


def _permute(c, perm):
  """Relabels interior node k (1..5) as perm[k-1] + 1, keeping the matrix upper-triangular when
  perm preserves the edge order; otherwise re-sorts by the pruned key only."""
  new = [0] + [p + 1 for p in perm] + [6]
  a = np.zeros((7, 7), int)
  for i, j in zip(*np.nonzero(np.asarray(c.adjacency))):
    a[new[i], new[j]] = 1
  ops = np.zeros(5, int)
  ops[list(perm)] = np.asarray(c.ops)
  return a, ops


def test_nb101_iso_key_is_invariant_under_topological_relabelling():
  space = C.nb101_space("iso")
  rng = np.random.default_rng(0)
  for c in space.sample(jax.random.PRNGKey(3), 60):
    for _ in range(3):
      perm = rng.permutation(5)
      a, ops = _permute(c, perm)
      if np.tril(a).any():  # not a topological relabelling: skip
        continue
      assert cell_lib.nb101_iso_key(cell_lib.nb101_cell(a, ops)) == cell_lib.nb101_iso_key(c)


def test_nb101_sampler_statistics():
  pts = C.nb101_space().sample(jax.random.PRNGKey(4), 4000)
  trivial = np.mean([cell_lib.nb101_prune(p)[0].sum() == 1 for p in pts])
  assert abs(trivial - 0.09727) < 4 * np.sqrt(0.09727 * 0.9 / 4000)
  assert all(cell_lib.nb101_is_valid(p) for p in pts)


def test_nb101_pruning_is_idempotent():
  for c in C.nb101_space().sample(jax.random.PRNGKey(5), 200):
    a, ops = cell_lib.nb101_prune(c)
    k = len(ops)
    full = np.zeros((7, 7), int)
    full[: k + 1, : k + 1] = a[: k + 1, : k + 1]
    full[: k + 1, 6] = a[: k + 1, k + 1]
    again = cell_lib.nb101_cell(full, np.concatenate([ops, np.zeros(5 - k, int)]).astype(int))
    a2, ops2 = cell_lib.nb101_prune(again)
    assert np.array_equal(a2, a) and np.array_equal(ops2, ops)


def test_nb101_mutation_is_valid_and_keeps_the_path_set_at_the_spec_rate():
  space = C.nb101_space()
  parents = space.sample(jax.random.PRNGKey(6), 1500)
  same = 0
  for c, k in zip(parents, jax.random.split(jax.random.PRNGKey(7), len(parents))):
    child, ok = space.mutate(c, k)
    assert cell_lib.nb101_is_valid(child)
    assert (ok, child is c) == (space.canonical_key(child) != space.canonical_key(c), not ok)
    same += not ok
  assert abs(same / len(parents) - 0.456) < 0.05  # simulated: P(same path set) = 0.456


def test_nb101_neighbours_are_valid_single_edits():
  c = nb101(E6, (1, 0, 2, 0, 0))
  nbs = C.nb101_space().neighbours(c)
  assert nbs and all(cell_lib.nb101_is_valid(n) for n in nbs)
  for n in nbs:
    edits = int((n.adjacency != c.adjacency).sum()) + int((n.ops != c.ops).sum())
    assert edits == 1
  # node 4, 5 are off every path: no op change there (3 live nodes x 2 other ops = 6)
  assert sum(int((n.ops != c.ops).sum()) for n in nbs) == 6


def test_nb101_json_round_trip_and_errors():
  space = C.nb101_space()
  for c in space.sample(jax.random.PRNGKey(8), 20):
    back = space.from_json(space.to_json(c))
    assert np.array_equal(back.adjacency, c.adjacency) and np.array_equal(back.ops, c.ops)
  obj = space.to_json(nb101([(0, 1), (2, 6)]))
  with pytest.raises(ValueError, match="input->output"):
    space.from_json(obj)
  with pytest.raises(ValueError, match="ops"):
    space.from_json({**space.to_json(nb101([(0, 6)])), "ops": ["input", "x", "y", "z", "w", "v", "output"]})


def test_nb101_architecture_is_the_pruned_cell():
  arch = cell_lib.cell_to_architecture(nb101(E6 + [(0, 4), (4, 5)], (1, 0, 2, 0, 0)))
  assert len(arch.labels) == 5 and arch.adjacency.sum() == 6


def test_random_candidates_give_distinct_new_keys():
  space = C.nb201_space()
  first = random_candidates(space, jax.random.PRNGKey(9), set(), n=50)
  keys = {space.canonical_key(p) for p in first}
  more = random_candidates(space, jax.random.PRNGKey(10), keys, n=50)
  assert len(keys) == 50 and not keys & {space.canonical_key(p) for p in more}


def test_spaces_reject_unknown_dedup_keys():
  with pytest.raises(ValueError, match="dedup_key"):
    C.nb201_space("path")
  with pytest.raises(ValueError, match="dedup_key"):
    C.nb101_space("string")
