"""Discovery beacons and the tower welcome, as the C reference sends them.

Node → tower (4 frames): ``"B" | node ID | host | port as decimal text``.
Tower → nodes (3 frames): ``"B" | node ID | "tcp://host:port"``.

With CURVE on (ours, ``docs/wire.md`` §6.1) a node adds its 32-byte Ed25519 public
key as a 5th frame and the tower relays it as a 4th: peers derive the node's CURVE
server key from it. Decoders accept a key only if it hashes to the beacon's node ID
(:func:`dafka.security.identity.node_id_for`), so a beacon cannot pair someone's node ID with
another key; a beacon naming a real node's ID and key but another endpoint only
makes peers attempt a CURVE handshake that fails, since the sender lacks the secret.
The tower's XPUB sends the single frame ``"W"`` to every new subscriber.

Service beacons (ours, not in the C reference), node → tower → whoever subscribes
to ``"Q"`` (4 frames): ``"Q" | node ID | "tcp://host:port" | service name``.
A store announces its pull/query endpoint this way (service ``store``, see
``docs/query.md``). Towers relay them unchanged; regular nodes subscribe only to
``"W"`` and ``"B"``, so they never receive them, and a C-reference tower, which
does not subscribe to ``"Q"``, simply never relays them.

Beacons are unsigned hints, and every node connects to what they name, so the
decoders (used by towers before relaying and by nodes before connecting) take
only what names a real endpoint: a host that is an IPv4 or IPv6 literal (in
brackets inside an endpoint) or a DNS name (letters, digits, ``-`` and ``.``,
labels of 1..63, at most 253 characters: no NUL, control bytes, spaces or
``*``), and a port in 1024..65535. Ports below 1024 are refused because no Dafka
node binds one, and a fake beacon naming one would make every node connect to
some privileged service (ssh, smtp...) of the host it names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import WireError
from ..ids import is_node_id
from ..security.identity import node_id_for

BEACON = b"B"
WELCOME = b"W"
SERVICE = b"Q"
ANY = b"A"
"""The relay prefix of the beacons of nodes every node may need (:mod:`dafka.wire.interest`)."""
SCOPED = b"T"
"""The relay prefix of a beacon relayed for one topic: ``T topic NUL``."""
REPLAYED = "tower-replayed"
"""The service name of a tower's end-of-replay beacon (``Q | tower ID | its relay endpoint |
"tower-replayed"``): sent by the tower itself after the service beacons it replays to a new
subscriber (``tower/service_replay.py``); a tower never relays one from a node."""
SERVICE_WARM_AFTER = 1.5
"""Seconds to listen to hear every live store's service beacon: one beacon interval (1 s) plus
a margin. A locator's first wait, unless every tower says it has replayed all it knows."""
MAX_SERVICE_NAME = 32
_SERVICE_NAME = re.compile(r"[a-z][a-z0-9_-]*\Z")
MIN_PORT = 1024
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DNS_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\.?\Z")


@dataclass(frozen=True, slots=True)
class NodeBeacon:
    node_id: str
    host: str
    port: int
    public_key: bytes | None = None
    """The node's Ed25519 public key (a 5th frame), sent when CURVE is on."""

    def encode(self) -> list[bytes]:
        """The 4 (5 with a key) frames; raises :class:`WireError` for what the decoder
        would refuse."""
        node_id = _check_node_id(self.node_id)
        _check_port(self.port)
        check_node_host(self.host)
        frames = [BEACON, node_id.encode(), _ascii(self.host, "host"), str(self.port).encode()]
        if self.public_key is not None:
            frames.append(_check_key(node_id, self.public_key))
        return frames


@dataclass(frozen=True, slots=True)
class TowerBeacon:
    node_id: str
    endpoint: str
    public_key: bytes | None = None
    """The node's Ed25519 public key (a 4th frame), relayed when the node sent one."""

    def encode(self) -> list[bytes]:
        """The 3 (4 with a key) frames; raises :class:`WireError` for what the decoder
        would refuse."""
        node_id = _check_node_id(self.node_id)
        _check_endpoint(self.endpoint)
        frames = [BEACON, node_id.encode(), _ascii(self.endpoint, "endpoint")]
        if self.public_key is not None:
            frames.append(_check_key(node_id, self.public_key))
        return frames


