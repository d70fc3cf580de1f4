"""A tower's metadata Raft peer, beside its beacon relay.

Port convention for a tower whose beacon port is ``PORT``: relay XPUB ``PORT+1``,
Raft ROUTER ``PORT+2``, StateBroadcast PUB ``PORT+3``. A node that knows a tower's
beacon address therefore knows where its Raft peer and broadcasts are.

Admin bootstrap: a tower given admin keys (``--admin-key``) proposes ``admins.init``
with them once the group has a leader and the metadata lists no admin yet. If another
``admins.init`` got there first and the admins do not include one of this tower's keys,
the tower stops with an error (someone else set up the group). A one-tower group
started without admin keys makes one in its data directory (:func:`local_admin_key`), so
a fresh group never waits unclaimed.

Snapshots: the tower's admin keys (``--admin-key``, or the one made in its data directory)
are the root of trust of its metadata replica: a snapshot it is sent, or finds in its data
directory at start, is installed only if every item in it carries an admin-signed command
that descends from root admins among those keys
(:meth:`~dafka.metadata.state.MetadataStateMachine.check_snapshot`).

Admission: the Raft peer's leader checks every new RequestUpdate with the replica's
:meth:`~dafka.metadata.state.MetadataStateMachine.admission` before it proposes it, so a
command the metadata would refuse for who sent it (unsigned, not signed by an admin,
stale, replayed) is answered with a final failure and never appended to the log. The
bootstrap's unsigned ``admins.init`` passes while the metadata has no admin.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import random
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from dafka.config import TowerAddress
from dafka.errors import ConfigError, DafkaError, RaftError
from dafka.metadata.client import DEFAULT_CLUSTER, RAFT_PORT_OFFSET
from dafka.metadata.follower import BROADCAST_PORT_OFFSET
from dafka.metadata.signing import check_public_key, create_admin_key, load_admin_key
from dafka.metadata.state import MetadataStateMachine, command, decode_config
from dafka.raft import (
    ClientCurve,
    Entry,
    Peer,
    PeerOptions,
    RaftClient,
    RaftCurve,
    RaftPeer,
    curve_public_key,
    split_key,
)
from dafka.security import identity as ident

from .relay import Tower


class ObservedMetadata(MetadataStateMachine):
    """The tower's metadata replica, telling one listener (the relay's CURVE gate) the
    configuration after every change it applies or restores. The Raft thread applies;
    :meth:`listen` is called from another, so both take one lock (no view is read while
    a change is half applied)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listener: Callable[[dict[str, Any]], None] | None = None
        self._told = -1
        self._lock = threading.RLock()  # restore checks the snapshot under it too

    def listen(self, listener: Callable[[dict[str, Any]], None]) -> None:
        with self._lock:
            self._listener = listener
            self._told = -1
            self._tell()

    def apply(self, entry: Entry) -> Any:
        with self._lock:
            result = super().apply(entry)
            self._tell()
            return result

    def restore(self, data: bytes) -> None:
        with self._lock:
            super().restore(data)
            self._tell()

    def admission(self, data: bytes) -> str | None:
        with self._lock:
            return super().admission(data)

    def check_snapshot(self, data: bytes) -> None:
        with self._lock:
            super().check_snapshot(data)

    def _tell(self) -> None:
        listener = self._listener
        if listener is not None and self.revision != self._told:
            self._told = self.revision
            listener(self.view())


__all__ = [
    "PORTS_PER_TOWER",
    "TowerNode",
    "admin_public_keys",
    "default_data_dir",
    "free_port_block",
    "local_admin_key",
    "parse_raft_peers",
]

log = logging.getLogger(__name__)

PORTS_PER_TOWER = 4
ADMIN_KEY_FILE = "admin.key"
EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
PICKED_PORT_FLOOR = 20_000
MIN_PICKED_PORTS = 1_000


