"""Whether a Ray head answers at host:port, asked in Ray's own protocol, with the standard library
only: one gRPC call, `NodeInfoGcsService.GetClusterId` (the first call `ray.init` makes of a
cluster's GCS), sent over a plain HTTP/2 connection (RFC 9113; headers coded as in RFC 7541).

A port that accepts connections is not yet a Ray head: a web server, a database or a process
that reads and never answers holds it, and `ray.init` would then retry for minutes, printing a
warning every 30 s. `not_ray` tells within its time limit.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Iterable

__all__ = ["GCS_CALL", "not_ray"]

GCS_CALL = "/ray.rpc.NodeInfoGcsService/GetClusterId"

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # RFC 9113 section 3.4
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _PING, _GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7  # frame types
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4  # frame flags
_STREAM = 1  # the one request's stream


def _hpack_int(value: int, prefix_bits: int) -> bytes:
  """An integer in HPACK's prefix coding (RFC 7541 section 5.1), the prefix's other bits 0."""
  limit = (1 << prefix_bits) - 1
  if value < limit:
    return bytes([value])
  out, value = [limit], value - limit
  while value >= 128:
    out.append(value % 128 + 128)
    value //= 128
  return bytes([*out, value])


def _header(name: str, value: str) -> bytes:
  """A "literal header field without indexing, new name" (RFC 7541 section 6.2.2), not Huffman
  coded: the one representation that needs no table."""
  name_b, value_b = name.encode(), value.encode()
  return b"\x00" + _hpack_int(len(name_b), 7) + name_b + _hpack_int(len(value_b), 7) + value_b


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
  return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def grpc_request(authority: str, path: str, metadata: Iterable[tuple[str, str]] = ()) -> bytes:
  """The bytes that open an HTTP/2 connection and make one unary gRPC call of `path` with an
  empty request message (all fields default), e.g. `GCS_CALL`."""
  fields = [
    (":method", "POST"),
    (":scheme", "http"),
    (":path", path),
    (":authority", authority),
    ("content-type", "application/grpc"),
    ("te", "trailers"),
    *metadata,
  ]
  block = b"".join(_header(k, v) for k, v in fields)
  message = b"\x00" + struct.pack(">I", 0)  # not compressed, 0 bytes long
  return (
    _PREFACE
    + _frame(_SETTINGS, 0, 0)
    + _frame(_HEADERS, _END_HEADERS, _STREAM, block)
    + _frame(_DATA, _END_STREAM, _STREAM, message)
  )


def _read(sock: socket.socket, n: int, deadline: float) -> bytes:
  """Exactly n bytes; b"" when the peer closes first. socket.timeout past `deadline`."""
  out = b""
  while len(out) < n:
    sock.settimeout(max(deadline - time.monotonic(), 1e-3))
    chunk = sock.recv(n - len(out))
    if not chunk:
      return b""
    out += chunk
  return out


def _answer(sock: socket.socket, deadline: float, call: str | None) -> str:
  """Reads the server's frames until the call is answered: "" when a reply message (or, with no
  call, the server's HTTP/2 preface) arrives, else why not."""
  first = True
  while True:
    head = _read(sock, 9, deadline)
    if not head:
      return "it closed the connection without an HTTP/2 answer" if first else "it closed the connection mid-call"
    length, kind, flags, stream = int.from_bytes(head[:3], "big"), head[3], head[4], struct.unpack(">I", head[5:])[0]
    if first and (kind != _SETTINGS or stream != 0 or flags & _ACK or length % 6):
      return f"it does not speak HTTP/2 (gRPC), as Ray does: it answered {head!r}"
    first = False
    payload = _read(sock, length, deadline) if length else b""
    if length and not payload:
      return "it closed the connection mid-frame"
    if call is None:
      return ""
    if kind == _SETTINGS and not flags & _ACK:
      sock.sendall(_frame(_SETTINGS, _ACK, 0))
    elif kind == _PING and not flags & _ACK:
      sock.sendall(_frame(_PING, _ACK, 0, payload))
    elif kind == _DATA and stream == _STREAM and length:
      return ""
    elif kind == _GOAWAY or (kind == _RST_STREAM and stream == _STREAM):
      return f"it speaks gRPC but refused Ray's call {call}"
    elif kind == _HEADERS and stream == _STREAM and flags & _END_STREAM:
      return (
        f"it speaks gRPC but has no answer to Ray's call {call} (another service, or a head that"
        " requires a token this process lacks)"
      )


def not_ray(host: str, port: int, timeout_s: float, call: str | None = GCS_CALL, metadata=()) -> str:
  """Why no Ray service answers at host:port within `timeout_s` seconds; "" when one does.

  Args:
    host, port: where to connect.
    timeout_s: the whole exchange's limit, connecting included.
    call: the gRPC method to call with an empty request (`GCS_CALL` for a head's GCS); None asks
      only that the server answer in HTTP/2 (a Ray Client server, whose calls need a session).
    metadata: (name, value) pairs sent with the call (a token, for a head that requires one).

  Returns:
    "" when a reply arrives; else one clause for an error line, e.g. "Connection refused, waited
    up to 30 s" or "it does not speak HTTP/2 (gRPC), as Ray does: it answered b'HTTP/1.0 400 ...'".
  """
  deadline = time.monotonic() + timeout_s
  try:
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
      hello = _PREFACE + _frame(_SETTINGS, 0, 0)
      sock.sendall(hello if call is None else grpc_request(f"{host}:{port}", call, metadata))
      return _answer(sock, deadline, call)
  except socket.timeout:
    return f"nothing answered in Ray's protocol within {timeout_s:g} s"
  except OSError as e:
    return f"{e.strerror or str(e) or type(e).__name__}, waited up to {timeout_s:g} s"
