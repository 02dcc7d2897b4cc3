"""OTMANN costs: label-mismatch, structural and non-assignment costs, and the augmented problem.

`OtmannParams` holds every constant (presets "paper", NASBOT Sec. 3 and App. A, and "nasbot_code", the
authors' code at github.com/kirthevasank/nasbot); the functions below are pure JAX on padded arrays
and jit/vmap friendly.
"""

from __future__ import annotations

import functools
import math
import types
from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from nas_jax.arch import graph
from nas_jax.arch import labels as labels_lib
from nas_jax.arch.architecture import Architecture

__all__ = [
  "LABEL_COST_RULES",
  "STRUCTURAL_FORMS",
  "OtmannParams",
  "OTMANN_PARAMS",
  "otmann_params",
  "label_cost_matrix",
  "OtmannFeatures",
  "otmann_features",
  "cost_matrices",
  "AugmentedProblem",
  "augmented_problem",
]

LABEL_COST_RULES = ("paper", "nasbot_code")
STRUCTURAL_FORMS = ("grouped", "main_text")
LabelCosts = Union[str, tuple[tuple[float, ...], ...]]

Role = labels_lib.Role
_RECTIFIERS = ("relu", "crelu", "leaky-relu", "softplus", "elu")
_SIGMOIDS = ("logistic", "tanh")
_TABLE4_CONV = types.MappingProxyType({(3, 5): 0.2, (5, 7): 0.2, (3, 7): 0.3})  # NASBOT Table 4, by kernel size


class OtmannParams(NamedTuple):
  """Every constant of the OTMANN distance. Hashable, so a static argument under jit.

  Attributes:
    mass: layer-mass rules (NASBOT Sec. 3; App. A.3).
    label_costs: "paper" (Table 4/5 plus the res rule of NASBOT App. A.3), "nasbot_code"
      (the authors' code, nn/nn_comparators.py: (sqrt(2)/10) sqrt|dk| between convs, its conv-res rule, pools 0.5), or
      an explicit [L][L] nested tuple in `labels.vocabulary(kind)` order (math.inf allowed).
      Entries are in units of the non-assignment cost.
    structural: "grouped" (NASBOT App. A.3, the experiments) or "main_text" (Sec. 3, "all" only).
    inf_cost: the finite stand-in for infinite label costs; any value > 2 * nas_cost gives the
      same d (NASBOT App. A.1).
    nas_cost: non-assignment cost per unit mass (NASBOT Sec. 3); label costs are multiplied by it.
  """

  mass: graph.MassParams = graph.MASS_PARAMS["paper"]
  label_costs: LabelCosts = "paper"
  structural: str = "grouped"
  inf_cost: float = 7.65432e5
  nas_cost: float = 1.0


OTMANN_PARAMS = types.MappingProxyType(
  {
    "paper": OtmannParams(),
    "nasbot_code": OtmannParams(mass=graph.MASS_PARAMS["nasbot_code"], label_costs="nasbot_code"),
  }
)


def otmann_params(name_or_params: str | OtmannParams) -> OtmannParams:
  """Resolves a preset name or checks an OtmannParams; ValueError naming the bad field."""
  if isinstance(name_or_params, str):
    if name_or_params not in OTMANN_PARAMS:
      raise ValueError(f"params: {name_or_params!r} is unknown; choose one of: {', '.join(OTMANN_PARAMS)}")
    return OTMANN_PARAMS[name_or_params]
  if not isinstance(name_or_params, OtmannParams):
    raise TypeError(f"params: {type(name_or_params).__name__} given; expected a preset name or OtmannParams")
  p = name_or_params
  if not isinstance(p.mass, graph.MassParams):
    raise TypeError(f"params.mass: {type(p.mass).__name__} given; expected a MassParams")
  if isinstance(p.label_costs, str) and p.label_costs not in LABEL_COST_RULES:
    raise ValueError(
      f"params.label_costs: {p.label_costs!r} is unknown; choose one of:"
      f" {', '.join(LABEL_COST_RULES)} or an [L][L] tuple"
    )
  if p.structural not in STRUCTURAL_FORMS:
    raise ValueError(f"params.structural: {p.structural!r} is unknown; choose one of: {', '.join(STRUCTURAL_FORMS)}")
  if not p.nas_cost > 0:
    raise ValueError(f"params.nas_cost: {p.nas_cost!r}; must be > 0")
  if not (math.isfinite(p.inf_cost) and p.inf_cost > 2 * p.nas_cost):
    raise ValueError(f"params.inf_cost: {p.inf_cost!r}; must be finite and > 2 * nas_cost = {2 * p.nas_cost}")
  return p


