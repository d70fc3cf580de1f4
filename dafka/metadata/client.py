"""Reading and changing the cluster metadata through the towers' Raft group.

A tower at beacon address ``HOST:PORT`` has its Raft peer's ROUTER at
``tcp://HOST:PORT+2`` (:func:`raft_url`), so whoever knows the towers knows the
Raft group. Changes are validated against a linearizable read first, so a user
gets one clear error (unknown topic, bad setting) rather than a silent no-op.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..config import TowerAddress, parse_towers, parse_trusted_stores
from ..errors import ConfigError, DafkaTimeout
from ..ids import check_topic
from ..raft.client import RaftClient
from .state import (
    check_cluster_settings,
    check_settings,
    command,
    decode_config,
    topic_settings,
)

__all__ = ["DEFAULT_CLUSTER", "RAFT_PORT_OFFSET", "MetadataClient", "raft_url"]

DEFAULT_CLUSTER = "dafka"
RAFT_PORT_OFFSET = 2


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
    ) -> None:
        urls = list(raft_urls) if raft_urls is not None else []
        if not urls:
            urls = [raft_url(t) for t in parse_towers(towers)]
        self.urls = urls
        self.timeout = timeout
        self.raft = RaftClient(urls, cluster, timeout=timeout)

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

    # -- writes ------------------------------------------------------------------------------

    def _write(self, data: bytes) -> int:
        try:
            return self.raft.update(data)
        except DafkaTimeout:
            raise DafkaTimeout(
                f"no metadata leader accepted the change within {self.timeout} s "
                f"(towers' Raft peers: {', '.join(self.urls)})"
            ) from None

    def create_topic(self, topic: str, settings: Mapping[str, Any] | None = None) -> int:
        check_topic(topic)
        clean = check_settings(settings or {})
        if topic in self.config()["topics"]:
            raise ConfigError(f"topic {topic!r} already exists")
        return self._write(command("topic.create", topic=topic, settings=clean))

    def alter_topic(self, topic: str, settings: Mapping[str, Any]) -> int:
        clean = check_settings(settings)
        current = self.describe(topic)
        check_settings({**current, **clean})
        return self._write(command("topic.alter", topic=topic, settings=clean))

    def delete_topic(self, topic: str) -> int:
        self.describe(topic)
        return self._write(command("topic.delete", topic=topic))

    def trust_store(self, store: str) -> int:
        (node_id,) = parse_trusted_stores(store) or ("",)
        return self._write(command("store.trust", store=node_id))

    def revoke_store(self, store: str) -> int:
        (node_id,) = parse_trusted_stores(store) or ("",)
        if node_id not in self.stores():
            raise ConfigError(f"store {node_id} is not trusted")
        return self._write(command("store.revoke", store=node_id))

    def set_cluster(self, settings: Mapping[str, Any]) -> int:
        return self._write(command("cluster.set", settings=check_cluster_settings(settings)))

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
