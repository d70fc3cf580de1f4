"""``dafka-producer``'s kcat options for the record model: ``-H name=value`` and ``-z``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from dafka.cli.producer import main
from dafka.cli.producer_keys import parse_headers
from dafka.errors import ConfigError, ProfileError
from dafka.wire.signed_rich import MAX_HEADERS


def test_h_is_kcats_name_value_name_alone_is_a_null_value() -> None:
    assert parse_headers((), "signed") == ()
    assert parse_headers(("a=1", "n", "e=", "a=dup", "eq=x=y"), "signed") == (
        ("a", b"1"),
        ("n", None),
        ("e", b""),
        ("a", b"dup"),
        ("eq", b"x=y"),
    )


def test_h_refuses_what_it_cannot_send_in_one_line() -> None:
    with pytest.raises(ConfigError, match="a header needs a name"):
        parse_headers(("=v",), "signed")
    with pytest.raises(ProfileError, match="rfc46"):
        parse_headers(("a=1",), "rfc46")
    with pytest.raises(ConfigError, match=f"more than {MAX_HEADERS} headers"):
        parse_headers(tuple(f"h{i}=" for i in range(MAX_HEADERS + 1)), "signed")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-H", "=v"], "a header needs a name"),
        (["-H", "a=1", "--profile", "rfc46"], "need the signed wire profile"),
        (["-z", "lz4", "--profile", "rfc46"], "compression (-z) needs the signed wire profile"),
        (["-z", "gzip"], "'gzip' is not one of"),
    ],
)
def test_usage_mistakes_exit_2_with_one_line(args: list[str], says: str) -> None:
    result = CliRunner().invoke(main, ["t", "--tower", "127.0.0.1:1", *args], input="")
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert "Traceback" not in result.output