def _conv_cost(rule: str, ki: int, kj: int) -> float:
  if rule == "paper":
    return _TABLE4_CONV.get(tuple(sorted((ki, kj))), 0.0)
  return math.sqrt(2.0) / 10.0 * math.sqrt(abs(ki - kj))


def _cnn_cost(rule: str, table: labels_lib.LabelTable, i: int, j: int) -> float:
  ri, rj = Role(int(table.role[i])), Role(int(table.role[j]))
  ki, kj = int(table.kernel[i]), int(table.kernel[j])
  if {ri, rj} <= {Role.CONV, Role.RES}:
    raw = _conv_cost(rule, ki, kj)
    if ri == rj:
      return raw
    if rule == "nasbot_code" and raw > 1.0:
      return raw
    return 0.9 * raw + 0.1  # conv-res: convex combination with the unit non-assignment cost
  if ri == rj == Role.POOL:
    return 0.25 if rule == "paper" else 0.5
  return math.inf


_AK_CONVS = (Role.CONV, Role.SKIP, Role.CONCAT)


def _autokeras_cost(rule: str, table: labels_lib.LabelTable, i: int, j: int) -> float:
  """Ours (no paper defines it): convs of every kernel size by the cnn rule, with 1x1 next to 3x3
  as 3x3 is to 5x5; the add and concat 1x1 helpers 0.1 apart; max-pool and gap as two pools."""
  ri, rj = Role(int(table.role[i])), Role(int(table.role[j]))
  if ri in _AK_CONVS and rj in _AK_CONVS:
    ki, kj = sorted((int(table.kernel[i]), int(table.kernel[j])))
    if ki == kj:
      return 0.1
    shift = 2 if ki == 1 else 0  # the cnn table has kernels 3, 5, 7: shift 1, 3, 5 onto it
    return _conv_cost(rule, ki + shift, kj + shift)
  if {ri, rj} <= {Role.POOL, Role.GAP}:
    return 0.25 if rule == "paper" else 0.5
  return math.inf


def _cell_cost(rule: str, table: labels_lib.LabelTable, i: int, j: int) -> float:
  """Ours, for `labels.CELL_LAYER_KINDS`: 1x1 next to 3x3 as 3x3 is to 5x5 in Table 4 (0.2 by
  both rules, as for the autokeras kind), avg and max pools as in Table 4, conv vs pool never."""
  ri, rj = Role(int(table.role[i])), Role(int(table.role[j]))
  if ri == rj == Role.CONV:
    return _conv_cost(rule, int(table.kernel[i]) + 2, int(table.kernel[j]) + 2)
  if ri == rj == Role.POOL:
    return 0.25 if rule == "paper" else 0.5
  return math.inf


def _mlp_cost(names: tuple[str, ...], i: int, j: int) -> float:
  a, b = names[i], names[j]
  if (a in _RECTIFIERS and b in _RECTIFIERS) or (a in _SIGMOIDS and b in _SIGMOIDS):
    return 0.1
  if a in _RECTIFIERS + _SIGMOIDS and b in _RECTIFIERS + _SIGMOIDS:
    return 0.25
  return math.inf


