"""BANANAS benchmarks (issue #8): (a) a 5-member ensemble fit vmapped in one jitted scan vs a
Python loop over members and steps (each step jitted), same data, keys and steps; (b) wall time
of full 150-query BANANAS trials on NAS-Bench-201 CIFAR-10 through the shared loop.

  taskset -c 0,1 python benchmarks/bench_bananas.py --data=../shared/data/nasbench201
"""

import functools
import os
import statistics
import tempfile
import time

from absl import app, flags
import jax
import jax.numpy as jnp
import numpy as np
import optax

import record
from nas_jax.experiments.regret import regret_curve
from nas_jax.features import encodings
from nas_jax.search import executors, loop
from nas_jax.search.strategies import presets
from nas_jax.spaces import cells as cells_lib
from nas_jax.surrogates import ensemble
from nas_jax.tasks import tabular

FLAGS = flags.FLAGS
flags.DEFINE_string("data", "../shared/data/nasbench201", "The NB201 folder (or CSV).")
flags.DEFINE_integer("n_train", 100, "Training rows for (a) (a mid-run BANANAS fit).")
flags.DEFINE_integer("repeats", 5, "Timed repeats for (a).", lower_bound=1)
flags.DEFINE_integer("trials", 3, "Timed BANANAS trials for (b) (after one warm-up trial).", lower_bound=0)
flags.DEFINE_integer("epochs", 150, "Epochs of each ensemble fit in (a).", lower_bound=2)
flags.DEFINE_integer("budget", 150, "Queries of each trial in (b).", lower_bound=1)
flags.DEFINE_bool("smoke", False, "A run of seconds (tests/test_benchmarks.py); its record goes to a temporary folder.")

M, BATCH, LR = 5, 32, 0.01


def _timed(fn):
  t = time.perf_counter()
  out = jax.block_until_ready(fn())
  return time.perf_counter() - t, out


