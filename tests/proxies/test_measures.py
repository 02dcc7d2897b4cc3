"""The data-dependent proxies on hand-built linear networks, where each has a closed form derived
here with numpy (softmax regression: z = x W, L = mean cross-entropy), and their invariances:
batch permutation, the rescaling and sign symmetries of weights, jit and vmap equal to the plain
call. Batches are seeded synthetic Gaussians (no dataset is read)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas_jax.proxies import measures
from nas_jax.proxies.net import ProxyNet

B, D, H, K = 6, 4, 5, 3
ALL = [measures.grad_norm, measures.snip, measures.grasp, measures.fisher, measures.jacob_cov, measures.naswot]
PER_WEIGHT = [measures.grad_norm, measures.snip, measures.grasp, measures.fisher]


def _softmax_regression(w: np.ndarray) -> ProxyNet:
  """logits = x W: one dense layer without bias; its output is the one tapped activation."""

  def tapped(params, x, taps):
    z = x @ params["w"]
    return (z if taps is None else z + taps["w"]), {"w": z}

  apply = lambda params, x: tapped(params, x, None)[0]
  return ProxyNet(apply=apply, params={"w": jnp.asarray(w)}, plain=apply, tapped=tapped, input_shape=(w.shape[0],))


def _two_layer(w1: np.ndarray, w2: np.ndarray, act=jax.nn.relu) -> ProxyNet:
  """logits = act(x W1) W2, both layers tapped before the activation."""

  def tapped(params, x, taps):
    taps = taps or {"w1": 0.0, "w2": 0.0}
    a1 = x @ params["w1"]
    a2 = act(a1 + taps["w1"]) @ params["w2"]
    return a2 + taps["w2"], {"w1": a1, "w2": a2}

  apply = lambda params, x: tapped(params, x, None)[0]
  params = {"w1": jnp.asarray(w1), "w2": jnp.asarray(w2)}
  return ProxyNet(apply=apply, params=params, plain=apply, tapped=tapped, input_shape=(w1.shape[0],))


def _data(seed=0):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal((B, D))
  y = rng.integers(0, K, B)
  return x, y


def _softmax(z):
  e = np.exp(z - z.max(1, keepdims=True))
  return e / e.sum(1, keepdims=True)


def _closed_forms(w, x, y):
  """grad_norm, snip, grasp, fisher of softmax regression, derived by hand.

  dL/dW = X^T (P - Y) / B. The Hessian of example b's loss is (x_b x_b^T) kron (diag p_b - p_b p_b^T),
  so H g = (1/B) sum_b x_b u_b^T with u_b = (diag p_b - p_b p_b^T) (G^T x_b). Fisher: the layer's
  output z has dL/dz_b = (p_b - y_b) / B, so g_bk = z_bk (p_bk - y_bk) / B, weighted by fan-in D.
  """
  p, onehot = _softmax(x @ w), np.eye(K)[y]
  g = x.T @ (p - onehot) / B
  hg = np.zeros_like(w)
  for b in range(B):
    v = g.T @ x[b]
    u = p[b] * v - p[b] * (p[b] @ v)
    hg += np.outer(x[b], u) / B
  g_bk = (x @ w) * (p - onehot) / B
  return {
    "grad_norm": np.linalg.norm(g),
    "snip": np.abs(g * w).sum(),
    "grasp": -(w * hg).sum(),
    "fisher": D * 0.5 * (g_bk**2).mean(0).sum(),
  }


@pytest.mark.parametrize("measure", PER_WEIGHT, ids=lambda f: f.__name__)
def test_per_weight_measures_match_softmax_regression_closed_forms(measure):
  w = np.random.default_rng(1).standard_normal((D, K))
  x, y = _data()
  want = _closed_forms(w, x, y)[measure.__name__]
  np.testing.assert_allclose(measure(_softmax_regression(w), (jnp.asarray(x), jnp.asarray(y))), want, rtol=1e-9)


def test_jacob_cov_of_a_linear_network_is_that_of_an_all_ones_correlation():
  # Every example's Jacobian of sum(x W) is W 1: corrcoef is the all-ones matrix, eigenvalues B, 0, ..., 0.
  w = np.random.default_rng(1).standard_normal((D, K))
  x, y = _data()
  k = measures.JACOB_COV_EPS
  want = -(np.log(B + k) + 1 / (B + k) + (B - 1) * (np.log(k) + 1 / k))
  np.testing.assert_allclose(measures.jacob_cov(_softmax_regression(w), (x, y)), want, rtol=1e-6)


def test_jacob_cov_is_the_reference_formula_on_a_relu_network():
  # Per example, d sum(relu(x W1) W2) / dx = W1 diag(x W1 > 0) W2 1: computed by hand, then corrcoef.
  rng = np.random.default_rng(2)
  w1, w2 = rng.standard_normal((D, H)), rng.standard_normal((H, K))
  x, y = _data()
  jac = np.stack([w1 @ ((x[b] @ w1 > 0) * w2.sum(1)) for b in range(B)])
  lam = np.linalg.eigvalsh(np.corrcoef(jac))
  k = measures.JACOB_COV_EPS
  want = -np.sum(np.log(lam + k) + 1 / (lam + k))
  np.testing.assert_allclose(measures.jacob_cov(_two_layer(w1, w2), (x, y)), want, rtol=1e-6)


def test_naswot_is_the_log_determinant_of_hand_counted_agreements():
  # W1 = I: the codes are the signs of x. Rows 111, 101, 000 agree on 3-hamming units:
  # K_H = [[3, 2, 0], [2, 3, 1], [0, 1, 3]], det = 3 * 8 - 2 * 6 = 12.
  net = _two_layer(np.eye(3), np.ones((3, 2)))
  x = np.array([[1.0, 2.0, 0.5], [1.0, -1.0, 3.0], [-1.0, -2.0, -0.1]])
  np.testing.assert_allclose(measures.naswot(net, (x, np.zeros(3, int))), np.log(12.0), rtol=1e-12)


def test_naswot_is_minus_infinity_for_a_duplicated_example():
  w1, w2 = np.random.default_rng(3).standard_normal((D, H)), np.ones((H, K))
  x, y = _data()
  x[1] = x[0]
  assert measures.naswot(_two_layer(w1, w2), (x, y)) == -np.inf


@pytest.mark.parametrize("measure", ALL, ids=lambda f: f.__name__)
def test_every_measure_is_invariant_to_permuting_the_batch(measure):
  rng = np.random.default_rng(4)
  net = _two_layer(rng.standard_normal((D, H)), rng.standard_normal((H, K)))
  x, y = _data()
  perm = rng.permutation(B)
  np.testing.assert_allclose(measure(net, (x[perm], y[perm])), measure(net, (x, y)), rtol=1e-9)


@pytest.mark.parametrize("scale", [0.25, 3.0])
def test_snip_is_invariant_to_rescaling_a_relu_layer_but_grad_norm_and_grasp_are_not(scale):
  # relu(x a W1) W2 / a is the same function: the gradients scale by 1/a and a, so each |g w|
  # keeps its value. grasp's w (H g) becomes w (H S^-2 g) with S the rescaling: it changes.
  rng = np.random.default_rng(5)
  w1, w2 = rng.standard_normal((D, H)), rng.standard_normal((H, K))
  batch = _data()
  net, scaled = _two_layer(w1, w2), _two_layer(scale * w1, w2 / scale)
  np.testing.assert_allclose(measures.snip(scaled, batch), measures.snip(net, batch), rtol=1e-9)
  for measure in (measures.grad_norm, measures.grasp):
    assert not np.isclose(measure(scaled, batch), measure(net, batch))


def test_per_weight_measures_are_invariant_to_flipping_the_sign_of_both_layers_of_a_linear_network():
  # x (-W1) (-W2) is the same function; the flip S has S^2 = I, so grasp's w (H S^-2 g) keeps its value too.
  rng = np.random.default_rng(6)
  w1, w2 = rng.standard_normal((D, H)), rng.standard_normal((H, K))
  batch = _data()
  linear = lambda a, b: _two_layer(a, b, act=lambda z: z)
  for measure in PER_WEIGHT:
    np.testing.assert_allclose(measure(linear(-w1, -w2), batch), measure(linear(w1, w2), batch), rtol=1e-9)


@pytest.mark.parametrize("measure", ALL, ids=lambda f: f.__name__)
def test_jit_and_vmap_over_networks_equal_the_plain_call(measure):
  rng = np.random.default_rng(7)
  nets = [_two_layer(rng.standard_normal((D, H)), rng.standard_normal((H, K))) for _ in range(2)]
  x, y = map(jnp.asarray, _data())
  score = lambda params: measure(nets[0]._replace(params=params), (x, y))
  plain = np.array([measure(n, (x, y)) for n in nets])
  stacked = jax.tree.map(lambda *a: jnp.stack(a), *(n.params for n in nets))
  np.testing.assert_allclose(jax.jit(score)(nets[0].params), plain[0], rtol=1e-9)
  np.testing.assert_allclose(jax.vmap(score)(stacked), plain, rtol=1e-9)


def test_regression_targets_use_the_mean_squared_error():
  # z = x w (one output), L = mean (z - y)^2: dL/dw = 2 X^T (z - y) / B.
  w = np.random.default_rng(8).standard_normal((D, 1))
  x, _ = _data()
  y = np.random.default_rng(9).standard_normal(B)
  g = 2 * x.T @ (x @ w[:, 0] - y)[:, None] / B
  np.testing.assert_allclose(measures.grad_norm(_softmax_regression(w), (x, y)), np.linalg.norm(g), rtol=1e-9)


def test_fisher_names_the_pairing_when_activations_do_not_match_the_weights():
  net = _two_layer(np.ones((D, H)), np.ones((H, K)))
  one_act = net._replace(tapped=lambda p, x, taps: (net.apply(p, x), {"w2": x @ p["w1"] @ p["w2"]}))
  with pytest.raises(ValueError, match="one activation per weight"):
    measures.fisher(one_act, _data())


@pytest.mark.parametrize(
  "batch, match",
  [
    ((np.zeros((B, D + 1)), np.zeros(B, int)), r"x has shape \(6, 5\); expected \[B, 4\]"),
    ((np.zeros((B, D)), np.zeros(B + 1, int)), r"y has shape \(7,\)"),
    ((np.zeros((1, D)), np.zeros(1, int)), "needs at least 2"),
  ],
)
def test_bad_batches_get_one_line_naming_the_argument(batch, match):
  net = _softmax_regression(np.ones((D, K)))
  with pytest.raises(ValueError, match=match):
    measures.jacob_cov(net, batch)


NB201 = dict(channels=2, cells_per_stage=1, num_classes=3, image_size=8)


def _nb201_naswot(cell, *, specialised):
  from nas_jax.models.nb201_net import Nb201Spec
  from nas_jax.proxies.nb201_nets import nb201_proxy_net, nb201_specialised_proxy_net

  spec, key = Nb201Spec(**NB201), jax.random.key(2)
  x = jax.random.normal(jax.random.key(1), (5, 8, 8, 3))
  net = nb201_specialised_proxy_net(cell, key, spec) if specialised else nb201_proxy_net(cell, key, spec)
  units = sum(jnp.sum(w) * c.shape[-1] for c, w in net.codes(net.params, x))
  return measures.naswot(net, (x, jnp.zeros(5, jnp.int32))), units


def test_naswot_of_the_masked_nb201_network_counts_the_relus_of_its_conv_edges():
  masked = jax.jit(lambda ops: _nb201_naswot(ops, specialised=False))
  for cell in [(0, 2, 4, 1, 3, 0), (3, 3, 3, 3, 3, 3), (1, 4, 0, 0, 4, 1)]:
    score, units = masked(jnp.array(cell))
    # the reference's ReLU modules: one per conv edge in each of 3 stages (on C * HW units: 2 * 64,
    # 4 * 16, 8 * 4), two per reduction block (its input's and its first conv's) and the head's
    convs = sum(op in (2, 3) for op in cell)
    assert int(units) == convs * (128 + 64 + 32) + (128 + 4 * 16) + (64 + 8 * 4) + 32
    assert np.isfinite(score)


@pytest.mark.slow  # a compile per cell
def test_naswot_of_the_masked_nb201_network_equals_the_specialised_ones():
  masked = jax.jit(lambda ops: _nb201_naswot(ops, specialised=False))
  for cell in [(0, 2, 4, 1, 3, 0), (3, 3, 3, 3, 3, 3)]:
    special = jax.jit(lambda: _nb201_naswot(cell, specialised=True))()
    np.testing.assert_allclose(masked(jnp.array(cell)), special, rtol=1e-9)
