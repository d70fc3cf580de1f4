"""Kafka request framing, request headers and response encoding (pure: bytes in, bytes out).

A Kafka request on the wire is ``int32 size`` then ``size`` bytes: a request header
(``api_key int16, api_version int16, correlation_id int32, client_id``; header v1 for the
API versions that are not "flexible", v2 with tagged fields for those that are) and the
request body. The message types at every version are ``kio``'s (generated from Kafka's own
schemas); this module only chooses them, bounds what a client may send, and builds the
answers.

What a client controls is hostile: a frame's size is checked before anything is read
(:func:`check_size`), a request of an API that takes no records is refused above
``SMALL_REQUEST_BYTES`` before it is decoded (so a request naming a million partitions
costs no decoding), and every answer that can be built is sent: an unknown API or version
gets UNSUPPORTED_VERSION, a body that does not decode INVALID_REQUEST.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from .model import Code

__all__ = [
    "API_VERSIONS",
    "DATA_APIS",
    "GROUP_VERSIONS",
    "MIN_FRAME_BYTES",
    "SMALL_REQUEST_BYTES",
    "SUPPORTED",
    "Refusal",
    "Request",
    "check_size",
    "encode_response",
    "error_response",
    "make",
    "parse_request",
    "peek_header",
]

API_VERSIONS = 18
MIN_FRAME_BYTES = 8
"""The least a request can be: api key, version and correlation id (the client id after
them may be missing only in a broken request, answered INVALID_REQUEST)."""
SMALL_REQUEST_BYTES = 2 * 1024 * 1024
"""The most bytes a request of an API that carries no records may take (every API but
Produce): 10,000 partitions of a Fetch take 330 KB, 10,000 topics of 100 characters in a
Metadata request 1 MB. Above it the request is answered INVALID_REQUEST without being
decoded, so a request naming a million partitions costs no decoding."""

SUPPORTED: dict[int, tuple[int, int]] = {
    0: (3, 9),  # Produce (v10+: topic ids and leader hints)
    1: (4, 12),  # Fetch (v13+: topic ids instead of names)
    2: (1, 7),  # ListOffsets
    3: (0, 12),  # Metadata
    18: (0, 3),  # ApiVersions
    19: (2, 7),  # CreateTopics
    20: (1, 5),  # DeleteTopics (v6: by topic id)
    22: (0, 4),  # InitProducerId
    32: (1, 4),  # DescribeConfigs
}
"""The data and admin APIs served here: api key -> (min version, max version)."""

GROUP_VERSIONS: dict[int, tuple[int, int]] = {
    8: (2, 8),  # OffsetCommit
    9: (1, 7),  # OffsetFetch (v8: several groups at once)
    10: (0, 3),  # FindCoordinator (v4: several keys at once)
    11: (0, 7),  # JoinGroup
    12: (0, 4),  # Heartbeat
    13: (0, 4),  # LeaveGroup
    14: (0, 5),  # SyncGroup
    15: (0, 5),  # DescribeGroups
    16: (0, 4),  # ListGroups
}
"""The consumer-group APIs, served by the :class:`~dafka.kafka.model.GroupApi` at these
versions (listed in ApiVersions only for the keys the group API says it handles)."""

DATA_APIS = frozenset({0})
"""The APIs whose requests may be as large as the listener's request cap (they carry
records); every other request is bounded by :data:`SMALL_REQUEST_BYTES`."""

_HEAD = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: its header fields and the ``kio`` request object."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any
    size: int


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request that is not served: what to answer (None: nothing can be, close) and why
    (one log line)."""

    api_key: int
    api_version: int
    correlation_id: int
    code: Code
    reason: str
    answer: bytes | None


def check_size(size: int, cap: int) -> str | None:
    """Why a frame of ``size`` bytes is refused (the connection closed: its bytes cannot be
    skipped safely), or None."""
    # guard: listener-frame-size-minimum
    if size < MIN_FRAME_BYTES:
        return f"a request of {size} bytes, less than the {MIN_FRAME_BYTES} of its header"
    # guard: listener-frame-size-capped
    if size > cap:
        return f"a request of {size} bytes, over the listener's cap of {cap}"
    return None


