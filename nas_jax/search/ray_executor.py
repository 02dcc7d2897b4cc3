"""Runs calls as Ray tasks: the `Executor` for a Ray cluster (an optional dependency, imported
only when a RayExecutor is made)."""

from __future__ import annotations

import collections
import ipaddress
import itertools
import logging
import os
import re
import socket
import sys
import tempfile
import time
from typing import Any, Callable

from nas_jax.search import ray_probe
from nas_jax.search.executors import (
  RETRIES,
  Outcome,
  WorkersLost,
  call,
  check_workers,
  ended,
  lost_every_time,
  lost_worker,
  rerun,
  seconds_to_block,
  worker_setup,
  x64_enabled,
)

__all__ = ["RayExecutor"]

log = logging.getLogger(__name__)

_HEAD_CHECK_S = 5.0  # how often `wait` checks that the head's GCS answers
# The node address of a Ray this executor starts itself: Ray replaces 127.0.0.1 and "localhost"
# by the machine's outward address (so that other machines could join), and keeps any other
# loopback address; Linux routes all of 127.0.0.0/8 to the loopback device, other systems only
# 127.0.0.1, where Ray keeps 127.0.0.1 anyway.
_LOCAL_NODE_IP = "127.0.0.2" if sys.platform.startswith("linux") else None


def _ray_call(fn: Callable, args: tuple, x64: bool) -> tuple[bool, Any, float, str]:
  """Runs in a Ray worker: (ok, result or traceback text, seconds, worker id)."""
  import ray  # pylint: disable=g-import-not-at-top

  worker_setup(x64)
  node = ray.get_runtime_context().get_node_id()[:8]
  return (*call(fn, args), f"ray:{node}/pid{os.getpid()}")


def _host_port(address: str) -> tuple[str, int, bool] | None:
  """(host, port, whether it is a Ray Client "ray://" address) of a "host:port" or
  "ray://host:port" address; None for the others ("", "auto": Ray's to resolve)."""
  m = re.fullmatch(r"(ray://)?\[?([^\[\]]+?)\]?:(\d+)", address)
  return None if m is None else (m[2], int(m[3]), bool(m[1]))


def _unreachable(address: str, timeout_s: float) -> str:
  """Why nothing accepts a connection at a "host:port" address within `timeout_s`; "" when
  something does, or for other addresses."""
  where = _host_port(address)
  if where is None:
    return ""
  try:
    socket.create_connection(where[:2], timeout=timeout_s).close()
  except OSError as e:
    return f"{e.strerror or str(e) or type(e).__name__}, waited up to {timeout_s:g} s"
  return ""


def _not_a_head(address: str, timeout_s: float) -> str:
  """Why no Ray head answers, in Ray's protocol, at a "host:port" (its GCS) or "ray://host:port"
  (a Ray Client server) address within `timeout_s`; "" when one does, or for other addresses."""
  where = _host_port(address)
  if where is None:
    return ""
  host, port, client = where
  try:  # a head started with token authentication answers only with its token
    from ray._private.authentication.http_token_authentication import (  # pylint: disable=g-import-not-at-top
      get_auth_headers_if_auth_enabled,
    )

    token = tuple(get_auth_headers_if_auth_enabled({}).items())
  except ImportError:  # a Ray without token authentication
    token = ()
  return ray_probe.not_ray(host, port, timeout_s, call=None if client else ray_probe.GCS_CALL, metadata=token)


def _node_ip(address: str) -> str | None:
  """The node address for `ray.init` that keeps a driver on the loopback device: the head's own
  loopback address for a "host:port" one, `_LOCAL_NODE_IP` for a Ray started here (""); None
  (Ray's choice) otherwise."""
  if not address:
    return None if os.environ.get("RAY_ADDRESS") else _LOCAL_NODE_IP  # (RAY_ADDRESS: Ray joins that cluster)
  where = _host_port(address)
  try:
    return where[0] if where and not where[2] and ipaddress.ip_address(where[0]).is_loopback else None
  except ValueError:  # a host name
    return None