@dataclass(frozen=True, slots=True)
class ServiceBeacon:
    """A node's extra service endpoint, e.g. a store's query endpoint (``service="store"``)."""

    node_id: str
    endpoint: str
    service: str

    def encode(self) -> list[bytes]:
        """The 4 frames; raises :class:`WireError` for what the decoder would refuse."""
        node_id = _check_node_id(self.node_id)
        _check_endpoint(self.endpoint)
        _check_service(self.service)
        return [
            SERVICE,
            node_id.encode(),
            _ascii(self.endpoint, "endpoint"),
            self.service.encode("ascii"),
        ]


def _check_service(name: str) -> None:
    if (
        not isinstance(name, str)
        or not 0 < len(name) <= MAX_SERVICE_NAME
        or not name.isascii()
        or not _SERVICE_NAME.match(name)
    ):
        raise WireError("service name is not 1..32 of [a-z0-9_-] starting with a letter")


def _text(frame: bytes, what: str) -> str:
    try:
        return bytes(frame).decode("ascii")
    except UnicodeDecodeError as exc:
        raise WireError(f"beacon {what} is not ASCII") from exc


def _ascii(text: str, what: str) -> bytes:
    try:
        return text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise WireError(f"beacon {what} is not ASCII") from exc


def _check_node_id(node_id: str) -> str:
    if not isinstance(node_id, str) or not is_node_id(node_id):
        raise WireError("beacon node ID is not 32 upper-case hex characters")
    return node_id


def _check_key(node_id: str, key: bytes) -> bytes:
    key = bytes(key)
    # guard: beacon-key-owns-node-id
    if len(key) != 32 or node_id_for(key) != node_id:
        raise WireError("beacon public key does not own the beacon's node ID")
    return key


def _check_port(port: int) -> None:
    # guard: beacon-ports-below-1024-refused
    if isinstance(port, bool) or not isinstance(port, int) or not MIN_PORT <= port < 65536:
        raise WireError(f"beacon port {port!r} is not in {MIN_PORT}..65535")


def _check_host(host: str, *, empty: bool = False, bracketed: bool = False) -> None:
    """A host a node may connect to: an IP literal or a DNS name (see the module doc)."""
    if not isinstance(host, str):
        raise WireError("beacon host is not text")
    if not host:
        if empty:
            return
        raise WireError("beacon host is empty")
    if len(host) > 255:
        raise WireError("beacon host is longer than 255 characters")
    if bracketed and host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError as exc:
            raise WireError("beacon host in brackets is not an IPv6 address") from exc
        return
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if len(host) <= 253 and host.isascii() and _DNS_NAME.match(host):
            return
        raise WireError(f"beacon host {host!r} is not an IP address or a DNS name") from None
    if bracketed and ip.version == 6:
        raise WireError("an IPv6 address in an endpoint needs brackets")


def check_node_host(host: str) -> None:
    """A node beacon's host: empty (the tower uses the peer's address), an IP literal
    (IPv6 with or without brackets) or a DNS name."""
    if isinstance(host, str) and host.startswith("["):
        _check_host(host, bracketed=True)
    else:
        _check_host(host, empty=True)


def _parse_port(text: str) -> int:
    # At most 5 ASCII digits: also keeps int() away from huge digit strings.
    if not (0 < len(text) <= 5 and text.isascii() and text.isdigit()):
        raise WireError("beacon port is not a decimal port number")
    port = int(text)
    _check_port(port)
    return port


def _check_endpoint(endpoint: str) -> None:
    if not endpoint.startswith("tcp://"):
        raise WireError("tower beacon endpoint is not tcp://host:port")
    host, sep, port = endpoint[6:].rpartition(":")
    if not sep or not host:
        raise WireError("tower beacon endpoint is not tcp://host:port")
    _parse_port(port)
    # guard: beacon-endpoints-checked-nodes
    _check_host(host, bracketed=True)


def _node_id(frame: bytes) -> str:
    return _check_node_id(_text(frame, "node ID"))


def decode_node_beacon(frames: Sequence[bytes]) -> NodeBeacon:
    if len(frames) not in (4, 5) or bytes(frames[0]) != BEACON:
        raise WireError("a node beacon has 4 (or 5) frames starting with 'B'")
    port = _parse_port(_text(frames[3], "port"))
    host = _text(frames[2], "host")
    # guard: beacon-hosts-ip-literals-dns
    check_node_host(host)
    node_id = _node_id(frames[1])
    key = _check_key(node_id, frames[4]) if len(frames) == 5 else None
    return NodeBeacon(node_id, host, port, key)