def peek_header(frame: bytes | memoryview) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a frame of at least 8 bytes."""
    api_key, api_version, correlation_id = _HEAD.unpack_from(frame, 0)
    return api_key, api_version, correlation_id


def served(api_key: int, api_version: int, table: Mapping[int, tuple[int, int]]) -> bool:
    span = table.get(api_key)
    return span is not None and span[0] <= api_version <= span[1]


def parse_request(
    frame: bytes | memoryview, table: Mapping[int, tuple[int, int]] = SUPPORTED
) -> Request | Refusal:
    """Decode one request frame (the bytes after the size), or say how to refuse it.

    ``table``: the APIs and versions served (:func:`version_table`), listed in the answer
    to an ApiVersions request at a version not served."""
    view = memoryview(frame)
    api_key, api_version, correlation_id = peek_header(view)
    if not served(api_key, api_version, table):
        return _unsupported(api_key, api_version, correlation_id, table)
    # guard: listener-small-request-cap
    if api_key not in DATA_APIS and len(view) > SMALL_REQUEST_BYTES:
        return _refuse(
            api_key,
            api_version,
            correlation_id,
            Code.INVALID_REQUEST,
            f"api {api_key} request of {len(view)} bytes, over the "
            f"{SMALL_REQUEST_BYTES} an API without records may take",
        )
    cls = load_request_schema(api_key, api_version)
    try:
        header, used = entity_reader(cls.__header_schema__)(view, 0)
        body, _ = entity_reader(cls)(view, used)
    except (SerialError, ValueError, TypeError, OverflowError) as exc:
        return _refuse(
            api_key,
            api_version,
            correlation_id,
            Code.INVALID_REQUEST,
            f"api {api_key} v{api_version} request that does not decode "
            f"({type(exc).__name__}: {str(exc)[:100]})",
        )
    return Request(api_key, api_version, correlation_id, header.client_id, body, len(view))


def version_table(
    group_keys: frozenset[int] = frozenset(),
    group_versions: Mapping[int, tuple[int, int]] = GROUP_VERSIONS,
) -> dict[int, tuple[int, int]]:
    """What ApiVersions lists: the data APIs, and the group APIs ``group_keys`` at the
    versions ``group_versions`` (the group API's own table where it has one)."""
    table = dict(SUPPORTED)
    for key in sorted(group_keys):
        span = group_versions.get(key) or GROUP_VERSIONS.get(key)
        if span is not None and key not in table:
            # a version kio cannot decode is never listed
            table[key] = (span[0], min(span[1], _kio_max(key)))
    return dict(sorted(table.items()))


def _kio_max(api_key: int) -> int:
    from kio.schema.index import api_key_map, schema_name_map

    return max(schema_name_map[api_key_map[api_key]])


def api_versions_response(version: int, code: Code, table: Mapping[int, tuple[int, int]]) -> Any:
    cls = load_response_schema(API_VERSIONS, version)
    entry = _element(cls, "api_keys")
    keys = tuple(
        make(entry, api_key=k, min_version=lo, max_version=hi) for k, (lo, hi) in table.items()
    )
    return make(cls, error_code=code, api_keys=keys)


def _unsupported(
    api_key: int, api_version: int, correlation_id: int, table: Mapping[int, tuple[int, int]]
) -> Refusal:
    reason = f"api {api_key} v{api_version}, not served"
    if api_key == API_VERSIONS:
        # as brokers do: the v0 answer (which every client reads) with our version list
        body = api_versions_response(0, Code.UNSUPPORTED_VERSION, table)
        answer = encode_response(API_VERSIONS, 0, correlation_id, body)
        return Refusal(
            api_key, api_version, correlation_id, Code.UNSUPPORTED_VERSION, reason, answer
        )
    return _refuse(api_key, api_version, correlation_id, Code.UNSUPPORTED_VERSION, reason)


def _refuse(
    api_key: int, api_version: int, correlation_id: int, code: Code, reason: str
) -> Refusal:
    """Refuse with ``code``: an error response of the API at the client's version where
    ``kio`` knows it, else the correlation id and the error code alone (which no client
    can mistake for another request's answer)."""
    try:
        body = error_response(api_key, api_version, code)
    except Exception:  # noqa: BLE001 - an API or version kio does not know
        body = None
    if body is not None:
        answer = encode_response(api_key, api_version, correlation_id, body)
    else:
        answer = _framed(_SIZE.pack(correlation_id) + struct.pack(">h", int(code)))
    return Refusal(api_key, api_version, correlation_id, code, reason, answer)


def error_response(api_key: int, api_version: int, code: Code) -> Any:
    """The response of ``api_key`` at ``api_version`` with ``code`` in every top-level
    error field and empty lists (None where kio knows no such response)."""
    cls = load_response_schema(api_key, api_version)
    if api_key == API_VERSIONS:
        return api_versions_response(api_version, code, {})
    return make(
        cls, **{f.name: code for f in dataclasses.fields(cls) if _kafka_type(f) == "error_code"}
    )


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """The framed response (size, header, body). ApiVersions answers always use response
    header v0 (no tagged fields), as clients read them before they know the version."""
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    flexible = bool(type(body).__flexible__) and api_key != API_VERSIONS
    buf.write(_SIZE.pack(correlation_id))
    if flexible:
        buf.write(b"\0")  # the response header's tagged fields: none
    entity_writer(type(body))(buf, body)
    out = buf.getbuffer()
    _SIZE.pack_into(out, 0, len(out) - 4)
    del out
    return buf.getvalue()


def _framed(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


# --- building kio objects across versions ---------------------------------------------


def _kafka_type(f: dataclasses.Field[Any]) -> str | None:
    value = f.metadata.get("kafka_type")
    return value if isinstance(value, str) else None


def _optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (types.UnionType, typing.Union) and type(
        None
    ) in typing.get_args(tp)


def _strip_optional(tp: Any) -> Any:
    if _optional(tp):
        return next(a for a in typing.get_args(tp) if a is not type(None))
    return tp


def _element(cls: type, name: str) -> type:
    """The entity type of list field ``name`` of ``cls``."""
    tp = _strip_optional(_fields(cls)[name].type)
    return typing.get_args(tp)[0]


@cache
def _fields(cls: type) -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}


_ZERO_BY_TYPE: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint8": 0,
    "uint16": 0,
    "uint32": 0,
    "uint64": 0,
    "float64": 0.0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "records": None,
    "error_code": ErrorCode.none,
    "timedelta_i32": datetime.timedelta(0),
    "timedelta_i64": datetime.timedelta(0),
}