def _divert_reports(ray, path: str) -> Callable[[], None]:
  """Sends the reports Ray prints on the driver's terminal (a dead raylet's last 20 log lines,
  some 44 lines a user takes for a crash, when the search survives it) to the file `path`, each
  with one line of ours on the log; returns the function that undoes it."""
  worker = ray._private.worker  # pylint: disable=protected-access
  shown = getattr(worker, "print_to_stdstream", None)  # what Ray's error-listener thread calls
  if shown is None:  # a Ray that reports otherwise: its text stays on the terminal
    return lambda: None

  def to_file(data: dict, ignore_prefix: bool = False) -> None:
    del ignore_prefix
    text = "\n".join(data.get("lines", []))
    with open(path, "a", encoding="utf-8") as f:
      f.write(text.rstrip("\n") + "\n")
    log.warning("Ray: %s Its whole report is in %s", _first_sentence(text) or "(empty)", path)

  worker.print_to_stdstream = to_file
  return lambda: setattr(worker, "print_to_stdstream", shown)


def _reports_path(ray) -> str:
  """Where `_divert_reports` writes: this driver's file in the Ray session's log folder."""
  node = getattr(ray._private.worker, "_global_node", None)  # pylint: disable=protected-access
  logs = node.get_logs_dir_path() if node is not None else ""
  return os.path.join(logs if os.path.isdir(logs) else tempfile.gettempdir(), f"nas_jax_ray_reports_{os.getpid()}.log")


def _first_sentence(text: str) -> str:
  return re.split(r"(?<=\.)\s", text.strip(), maxsplit=1)[0]


