"""Distance plots: the heatmap carries one label per architecture, t-SNE keeps clusters apart."""

import numpy as np
import pytest
from matplotlib import image

from nas_jax.viz import plots


def _two_clusters(n=12, seed=0):
  """Points in two far-apart groups; d is their Euclidean distance matrix."""
  rng = np.random.default_rng(seed)
  x = np.r_[rng.normal(0, 1, (n // 2, 5)), rng.normal(30, 1, (n - n // 2, 5))]
  return np.linalg.norm(x[:, None] - x[None], axis=-1)


def test_heatmap_writes_a_png_with_one_label_per_row_and_column(tmp_path):
  d = _two_clusters(6)[:4]
  path = tmp_path / "h.png"
  fig = plots.distance_heatmap(d, str(path), row_labels=list("abcd"), col_labels=list("uvwxyz"), title="t")
  ax = fig.axes[0]
  assert [t.get_text() for t in ax.get_yticklabels()] == list("abcd")
  assert [t.get_text() for t in ax.get_xticklabels()] == list("uvwxyz")
  np.testing.assert_allclose(ax.images[0].get_array(), d)
  assert len(fig.axes) == 2  # the colour bar
  assert image.imread(str(path)).shape[:2] == (600, 700)


def test_heatmap_thins_labels_of_large_matrices(tmp_path):
  fig = plots.distance_heatmap(np.zeros((130, 130)), str(tmp_path / "h.png"))
  labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
  assert labels[:3] == ["0", "3", "6"] and len(labels) <= 60


def test_embedding_separates_two_clusters(tmp_path):
  d = _two_clusters(12)
  path = tmp_path / "e.png"
  xy = plots.embedding_2d(d, str(path), labels=[f"n{i}" for i in range(12)])
  assert xy.shape == (12, 2) and path.stat().st_size > 0
  e = np.linalg.norm(xy[:, None] - xy[None], axis=-1)
  within = max(e[:6, :6].max(), e[6:, 6:].max())
  assert e[:6, 6:].min() > within


def test_embedding_is_reproducible_by_seed():
  d = _two_clusters(9, seed=1)
  np.testing.assert_array_equal(plots.embedding_2d(d, seed=3), plots.embedding_2d(d, seed=3))


@pytest.mark.parametrize(
  "d, kwargs, match",
  [
    (np.ones((3, 4)), {}, r"d: shape \(3, 4\); expected a non-empty square"),
    (np.ones((2, 2)) - np.eye(2), {}, "d: 2 architectures; a t-SNE embedding needs at least 3"),
    (np.triu(np.ones((4, 4)), 1), {}, "d: not symmetric"),
    (-np.ones((3, 3)), {}, "d: has negative or non-finite entries"),
    (np.ones((4, 4)) - np.eye(4), {"perplexity": 4}, r"perplexity: 4; expected 0 < perplexity < n = 4"),
    (np.ones((4, 4)) - np.eye(4), {"labels": ["a"]}, "labels: 1 labels for 4 rows"),
  ],
)
def test_embedding_rejects_bad_input(d, kwargs, match):
  with pytest.raises(ValueError, match=match):
    plots.embedding_2d(d, **kwargs)