def _default(f: dataclasses.Field[Any]) -> Any:
    kind = _kafka_type(f)
    tp = f.type
    if typing.get_origin(_strip_optional(tp)) is tuple:
        return ()
    if _optional(tp):
        return None
    if kind is None:  # a nested entity
        return make(_strip_optional(tp))
    if kind == "uuid":
        from kio.static.constants import uuid_zero

        return uuid_zero
    return _ZERO_BY_TYPE.get(kind, 0)


def _convert(f: dataclasses.Field[Any], value: Any) -> Any:
    kind = _kafka_type(f)
    if kind == "error_code" and not isinstance(value, ErrorCode):
        return ErrorCode(int(value))
    if kind in ("timedelta_i32", "timedelta_i64") and isinstance(value, int | float):
        return datetime.timedelta(milliseconds=value)
    return value


def make(cls: type, **values: Any) -> Any:
    """An instance of ``cls`` (a kio entity of any version) from the values it has fields
    for (others are dropped: a field the version lacks), the rest defaulted (zero, empty,
    None). Error codes may be ints, durations milliseconds."""
    fields = _fields(cls)
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name in values:
            kwargs[name] = _convert(f, values[name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[name] = _default(f)
    return cls(**kwargs)


def element(cls: type, name: str) -> type:
    """The entity type of list field ``name`` of kio entity ``cls`` (at its version)."""
    return _element(cls, name)


def has_field(cls: type, name: str) -> bool:
    return name in _fields(cls)
