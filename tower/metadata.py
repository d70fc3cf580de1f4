"""A tower's metadata Raft peer, beside its beacon relay.

Port convention for a tower whose beacon port is ``PORT``: relay XPUB ``PORT+1``,
Raft ROUTER ``PORT+2``, StateBroadcast PUB ``PORT+3``. A node that knows a tower's
beacon address therefore knows where its Raft peer and broadcasts are.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import tempfile
from pathlib import Path

from dafka.config import TowerAddress
from dafka.errors import ConfigError
from dafka.metadata.client import DEFAULT_CLUSTER, RAFT_PORT_OFFSET
from dafka.metadata.follower import BROADCAST_PORT_OFFSET
from dafka.metadata.state import MetadataStateMachine
from dafka.raft.peer import PeerOptions, RaftPeer
from dafka.raft.types import Peer

from .relay import Tower

__all__ = [
    "PORTS_PER_TOWER",
    "TowerNode",
    "default_data_dir",
    "free_port_block",
    "parse_raft_peers",
]

PORTS_PER_TOWER = 4


def free_port_block(host: str, count: int = PORTS_PER_TOWER) -> int:
    """A port ``p`` such that ``p .. p+count-1`` are free on ``host`` right now."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind((host, 0))
            base = probe.getsockname()[1]
        if base + count >= 65535:
            continue
        ok = True
        for port in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind((host, port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise ConfigError(f"no {count} free neighbouring ports found on {host}")


def default_data_dir(port: int) -> str:
    """``.dafka/tower-PORT``; for port 0 (ports picked at random, so a new peer URL each
    run) a temporary directory removed at exit."""
    if port:
        return f".dafka/tower-{port}"
    path = tempfile.mkdtemp(prefix="dafka-tower-")
    atexit.register(shutil.rmtree, path, True)
    return path


def parse_raft_peers(spec: str | None) -> list[tuple[str, TowerAddress]]:
    """``ID=HOST:PORT,...`` (each a tower's beacon address) → [(id, address)]."""
    from dafka.config import parse_endpoint

    out: list[tuple[str, TowerAddress]] = []
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        peer_id, sep, addr = item.partition("=")
        if not sep or not peer_id:
            raise ConfigError(f"bad --raft-peers item {item!r}: expected ID=HOST:PORT")
        host, port = parse_endpoint(addr, "raft peer address")
        address = TowerAddress(host, port)
        for other_id, other in out:
            if other_id == peer_id or other == address:
                raise ConfigError(
                    f"--raft-peers names {other_id}={other} and {peer_id}={address}: "
                    "every tower needs an ID and an address of its own"
                )
        out.append((peer_id, address))
    return out


def _same_address(a: TowerAddress, b: TowerAddress) -> bool:
    """Same port and same host: literally, by a wildcard bind, or resolved alike."""
    if a.port != b.port:
        return False
    if a.host == b.host or b.host in ("0.0.0.0", "*", "::"):
        return True
    try:
        resolved = [
            {info[4][0] for info in socket.getaddrinfo(h, None, type=socket.SOCK_STREAM)}
            for h in (a.host, b.host)
        ]
    except OSError:
        return False
    return bool(resolved[0] & resolved[1])


def _raft(address: TowerAddress) -> str:
    return f"tcp://{address.host}:{address.port + RAFT_PORT_OFFSET}"


class TowerNode:
    """A beacon relay plus the metadata Raft peer of one tower."""

    def __init__(
        self,
        address: TowerAddress,
        *,
        data_dir: str | os.PathLike[str],
        raft_peers: list[tuple[str, TowerAddress]] | None = None,
        peer_id: str | None = None,
        cluster: str = DEFAULT_CLUSTER,
        options: PeerOptions | None = None,
    ) -> None:
        picked = address.port == 0
        if picked:
            address = TowerAddress(address.host, free_port_block(address.host))
        self.address = address
        peers = raft_peers or []
        me = [pid for pid, a in peers if a == address]
        self.peer_id = peer_id or (me[0] if me else "t1")
        if peers and (self.peer_id not in {pid for pid, _ in peers} or not (me or peer_id)):
            raise ConfigError(
                f"this tower ({address}) is not in --raft-peers; give its own ID=HOST:PORT too"
            )
        if peers and peer_id:
            listed = dict(peers)[peer_id]
            if picked:
                raise ConfigError(
                    f"--id {peer_id} is {listed} in --raft-peers: bind that address "
                    "(--bind), not port 0"
                )
            if not _same_address(listed, address):
                # Another tower's ID: two peers would vote and log under one name.
                raise ConfigError(
                    f"--id {peer_id} is {listed} in --raft-peers, but this tower binds "
                    f"{address}: give the ID of this tower's own address"
                    + (f" ({me[0]})" if me else "")
                )
        self.cluster = cluster
        self.data_dir = Path(data_dir)
        self.sm = MetadataStateMachine()
        members = [Peer(pid, _raft(a)) for pid, a in peers] or [Peer(self.peer_id, _raft(address))]
        self.raft = RaftPeer(
            self.peer_id,
            _raft(address),
            members,
            self.data_dir,
            cluster,
            self.sm,
            broadcast=f"tcp://{address.host}:{address.port + BROADCAST_PORT_OFFSET}",
            options=options or PeerOptions(snapshot_every=1000),
        )
        self.relay = Tower(address)

    @property
    def raft_url(self) -> str:
        return _raft(self.address)

    def start(self) -> TowerNode:
        self.relay.start()
        try:
            self.raft.start()
        except BaseException:
            self.relay.stop()
            raise
        return self

    @property
    def running(self) -> bool:
        return self.raft.running

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.raft.stop()
        self.relay.stop()
