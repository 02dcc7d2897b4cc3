"""Encodings (BANANAS Sec. 4): sizes, hand-computed known vectors, structure and invariances."""

import csv
import gzip
import os

import jax
import numpy as np
import pytest

from nas_jax.arch import cell as cell_lib
from nas_jax.features import encodings as E
from nas_jax.spaces import cells as C
from tests.conftest import SHARED_DATA

NB201_CSV = os.path.join(SHARED_DATA, "nasbench201", "nb201_200epochs.csv.gz")
NB201_SPACE = C.nb201_space()


def ones(name, c):
  return set(np.flatnonzero(np.asarray(E.encode(name, [c])[0])).tolist())


def nb201(s):
  return NB201_SPACE.from_json({"kind": "nb201", "arch_str": s})


def nb101(edges, ops=(0, 0, 0, 0, 0)):
  a = np.zeros((7, 7), int)
  for i, j in edges:
    a[i, j] = 1
  return cell_lib.nb101_cell(a, ops)


NONE6 = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
SKIP6 = NONE6.replace("none", "skip_connect")
NB201_KNOWN = [  # hand-computed: arch_str, path201, path201_iso, adj201
  (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_1x1~2|",
    {4, 12, 17, 67},
    {0, 4, 7, 22},
    {2, 7, 12, 19, 22, 26},
  ),
  (
    "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|skip_connect~1|none~2|",
    {4, 23, 27, 122},
    {0, 1},
    {2, 8, 13, 19, 24, 28},
  ),
  (
    "|skip_connect~0|+|none~0|none~1|+|skip_connect~0|nor_conv_3x3~1|none~2|",
    {4, 19, 23, 124},
    {0, 1},
    {4, 8, 13, 19, 22, 28},
  ),
  (
    "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|skip_connect~0|nor_conv_3x3~1|nor_conv_3x3~2|",
    {4, 17, 92},
    {0, 4, 13},
    {2, 7, 12, 19, 22, 27},
  ),
  (NONE6, {3, 23, 123}, set(), {3, 8, 13, 18, 23, 28}),
  (SKIP6, {4, 29, 154}, {0}, {4, 9, 14, 19, 24, 29}),
]


@pytest.mark.parametrize("arch_str, path, iso, adj", NB201_KNOWN)
def test_nb201_known_vectors(arch_str, path, iso, adj):
  c = nb201(arch_str)
  assert ones("path", c) == path
  assert ones("trunc_path", c) == {i for i in path if i < 30}
  assert ones("path_iso", c) == iso
  assert ones("adj_onehot", c) == adj


def test_isomorphic_pair_equal_iso_vectors_but_different_code_vectors():
  a, b = nb201(NB201_KNOWN[1][0]), nb201(NB201_KNOWN[2][0])
  assert ones("path_iso", a) == ones("path_iso", b)
  assert ones("path", a) != ones("path", b)


E1 = ([(0, 6)], (1, 2, 0, 1, 2))
E2 = ([(0, 1), (1, 2), (2, 3), (3, 6)], (0, 1, 2, 0, 0))
E3 = ([(0, 1), (0, 2), (0, 3), (0, 6), (1, 6), (2, 6), (3, 6)], (0, 1, 2, 0, 0))
E4 = ([(0, 1), (1, 2), (2, 6), (0, 6)], (0, 0, 0, 0, 0))
E5 = ([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)], (0, 0, 0, 0, 0))
E6 = ([(0, 1), (0, 2), (1, 2), (1, 3), (2, 6), (3, 6)], (1, 0, 2, 0, 0))
E6P = ([(0, 1), (0, 3), (1, 3), (1, 2), (3, 6), (2, 6)], (1, 2, 0, 0, 0))
E6D = (E6[0] + [(0, 4), (4, 5)], E6[1])
E7A = ([(0, 1), (1, 6)], (0, 0, 0, 0, 0))
E7B = ([(0, 1), (0, 2), (1, 6), (2, 6)], (0, 0, 0, 0, 0))
E8 = ([(0, 1), (0, 2), (0, 3), (0, 5), (1, 6), (2, 6), (3, 4), (4, 6), (5, 6)], (1, 0, 0, 0, 2))


