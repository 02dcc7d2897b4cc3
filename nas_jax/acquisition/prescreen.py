"""`prescreen`: an acquisition optimiser that passes the acquisition only the candidates a proxy
ranks best (Abdelfattah et al. 2021, Sec. 5, move proposal), e.g. the best quarter of BANANAS' mutants or of each
batch of NASBOT's EA children."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from nas_jax.acquisition.acq_optimiser import AcqOptimiser, scored
from nas_jax.spaces.proxy_scores import ProxyMeter, proxy_order

__all__ = ["prescreen"]


def prescreen(optimiser: AcqOptimiser, meter: ProxyMeter, *, one_in: int) -> AcqOptimiser:
  """`optimiser` whose every batch of candidates is cut to the best ceil(1/one_in) by the proxy
  before the acquisition scores them; the others score -inf, so none is chosen.

  Args:
    optimiser: any acquisition optimiser (`optimizers.mutation_search()`, `ea()`, ...).
    meter: the search's proxy (`spaces.proxy_scores.ProxyMeter`).
    one_in: of every one_in candidates, one reaches the acquisition (>= 2).
  """
  if isinstance(one_in, bool) or not isinstance(one_in, int) or one_in < 2:
    raise ValueError(f"prescreen: one_in={one_in!r}; expected an integer >= 2 (1 would keep every candidate)")

  def cut(fn: Callable) -> Callable:
    def score(cands: list) -> np.ndarray:
      out = np.full(len(cands), -np.inf)
      if cands:
        keep = np.sort(proxy_order(meter, cands)[: math.ceil(len(cands) / one_in)])
        out[keep] = scored(fn, [cands[i] for i in keep])
      return out

    return score

  def maximize(keys, score_fn, ctx, n):
    # A screening optimiser draws its candidates through the screen and scores only the best of
    # them exactly: the proxy cuts the screen's batches, as it would cut the exact ones without it.
    if ctx.screen_fn is not None:
      return optimiser.maximize(keys, score_fn, ctx._replace(screen_fn=cut(ctx.screen_fn)), n)
    return optimiser.maximize(keys, cut(score_fn), ctx, n)

  return optimiser._replace(name=f"{optimiser.name}+prescreen", maximize=maximize)
