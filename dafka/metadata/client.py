"""Reading and changing the cluster metadata through the towers' Raft group.

A tower at beacon address ``HOST:PORT`` has its Raft peer's ROUTER at
``tcp://HOST:PORT+2`` (:func:`raft_url`), so whoever knows the towers knows the
Raft group. Changes are validated against a linearizable read first, so a user
gets one clear error (unknown topic, bad setting) rather than a silent no-op.

Every change is signed with an admin key (:mod:`.signing`): ``admin`` is an
:class:`~dafka.security.identity.Identity` or a key file; by default ``$DAFKA_ADMIN_KEY`` or
``.dafka/admin.key``, loaded at the first change (reads need no key). After the change is
committed the client reads the metadata again and raises the state machine's reason if
it refused the change (not an admin, stale, ...): a change is reported done only when
the metadata applied it. Before sending, the client asks the check the towers' Raft
leader applies (:meth:`~dafka.metadata.state.MetadataStateMachine.admission`) against
the metadata it just read, so a key that is not an admin gets one clear error and sends
nothing (the leader would refuse it with the ØMQ RAFT protocol's bare final failure).

A ``dafka-kafka`` listener signs its lease commands (:mod:`.leases`) with its own key
(``listener``, which an admin lists in the cluster setting ``listeners``), not an admin key:
:meth:`MetadataClient.take_lease`, :meth:`~MetadataClient.renew_leases`,
:meth:`~MetadataClient.release_lease`, :meth:`~MetadataClient.number_partitions`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..config import TowerAddress, parse_towers, parse_trusted_stores
from ..errors import ConfigError, DafkaError, DafkaTimeout, NothingToChange, RaftError
from ..ids import check_topic_name
from ..raft import ClientCurve, RaftClient
from ..security.curve_keys import curve_public_z85
from ..security.identity import Identity
from .leases import check_broker, check_endpoint, check_resource
from .settings import check_growth, node_id
from .signing import check_public_key, load_admin_key
from .state import (
    MetadataStateMachine,
    check_cluster_settings,
    check_settings,
    decode_config,
    signed_command,
    topic_settings,
)

__all__ = [
    "BROADCAST_PORT_OFFSET",
    "DEFAULT_CLUSTER",
    "RAFT_PORT_OFFSET",
    "MetadataClient",
    "raft_url",
    "tower_curve",
]

DEFAULT_CLUSTER = "dafka"
RAFT_PORT_OFFSET = 2
BROADCAST_PORT_OFFSET = 3


def tower_curve(
    towers: Iterable[TowerAddress], identity: Identity | None = None
) -> ClientCurve | None:
    """CURVE to the towers' Raft and broadcast ports, by the keys the towers are given with
    (``HOST:PORT@KEY``: a tower's node key is its relay, Raft and broadcast key); None when
    a tower has no key. ``identity``: the node's key (a fresh one when None)."""
    addresses = list(towers)
    # guard: metadata-views-speak-curve-keyed
    if not addresses or any(t.key is None for t in addresses):
        return None
    keys: dict[str, bytes] = {}
    for t in addresses:
        assert t.key is not None
        server = curve_public_z85(t.key)
        keys[f"tcp://{t.host}:{t.port + RAFT_PORT_OFFSET}"] = server
        keys[f"tcp://{t.host}:{t.port + BROADCAST_PORT_OFFSET}"] = server
    if identity is None:
        return ClientCurve.ephemeral(keys)
    return ClientCurve.for_identity(identity, keys)


def raft_url(tower: TowerAddress) -> str:
    """The Raft ROUTER of the tower at ``tower`` (beacon port + 2)."""
    return f"tcp://{tower.host}:{tower.port + RAFT_PORT_OFFSET}"


class MetadataClient:
    """Admin operations on the metadata. One thread at a time (like RaftClient)."""

    def __init__(
        self,
        towers: str | Iterable[str] | None = None,
        *,
        cluster: str = DEFAULT_CLUSTER,
        timeout: float = 5.0,
        raft_urls: Iterable[str] | None = None,
        admin: Identity | str | os.PathLike[str] | None = None,
        curve: ClientCurve | None = None,
        listener: Identity | None = None,
    ) -> None:
        """``admin``: the key admin changes are signed with; ``listener``: the key of a
        ``dafka-kafka`` listener, which signs the lease commands (``take_lease`` ...)."""
        urls = list(raft_urls) if raft_urls is not None else []
        if not urls:
            addresses = parse_towers(towers)
            urls = [raft_url(t) for t in addresses]
            if curve is None:
                curve = tower_curve(addresses)  # towers given with @KEY: CURVE, a fresh key
        self.urls = urls
        self.timeout = timeout
        self.cluster = cluster
        self._admin = admin
        self._listener = listener
        self.raft = RaftClient(urls, cluster, timeout=timeout, curve=curve)

    def close(self) -> None:
        self.raft.close()

    def __enter__(self) -> MetadataClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads -------------------------------------------------------------------------------

    def config(self) -> dict[str, Any]:
        """The whole configuration, read linearizably (ReadIndex on the leader)."""
        try:
            return decode_config(self.raft.read([b"config"]))
        except DafkaTimeout:
            raise DafkaTimeout(
                f"no metadata leader answered within {self.timeout} s "
                f"(towers' Raft peers: {', '.join(self.urls)})"
            ) from None

    def topics(self) -> dict[str, dict[str, Any]]:
        return {name: topic_settings(s) for name, s in self.config()["topics"].items()}

    def describe(self, topic: str) -> dict[str, Any]:
        topics = self.config()["topics"]
        if topic not in topics:
            raise ConfigError(f"unknown topic {topic!r}")
        return topic_settings(topics[topic])

    def stores(self) -> list[str]:
        return list(self.config()["stores"])

    def admins(self) -> list[str]:
        """The admin public keys (hex) that may change the metadata."""
        return list(self.config().get("admins", []))

    def listeners(self) -> list[str]:
        """The listener public keys (hex) that may sign lease commands."""
        return list(self.config()["cluster"].get("listeners") or [])

    def leases(self) -> dict[str, dict[str, Any]]:
        """Every lease: resource (``p/TOPIC/INDEX``, ``g/GROUP``, ``b/BROKER``) -> ``{holder,
        epoch, broker, endpoint, beat}`` (holder None: released)."""
        return dict(self.config().get("leases", {}))

    def numbering(self, topic: str) -> dict[str, int]:
        """The native partitions of ``topic`` numbered so far: node ID -> Kafka partition
        number (:func:`.leases.layout` gives every number's partition)."""
        return {i: int(n) for i, n in self.config().get("numbering", {}).get(topic, [])}

    # -- writes ------------------------------------------------------------------------------

    def admin_key(self) -> Identity:
        """The admin identity changes are signed with (loaded once; ConfigError if none)."""
        if not isinstance(self._admin, Identity):
            self._admin = load_admin_key(self._admin)
        return self._admin

    def _write(
        self,
        config: Mapping[str, Any],
        op: str,
        sign_with: Identity | None = None,
        base: int | None = None,
        **fields: Any,
    ) -> int:
        """Sign ``op`` with ``sign_with`` (default: the admin key) against revision ``base``
        (default: ``config``'s), commit it, and check it was applied."""
        if not config.get("admins"):
            config = self._after_bootstrap(config)
        signer = sign_with or self.admin_key()
        revision = int(config["revision"]) if base is None else base
        data, cmd_id = signed_command(signer, self.cluster, revision, op, **fields)
        # the leader's admission check, here first (same code): one clear error, nothing sent
        who = "admin key" if sign_with is None else "key"
        _refuse(MetadataStateMachine.from_view(config, self.cluster), data, who)
        try:
            index = self.raft.update(data)
        except DafkaTimeout:
            raise DafkaTimeout(
                f"no metadata leader accepted the change within {self.timeout} s "
                f"(towers' Raft peers: {', '.join(self.urls)})"
            ) from None
        except RaftError:
            # the leader's bare final failure: its admission check, against a newer state
            # than the one read above (another admin's change in between), most likely
            now = self.config()
            _refuse(MetadataStateMachine.from_view(now, self.cluster), data, who)
            if int(now["revision"]) > int(config["revision"]):
                # what it touches changed since (the view does not say what changed when)
                raise ConfigError(
                    f"the metadata changed since this command was made (revision "
                    f"{config['revision']}, now {now['revision']}); run it again"
                ) from None
            raise
        after = self.config()
        if any(c.get("id") == cmd_id.hex() for c in after.get("changes", [])):
            return index
        why = [r.get("error") for r in after.get("refused", []) if r.get("id") == cmd_id.hex()]
        if why:
            raise ConfigError(f"the metadata refused the change: {why[-1]}")
        if op == "lease.renew":  # not listed among changes (a heartbeat), not refused
            return index
        raise DafkaError(
            f"the change was committed at log index {index} but is not among the metadata's "
            "recent changes; check with dafka topics|stores|admins list"
        )

    def _after_bootstrap(self, config: Mapping[str, Any]) -> Mapping[str, Any]:
        """The metadata once it lists its first admins (a new group's towers propose them
        in the background), or as it is after ``timeout`` s: every change would be
        refused until then, for a reason that is gone a moment later."""
        deadline = time.monotonic() + self.timeout
        while not config.get("admins") and time.monotonic() < deadline:
            time.sleep(0.1)  # a bounded poll: at most timeout / 0.1 reads
            config = self.config()
        return config

    def create_topic(self, topic: str, settings: Mapping[str, Any] | None = None) -> int:
        check_topic_name(topic)
        clean = check_settings(settings or {})
        config = self.config()
        if topic in config["topics"]:
            raise ConfigError(f"topic {topic!r} already exists")
        return self._write(config, "topic.create", topic=topic, settings=clean)

    def alter_topic(self, topic: str, settings: Mapping[str, Any]) -> int:
        clean = check_settings(settings)
        config = self.config()
        if topic not in config["topics"]:
            raise ConfigError(f"unknown topic {topic!r}")
        check_settings({**topic_settings(config["topics"][topic]), **clean})
        check_growth(topic, config["topics"][topic], {**config["topics"][topic], **clean})
        return self._write(config, "topic.alter", topic=topic, settings=clean)

    def delete_topic(self, topic: str) -> int:
        config = self.config()
        if topic not in config["topics"]:
            raise ConfigError(f"unknown topic {topic!r}")
        return self._write(config, "topic.delete", topic=topic)

    def trust_store(self, store: str) -> int:
        (node_id,) = parse_trusted_stores(store) or ("",)
        return self._write(self.config(), "store.trust", store=node_id)

    def revoke_store(self, store: str) -> int:
        (node_id,) = parse_trusted_stores(store) or ("",)
        config = self.config()
        if node_id not in config["stores"]:
            raise ConfigError(f"store {node_id} is not trusted")
        return self._write(config, "store.revoke", store=node_id)

    def set_cluster(self, settings: Mapping[str, Any]) -> int:
        clean = check_cluster_settings(settings)
        return self._write(self.config(), "cluster.set", settings=clean)

    def add_admin(self, key: str) -> int:
        """Let the holder of public key ``key`` (64 hex) change the metadata too."""
        key = check_public_key(key)
        config = self.config()
        if key in config.get("admins", []):
            raise ConfigError(f"key {key} is an admin already")
        return self._write(config, "admins.add", key=key)

    def remove_admin(self, key: str) -> int:
        """Stop trusting admin key ``key``; the last admin cannot be removed."""
        key = check_public_key(key)
        config = self.config()
        admins = config.get("admins", [])
        if key not in admins:
            raise ConfigError(f"key {key} is not an admin")
        if len(admins) == 1:
            raise ConfigError("refusing to remove the last admin: add another one first")
        return self._write(config, "admins.remove", key=key)

    def add_listener(self, key: str) -> int:
        """List public key ``key`` (64 hex) among the listeners (cluster setting)."""
        key = check_public_key(key)
        config = self.config()
        listed = list(config["cluster"].get("listeners") or [])
        if key in listed:
            raise NothingToChange(f"key {key} is a listener already")
        return self._write(config, "cluster.set", settings={"listeners": [*listed, key]})

    def remove_listener(self, key: str) -> int:
        """Stop listing ``key`` among the listeners: it can renew nothing any more, and its
        leases are taken over once stale (docs/metadata.md, "Listener leases")."""
        key = check_public_key(key)
        config = self.config()
        listed = list(config["cluster"].get("listeners") or [])
        if key not in listed:
            raise ConfigError(f"key {key} is not a listener")
        rest = [k for k in listed if k != key]
        return self._write(config, "cluster.set", settings={"listeners": rest or None})

    # -- a listener's writes, signed with its own key ------------------------------------

    def listener_key(self) -> Identity:
        """The listener identity lease commands are signed with (ConfigError if none)."""
        if self._listener is None:
            raise ConfigError("no listener key: give MetadataClient(listener=Identity)")
        return self._listener

    def take_lease(
        self, resource: str, epoch: int, broker: int, endpoint: str, *, base: int | None = None
    ) -> int:
        """Take ``resource`` at ``epoch`` (its epoch + 1; 1 if never leased) for Kafka broker
        ``broker`` at ``endpoint`` (``host:port``); ``base``: the revision the decision was
        made at (default: a fresh read), so that a renewal since refuses the take."""
        check_resource(resource)
        fields = {"broker": check_broker(broker), "endpoint": check_endpoint(endpoint)}
        return self._write(
            self.config(),
            "lease.take",
            self.listener_key(),
            base,
            resource=resource,
            epoch=epoch,
            **fields,
        )

    def renew_leases(self, leases: Sequence[tuple[str, int]], *, base: int | None = None) -> int:
        """Renew every ``(resource, epoch)`` held by this listener (all or none)."""
        resources = [r for r, _ in leases]
        epochs = [int(e) for _, e in leases]
        return self._write(
            self.config(),
            "lease.renew",
            self.listener_key(),
            base,
            resources=resources,
            epochs=epochs,
        )

    def release_lease(self, resource: str, epoch: int, *, base: int | None = None) -> int:
        """Release ``resource`` held at ``epoch`` (by this listener, or with the admin key
        when this client has no listener key)."""
        check_resource(resource)
        return self._write(
            self.config(), "lease.release", self._listener, base, resource=resource, epoch=epoch
        )

    def number_partitions(self, topic: str, ids: Iterable[str]) -> int:
        """Give the native Dafka partitions ``ids`` (producer node IDs) of ``topic`` the
        next Kafka partition numbers (those numbered already keep theirs)."""
        clean = [node_id(i, "partition") for i in ids]
        return self._write(
            self.config(), "partition.number", self._listener, topic=topic, partitions=clean
        )

    def status(self) -> list[dict[str, Any]]:
        """What each tower's Raft peer says about itself (unreachable ones included)."""
        rows: list[dict[str, Any]] = []
        for url in self.urls:
            try:
                conf = self.raft.peer_config(url, timeout=min(self.timeout, 1.0))
                info = self.raft.log_info(url, timeout=min(self.timeout, 1.0))
            except Exception:  # one unreachable peer is a row, not a failure
                rows.append({"url": url, "state": "unreachable"})
                continue
            rows.append(
                {
                    "url": url,
                    "state": "up",
                    "is_leader": info.is_leader,
                    "leader": info.leader,
                    "term": info.term,
                    "commit": info.commit_index,
                    "applied": info.last_applied,
                    "peers": [p.id for p in conf.peers or ()],
                }
            )
        return rows


def _refuse(sm: MetadataStateMachine, data: bytes, who: str = "admin key") -> None:
    """ConfigError if the leader's admission check refuses ``data`` against ``sm``."""
    refusal = sm.refusal(data)
    if refusal is None:
        return
    if refusal.nothing:
        raise NothingToChange(refusal.reason)
    if refusal.effect:
        raise ConfigError(f"the metadata refuses the change: {refusal.reason}")
    raise ConfigError(f"this {who} cannot change the metadata: {refusal.reason}")