def _rule_matrix(kind: str, rule: str) -> np.ndarray:
  table = labels_lib.label_table(kind)
  n = len(table.names)
  m = np.zeros((n, n))
  for i in range(n):
    for j in range(n):
      if i != j:
        if kind == "mlp":
          m[i, j] = _mlp_cost(table.names, i, j)
        elif kind in labels_lib.CELL_LAYER_KINDS:
          m[i, j] = _cell_cost(rule, table, i, j)
        else:
          m[i, j] = (_autokeras_cost if kind == "autokeras" else _cnn_cost)(rule, table, i, j)
  m.setflags(write=False)
  return m


# Every kind's matrix by every rule, built at import from the tables above: a constant.
_RULE_MATRICES = types.MappingProxyType(
  {(kind, rule): _rule_matrix(kind, rule) for kind in labels_lib.KINDS for rule in LABEL_COST_RULES}
)


def label_cost_matrix(kind: str, label_costs: LabelCosts = "paper") -> np.ndarray:
  """The label-mismatch matrix M of NASBOT Table 4 (cnn) or Table 5 (mlp), in units of the non-assignment
  cost, with np.inf where labels may never be matched.

  Args:
    kind: "cnn" or "mlp".
    label_costs: a rule name in `LABEL_COST_RULES`, or an explicit [L][L] nested tuple.

  Returns:
    [L, L] float64, rows and columns in `labels.vocabulary(kind)` order.
  """
  n = len(labels_lib.vocabulary(kind))
  if isinstance(label_costs, str):
    if label_costs not in LABEL_COST_RULES:
      raise ValueError(f"label_costs: {label_costs!r} is unknown; choose one of: {', '.join(LABEL_COST_RULES)}")
    return _RULE_MATRICES[kind, label_costs]
  m = np.asarray(label_costs, np.float64)
  if m.shape != (n, n) or np.any(m < 0) or np.any(np.isnan(m)):
    raise ValueError(
      f"label_costs: an explicit matrix must be [{n}][{n}] of non-negative numbers for {kind}; got shape {m.shape}"
    )
  return m


class OtmannFeatures(NamedTuple):
  """What the OTMANN costs need from one architecture, computed once per architecture.

  Attributes:
    labels: [N] int32 label ids.
    masses: [N] float layer masses, 0 on padded slots.
    paths: [K, N] float path-length features: K = 6 * n_groups (grouped) or 6 (main text).
    n: [] int32 number of real layers (they occupy slots 0..n-1).
  """

  labels: jax.Array
  masses: jax.Array
  paths: jax.Array
  n: jax.Array


@functools.partial(jax.jit, static_argnames=("params",))
def otmann_features(arch: Architecture, params: OtmannParams = OtmannParams()) -> OtmannFeatures:
  """Masses and path-length features (NASBOT Sec. 3; App. A.3) of one architecture; vmap for a batch."""
  paths = graph.path_lengths(arch)  # [G, 6, N]
  if params.structural == "main_text":
    paths = paths[:1]
  return OtmannFeatures(
    labels=arch.labels,
    masses=graph.layer_masses(arch, params.mass),
    paths=paths.reshape(-1, arch.num_slots),
    n=arch.mask.sum().astype(jnp.int32),
  )