def is_relayed_prefix(frame: bytes) -> bool:
    """Whether a tower beacon's first frame is one a tower sends: ``B``, or the prefixes it
    relays interest beacons under, ``A`` and ``T topic NUL`` (:mod:`dafka.wire.interest`)."""
    frame = bytes(frame)
    if frame in (BEACON, ANY):
        return True
    return len(frame) > 2 and frame[:1] == SCOPED and frame.endswith(b"\0")


def decode_tower_beacon(frames: Sequence[bytes]) -> TowerBeacon:
    if len(frames) not in (3, 4) or not is_relayed_prefix(frames[0]):
        raise WireError("a tower beacon has 3 (or 4) frames starting with 'B', 'A' or 'T'")
    endpoint = _text(frames[2], "endpoint")
    _check_endpoint(endpoint)
    node_id = _node_id(frames[1])
    key = _check_key(node_id, frames[3]) if len(frames) == 4 else None
    return TowerBeacon(node_id, endpoint, key)


MEMO_BEACONS = 16_384
"""Beacons a :class:`TowerBeaconMemo` remembers before it forgets them all."""
MEMO_BYTES = 4 << 20
"""Bytes of beacon frames it remembers before it forgets them all (a frame on a node's
beacon SUB is at most 4 KiB: ``dafka.io.bounds.SMALL_FRAME_BYTES``)."""


class TowerBeaconMemo:
    """:func:`decode_tower_beacon`, remembering what it decoded (issue 39: an idle node's
    CPU). Every peer beacons every second in the same bytes, and checking a beacon's
    endpoint and key (an IP literal parsed, a node ID derived from a key) was 40% of an
    idle node's loop. A beacon's node ID, endpoint and key are its frames after the relay
    prefix, so the same frames decode to the same :class:`TowerBeacon`: those are looked up
    whole, never by node ID (a node that moves announces another endpoint), and the prefix
    and frame count are checked every time. A frame that failed is never remembered. Bounded
    by :data:`MEMO_BEACONS` and :data:`MEMO_BYTES` of frames whatever peers send (about 7 MiB
    of Python objects at most, measured): past either it starts again empty; a flood of
    distinct beacons costs what decoding each did. One per reader (not thread-safe)."""

    __slots__ = ("_known", "_bytes", "max_beacons", "max_bytes")

    def __init__(self, max_beacons: int = MEMO_BEACONS, max_bytes: int = MEMO_BYTES) -> None:
        self.max_beacons = max_beacons
        self.max_bytes = max_bytes
        self._known: dict[tuple[bytes, ...], TowerBeacon] = {}
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._known)

    def decode(self, frames: Sequence[bytes]) -> TowerBeacon:
        """What :func:`decode_tower_beacon` returns for ``frames`` (or raises)."""
        # guard: beacon-memo-checks-prefix-each-time
        if not (len(frames) in (3, 4) and is_relayed_prefix(frames[0])):
            return decode_tower_beacon(frames)
        # guard: beacon-memo-keyed-by-every-frame
        key = tuple(bytes(f) for f in frames[1:])
        known = self._known.get(key)
        if known is not None:
            return known
        beacon = decode_tower_beacon(frames)
        size = sum(map(len, key))
        # guard: beacon-memo-bounded
        if len(self._known) >= self.max_beacons or self._bytes + size > self.max_bytes:
            self._known.clear()
            self._bytes = 0
        self._known[key] = beacon
        self._bytes += size
        return beacon


def decode_service_beacon(frames: Sequence[bytes]) -> ServiceBeacon:
    if len(frames) != 4 or bytes(frames[0]) != SERVICE:
        raise WireError("a service beacon has 4 frames starting with 'Q'")
    endpoint = _text(frames[2], "endpoint")
    _check_endpoint(endpoint)
    name = _text(frames[3], "service name")
    _check_service(name)
    return ServiceBeacon(_node_id(frames[1]), endpoint, name)


def endpoint_for(beacon: NodeBeacon, peer_address: str | None) -> str:
    """The endpoint a tower announces for ``beacon`` (empty host: the peer address)."""
    host = beacon.host or peer_address or "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"tcp://{host}:{beacon.port}"
