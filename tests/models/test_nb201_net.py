"""The NAS-Bench-201 network: the masked form equals each cell's specialised network (outputs and
gradients, parameters mapped), and the cost model reproduces the benchmark's params and FLOPs."""

import os

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.arch.cell import parse_arch_str
from nas_jax.models.nb201_net import Nb201Net, Nb201Spec, nb201_flops, nb201_params, specialise_params
from nas_jax.proxies.nb201_nets import init_params
from tests.conftest import SHARED_DATA

TINY = Nb201Spec(channels=2, cells_per_stage=1, num_classes=3, image_size=8)
# every op with `none` edges, and a cell whose node 2 has no input while node 1's conv is dead
CELLS = [(0, 2, 4, 1, 3, 0), (2, 0, 0, 0, 0, 1)]
# all-conv, node 1 unreachable from the output (its ops dead), all-skip, all-none, ...
MORE = [
  (3, 3, 3, 3, 3, 3),
  (4, 1, 2, 3, 0, 0),
  (1, 1, 1, 1, 1, 1),
  (0, 0, 0, 0, 0, 0),
  (4, 4, 0, 2, 0, 3),
  (2, 3, 1, 0, 4, 2),
]


def _check_equal(spec, cells):
  x = jax.random.normal(jax.random.key(1), (3, spec.image_size, spec.image_size, 3))
  masked = Nb201Net(spec)
  # Flax's own init draws every leaf from its own generator, which takes a minute for this scanned
  # network; init_params draws the same distribution at once
  params = init_params(jax.random.key(0), spec)
  loss = lambda out: jnp.sum(jnp.sin(out))  # a loss whose gradient is not uniform
  masked_fn = jax.jit(jax.value_and_grad(lambda p, ops: loss(masked.apply({"params": p}, x, ops))))
  for cell in cells:
    value, grads = masked_fn(params, jnp.array(cell))
    special = Nb201Net(spec, cell)
    sp = specialise_params(params, cell)
    assert jax.tree.structure(sp) == jax.tree.structure(jax.eval_shape(special.init, jax.random.key(0), x)["params"])
    v2, g2 = jax.jit(jax.value_and_grad(lambda p: loss(special.apply({"params": p}, x))))(sp)
    np.testing.assert_allclose(value, v2, rtol=1e-10, atol=1e-12)
    flat, flat2 = flax.traverse_util.flatten_dict(grads), flax.traverse_util.flatten_dict(g2)
    for k, g in flat.items():
      if k in flat2:
        np.testing.assert_allclose(g, flat2[k], rtol=1e-9, atol=1e-12, err_msg=str((cell, k)))
      else:  # an absent op's parameters: no effect on the output
        assert not np.any(g), (cell, k)


def test_masked_equals_specialised_outputs_and_gradients():
  _check_equal(TINY, CELLS)


@pytest.mark.slow
def test_masked_equals_specialised_with_affine_cells_and_more_cells():
  _check_equal(TINY._replace(cells_per_stage=2), MORE)
  _check_equal(TINY._replace(affine=True), CELLS + MORE)
  _check_equal(TINY._replace(bn=False), MORE)


def test_params_count_the_specialised_affine_network_leaves():
  spec = Nb201Spec(channels=4, cells_per_stage=2, num_classes=7, image_size=8, affine=True)
  x = jax.ShapeDtypeStruct((1, 8, 8, 3), jnp.float32)
  for cell in CELLS + MORE:
    shapes = jax.eval_shape(lambda: Nb201Net(spec, cell).init(jax.random.key(0), x))["params"]
    assert int(nb201_params(np.array(cell), spec)) == sum(int(np.prod(s.shape)) for s in jax.tree.leaves(shapes))


def test_flops_span_the_benchmarks_published_range():
  # NAS-Bench-201 (CIFAR-10): 7.78 to 220.11 MFLOPs, the all-none and all-conv3x3 cells
  assert int(nb201_flops(np.zeros(6, int), Nb201Spec())) == 7_783_050
  assert int(nb201_flops(np.full(6, 3), Nb201Spec())) == 220_119_690


def test_params_equal_the_tables_params_column():
  folder = os.path.join(SHARED_DATA, "nasbench201")
  if not os.path.isdir(folder):
    pytest.skip(f"NAS-Bench-201 tables not found at {folder}")
  from nas_jax.tasks import tabular  # the table's loader (tests may import any layer)

  for dataset, classes, size in (("cifar10", 10, 32), ("cifar100", 100, 32), ("imagenet16", 120, 16)):
    table = tabular.load_nb201(folder, dataset)
    spec = Nb201Spec(num_classes=classes, image_size=size)
    for row in range(0, len(table.arch_strs), 1559):
      ops = np.asarray(parse_arch_str(table.arch_strs[row]).ops)
      assert int(nb201_params(ops, spec)) == round(table.params[row]), (dataset, table.arch_strs[row])
