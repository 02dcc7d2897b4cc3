"""NASBOT's nine network modifiers (NASBOT App. B.2, Table 6) and the compound mutation.

A modifier is `(arch, key) -> (arch, reason)`: reason is "" on success, otherwise why it declined
(the input comes back unchanged). Every result has passed `from_json`'s validation.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Callable, Mapping, Sequence

import numpy as np

from nas_jax.arch import host_graph
from nas_jax.arch.architecture import Architecture
from nas_jax.arch.graph import host_topological_order
from nas_jax.arch.host_graph import HostGraph
from nas_jax.arch.json_io import Limits
from nas_jax.spaces import graph_edit
from nas_jax.spaces.graph_edit import Edit
from nas_jax.spaces.structure_modifiers import STRUCTURE_EDITS

__all__ = [
  "Modifier",
  "dec_single",
  "dec_en_masse",
  "inc_single",
  "inc_en_masse",
  "dup_path",
  "remove_layer",
  "skip",
  "swap_label",
  "wedge_layer",
  "MODIFIERS",
  "UNIT_MODIFIERS",
  "STRUCTURE_MODIFIERS",
  "MODIFIER_WEIGHTS",
  "STEP_PROBS",
  "UNIT_CHANGE",
  "scaled_units",
  "en_masse_blocks",
  "type_probs",
  "check_step_probs",
  "compound_mutation",
  "single_changes",
]

Modifier = Callable[..., "tuple[Architecture, str]"]
UNIT_CHANGE = 1 / 8  # Table 6: units change by a factor 1 +- 1/8
STEP_PROBS = (0.5, 0.25, 0.125, 0.075, 0.05)  # P(k = 1..5) of the compound operator (App. B.2)
# Modifier-type weights: the paper draws types uniformly (natural reading of App. B.2); the
# authors' code uses these (github.com/kirthevasank/nasbot, nn/nn_modifiers.py). Both are
# normalised over the modifiers in use.
MODIFIER_WEIGHTS = MappingProxyType(
  {
    "nasbot_code": {
      "inc_single": 0.1,
      "dec_single": 0.1,
      "inc_en_masse": 0.1,
      "dec_en_masse": 0.1,
      "swap_label": 0.2,
      "wedge_layer": 0.1,
      "remove_layer": 0.1,
      "dup_path": 0.2,
      "skip": 0.2,
    },
  }
)


def scaled_units(units: np.ndarray, up: bool, limits: Limits) -> np.ndarray:
  """`round(u * (1 +- 1/8))` clipped to [min_units, max_units]; round is half-to-even
  (Python's `round`, numpy's `rint`), the paper does not say which.

  Args:
    units: [n] int unit counts.
    up: increase (x 9/8) or decrease (x 7/8).
    limits: the unit range.

  Returns:
    [n] int32.
  """
  factor = 1 + UNIT_CHANGE if up else 1 - UNIT_CHANGE
  return np.clip(np.rint(units * factor), limits.min_units, limits.max_units).astype(np.int32)


def _en_masse_blocks(g: HostGraph) -> list[list[int]]:
  """Unit layers in topological order cut into 2 (<= 4 of them), 4 (<= 8) or 8 contiguous
  blocks (Table 6; the count is of eligible layers, as in the authors' code); empty blocks dropped."""
  elig = [u for u in host_topological_order(g.adj) if g.has_units[u]]
  n_blocks = 2 if len(elig) <= 4 else 4 if len(elig) <= 8 else 8
  return [b.tolist() for b in np.array_split(np.asarray(elig, int), n_blocks) if len(b)]


def en_masse_blocks(arch: Architecture) -> list[list[int]]:
  """The layer blocks (slot indices, in topological order) an en-masse modifier chooses from."""
  return _en_masse_blocks(host_graph.from_arch(arch))


def _unit_edit(up: bool, en_masse: bool) -> Edit:
  def sites(g: HostGraph, limits: Limits) -> list[tuple]:
    changes = g.has_units & (scaled_units(g.units, up, limits) != g.units)
    if en_masse:
      return [(tuple(b),) for b in _en_masse_blocks(g) if changes[b].any()]
    return [(int(i),) for i in np.flatnonzero(changes)]

  def apply(g: HostGraph, site: tuple, rng: np.random.Generator, limits: Limits) -> HostGraph:
    del rng  # the site fixes everything
    layers = list(site[0]) if en_masse else [site[0]]
    units = g.units.copy()
    units[layers] = scaled_units(units[layers], up, limits)
    return g._replace(units=units)

  way = "grow" if up else "shrink"
  return Edit(sites, apply, f"no layer whose units can {way} within [{{min_units}}, {{max_units}}]")


_EDITS: MappingProxyType[str, Edit] = MappingProxyType(
  {
    "dec_single": _unit_edit(up=False, en_masse=False),
    "dec_en_masse": _unit_edit(up=False, en_masse=True),
    "inc_single": _unit_edit(up=True, en_masse=False),
    "inc_en_masse": _unit_edit(up=True, en_masse=True),
    **STRUCTURE_EDITS,
  }
)


def _draw(sites: list[tuple], rng: np.random.Generator) -> tuple:
  """A site: first entry uniform among the distinct ones (e.g. a layer), then uniform within."""
  firsts = list(dict.fromkeys(s[0] for s in sites))
  first = firsts[rng.integers(len(firsts))]
  group = [s for s in sites if s[0] == first]
  return group[rng.integers(len(group))]


def _apply(
  name: str,
  arch: Architecture,
  rng: np.random.Generator,
  limits: Limits | None,
  pad_to: int | None,
  site: tuple | None = None,
) -> tuple[Architecture, str]:
  limits = Limits() if limits is None else limits
  g = host_graph.from_arch(arch)
  edit = _EDITS[name]
  if site is None:
    sites = edit.sites(g, limits)
    if not sites:
      return arch, f"{name}: {edit.none.format(**limits._asdict())}"
    site = _draw(sites, rng)
  edited = edit.apply(g, site, rng, limits)
  out, reason = graph_edit.finish(edited, arch.num_slots, limits, pad_to)
  return (arch, f"{name}: {reason}") if out is None else (out, "")


_DOCS = MappingProxyType(
  {
    "dec_single": "Decreases one random unit layer's units by 1/8 (Table 6, #1).",
    "dec_en_masse": "Decreases by 1/8 the units of one random block of `en_masse_blocks` (#2).",
    "inc_single": "Increases one random unit layer's units by 1/8 (Table 6, #3).",
    "inc_en_masse": "Increases by 1/8 the units of one random block of `en_masse_blocks` (#4).",
    "dup_path": "Copies the inner layers of a random walk u1..uk as a parallel branch (#5).",
    "remove_layer": "Deletes a random processing layer and reconnects orphans (Table 6, #6).",
    "skip": "Adds an edge u -> v, through avg-pools if u's image is larger (Table 6, #7).",
    "swap_label": "Changes a random processing layer's label to a compatible one (#8).",
    "wedge_layer": "Splits a random edge u -> v with a new layer w (Table 6, #9).",
  }
)


def _modifier(name: str) -> Modifier:
  def modifier(
    arch: Architecture, key, *, limits: Limits | None = None, pad_to: int | None = None
  ) -> tuple[Architecture, str]:
    return _apply(name, arch, graph_edit.host_rng(key), limits, pad_to)

  modifier.__name__ = modifier.__qualname__ = name
  modifier.__doc__ = f"""{_DOCS[name]}

  Args:
    arch: one valid architecture, [N] leaves.
    key: a jax.random key; a numpy Generator is derived from it once.
    limits: search-space limits the result must meet; the paper's `Limits()` by default.
    pad_to: a declared capacity N for the result. Without it the result keeps the input's N
      when it fits, else the next power of two.

  Returns:
    (new architecture, "") or (arch, reason it declined).
  """
  return modifier


dec_single = _modifier("dec_single")
dec_en_masse = _modifier("dec_en_masse")
inc_single = _modifier("inc_single")
inc_en_masse = _modifier("inc_en_masse")
dup_path = _modifier("dup_path")
remove_layer = _modifier("remove_layer")
skip = _modifier("skip")
swap_label = _modifier("swap_label")
wedge_layer = _modifier("wedge_layer")

#: NASBOT's nine modifiers by name, in Table 6 order: 1-4 change units, 5-9 change the structure
#: (the ablation of App. C.4).
MODIFIERS: MappingProxyType[str, Modifier] = MappingProxyType(
  {
    f.__name__: f
    for f in (dec_single, dec_en_masse, inc_single, inc_en_masse, dup_path, remove_layer, skip, swap_label, wedge_layer)
  }
)
#: The four modifiers that change units (`modifiers="unit"`).
UNIT_MODIFIERS = MappingProxyType(
  {k: MODIFIERS[k] for k in ("dec_single", "dec_en_masse", "inc_single", "inc_en_masse")}
)
#: The five modifiers that change the structure (`modifiers="structure"`).
STRUCTURE_MODIFIERS = MappingProxyType({k: v for k, v in MODIFIERS.items() if k not in UNIT_MODIFIERS})


def type_probs(names: Sequence[str], weights=None) -> np.ndarray:
  """[len(names)] probabilities of drawing each modifier type (see `compound_mutation`)."""
  if weights is None or weights == "uniform":
    return np.full(len(names), 1 / len(names))
  if isinstance(weights, str):
    if weights not in MODIFIER_WEIGHTS:
      raise ValueError(
        f"weights: {weights!r} is unknown; choose uniform, {', '.join(MODIFIER_WEIGHTS)} or a mapping name -> weight"
      )
    weights = MODIFIER_WEIGHTS[weights]
  missing = [n for n in names if n not in weights]
  if missing:
    raise ValueError(f"weights: no weight for modifiers {missing}; give one for each of {list(names)}")
  w = np.array([weights[n] for n in names], float)
  if not (np.all(np.isfinite(w)) and np.all(w >= 0) and w.sum() > 0):
    raise ValueError(f"weights: {dict(zip(names, w.tolist()))}; weights must be >= 0, finite, not all 0")
  return w / w.sum()


def check_step_probs(step_probs: Sequence[float]) -> np.ndarray:
  """`step_probs` as a normalised [k_max] array; ValueError unless >= 0 and summing to 1."""
  p = np.asarray(step_probs, float)
  if p.ndim != 1 or len(p) == 0 or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
    raise ValueError(f"step_probs: {step_probs!r}; expected P(k = 1, 2, ...): >= 0, summing to 1")
  return p / p.sum()


def compound_mutation(
  arch: Architecture,
  key,
  *,
  modifiers: Mapping[str, Modifier] = MODIFIERS,
  step_probs: Sequence[float] = STEP_PROBS,
  weights=None,
  max_attempts: int = 20,
) -> tuple[Architecture, list[str]]:
  """NASBOT's compound operator (App. B.2): k ~ step_probs, then k successful modifiers in a row.

  Args:
    arch: one valid architecture.
    key: a jax.random key.
    modifiers: name -> `(arch, key) -> (arch, reason)`; bind limits or a capacity beforehand
      (e.g. `functools.partial(skip, limits=...)`). Default: all nine, paper limits.
    step_probs: P(k = 1, 2, ...).
    weights: modifier-type weights: None or "uniform" (the paper), "nasbot_code" (the authors' code) or
      a mapping name -> weight over `modifiers`.
    max_attempts: weighted draws (type and key) per step; a declined draw is redrawn, so applied
      types follow the weights conditioned on success. After `max_attempts` declines the step
      tries every type of non-zero weight once more, in a weighted random order, because on a
      network where one type of nine applies, 20 draws miss it about one time in ten.

  Returns:
    (architecture, names of the modifiers applied, in order); fewer than k only if at some step
    every type declined its last try.
  """
  if not modifiers:
    raise ValueError("modifiers: empty; pass a mapping name -> modifier, e.g. MODIFIERS")
  if not (isinstance(max_attempts, int) and max_attempts >= 1):
    raise ValueError(f"max_attempts: {max_attempts!r}; expected an integer >= 1")
  names = list(modifiers)
  type_p = type_probs(names, weights)
  step_p = check_step_probs(step_probs)
  rng = graph_edit.host_rng(key)
  live = np.flatnonzero(type_p > 0)

  def draws():
    # Drawn lazily so that a step which succeeds within `max_attempts` uses the stream as before.
    for _ in range(max_attempts):
      yield int(rng.choice(len(names), p=type_p))
    yield from rng.choice(live, size=len(live), replace=False, p=type_p[live] / type_p[live].sum())

  applied = []
  for _ in range(int(rng.choice(len(step_p), p=step_p)) + 1):
    for i in draws():
      out, reason = modifiers[names[i]](arch, graph_edit.child_key(rng))
      if not reason:
        arch = out
        applied.append(names[i])
        break
  return arch, applied


def single_changes(
  arch: Architecture,
  names: Sequence[str] = tuple(MODIFIERS),
  *,
  limits: Limits | None = None,
  pad_to: int | None = None,
  max_changes: int = 256,
  seed: int = 0,
) -> list[tuple[str, Architecture]]:
  """Successful one-modifier changes of `arch`, one per eligible site, in a seeded random order.

  Deterministic given `seed`. Randomness left once a site is fixed (a dup_path walk, the
  remove_layer reconnection, a wedged stride) is drawn from a generator seeded by (seed, site).

  Args:
    arch: one valid architecture.
    names: modifier names from `MODIFIERS`.
    limits, pad_to: as for the modifiers.
    max_changes: stop after this many successes.
    seed: orders the sites, and seeds their leftover randomness.

  Returns:
    [(modifier name, new architecture)], at most `max_changes`, possibly with duplicates.
  """
  unknown = [n for n in names if n not in _EDITS]
  if unknown:
    raise ValueError(f"names: {unknown} unknown; allowed: {', '.join(_EDITS)}")
  lim = Limits() if limits is None else limits
  g = host_graph.from_arch(arch)
  todo = [(n, s) for n in names for s in _EDITS[n].sites(g, lim)]
  out = []
  for i in np.random.default_rng(seed).permutation(len(todo)):
    if len(out) >= max_changes:
      break
    name, site = todo[i]
    new, reason = _apply(name, arch, np.random.default_rng([seed, int(i)]), lim, pad_to, site)
    if not reason:
      out.append((name, new))
  return out
