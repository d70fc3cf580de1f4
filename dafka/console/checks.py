"""The console's checks of a request, as pure functions (docs/console.md, Security model).

* :func:`parse_host` reads a ``Host`` header strictly: a name or a bracketed IPv6 address,
  then an optional ``:PORT`` (1-65535); anything else is no host.
* :func:`host_allowed`: whether it names the console (DNS rebinding): the loopback names
  (``localhost``, ``127.0.0.1``, ``[::1]``, which no page can rebind) and the bound host
  (unless it is 0.0.0.0 or ``::``), each on the bound port or without one; or an
  ``--allow-host`` entry, ``NAME`` on any port or ``NAME:PORT`` on that one.
* :func:`same_origin`: whether a POST's ``Origin`` (or ``Referer``) is the console's own
  origin as the request's checked ``Host`` gives it.
* :func:`form_token`: the XSRF token of a browser's id cookie: an HMAC of it under the
  console process's random secret, so a token cannot be made by setting a cookie, nor taken
  from another console.
* :func:`control_character`: the first form field holding a control character.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "ID_COOKIE",
    "LOOPBACK",
    "Host",
    "control_character",
    "form_token",
    "host_allowed",
    "parse_host",
    "same_origin",
    "valid_id",
]

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
UNSPECIFIED = frozenset({"0.0.0.0", "::"})
ID_COOKIE = "dafka_console_id"
"""The browser's random id (32 hex digits, ``HttpOnly``, ``SameSite=Strict``); the form
token is its HMAC under the console's secret."""

_HOST = re.compile(
    r"(?:\[(?P<v6>[0-9a-f:.]{2,45})\]|(?P<name>[a-z0-9](?:[a-z0-9.-]{0,252})))"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
_ID = re.compile(r"[0-9a-f]{32}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True)
class Host:
    """A parsed ``Host``: ``name`` lower-case, an IPv6 address without its brackets."""

    name: str
    port: int | None


def parse_host(text: str) -> Host | None:
    """``NAME[:PORT]`` or ``[V6][:PORT]`` (port 1-65535), else None."""
    # guard: console-host-header-parsed-whole
    m = _HOST.fullmatch(text.lower())
    if m is None:
        return None
    name = m.group("v6") or m.group("name")
    if m.group("v6"):
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
    port = None if m.group("port") is None else int(m.group("port"))
    if port is not None and not 1 <= port <= 65535:
        return None
    return Host(name, port)


def host_allowed(header: str | None, bound: str, port: int, also: Iterable[str] = ()) -> bool:
    """Whether a request's ``Host`` header names the console bound to ``bound:port`` (see
    the module); ``also`` are the ``--allow-host`` entries."""
    host = parse_host(header or "")
    if host is None:
        return False
    own = set(LOOPBACK)
    # guard: console-unspecified-bind-address-is-no-host
    if bound.lower() not in UNSPECIFIED:
        own.add(bound.lower().strip("[]"))
    # guard: console-host-port-is-the-bound-port
    if host.name in own and host.port in (None, port):
        return True
    for entry in also:
        allowed = parse_host(entry.strip())
        if allowed is not None and allowed.name == host.name and allowed.port in (None, host.port):
            return True
    return False


def same_origin(origin: str, host: Host) -> bool:
    """Whether ``origin`` (an ``Origin`` or ``Referer`` value) is ``http(s)://`` the host and
    port ``host`` gives (a port left out is the scheme's default). Either scheme: the same
    host and port serve one of them, and a TLS proxy in front makes the browser's https."""
    try:
        url = urlsplit(origin.strip())
        oport = url.port
    except ValueError:
        return False
    default = _DEFAULT_PORTS.get(url.scheme.lower())
    if default is None or not url.hostname:
        return False
    return url.hostname.lower() == host.name and (oport or default) == (host.port or default)


def valid_id(value: str | None) -> bool:
    return value is not None and _ID.fullmatch(value) is not None


def form_token(secret: bytes, browser_id: str) -> str:
    """The XSRF token a form of this console carries for the browser ``browser_id``."""
    # guard: console-xsrf-token-is-an-hmac
    token = hmac.new(secret, browser_id.encode(), hashlib.sha256).hexdigest()
    return token


def control_character(arguments: Mapping[str, list[bytes]]) -> str | None:
    """The name of the first field (or field name) holding a control character, else None
    (bytes that are not UTF-8 are left to the decoding, which refuses them)."""
    for name, values in arguments.items():
        for raw in (name.encode("utf-8", "surrogateescape"), *values):
            if _CONTROL.search(raw.decode("utf-8", "surrogateescape")):
                return name
    return None
