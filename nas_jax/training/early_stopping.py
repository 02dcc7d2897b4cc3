"""Early stopping on the validation loss (Auto-Keras: stop after tau consecutive epochs whose loss
is greater than best - 1e-4)."""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ["should_stop"]


def should_stop(val_losses: Sequence[float], patience: int, min_delta: float) -> bool:
  """Whether training stops after the epochs whose validation losses are `val_losses`.

  An epoch improves when its loss is <= best - min_delta, best being the loss of the last
  improving epoch (inf before the first). As in Auto-Keras and Keras, an epoch that improves by
  less than min_delta leaves best where it is, so a slow descent still counts once it adds up to
  min_delta. A NaN or infinite loss never improves.

  Args:
    val_losses: [epochs so far] the validation loss after each epoch.
    patience: stop after this many consecutive epochs without improvement; 0 never stops.
    min_delta: the smallest decrease of the loss that counts as an improvement (>= 0).

  Returns:
    True when the last `patience` epochs (patience >= 1) all failed to improve.
  """
  best, stale = math.inf, 0
  for loss in val_losses:
    if math.isfinite(loss) and loss <= best - min_delta:
      best, stale = loss, 0
    else:
      stale += 1
  return patience > 0 and stale >= patience