def cost_matrices(
  fa: OtmannFeatures, fb: OtmannFeatures, kind: str, params: OtmannParams = OtmannParams()
) -> tuple[jax.Array, jax.Array]:
  """Label-mismatch and structural cost matrices between the layers of two architectures.

  C_lmm(i, j) = nas_cost * M(label_i, label_j), with infinite entries replaced by
  `params.inf_cost` (NASBOT Sec. 3); C_str(i, j) = mean over groups and the 6 path features of
  |delta_a(i) - delta_b(j)| (NASBOT App. A.3, or Sec. 3 for `structural="main_text"`).

  Args:
    fa, fb: features of one architecture each (N_a and N_b slots).
    kind: "cnn" or "mlp", the label vocabulary of both.
    params: the OTMANN constants.

  Returns:
    c_lmm, c_str: [N_a, N_b] float each; entries involving padded slots carry no mass.
  """
  m = params.nas_cost * label_cost_matrix(kind, params.label_costs)
  m = jnp.asarray(np.where(np.isinf(m), params.inf_cost, m), fa.masses.dtype)
  c_lmm = m[fa.labels[:, None], fb.labels[None, :]]
  k = fa.paths.shape[0]
  # A sum of K [N_a, N_b] terms fuses into one pass; a [K, N_a, N_b] mean would materialise it.
  c_str = sum(jnp.abs(fa.paths[f][:, None] - fb.paths[f][None, :]) for f in range(k)) / k
  return c_lmm, c_str


class AugmentedProblem(NamedTuple):
  """The balanced transport problem of NASBOT eq. (5) (App. A.1) on padded slots.

  The sink row (column) sits right after the real layers, at index n_a (n_b), so
  `cost[:n_a + 1, :n_b + 1]` with the matching supply and demand is eq. (5) exactly; every
  later slot is padding with zero mass.

  Attributes:
    cost: [N_a + 1, N_b + 1] float: C_lmm + nu_str * C_str between real layers, nas_cost
      between a real layer and a sink, 0 sink to sink.
    supply: [N_a + 1] float: the masses of a, then tm(b) at the sink, then zeros.
    demand: [N_b + 1] float: the masses of b, then tm(a) at the sink, then zeros.
  """

  cost: jax.Array
  supply: jax.Array
  demand: jax.Array


def _with_sink(masses: jax.Array, n: jax.Array, sink_mass: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Masses [N] -> ([N + 1] masses with `sink_mass` at slot n, [N + 1] bool is-sink)."""
  is_sink = jnp.arange(masses.shape[0] + 1) == n
  padded = jnp.concatenate([masses, jnp.zeros(1, masses.dtype)])
  return jnp.where(is_sink, sink_mass, padded), is_sink


def augmented_problem(
  fa: OtmannFeatures,
  fb: OtmannFeatures,
  nu_str: jax.Array,
  kind: str,
  params: OtmannParams = OtmannParams(),
  *,
  cap: float | None = None,
) -> AugmentedProblem:
  """Builds NASBOT's eq. (5) (App. A.1) for one pair, at one or several structural weights.

  Args:
    fa, fb: features of one architecture each (see `otmann_features`).
    nu_str: [] or [n_nu] float structural weight(s); may be traced.
    kind: "cnn" or "mlp".
    params: the OTMANN constants.
    cap: if given (it must exceed 2 * nas_cost), real-to-real costs are clipped to it. Any value
      above 2 * nas_cost leaves d unchanged (NASBOT App. A.1); a small one keeps entropic
      solvers away from exp underflow.

  Returns:
    AugmentedProblem with cost [N_a + 1, N_b + 1] (or [n_nu, N_a + 1, N_b + 1]), supply
    [N_a + 1] and demand [N_b + 1].
  """
  c_lmm, c_str = cost_matrices(fa, fb, kind, params)
  nu = jnp.asarray(nu_str, c_str.dtype)[..., None, None]
  real = c_lmm + nu * c_str
  if cap is not None:
    real = jnp.minimum(real, cap)
  supply, sink_a = _with_sink(fa.masses, fa.n, fb.masses.sum())
  demand, sink_b = _with_sink(fb.masses, fb.n, fa.masses.sum())
  real = jnp.pad(real, [(0, 0)] * (real.ndim - 2) + [(0, 1), (0, 1)])
  sink_a, sink_b = sink_a[:, None], sink_b[None, :]
  cost = jnp.where(sink_a & sink_b, 0.0, jnp.where(sink_a | sink_b, params.nas_cost, real))
  return AugmentedProblem(cost=cost, supply=supply, demand=demand)
