"""kcat's delimiters and format tokens in the CLIs (issue 12 point 5), without processes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dafka.cli.admin import _UNITS_BYTES, _UNITS_MS, _amount
from dafka.cli.common import unescape
from dafka.cli.consumer import Formatter, as_json, delimited_format
from dafka.cli.feed import read_files, read_lines
from dafka.cli.holdings import human
from dafka.core.effects import ConsumedRecord
from dafka.errors import ConfigError


def _lines(tmp_path: Path, data: bytes, max_line: int, read_bytes: int, delim: bytes) -> list:
    path = tmp_path / "in"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = read_lines(fd, max_line, read_bytes, delimiter=delim)
        return [line for chunk in chunks for line in chunk]
    finally:
        os.close(fd)


@pytest.mark.parametrize("read_bytes", [1, 2, 3, 4, 5, 7, 64])
def test_a_delimiter_of_several_bytes_cut_by_reads(tmp_path: Path, read_bytes: int) -> None:
    data = b"a\r\n\r\nb\rc\n\r\n" + b"L" * 20 + b"\r\nxyz\r"
    got = _lines(tmp_path, data, 10, read_bytes, b"\r\n")
    assert got == [b"a", b"", b"b\rc\n", 20, b"xyz\r"]


@pytest.mark.parametrize("read_bytes", [1, 3, 64])
def test_a_line_exactly_at_the_limit_before_a_long_delimiter(
    tmp_path: Path, read_bytes: int
) -> None:
    delim = b"<end>"
    data = b"x" * 10 + delim + b"y" * 11 + delim + b"z" * 10
    assert _lines(tmp_path, data, 10, read_bytes, delim) == [b"x" * 10, 11, b"z" * 10]


@pytest.mark.parametrize("read_bytes", [1, 64])
def test_a_nul_delimiter_keeps_every_other_byte(tmp_path: Path, read_bytes: int) -> None:
    data = b"a\r\nb\0\0c\n\xff\0"
    assert _lines(tmp_path, data, 10, read_bytes, b"\0") == [b"a\r\nb", b"", b"c\n\xff"]


def test_each_file_is_one_record(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"a\r\nb\x00c")
    (tmp_path / "b").write_bytes(b"")
    (tmp_path / "c").write_bytes(b"x" * 11)
    paths = [str(tmp_path / n) for n in "abc"]
    assert list(read_files(paths, 10)) == [[b"a\r\nb\x00c"], [b""], [11]]


@pytest.mark.parametrize(
    ("text", "raw"),
    [
        ("\\n", b"\n"),
        ("\\r\\n", b"\r\n"),
        ("\\0", b"\0"),
        ("\\x00\\xff|", b"\x00\xff|"),
        ("\\\\t", b"\\t"),
        ("::", b"::"),
        ("é", "é".encode()),
    ],
)
def test_unescape_reads_kcat_escapes(text: str, raw: bytes) -> None:
    assert unescape(text) == raw


@pytest.mark.parametrize("text", ["\\q", "\\x4", "\\xzz", "\\"])
def test_a_bad_escape_is_one_config_error(text: str) -> None:
    with pytest.raises(ConfigError, match="bad escape"):
        unescape(text)


RECORD = ConsumedRecord("t", "P" * 32, 7, b"v\x00", b"key", 1_700_000_000.123)


def test_format_tokens_timestamp_and_sizes() -> None:
    fmt = Formatter("%t|%p|%o|%k|%s|%S|%K|%T|%%\\x01\\n")
    assert fmt(RECORD) == b"t|" + b"P" * 32 + b"|7|key|v\x00|2|3|1700000000123|%\x01\n"
    bare = ConsumedRecord("t", "P" * 32, 0, b"v")  # rfc46: no key, no timestamp
    assert Formatter("%K %T").__call__(bare) == b"-1 -1"


def test_headers_render_as_kcat_does() -> None:
    """kcat's %h: k=v pairs in the record's order, comma-separated, NULL for a null value,
    repeated keys kept; nothing for a record without headers."""
    record = ConsumedRecord(
        "t", "P", 0, b"v", None, 1.0, (("a", b"1"), ("n", None), ("a", b""), ("b", b"\xff"))
    )
    assert Formatter("%h|%s").__call__(record) == b"a=1,n=NULL,a=,b=\xff|v"
    assert Formatter("[%h]").__call__(ConsumedRecord("t", "P", 0, b"v")) == b"[]"


def test_unknown_tokens_are_refused_clearly() -> None:
    with pytest.raises(ConfigError, match="unknown format token '%Z'"):
        Formatter("%s %Z")


def test_a_tombstone_prints_no_value_and_size_minus_one() -> None:
    record = ConsumedRecord("t", "P", 0, None, b"k", 2.5)
    assert Formatter("%k:%s:%S:%T").__call__(record) == b"k::-1:2500"
    row = json.loads(as_json(record))
    assert row["value"] is None and row["headers"] == [] and row["timestamp"] == 2500


def test_json_carries_the_headers() -> None:
    record = ConsumedRecord("t", "P", 0, b"v", None, 1.0, (("tp", b"00-ab"), ("x", b"\xff")))
    row = json.loads(as_json(record))
    assert row["headers"] == [
        {"key": "tp", "value": "00-ab"},
        {"key": "x", "value": None, "value_base64": "/w=="},
    ]


def test_json_carries_the_timestamp() -> None:
    assert b'"timestamp": 1700000000123' in as_json(RECORD)
    assert b'"timestamp": null' in as_json(ConsumedRecord("t", "P", 0, b"v"))


def test_delimiters_stand_for_a_format() -> None:
    assert delimited_format(None, None) == "%s\\n"
    assert Formatter(delimited_format("", None))(RECORD) == b"v\x00"
    assert Formatter(delimited_format("\\0", "\\t"))(RECORD) == b"key\tv\x00\x00"


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("retention_ms", 7 * 86_400_000, "7d"),
        ("retention_ms", 12 * 3_600_000, "12h"),
        ("retention_ms", 1500, "1500ms"),
        ("retention_ms", None, "none"),
        ("retention_bytes", 1 << 30, "1G"),
        ("max_record_bytes", 3 << 20, "3M"),
        ("retention_bytes", 1000, "1000"),
        ("producers", None, "any"),
        ("clients", ["A", "B"], "A,B"),
        ("min_acks", 2, "2"),
        ("auto_create", True, "true"),
        ("curve", False, "false"),
    ],
)
def test_settings_are_shown_as_given_and_parse_back(key: str, value: object, shown: str) -> None:
    assert human(key, value) == shown
    if key.startswith(("retention", "max_record")):  # what dafka topics alter takes back
        units = _UNITS_MS if key.endswith("_ms") else _UNITS_BYTES
        assert _amount(shown, key, units) == value


def test_kcat_json_carries_headers_as_kcat_does() -> None:
    """kcat's -J: a flat array of names and values, only for a record with headers."""
    from dafka.cli.kcat import kcat_json

    record = ConsumedRecord(
        "t", "P", 0, b"v", None, 1.0, (("a", b"1"), ("n", None), ("x", b"\xff"))
    )
    row = json.loads(kcat_json(record))
    assert row["headers"] == ["a", "1", "n", None, "x", {"base64": "/w=="}]
    assert list(row)[:7] == ["topic", "partition", "offset", "tstype", "ts", "broker", "headers"]
    assert "headers" not in json.loads(kcat_json(ConsumedRecord("t", "P", 0, b"v")))