def ephemeral_port_range() -> tuple[int, int]:
    """The range the kernel picks outgoing connections' source ports from (Linux's
    ``ip_local_port_range``; 32768-60999, its default, where that file is missing)."""
    try:
        low, high = (int(x) for x in Path(EPHEMERAL_RANGE_FILE).read_text().split()[:2])
    except (OSError, ValueError):
        return 32_768, 60_999
    return low, high


def free_port_block(host: str, count: int = PORTS_PER_TOWER) -> int:
    """A port ``p`` such that ``p .. p+count-1`` are free on ``host`` right now, picked
    at random below the ephemeral range: a port in that range can be handed to an
    outgoing connection (a peer tower's, a node's) between this check and our bind. A host
    whose ephemeral range leaves fewer than ``MIN_PICKED_PORTS`` below it gets the kernel's
    pick, in that range, as before."""
    low, _high = ephemeral_port_range()
    top = min(low, 65_536) - count
    roomy = top - PICKED_PORT_FLOOR >= MIN_PICKED_PORTS
    for _ in range(200):
        if roomy:
            base = random.randrange(PICKED_PORT_FLOOR, top)
        else:
            with socket.socket() as probe:
                probe.bind((host, 0))
                base = probe.getsockname()[1]
            if base + count > 65_535:
                continue
        if all(_free(host, port) for port in range(base, base + count)):
            return base
    raise ConfigError(f"no {count} free neighbouring ports found on {host}")


