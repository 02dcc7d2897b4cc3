"""The results table that `launch/train.py` prints: one row per trained network."""

from __future__ import annotations

from nas_jax.training.train_loop import EvalResult

__all__ = ["format_header", "format_row"]

_COLUMNS = ("net", "val {m}", "test {m}", "best ep", "s/epoch", "compile s", "peak RSS MiB")


def format_header(task: str) -> str:
  """Header of the table (accuracy or MSE by task)."""
  metric = "acc" if task == "classification" else "MSE"
  return "  ".join(f"{c.format(m=metric):>12}" for c in _COLUMNS)


def format_row(name: str, result: EvalResult, peak_rss_mib: float) -> str:
  """One table row: accuracies (classification) or MSEs (regression), timings and memory."""
  flip = (lambda e: 1.0 - e) if result.task == "classification" else (lambda e: e)
  cells = (
    name,
    f"{flip(result.val_error):.4f}",
    f"{flip(result.test_error):.4f}",
    str(result.best_epoch),
    f"{result.seconds_per_epoch:.2f}",
    f"{result.compile_seconds:.2f}",
    f"{peak_rss_mib:.0f}",
  )
  return "  ".join(f"{c:>12}" for c in cells)
