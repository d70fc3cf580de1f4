"""The admin client: :class:`AdminClient`, Kafka's ``AdminClient`` for Dafka.

Two sources answer it. The cluster metadata (topics, their settings and ACLs, trusted
stores, admins), kept by the towers' Raft group: reads are linearizable, changes are
signed with an admin key and reported done only once applied (``docs/metadata.md``).
And the stores, asked on their query endpoints, for what they hold: partitions and
offsets (``list_topics``, ``offsets_for_times``; ``docs/query.md``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..metadata.client import DEFAULT_CLUSTER, MetadataClient
from ..raft import ClientCurve
from ..security.identity import Identity
from .cluster import PartitionMetadata, StoreQueries, TopicMetadata

__all__ = ["AdminClient", "PartitionMetadata", "TopicMetadata"]


class AdminClient(MetadataClient):
    """Reads and changes the cluster metadata, and asks the stores what they hold.

    ``towers``: the towers' beacon addresses (``HOST:PORT``, ``HOST:PORT@KEY`` for CURVE;
    default ``$DAFKA_TOWERS`` or ``127.0.0.1:5556``); ``cluster``: the metadata group's
    name; ``timeout``: seconds for each answer; ``admin``: the key changes are signed with
    (an :class:`~dafka.security.identity.Identity` or a key file; default
    ``$DAFKA_ADMIN_KEY`` or ``.dafka/admin.key``, loaded at the first change); ``key``: the
    identity this client reads stores under over CURVE (what their read ACLs judge).

    Metadata, read linearizably: :meth:`config`, :meth:`topics` (name -> settings),
    :meth:`describe`, :meth:`stores` (trusted store IDs), :meth:`admins`, :meth:`status`
    (each tower's Raft peer). Changes (each returns the Raft log index it was committed
    at, once the metadata applied it; :class:`~dafka.errors.ConfigError` with the reason
    when it refused): :meth:`create_topic`, :meth:`alter_topic`, :meth:`delete_topic`,
    :meth:`trust_store`, :meth:`revoke_store`, :meth:`set_cluster`, :meth:`add_admin`,
    :meth:`remove_admin`. Stores: :meth:`list_topics`, :meth:`offsets_for_times`.

    One thread at a time; close it (or use ``with``)."""

    def __init__(
        self,
        towers: str | Iterable[str] | None = None,
        *,
        cluster: str = DEFAULT_CLUSTER,
        timeout: float = 5.0,
        admin: Identity | str | os.PathLike[str] | None = None,
        key: Identity | None = None,
        curve: ClientCurve | None = None,
    ) -> None:
        super().__init__(towers, cluster=cluster, timeout=timeout, admin=admin, curve=curve)
        self._towers = towers
        self._key = key
        self._stores: StoreQueries | None = None

    def _queries(self) -> StoreQueries:
        if self._stores is None:
            self._stores = StoreQueries(self._towers, key=self._key, timeout=self.timeout)
        return self._stores

    def list_topics(
        self, topics: Iterable[str] | None = None, *, metadata: bool = True
    ) -> dict[str, TopicMetadata]:
        """Topics with their partitions: every topic the stores hold (that this client may
        read) and every topic of the metadata (with its settings; ``metadata=False``: the
        stores only, for a platform without a metadata group), or just ``topics``.

        A partition's ``low``/``high`` are the offsets the store holding the newest has
        (``high`` one past the newest, Kafka's high watermark); ``stores`` who hold it.
        Raises :class:`~dafka.errors.DafkaError` when no store answered,
        :class:`~dafka.query.QueryError` (``forbidden``) when a topic named may not be read."""
        settings: Mapping[str, dict[str, Any]] | None = self.topics() if metadata else None
        return self._queries().list_topics(topics, settings)

    def offsets_for_times(
        self, times: Mapping[tuple[str, str], int]
    ) -> dict[tuple[str, str], int | None]:
        """``{(topic, partition): timestamp_ms}`` -> the earliest offset of each partition
        whose record is stamped at or after that time (None: no stored record is).
        Kafka's ``offsets_for_times``; see :meth:`dafka.Consumer.offsets_for_times`."""
        return self._queries().offsets_for_times(times)

    def close(self) -> None:
        if self._stores is not None:
            self._stores.close()
            self._stores = None
        super().close()

    def __enter__(self) -> AdminClient:
        return self