def loop_fit(keys, x, y, mask, model, epochs):
  """The baseline: members one after another, a jitted step per batch, the same orders as
  `ensemble.fit_member` (same keys), driven from Python like a Keras fit."""
  opt = optax.adam(LR, b1=0.9, b2=0.99, eps=1e-7)
  grad_fn = jax.grad(functools.partial(ensemble._loss, model, "mae"))

  @jax.jit
  def step(params, opt_state, idx, w):
    g = grad_fn(params, x[idx], y[idx], w)
    updates, opt_state = opt.update(g, opt_state, params)
    return optax.apply_updates(params, updates), opt_state

  order_fn = jax.jit(ensemble._order)
  n_real = int(mask.sum())
  n_batches = -(-n_real // BATCH)
  out = []
  for key in keys:
    k_init, k_order = jax.random.split(key)
    params = model.init(k_init, x[:1])
    opt_state = opt.init(params)
    for ek in jax.random.split(k_order, epochs):
      order = np.asarray(order_fn(ek, mask))
      for b in range(n_batches):
        idx = order[b * BATCH : (b + 1) * BATCH]
        w = (np.arange(b * BATCH, b * BATCH + len(idx)) < n_real).astype(np.float32)
        idx = np.pad(idx, (0, BATCH - len(idx)))
        w = np.pad(w, (0, BATCH - len(w)))
        params, opt_state = step(params, opt_state, idx, w)
    out.append(params)
  return jax.tree.map(lambda *p: jnp.stack(p), *out)


def bench_ensemble(table):
  space = cells_lib.nb201_space()
  rows = np.random.default_rng(0).choice(len(table.arch_strs), FLAGS.n_train, replace=False)
  cs = [space.from_json({"kind": "nb201", "arch_str": table.arch_strs[r]}) for r in rows]
  x = jnp.asarray(encodings.encode("trunc_path", cs), jnp.float32)
  y = jnp.asarray(100.0 - table.valid[rows], jnp.float32)
  mask = jnp.ones(len(rows), bool)
  model = ensemble.MetaNet()
  keys = jax.random.split(jax.random.PRNGKey(0), M)
  kw = dict(model=model, epochs=FLAGS.epochs, batch_size=BATCH, lr=LR, loss="mae")

  t0 = time.perf_counter()
  compiled = ensemble.fit_members.lower(keys, x, y, mask, **kw).compile()
  compile_s = time.perf_counter() - t0
  vm = [_timed(lambda: compiled(keys, x, y, mask)) for _ in range(FLAGS.repeats)]
  member = jax.jit(functools.partial(ensemble.fit_member, **kw))
  jax.block_until_ready(member(keys[0], x, y, mask))  # compile outside the timing
  per_member = [_timed(lambda: [member(k, x, y, mask) for k in keys]) for _ in range(FLAGS.repeats)]
  loop_fit(keys[:1], x, y, mask, model, FLAGS.epochs)  # compile the step
  lp = [_timed(lambda: loop_fit(keys, x, y, mask, model, FLAGS.epochs)) for _ in range(FLAGS.repeats)]

  # Same steps: after 2 epochs the fits agree to float rounding. Over --epochs=150 of sign-like
  # MAE gradients rounding differences grow, so the full fits are compared by training MAE.
  short = ensemble.fit_members(keys, x, y, mask, **{**kw, "epochs": 2})
  p_vm = ensemble.predict_members(short, x)
  p_lp = ensemble.predict_members(
    ensemble.EnsembleState(loop_fit(keys, x, y, mask, model, epochs=2), jnp.zeros(M), model), x
  )
  err = float(jnp.abs(p_vm - p_lp).max())
  assert err < 1e-3, f"vmapped and looped fits disagree by {err} after 2 epochs"
  mae = lambda params: float(
    jnp.abs(ensemble.predict_members(ensemble.EnsembleState(params, jnp.zeros(M), model), x) - y).mean()
  )
  mae_vm, mae_lp = mae(vm[0][1].params), mae(lp[0][1])
  assert abs(mae_vm - mae_lp) < 0.5, f"training MAE {mae_vm:.3f} (vmapped) vs {mae_lp:.3f} (loop)"
  t_vm = statistics.median(t for t, _ in vm)
  t_pm = statistics.median(t for t, _ in per_member)
  t_lp = statistics.median(t for t, _ in lp)
  steps = M * FLAGS.epochs * -(-FLAGS.n_train // BATCH)
  print(f"(a) {M}-member ensemble, {FLAGS.n_train} rows, {FLAGS.epochs} epochs, batch {BATCH}: {steps} member-steps")
  print(
    f"    vmapped one scan  : {t_vm * 1e3:8.1f} ms  (compile {compile_s:.1f} s), {steps / t_vm:,.0f} member-steps/s"
  )
  print(f"    loop of jit scans : {t_pm * 1e3:8.1f} ms  ratio {t_pm / t_vm:.2f}x")
  print(f"    loop of jit steps : {t_lp * 1e3:8.1f} ms  ratio {t_lp / t_vm:.2f}x")
  print(
    f"    2-epoch max |pred diff| {err:.1e}; {FLAGS.epochs}-epoch training MAE {mae_vm:.3f} (vmapped), {mae_lp:.3f} (loop)"
  )
  return {
    "(a) vmapped ensemble fit (ms)": round(t_vm * 1e3, 1),
    "(a) loop of jitted scans (ms)": round(t_pm * 1e3, 1),
    "(a) loop of jitted steps (ms)": round(t_lp * 1e3, 1),
    "(a) loop of steps / vmapped": f"{t_lp / t_vm:.2f}x",
  }


def bench_trial():
  space = cells_lib.nb201_space()
  task = tabular.nb201_task(FLAGS.data)
  table = tabular.load_nb201(FLAGS.data)
  times, regrets = [], []
  for seed in range(FLAGS.trials + 1):
    with tempfile.TemporaryDirectory() as d:
      t, obs = _timed(
        lambda: loop.run(
          presets.bananas(space, "max"),
          task,
          executors.InlineExecutor(),
          d,
          space=space,
          budget=FLAGS.budget,
          key=jax.random.PRNGKey(seed),
          progress=False,
        )
      )
    regrets.append(regret_curve([o.value for o in obs], [o.test_value for o in obs], table.best_test)[-1])
    times.append(t)
  print(
    f"(b) BANANAS (preset code) {FLAGS.budget} queries on NB201 CIFAR-10: first trial (with compiles)"
    f" {times[0]:.1f} s; then median {statistics.median(times[1:] or times):.1f} s/trial"
    f" -> 20 trials ~ {20 * statistics.median(times[1:] or times) / 60:.1f} min;"
    f" mean final regret {np.mean(regrets):.3f}"
  )
  return {
    f"(b) a {FLAGS.budget}-query BANANAS trial, median (s)": round(statistics.median(times[1:] or times), 1),
    "(b) mean final regret": round(float(np.mean(regrets)), 3),
  }


def main(argv):
  del argv
  if FLAGS.smoke:
    record.require(FLAGS.data, "the NB201 tables")
    record.smoke(FLAGS, n_train=12, repeats=1, epochs=2, trials=1, budget=12)
  print(
    f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()},"
    f" cpus {len(os.sched_getaffinity(0))}"
  )
  table = tabular.load_nb201(FLAGS.data)
  figures = bench_ensemble(table)
  if FLAGS.trials:
    figures.update(bench_trial())
  title = f"BANANAS: a {M}-member ensemble fit ({FLAGS.n_train} rows), whole trials"
  note = "Seconds per fit and per trial; the regret is the CIFAR-10 test regret the trials reached."
  record.write("bench_bananas", title, figures, note=note, direction="lower")


if __name__ == "__main__":
  app.run(main)
