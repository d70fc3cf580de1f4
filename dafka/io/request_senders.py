"""Which node a request on the data SUB came from: its connection, not what it says.

A node's data SUB connects to every peer's data XPUB (``dafka.io.node``), one TCP
connection per peer endpoint, and a request (FETCH, GET-HEADS, CONSUMER-HELLO) comes on
the connection to the XPUB of the node that published it. libzmq tells which socket a
message was read from (``ZMQ_SRCFD``); its remote address is the endpoint the SUB
connected to, so the node it connected to it for is the sender
(:class:`~dafka.core.read_guard.Sender`):

* under CURVE the SUB connected with the key the node's beacon carried, whose node ID it
  is (``node_id_for``), and the handshake proved the other end holds that key: ``proven``;
* under NULL it is the node ID the beacon for that endpoint named: a hint (beacons are not
  authenticated), but a forger must then beacon the endpoint of the node it impersonates,
  and its own requests still come on its own connection.

A host name in an endpoint is resolved once, when a request comes from an address that
no IP endpoint matches (cached, bounded). A lookup that fails (the connection closed
meanwhile) gives ``node=""``. Loop thread only.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from typing import Final

import zmq

from ..core.read_guard import Sender
from ..security.identity import node_id_for

log = logging.getLogger(__name__)

__all__ = ["PeerSenders"]

_MAX_PEERS: Final = 100_000
_MAX_NAMES: Final = 1024

Address = tuple[str, int]


def _split(endpoint: str) -> tuple[str, int] | None:
    """``tcp://host:port`` -> (host without brackets, port)."""
    if not endpoint.startswith("tcp://"):
        return None
    host, sep, port = endpoint[6:].rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _ip(host: str) -> str | None:
    try:
        ip = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return None
    return str(ip.ipv4_mapped or ip) if ip.version == 6 else str(ip)


class PeerSenders:
    """The node behind each connection of the data SUB (``proven`` under CURVE)."""

    def __init__(self, curve: bool) -> None:
        self.curve = curve
        self._announced: dict[str, str] = {}  # endpoint -> node ID its latest beacon named
        self._by_address: dict[Address, str] = {}  # connected (IP, port) -> node ID
        self._by_name: dict[tuple[str, int], str] = {}  # connected (DNS name, port) -> node
        self._resolved: dict[str, frozenset[str]] = {}  # DNS name -> its IPs
        self._endpoints: dict[Address, str] = {}  # connected (IP or DNS name, port) -> endpoint
        self.generation = 0
        """Counts connections made and dropped: a cache of who is behind a descriptor
        (``dafka.io.peer_liveness``) is stale once it moves."""
        self.unknown = 0
        """Requests whose connection no connected endpoint matched."""

    def announced(self, endpoint: str, node_id: str) -> None:
        """A beacon named ``node_id`` at ``endpoint`` (NULL: who the endpoint is)."""
        if endpoint in self._announced or len(self._announced) < _MAX_PEERS:
            self._announced[endpoint] = node_id

    def connected(self, endpoint: str, key: bytes | None) -> None:
        """The SUB connected to ``endpoint``, under CURVE with the Ed25519 ``key`` whose
        CURVE key it gave as the server's: that key's node is behind it from now on."""
        parts = _split(endpoint)
        if parts is None:
            return
        if self.curve:
            if key is None:
                return
            # guard: under-curve-connection-stands-key
            node = node_id_for(key)
        else:
            node = self._announced.get(endpoint, "")
        host, port = parts
        self.generation += 1
        ip = _ip(host)
        if ip is not None:
            self._by_address[(ip, port)] = node
        else:
            self._by_name[(host, port)] = node
        self._endpoints[(ip or host, port)] = endpoint

    def disconnected(self, endpoint: str) -> None:
        parts = _split(endpoint)
        if parts is None:
            return
        host, port = parts
        self.generation += 1
        ip = _ip(host)
        if ip is not None:
            self._by_address.pop((ip, port), None)
        else:
            self._by_name.pop((host, port), None)
        self._endpoints.pop((ip or host, port), None)

    def sender(self, frame: zmq.Frame) -> Sender:
        """The sender of the message whose first frame is ``frame``."""
        return Sender(self._node_of(frame), self.curve)

    def endpoint_of(self, frame: zmq.Frame) -> str | None:
        """The endpoint the SUB connected to whose connection ``frame`` came on (None: not
        one connected to now): who sent it, whatever it says (discovery's liveness)."""
        address = _address_of(frame)
        if address is None:
            return None
        endpoint = self._endpoints.get(address)
        if endpoint is None and self._by_name:
            ip, port = address
            for (host, named_port), _ in self._by_name.items():
                if named_port == port and ip in self._resolve(host):
                    return self._endpoints.get((host, port))
        return endpoint

    def _node_of(self, frame: zmq.Frame) -> str:
        address = _address_of(frame)
        if address is None:
            self.unknown += 1
            return ""
        node = self._by_address.get(address)
        if node is None:
            node = self._by_host_name(address)
        if node is None:
            self.unknown += 1
            return ""
        return node

    def _by_host_name(self, address: Address) -> str | None:
        ip, port = address
        for (host, named_port), node in self._by_name.items():
            if named_port == port and ip in self._resolve(host):
                return node
        return None

    def _resolve(self, host: str) -> frozenset[str]:
        ips = self._resolved.get(host)
        if ips is None:
            try:
                infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
                found = (_ip(str(info[4][0])) for info in infos)
                ips = frozenset(ip for ip in found if ip is not None)
            except (OSError, UnicodeError) as exc:
                log.warning("request.resolve_failed host=%s error=%s", host, exc)
                ips = frozenset()
            if len(self._resolved) >= _MAX_NAMES:
                self._resolved.clear()
            self._resolved[host] = ips
        return ips


def _address_of(frame: zmq.Frame) -> Address | None:
    """The remote (IP, port) of the connection ``frame`` was read from (``ZMQ_SRCFD``)."""
    try:
        fd = frame.get(zmq.SRCFD)
        sock = socket.socket(fileno=int(fd))
        try:
            peer = sock.getpeername()
        finally:
            sock.detach()
    except (zmq.ZMQError, OSError, ValueError, TypeError):
        return None
    if not isinstance(peer, tuple) or len(peer) < 2:
        return None
    raw = str(peer[0])
    ip = _peer_ips.get(raw)
    if ip is None:  # ipaddress parses in about 10 us: once per address
        if len(_peer_ips) >= _MAX_NAMES:
            _peer_ips.clear()
        ip = _peer_ips[raw] = _ip(raw) or raw
    return (ip, int(peer[1]))


_peer_ips: dict[str, str] = {}
"""A connection's remote address as ``getpeername`` gives it -> as the tables key it."""