class RayExecutor:
  """Runs calls as Ray tasks, at most `num_workers` at a time.

  Connects to the cluster at `address` ("auto", "ray://host:10001", ...) or, when `address` is
  "", uses the running Ray instance or starts a local one on a loopback address (which `shutdown`
  stops). A "host:port" address where no Ray head answers in Ray's protocol (`ray_probe`) fails
  within `connect_timeout_s`; a loopback one keeps this driver on the loopback device too. Ray's
  reports printed on the driver's terminal go to a file in the session's log folder, with one line
  of ours each (`_divert_reports`). A call whose
  worker is lost (its node, raylet or worker process died: `lost_worker`) runs again, up to
  `retries` times, and then ends as failed (`lost_every_time`); Ray itself never retries a task.
  When this process's own raylet dies, or the head stops answering, `wait` raises `WorkersLost`. A call
  past `timeout_s` is force-cancelled, which kills its Ray worker process; any other error of
  Ray's ends the call with its text.
  """

  def __init__(
    self,
    num_workers: int,
    address: str = "",
    timeout_s: float | None = None,
    *,
    retries: int = RETRIES,
    connect_timeout_s: float = 30.0,
  ):
    check_workers("RayExecutor", num_workers, timeout_s, retries)
    if (
      isinstance(connect_timeout_s, bool)
      or not isinstance(connect_timeout_s, (int, float))
      or not connect_timeout_s > 0
    ):
      raise ValueError(f"RayExecutor: connect_timeout_s={connect_timeout_s!r}; expected a number of seconds > 0")
    if not isinstance(address, str):
      raise TypeError(f"RayExecutor: address={address!r}; expected a string ('' for local)")
    import ray  # pylint: disable=g-import-not-at-top  (optional dependency: pip install ray)

    self._ray = ray
    self._owns = not ray.is_initialized()
    self._undivert: Callable[[], None] = lambda: None
    if self._owns:
      why = _not_a_head(address, connect_timeout_s)  # Ray itself would retry it for minutes
      if why:
        raise ConnectionError(
          f"ray_address={address!r}: no Ray head answers there ({why}); start one with `ray start --head"
          " --node-ip-address=HOST --port=PORT` or give the address of a running head"
        )
      node_ip = _node_ip(address)
      loopback = {} if node_ip is None else {"_node_ip_address": node_ip}  # (a Ray Client takes no such argument)
      try:
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False, **loopback)
      except (ConnectionError, RuntimeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConnectionError(
          f"ray_address={address!r}: {first}. A head started by `ray start` may require its token"
          " (RAY_AUTH_MODE=token on this machine), and Ray connects to the address the head"
          " advertises: start it with --node-ip-address=<an address this machine reaches>"
        ) from None
      self._undivert = _divert_reports(ray, _reports_path(ray))
    self.num_workers = num_workers
    self.timeout_s = timeout_s
    self.retries = retries
    self._x64 = x64_enabled()
    self._remote = ray.remote(num_cpus=1, max_retries=0)(_ray_call)
    self._queue: collections.deque[tuple[int, Callable, tuple, int]] = collections.deque()  # ..., attempt
    self._running: dict[Any, tuple[int, float, Callable, tuple, int]] = {}  # ref -> ticket, start, fn, args, attempt
    self._tickets = itertools.count()
    self._lost = ""  # the WorkersLost text, once the driver's node is lost
    self._head = ray.get_runtime_context().gcs_address  # host:port of the cluster's GCS
    self._head_checked = time.monotonic()

  def submit(self, fn: Callable, *args: Any) -> int:
    ticket = next(self._tickets)
    self._queue.append((ticket, fn, args, 1))
    self._dispatch()
    return ticket

  def _dispatch(self) -> None:
    while self._queue and len(self._running) < self.num_workers and not self._lost:
      ticket, fn, args, attempt = self._queue.popleft()
      self._running[self._remote.remote(fn, args, self._x64)] = (ticket, time.monotonic(), fn, args, attempt)

  def _collect(self, block: float) -> list[tuple[int, Outcome]]:
    ray, refs, out = self._ray, list(self._running), []
    ready, _ = ray.wait(refs, num_returns=1, timeout=block)
    if ready:
      ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    now = time.monotonic()
    for ref in ready:
      ticket, start, fn, args, attempt = self._running.pop(ref)
      try:
        out.append((ticket, ended(*ray.get(ref))))
      except ray.exceptions.RayError as e:
        text = f"{type(e).__name__}: {e}"
        if not lost_worker(e):  # the task could not run: its error is the evaluation's
          out.append((ticket, Outcome(error=text, seconds=now - start, worker="ray")))
          continue
        what = f"Ray lost an evaluation's worker ({_first_sentence(text)})"
        if isinstance(e, (ray.exceptions.LocalRayletDiedError, ray.exceptions.RaySystemError)):
          self._lost = self._lost or (  # the driver's own node is gone: no call can run here
            f"{what}: this process's Ray node is gone and the search stops. Nothing was recorded for"
            " the evaluations in flight; rerun the same command to resume once the cluster is back"
          )
        elif rerun(what, attempt, self.retries):
          self._queue.appendleft((ticket, fn, args, attempt + 1))
        else:
          out.append((ticket, Outcome(error=lost_every_time(what, self.retries), seconds=now - start, worker="ray")))
    if self.timeout_s is not None:
      for ref, (ticket, start, *_) in list(self._running.items()):
        if now - start > self.timeout_s:
          ray.cancel(ref, force=True)
          del self._running[ref]
          error = f"timed out after {self.timeout_s:g} s; its Ray worker was killed"
          out.append((ticket, Outcome(error=error, seconds=now - start, worker="ray", timed_out=True)))
    self._dispatch()
    return out

  def wait(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
    end = None if timeout is None else time.monotonic() + timeout
    while True:
      now = time.monotonic()
      if self._lost:
        raise WorkersLost(self._lost)
      if not self._running:
        return []
      self._check_head(now)
      block = seconds_to_block(now, end, [start for _, start, *_ in self._running.values()], self.timeout_s)
      out = self._collect(block)
      if out or (end is not None and time.monotonic() >= end):
        return out

  def _check_head(self, now: float) -> None:
    """WorkersLost when the head's GCS stops answering: Ray would end this process without a
    word a minute later, before the search could write its summary."""
    if now - self._head_checked < _HEAD_CHECK_S:
      return
    self._head_checked = now
    why = _unreachable(self._head, _HEAD_CHECK_S)
    if why:
      raise WorkersLost(
        f"the Ray head (GCS at {self._head}) does not answer ({why}): the search stops. Evaluations in"
        " flight were not recorded; rerun the same command to resume once the head is back"
      )

  def shutdown(self) -> None:
    for ref in self._running:
      self._ray.cancel(ref, force=True)
    self._running, self._queue = {}, collections.deque()
    self._undivert()
    self._undivert = lambda: None
    if self._owns and self._ray.is_initialized():
      self._ray.shutdown()

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.shutdown()
