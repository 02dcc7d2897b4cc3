"""The Auto-Keras space (Auto-Keras Sec. 3.3; Alg. 1 line 6): `mutate` is one morph that changes the descriptor,
or (point, False) when no morph fits the limits."""

import jax
import pytest

from nas_jax.spaces.morph_space import morph_space

SPACE = morph_space(width=8)


def test_mutate_is_one_morph_that_changes_the_descriptor():
  for i, p in enumerate(SPACE.sample(jax.random.key(0), 6) + SPACE.initial()):
    child, ok = SPACE.mutate(p, jax.random.key(i))
    one_morph = {SPACE.canonical_key(q) for q in SPACE.neighbours(p)}
    assert ok and SPACE.canonical_key(child) != SPACE.canonical_key(p)
    assert SPACE.canonical_key(child) in one_morph


def test_mutate_reports_a_network_no_morph_fits():
  # G0 has 10 layers and width 8: a 10-layer limit forbids deep and skips, width 8 forbids wide.
  tight = morph_space(width=8, n_blocks=3, max_width=8, max_layers=10)
  g0 = tight.initial()[0]
  assert tight.neighbours(g0) == []
  for k in range(3):
    child, ok = tight.mutate(g0, jax.random.key(k))
    assert not ok and child is g0
  with pytest.raises(TypeError, match="mutate: point"):
    tight.mutate(g0.arch, jax.random.key(0))
  assert SPACE.mutate(g0, jax.random.key(0))[1]  # the limits, not the network, block every morph
