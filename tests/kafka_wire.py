"""Kafka requests built with ``kio`` for the listener's tests, and a blocking raw client."""

from __future__ import annotations

import datetime
import io
import socket
import struct
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from dafka.kafka.frames import make


def request_bytes(api_key: int, version: int, body: Any, correlation_id: int = 7) -> bytes:
    """A framed request: size, header (v1 or v2 as the version is flexible), body."""
    cls = type(body)
    header_cls = cls.__header_schema__
    header = header_cls(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="test",
    )
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header)
    entity_writer(cls)(buf, body)
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def build(api_key: int, version: int, **values: Any) -> Any:
    return make(load_request_schema(api_key, version), **values)


def decode_response(api_key: int, version: int, frame: bytes) -> tuple[int, Any]:
    """(correlation id, response) of a response frame (without its size)."""
    cls = load_response_schema(api_key, version)
    correlation_id = struct.unpack_from(">i", frame)[0]
    at = 4 + (1 if cls.__flexible__ and api_key != 18 else 0)
    body, _ = entity_reader(cls)(memoryview(frame), at)
    return correlation_id, body


def ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


class RawClient:
    """A blocking socket speaking raw frames."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes | None:
        """The next response frame (without its size), or None when the listener closed."""
        head = self._exactly(4)
        if head is None:
            return None
        size = struct.unpack(">i", head)[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def call(self, api_key: int, version: int, body: Any, correlation_id: int = 7) -> Any:
        self.send(request_bytes(api_key, version, body, correlation_id))
        frame = self.read_frame()
        assert frame is not None, "the listener closed the connection"
        got, response = decode_response(api_key, version, frame)
        assert got == correlation_id
        return response

    def close(self) -> None:
        self.sock.close()
