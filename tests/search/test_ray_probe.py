"""The Ray head check speaks Ray's protocol: a web server, a silent listener and a gRPC server
without Ray's call fail in one clause within the time limit; a server that answers the call
passes. (A real head answers it too: tests/search/test_ray_cluster.py.)"""

import contextlib
import http.server
import re
import socket
import struct
import threading
import time

import pytest

from nas_jax.search import ray_probe


@contextlib.contextmanager
def _serving(handle):
  """A one-connection server on 127.0.0.1 that runs handle(connection) in a thread; yields its port."""
  with socket.socket() as server:
    server.bind(("127.0.0.1", 0))
    server.listen()

    def run():
      conn, _ = server.accept()
      with conn:
        handle(conn)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    thread.join(timeout=10)


def _frame(kind, flags, stream, payload=b""):
  return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def _request(conn) -> bytes:
  """Reads the client's whole request: preface, SETTINGS, HEADERS and the one DATA frame."""
  out = b""
  while not out.endswith(b"\x00\x00\x00\x00\x00"):  # the empty gRPC message ends it
    out += conn.recv(4096)
  return out


def test_hpack_integers_are_those_of_rfc_7541_appendix_c1():
  assert ray_probe._hpack_int(10, 5) == b"\x0a"
  assert ray_probe._hpack_int(1337, 5) == b"\x1f\x9a\x0a"
  assert ray_probe._hpack_int(42, 8) == b"\x2a"


def test_the_request_opens_http2_and_calls_the_gcs_with_the_metadata_given():
  req = ray_probe.grpc_request("127.0.0.2:6379", ray_probe.GCS_CALL, [("authorization", "Bearer " + "t" * 200)])
  assert req.startswith(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + _frame(0x4, 0, 0))
  assert ray_probe.GCS_CALL.encode() in req and b"application/grpc" in req
  assert b"\x00\x0dauthorization\x7f\x50" + b"Bearer " + b"t" * 200 in req  # 207 = 127 + 0x50
  assert req.endswith(_frame(0x0, 0x1, 1, b"\x00\x00\x00\x00\x00"))


def test_a_server_that_answers_the_call_is_a_ray_head():
  seen = []

  def gcs(conn):
    seen.append(_request(conn))
    conn.sendall(_frame(0x4, 0, 0) + _frame(0x1, 0x4, 1, b"\x88") + _frame(0x0, 0, 1, b"\x00\x00\x00\x00\x02\x12\x00"))

  with _serving(gcs) as port:
    assert ray_probe.not_ray("127.0.0.1", port, 5.0) == ""
  assert ray_probe.GCS_CALL.encode() in seen[0]


def test_a_grpc_server_without_rays_call_is_not_a_head():
  def other(conn):  # trailers only (grpc-status 12, unimplemented), as any other gRPC service answers
    _request(conn)
    conn.sendall(_frame(0x4, 0, 0) + _frame(0x1, 0x4 | 0x1, 1, b"\x88"))
    conn.recv(100)

  with _serving(other) as port:
    why = ray_probe.not_ray("127.0.0.1", port, 5.0)
  assert why.startswith("it speaks gRPC but has no answer to Ray's call /ray.rpc.NodeInfoGcsService/GetClusterId")


def test_a_web_server_fails_at_once():
  server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
  threading.Thread(target=server.serve_forever, daemon=True).start()
  try:
    t0 = time.monotonic()
    why = ray_probe.not_ray("127.0.0.1", server.server_address[1], 30.0)
    assert why.startswith("it does not speak HTTP/2 (gRPC), as Ray does: it answered b'")
    assert time.monotonic() - t0 < 5
  finally:
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("call", [ray_probe.GCS_CALL, None])
def test_a_listener_that_never_answers_fails_at_the_time_limit(call):
  with socket.socket() as silent:
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    t0 = time.monotonic()
    why = ray_probe.not_ray("127.0.0.1", silent.getsockname()[1], 0.5, call=call)
    assert why == "nothing answered in Ray's protocol within 0.5 s"
    assert 0.4 < time.monotonic() - t0 < 3


def test_a_port_where_nothing_listens_fails_at_once():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]  # closed again: nothing listens there
  assert re.fullmatch(r"Connection refused, waited up to 5 s", ray_probe.not_ray("127.0.0.1", port, 5.0))


def test_a_ray_executor_refuses_a_web_server_in_one_line_within_its_connect_timeout():
  pytest.importorskip("ray")
  from nas_jax.search.ray_executor import RayExecutor  # pylint: disable=g-import-not-at-top

  server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
  threading.Thread(target=server.serve_forever, daemon=True).start()
  address = f"127.0.0.1:{server.server_address[1]}"
  try:
    t0 = time.monotonic()
    with pytest.raises(ConnectionError) as e:
      RayExecutor(1, address=address, connect_timeout_s=10.0)
    assert time.monotonic() - t0 < 10.0
  finally:
    server.shutdown()
    server.server_close()
  assert "\n" not in str(e.value)
  assert str(e.value).startswith(f"ray_address={address!r}: no Ray head answers there (it does not speak HTTP/2")


@pytest.mark.parametrize(
  ("address", "node_ip"),
  [("127.0.0.2:6379", "127.0.0.2"), ("ray://127.0.0.2:10001", None), ("10.0.0.5:6379", None), ("head:6379", None)],
)
def test_a_driver_joins_a_loopback_head_on_the_heads_own_loopback_address(address, node_ip):
  from nas_jax.search import ray_executor  # pylint: disable=g-import-not-at-top

  assert ray_executor._node_ip(address) == node_ip
