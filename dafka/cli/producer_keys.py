"""kcat's ``-k KEY`` and ``-Z`` on ``dafka-producer``: which key each line is sent with.

* ``-k KEY``: every record without a key of its own gets ``KEY`` (kcat: with ``-K``, a
  line's own key takes precedence). Escapes as ``-D``.
* ``-Z``: an empty key is sent as no key (kcat's NULL). Dafka records always have a value
  (no NULL value exists on the wire), so an empty line is an empty value, with or without
  ``-Z``.

Keys need the signed profile (rfc46 records have none).

And kcat's ``-H`` (headers: ``-H name=value``, repeatable, in order; ``-H name``, without
``=``, is a header with a null value and ``-H name=`` one with an empty value, as kcat's)
and ``-z``/``--compression`` (``none``, ``zstd`` or ``lz4``): both need the signed profile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from ..errors import ConfigError, ProfileError
from ..metadata.settings import COMPRESSIONS
from ..wire.signed_checks import LimitExceeded
from ..wire.signed_rich import Header, check_headers
from .common import unescape

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["KeyRule", "header_option", "key_options", "key_rule", "parse_headers"]


def header_option(f: F) -> F:
    """``-H name=value`` (repeatable) and ``-z``/``--compression`` on ``dafka-producer``."""
    f = click.option(
        "-z",
        "--compression",
        default=None,
        type=click.Choice(COMPRESSIONS),
        help="Compress batches with this codec (kcat's -z; signed profile) [default: the "
        "topic's compression setting, none without one].",
    )(f)
    return click.option(
        "-H",
        "--header",
        "headers",
        multiple=True,
        metavar="NAME=VALUE",
        help="Send every record with this header (kcat's -H; repeat for more, in order; "
        "NAME without = is a null value; signed profile).",
    )(f)


def parse_headers(given: tuple[str, ...], profile: str) -> tuple[Header, ...]:
    """``-H`` arguments as checked headers (``name=value``; ``name`` alone: a null value).
    One-line :class:`ConfigError` for an empty name or a bound exceeded."""
    if not given:
        return ()
    if profile != "signed":
        raise ProfileError("headers (-H) need the signed wire profile; rfc46 records have none")
    pairs: list[tuple[str, bytes | None]] = []
    for arg in given:
        name, eq, value = arg.partition("=")
        if not name:
            raise ConfigError(f"-H {arg!r}: a header needs a name (-H name=value)")
        pairs.append((name, value.encode() if eq else None))
    try:
        return check_headers(pairs)
    except LimitExceeded as exc:
        raise ConfigError(f"-H: {exc}") from None


def key_options(f: F) -> F:
    """``-k KEY`` and ``-Z`` on ``dafka-producer``."""
    f = click.option(
        "-Z",
        "--null-empty",
        "null_empty",
        is_flag=True,
        help="Send an empty key (from -K, or -k '') as no key, as kcat's -Z sends NULL. "
        "Records always have a value: an empty line is an empty value.",
    )(f)
    return click.option(
        "-k",
        "--key",
        "fixed_key",
        default=None,
        help="Send every record without a key of its own (-K) with this key (kcat's -k; "
        "signed profile; escapes as -D).",
    )(f)


@dataclass(frozen=True, slots=True)
class KeyRule:
    """How a line becomes ``(value, key)``: split at ``separator`` (a line without it has
    no key of its own), then ``fixed`` for a line without one, then ``None`` for an empty
    key when ``null_empty``."""

    separator: bytes | None
    fixed: bytes | None
    null_empty: bool

    def split(self, line: bytes) -> tuple[bytes, bytes | None]:
        key: bytes | None = None
        value = line
        if self.separator is not None:
            k, found, v = line.partition(self.separator)
            if found:
                key, value = k, v
        if key is None:
            key = self.fixed
        if self.null_empty and key == b"":
            key = None
        return value, key


def key_rule(
    separator: bytes | None, fixed_key: str | None, null_empty: bool, profile: str
) -> KeyRule | None:
    """The rule for ``-k``/``-Z`` (None without them: the feed's own fast path)."""
    if fixed_key is None and not null_empty:
        return None
    if fixed_key is not None and profile != "signed":
        raise ProfileError("keys need the signed wire profile; the rfc46 profile has no keys")
    fixed = None if fixed_key is None else unescape(fixed_key)
    return KeyRule(separator, fixed, null_empty)
