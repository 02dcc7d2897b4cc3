"""The batched Sinkhorn solver against the exact one: relative error <= 1e-2, an upper bound.

Every test uses the default params and the kernel's four nu_str values, so that they share
compiled shapes (CPU compilation dominates their run time)."""

import os
import sys

import numpy as np
import pytest

import nas_jax
from nas_jax.features import otmann, otmann_solvers
from nas_jax.features.otmann_solver import exact, sinkhorn
from nas_jax.spaces import pools, random_arch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "arch"))
from networks import FIG1A, FIG1B, FIG1C, FIG3_LEFT, FIG3_RIGHT  # noqa: E402

NU = otmann.KERNEL_NU_STR


def _both(archs, b=None, **kwargs):
  return (otmann.otmann_distances(archs, b, solver=s, **kwargs) for s in (exact(), sinkhorn()))


def _check_close(exact, approx, rtol=1e-2):
  """Relative error <= rtol on every pair, and never below the exact value: the rounded plan is
  feasible. Pairs at d = 0 must stay within rtol of the pair's total mass."""
  off = exact.d_bar > 0
  rel = np.abs(approx.d[off] - exact.d[off]) / exact.d[off]
  assert rel.max() <= rtol, f"max relative error {rel.max():.3g}"
  assert np.all(approx.d_bar >= exact.d_bar - 1e-9)
  assert np.all(approx.d_bar[~off] <= rtol)


def test_fig1_networks():
  exact, approx = _both([nas_jax.Architecture.from_json(o) for o in (FIG1A, FIG1B, FIG1C)], nu_str=NU)
  _check_close(exact, approx)
  assert approx.d[2, 0, 1] == pytest.approx(0.4 * 275.32, rel=1e-2)  # NASBOT Fig. 1 pair, experiment masses


def test_fig3_stays_near_zero():
  exact, approx = _both(
    [nas_jax.Architecture.from_json(FIG3_LEFT)], [nas_jax.Architecture.from_json(FIG3_RIGHT)], nu_str=NU
  )
  np.testing.assert_allclose(exact.d, 0.0, atol=1e-9)
  assert np.all(approx.d_bar <= 1e-3)


def test_mlp_pool():
  _check_close(*_both(pools.initial_pool("mlp")[:6], nu_str=NU))


def test_the_last_problems_of_a_size_run_at_the_tail_width(monkeypatch):
  """Rounds narrow from the full chunk (256 pairs x 4 nu) to 64 and then 4 problems as problems
  converge, and the problems carried in those narrow rounds still get their own values."""
  widths = []
  solve = otmann_solvers._sinkhorn_round

  def recorded(pa, *args, **kwargs):
    widths.append(len(pa.n))
    return solve(pa, *args, **kwargs)

  monkeypatch.setattr(otmann_solvers, "_sinkhorn_round", recorded)
  _check_close(*_both(pools.initial_pool("mlp")[:6], nu_str=NU))
  assert set(widths) <= {1024, 64, 4} and 4 in widths, sorted(set(widths))


def test_padding_never_changes_the_result():
  rng = np.random.default_rng(0)
  objs = [random_arch.random_json("mlp", rng, max_layers=8) for _ in range(3)]
  tight = [nas_jax.Architecture.from_json(o) for o in objs]
  loose = [nas_jax.Architecture.from_json(o, pad_to=13) for o in objs]
  tight, loose = (otmann.otmann_distances(a, solver=sinkhorn(), nu_str=NU) for a in (tight, loose))
  np.testing.assert_allclose(loose.d, tight.d, rtol=1e-6)


def test_an_iteration_cap_still_returns_a_feasible_upper_bound():
  archs = pools.initial_pool("mlp")[:4]
  exact = otmann.otmann_distances(archs, nu_str=NU)
  capped = otmann.otmann_distances(archs, solver=sinkhorn(max_iterations=10, epsilon=0.05), nu_str=NU)
  assert np.all(capped.d >= exact.d - 1e-9) and np.all(capped.d_bar <= 1.0)
  assert np.any(capped.d > exact.d * (1 + 1e-3))  # the cap is binding, so the bound is loose


@pytest.mark.slow
def test_cnn_pool():
  _check_close(*_both(pools.initial_pool("cnn"), nu_str=NU))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_random_cnns_and_pools(seed):
  rng = np.random.default_rng(seed)
  archs = pools.initial_pool("cnn") + [random_arch.random_architecture("cnn", rng) for _ in range(14)]
  _check_close(*_both(archs, nu_str=NU))


def test_sinkhorn_settings_are_checked_where_the_value_is_made():
  with pytest.raises(ValueError, match="need epsilon > 0, 0 < momentum < 2"):
    sinkhorn(cap=2.0)
  with pytest.raises(ValueError, match="need epsilon > 0"):
    sinkhorn(epsilon=0.0)
  assert repr(sinkhorn(epsilon=0.05)).startswith("sinkhorn(SinkhornConfig(epsilon=0.05,") and repr(exact()) == "exact()"
