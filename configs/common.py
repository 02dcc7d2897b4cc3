"""What configs share: the `:smoke` argument, and the fields every search config ends with (where
evaluations run, the costs to minimise or to bound, the multi-fidelity scheduler, the seed and the
workdir)."""

import ml_collections
from ml_collections import config_dict


def is_smoke(arg: str) -> bool:
  """Whether a config's arg, '' or 'smoke', asks for the tiny run that tests use."""
  if arg not in ("", "smoke"):
    raise ValueError(f"get_config: arg must be '' or 'smoke', got {arg!r}")
  return arg == "smoke"


def add_run_fields(
  c: ml_collections.ConfigDict, *, executor: str, eval_timeout_s: float, scheduler: bool = True
) -> ml_collections.ConfigDict:
  """Adds those fields to `c` (after its strategy, space, task, budget and workers) and returns it;
  `scheduler=False` leaves out the scheduler's fields, for a task without fidelities."""
  # "inline" | "local" (process pool) | "ray" | "population" (num_workers proposals trained together)
  # | "simulated" (num_workers simulated workers, each evaluation occupying one for the cost its
  # task reports: NAS-Bench-201's training seconds; docs/simulated.md)
  c.executor = executor
  # simulated: False for asynchronous workers (a freed worker gets the next proposal at once),
  # True for synchronous batches of num_workers, each started together, all handed back when the
  # slowest ends.
  c.sim_sync = False
  # simulated: charge the wall time of each proposal (strategy.propose) to the simulated clock,
  # delaying the evaluation it chose, as NASBOT's Fig. 2 counts "the time taken to determine the
  # next point".
  c.sim_charge_model = False
  c.ray_address = ""  # ray: "" starts a local Ray, "auto" or "ray://host:10001" joins a cluster
  c.ray_connect_timeout_s = 30.0  # ray: a host:port address where nothing answers fails after this
  # local, ray: reruns of an evaluation whose worker was lost (a dead node, raylet or worker
  # process); never counted as failed. Once spent, the search stops and a rerun resumes it.
  c.worker_retries = 3
  c.eval_timeout_s = eval_timeout_s  # 0: no limit (the inline executor cannot stop an evaluation)
  # Multi-objective and constrained search (README): cost metrics to minimise besides the value,
  # e.g. "params" or "params,flops" (params | flops | memory_mb | latency_ms), and limits that no
  # proposed or evaluated network exceeds (0: no limit).
  c.objectives = ""
  c.constraints = ml_collections.ConfigDict(
    {"max_params": 0.0, "max_flops": 0.0, "max_memory_mb": 0.0, "max_latency_ms": 0.0}
  )
  if scheduler:
    # Multi-fidelity search (README): a scheduler ("sh" | "hyperband" | "asha"; "" for none) runs
    # networks at task.fidelities and promotes the best 1/eta; the strategy samples its new networks
    # (model "fidelity": its model sees the highest fidelity with min_points successes; "joint": it
    # models every observation at its fidelity, e.g. multifidelity_nb201.py's asha_bananas+joint);
    # promote "value" ranks a rung by its values there, "model" (with "joint") by the model's
    # predictions at the full fidelity (multifidelity_nb201.py's asha_bananas+model).
    c.scheduler = ""
    c.scheduler_config = ml_collections.ConfigDict(
      {"eta": 3, "min_points": 10, "model": "fidelity", "promote": "value"}
    )
  c.seed = 0
  c.workdir = config_dict.placeholder(str)  # required: check_search_config says so when unset
  return c


# Config tokens of the zero-cost proxy's parts (docs/proxies_search.md): the warm-up, the
# prescreened moves, the proxy as the ensemble's feature, and as the GP's prior mean.
ZC_TOKENS = ("zc_warmup", "zc_prescreen", "zc_feature", "zc_prior")


def split_arg(arg: str, allowed: tuple) -> list:
  """A config's arg as its '+'-joined tokens, each one of `allowed`."""
  tokens = [t for t in arg.split("+") if t]
  if any(t not in allowed for t in tokens):
    raise ValueError(f"get_config: arg must be '+'-joined tokens of {', '.join(allowed)}; got {arg!r}")
  return tokens


def add_proxy(c: ml_collections.ConfigDict, tokens) -> ml_collections.ConfigDict:
  """Adds `c.proxy`, the zero-cost proxy's source and the parts that `tokens` (ZC_TOKENS) turn on,
  and returns `c`; a config without those tokens has no proxy section. The warm-up's k = 10 is the
  random start of every NB201 method here, so a warmed-up search spends the same queries on it."""
  if not set(tokens) & set(ZC_TOKENS):
    return c
  c.proxy = ml_collections.ConfigDict(
    {
      # A CSV of arch_str and one column per proxy (launch/proxies.py --dataset=D --out=...);
      # {dataset} stands for config.task.dataset.
      "path": "runs/proxies/nb201_{dataset}.csv",
      "column": "synflow_signed",  # launch/proxies.py --proxies=synflow_signed --width=4
      "seconds_per_score": 0.0,  # what one score costs: 1 / the scorer's cells per second
      "warmup_n": 1000 if "zc_warmup" in tokens else 0,  # (a) the best warmup_k of warmup_n random cells
      "warmup_k": 10 if "zc_warmup" in tokens else 0,
      "prescreen": 4 if "zc_prescreen" in tokens else 0,  # (c) one move in 4 goes on, the proxy's best
      "feature": "zc_feature" in tokens,  # (b) the ensemble's extra input
      "prior_mean": "zc_prior" in tokens,  # (b) the GP's prior mean
    }
  )
  return c
