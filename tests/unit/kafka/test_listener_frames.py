"""Request framing and refusals (dafka.kafka.frames), with requests built by kio."""

from __future__ import annotations

import struct

from kio.schema.errors import ErrorCode

from dafka.kafka.frames import (
    MIN_FRAME_BYTES,
    SMALL_REQUEST_BYTES,
    SUPPORTED,
    Refusal,
    Request,
    check_size,
    parse_request,
)
from dafka.kafka.model import Code
from tests.kafka_wire import build, decode_response, ms, request_bytes


def frame_of(data: bytes) -> bytes:
    return data[4:]


def test_sizes_are_checked_before_reading() -> None:
    assert check_size(MIN_FRAME_BYTES, 100) is None
    assert check_size(100, 100) is None
    assert "less than" in (check_size(MIN_FRAME_BYTES - 1, 100) or "")
    assert "over the listener's cap" in (check_size(101, 100) or "")
    assert check_size(-5, 100) is not None


def test_flexible_and_old_requests_decode() -> None:
    for version in (0, 4, 9, 12):
        body = build(3, version, topics=None if version else (), allow_auto_topic_creation=False)
        got = parse_request(frame_of(request_bytes(3, version, body, 42)))
        assert isinstance(got, Request), got
        assert (got.api_key, got.api_version, got.correlation_id, got.client_id) == (
            3,
            version,
            42,
            "test",
        )


def test_api_versions_out_of_range_gets_the_v0_answer_with_our_list() -> None:
    raw = struct.pack(">hhih", 18, 99, 5, -1) + b"\0" * 4
    got = parse_request(raw)
    assert isinstance(got, Refusal) and got.answer is not None
    cid, body = decode_response(18, 0, got.answer[4:])
    assert cid == 5 and body.error_code == ErrorCode.unsupported_version
    assert {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}[0] == SUPPORTED[0]


def test_an_unserved_version_is_answered_unsupported_in_its_own_version() -> None:
    body = build(22, 5, transactional_id=None, transaction_timeout=ms(1000))
    got = parse_request(frame_of(request_bytes(22, 5, body, 9)))  # InitProducerId v5: not served
    assert isinstance(got, Refusal) and got.code == Code.UNSUPPORTED_VERSION
    assert got.answer is not None
    cid, answer = decode_response(22, 5, got.answer[4:])
    assert cid == 9 and answer.error_code == ErrorCode.unsupported_version


def test_an_unknown_api_key_is_answered_with_its_correlation_id() -> None:
    got = parse_request(struct.pack(">hhih", 999, 0, 77, -1))
    assert isinstance(got, Refusal) and got.answer is not None
    assert struct.unpack(">iih", got.answer) == (6, 77, Code.UNSUPPORTED_VERSION)


def test_a_body_that_does_not_decode_is_answered_invalid_request() -> None:
    raw = struct.pack(">hhih", 3, 4, 11, -1) + b"\x7f\xff\xff\xff"  # 2^31 topics, no bytes
    got = parse_request(raw)
    assert isinstance(got, Refusal) and got.code == Code.INVALID_REQUEST
    assert got.answer is not None
    cid, _ = decode_response(3, 4, got.answer[4:])
    assert cid == 11


def test_a_large_request_of_an_api_without_records_is_refused_undecoded() -> None:
    raw = struct.pack(">hhih", 1, 4, 3, -1) + b"\0" * SMALL_REQUEST_BYTES
    got = parse_request(raw)
    assert isinstance(got, Refusal) and got.code == Code.INVALID_REQUEST
    assert "over the" in got.reason
