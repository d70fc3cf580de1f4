"""Discovery beacons and the tower welcome, as the C reference sends them.

Node → tower (4 frames): ``"B" | node ID | host | port as decimal text``.
Tower → nodes (3 frames): ``"B" | node ID | "tcp://host:port"``.
The tower's XPUB sends the single frame ``"W"`` to every new subscriber.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import WireError
from ..ids import is_node_id

BEACON = b"B"
WELCOME = b"W"


@dataclass(frozen=True, slots=True)
class NodeBeacon:
    node_id: str
    host: str
    port: int

    def encode(self) -> list[bytes]:
        return [BEACON, self.node_id.encode(), self.host.encode(), str(self.port).encode()]


@dataclass(frozen=True, slots=True)
class TowerBeacon:
    node_id: str
    endpoint: str

    def encode(self) -> list[bytes]:
        return [BEACON, self.node_id.encode(), self.endpoint.encode()]


def _text(frame: bytes, what: str) -> str:
    try:
        return bytes(frame).decode("ascii")
    except UnicodeDecodeError as exc:
        raise WireError(f"beacon {what} is not ASCII") from exc


def _node_id(frame: bytes) -> str:
    node_id = _text(frame, "node ID")
    if not is_node_id(node_id):
        raise WireError("beacon node ID is not 32 upper-case hex characters")
    return node_id


def decode_node_beacon(frames: Sequence[bytes]) -> NodeBeacon:
    if len(frames) != 4 or bytes(frames[0]) != BEACON:
        raise WireError("a node beacon has 4 frames starting with 'B'")
    port_text = _text(frames[3], "port")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise WireError("beacon port is not a decimal port number")
    return NodeBeacon(_node_id(frames[1]), _text(frames[2], "host"), int(port_text))


def decode_tower_beacon(frames: Sequence[bytes]) -> TowerBeacon:
    if len(frames) != 3 or bytes(frames[0]) != BEACON:
        raise WireError("a tower beacon has 3 frames starting with 'B'")
    endpoint = _text(frames[2], "endpoint")
    if not endpoint.startswith("tcp://") or ":" not in endpoint[6:]:
        raise WireError("tower beacon endpoint is not tcp://host:port")
    return TowerBeacon(_node_id(frames[1]), endpoint)


def endpoint_for(beacon: NodeBeacon, peer_address: str | None) -> str:
    """The endpoint a tower announces for ``beacon`` (empty host: the peer address)."""
    host = beacon.host or peer_address or "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"tcp://{host}:{beacon.port}"