def _free(host: str, port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def default_data_dir(port: int) -> str:
    """``.dafka/tower-PORT``; for port 0 (ports picked at random, so a new peer URL each
    run) a temporary directory removed at exit."""
    if port:
        return f".dafka/tower-{port}"
    path = tempfile.mkdtemp(prefix="dafka-tower-")
    atexit.register(shutil.rmtree, path, True)
    return path


def relay_peers_of(spec: str | None) -> list[TowerAddress]:
    """The beacon addresses (and keys) of ``ID=HOST:PORT[@PUBHEX],...``: the towers of a
    metadata group, which share the beacon load by default (``tower/peering.py``)."""
    from dafka.config import parse_towers

    items = [item.strip().partition("=")[2] for item in (spec or "").split(",")]
    items = [item for item in items if item]
    return list(parse_towers(items)) if items else []


def parse_raft_peer_keys(spec: str | None) -> dict[str, bytes]:
    """The ``@PUBHEX`` keys of ``ID=HOST:PORT@PUBHEX,...`` items, as Z85 CURVE keys by ID."""
    keys: dict[str, bytes] = {}
    for item in (spec or "").split(","):
        peer_id, _, rest = item.strip().partition("=")
        key = split_key(rest, f"--raft-peers {peer_id}")[1]
        if key is not None:
            keys[peer_id] = key
    return keys


def tower_server_keys(
    peers: Sequence[tuple[str, TowerAddress]], keys: Mapping[str, bytes]
) -> dict[str, bytes]:
    """The CURVE keys of the towers' Raft and broadcast URLs, for a
    :class:`~dafka.raft.peer.ClientCurve` (``MetadataView`` / ``MetadataClient``)."""
    out: dict[str, bytes] = {}
    for peer_id, address in peers:
        if peer_id in keys:
            out[_raft(address)] = out[_broadcast(address)] = keys[peer_id]
    return out


def parse_raft_peers(spec: str | None) -> list[tuple[str, TowerAddress]]:
    """``ID=HOST:PORT,...`` (each a tower's beacon address, optionally ``@PUBHEX``) →
    [(id, address)]."""
    from dafka.config import parse_endpoint

    out: list[tuple[str, TowerAddress]] = []
    for item in (spec or "").split(","):
        item = item.strip()
        if not item:
            continue
        peer_id, sep, addr = item.partition("=")
        addr = split_key(addr, f"--raft-peers {peer_id}")[0]
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


def admin_public_keys(keys: Sequence[str], key_files: Sequence[str]) -> list[str]:
    """``--admin-key`` values and the public halves of ``--admin-key-file`` files."""
    out = [check_public_key(k) for k in keys]
    return out + [load_admin_key(f).public_key.hex() for f in key_files]


def local_admin_key(data_dir: str | os.PathLike[str]) -> tuple[str, Path]:
    """(public key, file) of ``DATA_DIR/admin.key``, made on first use: the admin of a
    one-tower group started without admin keys."""
    path = Path(data_dir) / ADMIN_KEY_FILE
    exists = path.exists() or path.is_symlink()
    admin = load_admin_key(path) if exists else create_admin_key(path)
    return admin.public_key.hex(), path


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


def _broadcast(address: TowerAddress) -> str:
    return f"tcp://{address.host}:{address.port + BROADCAST_PORT_OFFSET}"


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
        admin_keys: Sequence[str] = (),
        raft_curve: bool = False,
        raft_peer_keys: Mapping[str, bytes] | None = None,
        insecure_null: bool = False,
        accept_log_loss: bool = False,
        relay_peers: Sequence[TowerAddress] = (),
    ) -> None:
        self.admin_keys = sorted({check_public_key(k) for k in admin_keys})
        self.bootstrap_error: DafkaError | None = None
        self._stop = threading.Event()
        self._bootstrapper: threading.Thread | None = None
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
        # the bootstrap admins this tower was given are the root every snapshot it installs
        # (from a peer, or its own stored one) must descend from; a one-tower group started
        # without them has the key it made in its data directory (local_admin_key)
        anchors = self.admin_keys
        own_key = self.data_dir / ADMIN_KEY_FILE
        if not anchors and not peers and (own_key.exists() or own_key.is_symlink()):
            anchors = [load_admin_key(own_key).public_key.hex()]
        self.sm = ObservedMetadata(cluster=cluster, anchors=anchors)
        members = [Peer(pid, _raft(a)) for pid, a in peers] or [Peer(self.peer_id, _raft(address))]
        self.members = [p.url for p in members]
        curve = self.client_curve = None
        self.public_key: str | None = None
        if raft_curve:
            # the tower's node key in its data dir is its Raft key
            identity = ident.load_or_create(self.data_dir)
            self.public_key = identity.public_key.hex()
            keys = dict(raft_peer_keys or {})
            own = curve_public_key(identity.public_key)
            if keys.setdefault(self.peer_id, own) != own:
                raise ConfigError(
                    f"--raft-peers gives {self.peer_id} another key than this tower's "
                    f"({self.public_key}, in {self.data_dir / ident.KEY_FILE})"
                )
            missing = sorted(pid for pid, _ in peers if pid not in keys)
            if missing:
                raise ConfigError(
                    f"--raft-curve: give --raft-peers ID=HOST:PORT@PUBHEX for {', '.join(missing)}"
                )
            admins = [curve_public_key(bytes.fromhex(k)) for k in self.admin_keys]
            curve = RaftCurve.for_identity(identity, keys, admins)
            towers: list[tuple[str, TowerAddress]] = list(peers) or [(self.peer_id, address)]
            self.client_curve = ClientCurve.for_identity(identity, tower_server_keys(towers, keys))
        # guard: tower-wires-metadata-admission-raft
        self.raft = RaftPeer(
            self.peer_id,
            _raft(address),
            members,
            self.data_dir,
            cluster,
            self.sm,
            broadcast=_broadcast(address),
            options=replace(
                options or PeerOptions(snapshot_every=1000), accept_log_loss=accept_log_loss
            ),
            curve=curve,
            admit=self.sm.admission,  # unsigned / non-admin commands never reach the log
            insecure_null=insecure_null,  # NULL towers in a group: --raft-insecure-null
        )
        self.relay = Tower(address, peers=relay_peers)

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
        if self.admin_keys:
            self.bootstrap(self.admin_keys)
        return self

    def bootstrap(self, admin_keys: Sequence[str], wait: float | None = None) -> None:
        """Make ``admin_keys`` the first admins if the metadata has none, in the background.

        Waits up to ``wait`` s for it to be settled (default: 5 s for a one-tower group,
        which needs nobody else; 0 for a larger one, whose quorum may not be up yet)."""
        self.admin_keys = sorted({check_public_key(k) for k in admin_keys})
        self.sm.anchors = list(self.admin_keys)
        if self._bootstrapper is None:
            self._bootstrapper = threading.Thread(
                target=self._bootstrap, name="dafka-admin-bootstrap", daemon=True
            )
            self._bootstrapper.start()
        if wait is None:
            wait = 5.0 if len(self.members) == 1 else 0.0
        if wait > 0:
            self._bootstrapper.join(wait)

    def _bootstrap(self) -> None:
        """Propose ``admins.init`` until the metadata lists admins; check they are ours."""
        proposed = False
        client = RaftClient(self.members, self.cluster, timeout=2.0, curve=self.client_curve)
        try:
            while not self._stop.is_set():
                try:
                    admins = decode_config(client.read([b"config"])).get("admins") or []
                    if not admins:
                        # proposed even when the leader refuses it (another admins.init
                        # was applied first): then the admins read next are someone else's
                        proposed = True
                        client.update(command("admins.init", admins=self.admin_keys))
                        continue
                except DafkaError as exc:
                    log.debug("tower.admin_bootstrap.retry error=%s", exc)
                    self._stop.wait(0.5)
                    continue
                # guard: tower-detects-lost-admin-bootstrap
                if proposed and not set(admins) & set(self.admin_keys):
                    self.bootstrap_error = RaftError(
                        f"the metadata's admins were set to {', '.join(admins)} before this "
                        f"tower's admin keys ({', '.join(self.admin_keys)}) were: someone else "
                        "set up this group; start it again on an empty data directory"
                    )
                    log.error("tower.admin_bootstrap.lost admins=%s", admins)
                elif proposed:
                    log.info("tower.admin_bootstrap.done admins=%s", admins)
                elif not set(admins) & set(self.admin_keys):
                    log.warning(
                        "tower.admin_bootstrap.ignored: none of this tower's admin keys is an "
                        "admin of the metadata; admins=%s",
                        admins,
                    )
                return
        finally:
            client.close()

    @property
    def running(self) -> bool:
        return self.raft.running and self.bootstrap_error is None and self.relay.running

    def failure(self) -> DafkaError:
        """Why :attr:`running` is False, as the one line a command exits with."""
        if self.relay.crashed is not None:
            return DafkaError(f"the tower's beacon relay stopped: {self.relay.crashed!r}")
        if self.bootstrap_error is not None:
            return self.bootstrap_error
        if not self.relay.running:
            return DafkaError("the tower's beacon relay stopped")
        return RaftError(f"the tower's metadata peer {self.peer_id} stopped: {self.raft.failure()}")

    @property
    def error(self) -> BaseException | None:
        """Why the tower stopped working: the Raft peer's error or a lost bootstrap."""
        return self.raft.error or self.bootstrap_error

    def follow_metadata(
        self, listener: Callable[[dict[str, Any]], None], wait: float = 5.0
    ) -> None:
        """Call ``listener`` with the metadata now and after every change (on the Raft
        thread). "Now" is once this replica has applied what it had committed when it
        started (up to ``wait`` s), so a restarted tower does not first tell the
        defaults of an empty log."""
        core = self.raft.core
        target = core.commit
        deadline = time.monotonic() + wait
        while core.applied < target and time.monotonic() < deadline and self.raft.running:
            self._stop.wait(0.01)
        self.sm.listen(listener)

    def stop(self) -> None:
        self._stop.set()
        if self._bootstrapper is not None:
            self._bootstrapper.join(5.0)
        with contextlib.suppress(Exception):
            self.raft.stop()
        self.relay.stop()
