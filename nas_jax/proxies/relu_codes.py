"""The binary codes of a network's ReLUs, read from its traced program (what NASWOT scores).

Mellor et al. (NASWOT) hook every ReLU module and record which of its inputs are positive. A
`ProxyNet` exposes only functions, so the ReLUs are found in the program `apply` traces to: each
call of `jax.nn.relu` (flax's `nn.relu`) is a `jit` equation named `relu`, and its input's sign
pattern is the code. The program is evaluated equation by equation on the caller's values, so
`relu_codes` works under `jit` and `vmap` like any traced function.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
from jax.extend import core

__all__ = ["relu_codes"]

# Call-like primitives whose body is evaluated inline, so ReLUs nested in them are seen; every other
# primitive (loops and conditionals included) is bound as it is, and ReLUs inside its body are not.
_INLINE = frozenset(
  {"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "remat2", "checkpoint"}
)
_BODY = ("jaxpr", "call_jaxpr")


def _body(eqn: Any) -> tuple[Any, list[Any]] | None:
  """(open jaxpr, consts) of a call-like equation's body, or None for any other equation."""
  if eqn.primitive.name not in _INLINE:
    return None
  for name in _BODY:
    body = eqn.params.get(name)
    if isinstance(body, core.ClosedJaxpr):
      return body.jaxpr, list(body.consts)
    if isinstance(body, core.Jaxpr):
      return body, []
  return None


def _is_relu(eqn: Any) -> bool:
  return eqn.primitive.name in ("jit", "pjit") and eqn.params.get("name") == "relu" and len(eqn.invars) == 1


def _evaluate(jaxpr: Any, consts: list[Any], args: list[Any], codes: list[jax.Array]) -> list[Any]:
  """Runs `jaxpr` on `args`, appending the sign pattern of every ReLU input to `codes` in program order."""
  env: dict[Any, Any] = {}

  def read(v: Any) -> Any:
    return v.val if isinstance(v, core.Literal) else env[v]

  env.update(zip(jaxpr.constvars, consts))
  env.update(zip(jaxpr.invars, args))
  for eqn in jaxpr.eqns:
    ins = [read(v) for v in eqn.invars]
    if _is_relu(eqn):
      codes.append(ins[0] > 0)
      outs = [jax.nn.relu(ins[0])]
    elif (body := _body(eqn)) is not None:
      outs = _evaluate(*body, ins, codes)
    else:
      outs = eqn.primitive.bind(*ins, **eqn.primitive.get_bind_params(eqn.params))
      outs = outs if eqn.primitive.multiple_results else [outs]
    env.update(zip(eqn.outvars, outs))
  return [read(v) for v in jaxpr.outvars]


def relu_codes(apply: Callable[[Any, jax.Array], jax.Array], params: Any, x: jax.Array) -> list[jax.Array]:
  """The ReLU codes of one forward pass.

  Args:
    apply: `(params, x [B, ...]) -> outputs`, a pure traceable function.
    params: its parameters.
    x: [B, ...] the input batch.

  Returns:
    One [B, n_r] bool array per call of `jax.nn.relu` in the traced program, in program order:
    row b is the flattened `input > 0` of that ReLU for example b. A ReLU applied to an array whose
    leading axis is not the batch (none in the layer-graph or NAS-Bench-201 networks) is skipped.
  """
  closed = jax.make_jaxpr(apply)(params, x)
  codes: list[jax.Array] = []
  _evaluate(closed.jaxpr, list(closed.consts), jax.tree.leaves((params, x)), codes)
  batch = x.shape[0]
  return [c.reshape(batch, -1) for c in codes if c.ndim >= 1 and c.shape[0] == batch]