@pytest.mark.parametrize(
  "example, path",
  [
    (E1, {0}),
    (E2, {34}),
    (E3, {0, 1, 2, 3}),
    (E4, {0, 4}),
    (E5, {121}),
    (E6, {1, 5, 11}),
    (E6P, {1, 5, 11}),
    (E6D, {1, 5, 11}),
    (E7A, {1}),
    (E7B, {1}),
    (E8, {1, 2, 3, 4}),
  ],
)
def test_nb101_known_path_indices(example, path):
  c = nb101(*example)
  assert ones("path", c) == path
  assert ones("trunc_path", c) == {i for i in path if i < 40}


def test_nb101_adjacency_known_values():
  c = nb101(*E4)
  assert ones("adj_onehot", c) == {0, 5, 6, 14, 21, 24, 27, 30, 33}
  code = np.asarray(E.encode("adj_code", [c])[0])
  assert set(np.flatnonzero(code[:21])) == {0, 5, 6, 14} and np.all(code[21:] == 0.5)
  mixed = np.asarray(E.encode("adj_code", [nb101(E4[0], (1, 2, 0, 0, 0))])[0])
  assert mixed[25] == 0.0 and mixed[24] == 1.0  # node 1 (conv1x1) last, node 2 (maxpool) next
  assert np.asarray(E.encode("adj_cont", [c])[0])[26] == 4


def test_nb101_index_map_is_a_bijection_onto_364():
  table = E._NB101_EXTEND
  # every index except the empty path is reached exactly once by extending a shorter path
  assert np.array_equal(table.sum(axis=(0, 1)), np.r_[0, np.ones(363)])


@pytest.mark.parametrize(
  "name, kind, size",
  [
    ("path", "nb101", 364),
    ("trunc_path", "nb101", 40),
    ("adj_onehot", "nb101", 36),
    ("adj_code", "nb101", 26),
    ("adj_cont", "nb101", 27),
    ("path", "nb201", 155),
    ("trunc_path", "nb201", 30),
    ("path_iso", "nb201", 40),
    ("adj_onehot", "nb201", 30),
  ],
)
def test_sizes(name, kind, size):
  space = C.nb101_space() if kind == "nb101" else NB201_SPACE
  x = E.encode(name, space.sample(jax.random.PRNGKey(0), 3))
  assert x.shape == (3, size) == (3, E.encoding_size(name, kind))


def test_nb101_path_vectors_are_invariant_and_bounded_by_path_counts():
  space = C.nb101_space("iso")
  cells = space.sample(jax.random.PRNGKey(1), 300)
  x = np.asarray(E.encode("path", cells))
  by_key = {}
  for c, v in zip(cells, x):
    a, _ = cell_lib.nb101_prune(c)
    n_paths = np.zeros(len(a))
    n_paths[0] = 1
    for j in range(1, len(a)):
      n_paths[j] = n_paths[:j] @ a[:j, j]
    assert 1 <= v.sum() <= n_paths[-1]
    assert set(v.tolist()) <= {0.0, 1.0}
    key = space.canonical_key(c)
    assert np.array_equal(by_key.setdefault(key, v), v)


def test_unknown_encoding_is_rejected():
  with pytest.raises(ValueError, match="allowed"):
    E.encode("paths", NB201_SPACE.sample(jax.random.PRNGKey(0), 1))
  with pytest.raises(ValueError, match="not defined for kind='nb201'"):
    E.encode("adj_code", NB201_SPACE.sample(jax.random.PRNGKey(0), 1))


@pytest.fixture(scope="module")
def all_nb201():
  if not os.path.exists(NB201_CSV):
    pytest.skip(f"NAS-Bench-201 table not found at {NB201_CSV}")
  with gzip.open(NB201_CSV, "rt") as f:
    rows = list(csv.DictReader(f))
  cells = E.stack_cells([nb201(r["arch_str"]) for r in rows])
  return rows, cells


def test_nb201_distinct_counts_and_iso_invariance(all_nb201):
  rows, cells = all_nb201
  distinct = lambda name: len(np.unique(np.asarray(E.encode(name, cells)), axis=0))
  assert distinct("adj_onehot") == 15625
  assert distinct("path") == 15625
  assert distinct("trunc_path") == 1625
  assert distinct("path_iso") == 3100
  iso = np.asarray(E.encode("path_iso", cells))
  first = {}
  for r, v in zip(rows, iso):
    assert np.array_equal(first.setdefault(r["iso_class"], v), v)
  counts = np.asarray(E.encode("path", cells)).sum(1)
  assert set(counts.tolist()) == {3.0, 4.0} and (counts == 3).sum() == 625
