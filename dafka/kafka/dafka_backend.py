"""The backend over Dafka: Kafka's numbered partitions on Dafka producers, stores and metadata.

A Kafka topic is a Dafka topic with a partition count ``P`` (its metadata setting
``partitions``). Kafka partition ``i < P`` is the Dafka partition of the producer identity
derived from the cluster's listener secret (:mod:`.partition_keys`), written by the
listener that leads it (:mod:`.leadership`) through one Dafka producer (:mod:`.writers`).
The partitions Dafka producers write natively come after them, ``P, P+1, ...``: readable,
not writable. Reads come from the stores, verified (:mod:`.reads`). Topic management goes
through the metadata with the listener's admin key (:mod:`.topic_configs`), committed
offsets through a :class:`GroupCommits` (the groups' durable commits).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from ..config import parse_towers
from ..errors import ConfigError, DafkaError, DafkaTimeout, InvalidTopic, KafkaRequestError
from ..ids import check_topic, check_topic_name, is_group_topic
from ..metadata.client import DEFAULT_CLUSTER, MetadataClient
from ..metadata.follower import MetadataView, tower_curve
from ..metadata.leases import layout as metadata_layout
from ..metadata.settings import TOPIC_DEFAULTS
from ..metadata.signing import load_admin_key
from ..security.identity import Identity
from .leadership import Leadership, SoleListener
from .model import Broker, Code, FetchResult, KafkaRecord, PartitionInfo, TopicInfo
from .partition_keys import SECRET_FILE, load_or_create_secret, partition_identity
from .reads import HeadsCache, Holding, Readers, StoreReader, watermarks
from .topic_configs import to_kafka, to_settings
from .writers import Writers

log = logging.getLogger(__name__)

__all__ = ["MAX_PARTITIONS", "DafkaBackend", "GroupCommits", "sorted_numbering"]

MAX_PARTITIONS = 10_000
"""Numbered partitions of one topic."""
MAX_FETCH_BYTES = 16 << 20
"""Bytes of records one fetch of one partition answers at most (beyond a first batch)."""
MAX_WAIT = 10.0
"""Seconds a fetch at the end of a partition waits at most, whatever the client asked."""
POLL_INTERVAL = 0.1
"""Seconds between two looks at the stores' heads while a fetch waits (sooner when this
listener's own produce is acknowledged)."""

TP = tuple[str, str]
P = ParamSpec("P")
R = TypeVar("R")
CLOSE_WAIT = 15.0
"""Seconds :meth:`DafkaBackend.close` waits for calls in flight (long polls end at once)."""


def _counted(
    method: Callable[Concatenate[DafkaBackend, P], R],
) -> Callable[Concatenate[DafkaBackend, P], R]:
    """A call :meth:`DafkaBackend.close` waits for before it closes the sockets it uses
    (a zmq socket closed under a thread using it fails that thread, or libzmq)."""

    @functools.wraps(method)
    def run(self: DafkaBackend, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._calls:
            if self._closing:
                raise KafkaRequestError(Code.NOT_LEADER_OR_FOLLOWER, "the listener is closing")
            self._active += 1
        try:
            return method(self, *args, **kwargs)
        finally:
            with self._calls:
                self._active -= 1
                self._calls.notify_all()

    return run


class GroupCommits(Protocol):
    """Durable committed offsets of Kafka consumer groups, by Dafka partition ID."""

    def commit(
        self, group: str, offsets: Mapping[TP, tuple[int, str | None]], timeout: float
    ) -> None: ...

    def committed(self, group: str) -> Mapping[TP, tuple[int, str | None]]: ...


def sorted_numbering(topic: str, native: Sequence[str]) -> list[str]:
    """The native partitions of ``topic`` in the order the stores' HEADS list them (by ID).

    Unstable until the metadata numbering lands: a new native producer whose ID sorts
    before another one's shifts that one's Kafka index."""
    return sorted(native)


@dataclass(frozen=True, slots=True)
class _Layout:
    """A topic's Kafka partitions by number: None for a Kafka-written one (its Dafka
    partition derived from the secret), a producer node ID for a native one."""

    parts: tuple[str | None, ...]
    settings: Mapping[str, Any] | None
    exists: bool

    def __len__(self) -> int:
        return len(self.parts)

    @property
    def written(self) -> list[int]:
        """The Kafka-written partitions' numbers."""
        return [i for i, p in enumerate(self.parts) if p is None]


class DafkaBackend:
    """:class:`~dafka.kafka.model.Backend` over a Dafka cluster; see the module docstring.

    ``me``: this listener as Kafka clients reach it; ``state_dir``: the listener's state
    (the partitions' producers live under ``partitions/``); ``secret_file``: the partition
    secret shared by the cluster's listeners (default ``<state_dir>/kafka-partitions.secret``,
    made 0600 on first start); ``admin_key``: a key file (or identity) topic changes are
    signed with (None: CreateTopics and DeleteTopics are refused); ``partitions``: topic ->
    numbered partition count, over the metadata's ``partitions`` setting."""

    def __init__(
        self,
        *,
        towers: str | Iterable[str] | None,
        me: Broker,
        state_dir: str | Path,
        secret_file: str | Path | None = None,
        leadership: Leadership | None = None,
        admin_key: Identity | str | Path | None = None,
        commits: GroupCommits | None = None,
        partitions: Mapping[str, int] | None = None,
        native_numbering: Callable[[str, Sequence[str]], Sequence[str]] = sorted_numbering,
        cluster: str = DEFAULT_CLUSTER,
        metadata: bool = True,
        max_fetch_bytes: int = MAX_FETCH_BYTES,
        max_wait: float = MAX_WAIT,
        poll_interval: float = POLL_INTERVAL,
        read_timeout: float = 5.0,
        commit_timeout: float = 10.0,
        producer_options: dict[str, Any] | None = None,
    ) -> None:
        self.me = me
        # HOST:PORT@KEY: each tower's key kept (str() drops it, and without it the listener's
        # store locator spoke NULL to a CURVE cluster's towers and never found a store)
        self._towers = [
            str(t) if t.key is None else f"{t}@{t.key.hex()}" for t in parse_towers(towers)
        ]
        self.state_dir = Path(state_dir)
        self.leadership: Leadership = leadership or SoleListener(me)
        self.commits = commits
        self._numbering = native_numbering
        self.max_fetch_bytes = max_fetch_bytes
        self.max_wait = max_wait
        self.poll_interval = poll_interval
        self.commit_timeout = commit_timeout
        self._cluster = cluster
        self._override: dict[str, int] = {}
        for topic, count in (partitions or {}).items():
            self._override[check_topic_name(topic)] = _partition_count(count, topic)
        self._secret = load_or_create_secret(
            Path(secret_file) if secret_file is not None else self.state_dir / SECRET_FILE
        )
        self._admin: Identity | None = None
        if admin_key is not None:
            self._admin = (
                admin_key if isinstance(admin_key, Identity) else load_admin_key(admin_key)
            )
        self._admin_client: MetadataClient | None = None
        self._admin_lock = threading.Lock()
        self._progress = threading.Condition()
        self._calls = threading.Condition()
        self._active = 0
        self._closing = False
        self._heads = HeadsCache()
        self._readers = Readers(lambda: StoreReader(self._towers, timeout=read_timeout))
        self._view: MetadataView | None = None
        if metadata:
            view = MetadataView(
                self._towers, cluster=cluster, curve=tower_curve(parse_towers(self._towers))
            )
            view.start(wait=5.0)
            self._view = view
        self.writers = Writers(
            towers=self._towers,
            state_dir=self.state_dir,
            secret=self._secret,
            known_next=self._known_next,
            on_acked=self._acked,
            producer_options=producer_options,
        )

    # -- topics and partitions -----------------------------------------------------------

    def _settings(self, topic: str) -> Mapping[str, Any] | None:
        return None if self._view is None else self._view.topic(topic)

    def _numbered(self, topic: str, settings: Mapping[str, Any] | None) -> int:
        if topic in self._override:
            return self._override[topic]
        if settings is None or settings.get("partitions") is None:
            return 0
        try:
            return _partition_count(settings.get("partitions"), topic)
        except KafkaRequestError:
            log.warning("kafka.bad_partitions topic=%s value=%r", topic, settings.get("partitions"))
            return 0

    def _numbered_layout(self, topic: str, settings: Mapping[str, Any] | None) -> list[str | None]:
        """The partitions the metadata numbers: Kafka-written ones and natives numbered."""
        config = None if self._view is None else self._view.config
        numbering = [] if config is None else config.get("numbering", {}).get(topic, [])
        return metadata_layout(self._numbered(topic, settings), numbering)

    def _pid(self, topic: str, index: int, part: str | None) -> str:
        return partition_identity(self._secret, topic, index).node_id if part is None else part

    def _layout(self, topic: str, held: Mapping[TP, list[Holding]] | None = None) -> _Layout:
        settings = self._settings(topic)
        parts = self._numbered_layout(topic, settings)
        if held is None:
            held = self._heads.get(self._readers.get(), topic)
        known = {self._pid(topic, i, p) for i, p in enumerate(parts)}
        native = [p for (t, p) in held if t == topic and p not in known]
        if native and settings is not None:
            number = getattr(self.leadership, "number", None)
            if number is not None:
                number(topic, native)  # numbered for good soon; until then after the others
        exists = settings is not None or topic in self._override or bool(native)
        return _Layout((*parts, *self._numbering(topic, native)), settings, exists)

    def _partition(self, topic: str, index: int) -> tuple[_Layout, str]:
        """The topic's layout and the Dafka partition of Kafka partition ``index``."""
        # guard: kafka-topic-name-checked
        if not _valid_topic(topic):
            raise KafkaRequestError(
                Code.UNKNOWN_TOPIC_OR_PARTITION, f"{topic[:300]!r} is not a Dafka topic name"
            )
        settings = self._settings(topic)
        parts = self._numbered_layout(topic, settings)
        if type(index) is int and 0 <= index < len(parts):  # no need to ask the stores
            return _Layout(tuple(parts), settings, True), self._pid(topic, index, parts[index])
        found = self._layout(topic)
        # guard: kafka-partition-index-bounds
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(found):
            raise KafkaRequestError(
                Code.UNKNOWN_TOPIC_OR_PARTITION, f"{topic} has no partition {index}"
            )
        return found, self._pid(topic, index, found.parts[index])

    @property
    def view(self) -> MetadataView | None:
        """The metadata view this backend reads (None: built with ``metadata=False``)."""
        return self._view

    def brokers(self) -> Sequence[Broker]:
        return self.leadership.brokers()

    def controller(self) -> int:
        return self.me.node_id

    @_counted
    def topics(self, names: Sequence[str] | None) -> Sequence[TopicInfo]:
        held: Mapping[TP, list[Holding]] | None
        if names is None:
            held = self._heads.get(self._readers.get(), None)
            wanted = {t for t, _ in held} | set(self._override)
            if self._view is not None and self._view.config is not None:
                wanted |= set(self._view.config["topics"])
        else:
            wanted = {n for n in names if _valid_topic(n)}
            # several topics: one HEADS of every topic (cached) rather than one per topic
            held = self._heads.get(self._readers.get(), None) if len(wanted) > 1 else None
        out: list[TopicInfo] = []
        for name in sorted(wanted):
            layout = self._layout(name, held)
            if not layout.exists:
                continue
            parts = [
                PartitionInfo(
                    i,
                    self._pid(name, i, part),
                    None if (b := self.leadership.leader(name, i)) is None else b.node_id,
                    True,
                )
                if part is None
                else PartitionInfo(i, part, self.me.node_id, False)
                for i, part in enumerate(layout.parts)
            ]
            out.append(TopicInfo(name, tuple(parts), internal=is_group_topic(name)))
        return out

    # -- produce -------------------------------------------------------------------------

    @_counted
    def produce(
        self, topic: str, partition: int, records: Sequence[KafkaRecord], timeout: float
    ) -> int:
        layout, pid = self._partition(topic, partition)
        if layout.parts[partition] is not None:
            written = ", ".join(map(str, layout.written[:20])) or "none"
            raise KafkaRequestError(
                Code.INVALID_REQUEST,
                f"partition {partition} of {topic} is Dafka producer {pid}'s own: Kafka "
                f"clients read it; they write partitions {written}",
            )
        if not self.leadership.leads(topic, partition, time.monotonic()):
            self.writers.close_partition(topic, partition)
            raise KafkaRequestError(
                Code.NOT_LEADER_OR_FOLLOWER, f"this listener does not lead {topic}/{partition}"
            )
        return self.writers.produce(topic, partition, records, timeout)

    def _known_next(self, topic: str, pid: str) -> int:
        held = self._heads.get(self._readers.get(), topic, fresh=True)
        return max((h.head + 1 for h in held.get((topic, pid), ())), default=0)

    def _acked(self, topic: str, index: int) -> None:
        self._heads.forget(topic)  # a fetch after the produce answered sees its records
        with self._progress:
            self._progress.notify_all()

    def release(self, now: float) -> None:
        """Close the producers of partitions this listener no longer leads (the lease
        keeper calls it when leases move)."""
        for topic, index in self.writers.opened():
            if not self.leadership.leads(topic, index, now):
                self.writers.close_partition(topic, index)

    # -- fetch and offsets ---------------------------------------------------------------

    def _marks(
        self, layout: _Layout, topic: str, pid: str, fresh: bool
    ) -> tuple[int, int, list[Holding]]:
        held = self._heads.get(self._readers.get(), topic, fresh=fresh)
        holdings = held.get((topic, pid), [])
        min_acks = int((layout.settings or {}).get("min_acks") or 1)
        high, start = watermarks(holdings, min_acks)
        return high, start, holdings

    @_counted
    def fetch(
        self, topic: str, partition: int, offset: int, max_bytes: int, max_wait: float
    ) -> FetchResult:
        layout, pid = self._partition(topic, partition)
        # guard: kafka-fetch-bytes-clamped
        max_bytes = max(1, min(int(max_bytes), self.max_fetch_bytes))
        # guard: kafka-fetch-wait-clamped
        wait = max(0.0, min(float(max_wait), self.max_wait))
        deadline = time.monotonic() + wait
        fresh = False
        while True:
            high, start, holdings = self._marks(layout, topic, pid, fresh)
            if offset > high and not fresh:
                fresh = True  # perhaps written since the heads were asked
                continue
            # guard: kafka-fetch-offset-range
            if offset < start or offset > high:
                raise KafkaRequestError(
                    Code.OFFSET_OUT_OF_RANGE,
                    f"{topic}/{partition}: offset {offset} is outside {start}..{high}",
                )
            if offset < high:
                reader = self._readers.get()
                records = reader.read(topic, pid, offset, high, max_bytes, holdings)
                return FetchResult(high, start, records)
            left = deadline - time.monotonic()
            if left <= 0 or self._closing:
                return FetchResult(high, start, ())
            with self._progress:
                fresh = self._progress.wait(min(left, self.poll_interval))

    @_counted
    def list_offset(self, topic: str, partition: int, timestamp: int) -> tuple[int, int]:
        layout, pid = self._partition(topic, partition)
        high, start, holdings = self._marks(layout, topic, pid, fresh=True)
        if timestamp == -1:
            return high, -1
        if timestamp == -2:
            return start, -1
        if timestamp < 0:
            raise KafkaRequestError(
                Code.INVALID_REQUEST, f"timestamp {timestamp}: -1 (latest), -2 (earliest) or ms"
            )
        if high <= start:
            return -1, -1
        return self._readers.get().offset_for_time(topic, pid, timestamp, high, holdings)

    # -- topic management ----------------------------------------------------------------

    def _metadata_client(self) -> MetadataClient:
        if self._admin is None:
            raise KafkaRequestError(
                Code.CLUSTER_AUTHORIZATION_FAILED,
                "this listener has no admin key (--admin-key): create and delete topics with "
                "dafka topics create|delete",
            )
        if self._admin_client is None:
            self._admin_client = MetadataClient(
                self._towers, cluster=self._cluster, admin=self._admin
            )
        return self._admin_client

    def _wait_view(self, topic: str, present: bool, timeout: float = 5.0) -> None:
        """Until this listener's metadata view shows ``topic`` created (or deleted)."""
        if self._view is None:
            return
        deadline = time.monotonic() + timeout
        while (self._view.topic(topic) is not None) != present and time.monotonic() < deadline:
            time.sleep(0.02)  # bounded by timeout: the view follows the towers' broadcast

    @_counted
    def create_topic(
        self, name: str, partitions: int, configs: Mapping[str, str | None], validate_only: bool
    ) -> None:
        # guard: kafka-create-topic-name-checked
        if not _valid_topic(name, strict=True) or is_group_topic(name):
            raise KafkaRequestError(
                Code.INVALID_TOPIC_EXCEPTION,
                f"{name[:300]!r} cannot name a topic: printable UTF-8, at most 255 bytes, no "
                "NUL, not __group.*",
            )
        count = 1 if partitions == -1 else _partition_count(partitions, name)
        settings = to_settings(configs)
        in_metadata = "partitions" in TOPIC_DEFAULTS
        if in_metadata:
            settings["partitions"] = count
        with self._admin_lock:
            client = self._metadata_client()
            try:
                if name in client.config()["topics"]:
                    raise KafkaRequestError(Code.TOPIC_ALREADY_EXISTS, f"topic {name} exists")
                if validate_only:
                    return
                client.create_topic(name, settings)
            except DafkaError as exc:
                raise _admin_error(exc) from None
        if not in_metadata:
            self._override[name] = count  # until the metadata keeps partition counts
        self._wait_view(name, True)
        log.info("kafka.topic_created topic=%s partitions=%d", name, count)

    @_counted
    def delete_topic(self, name: str) -> None:
        if not _valid_topic(name):
            raise KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name[:300]!r}")
        # guard: kafka-delete-no-group-topic
        if is_group_topic(name):
            raise KafkaRequestError(
                Code.TOPIC_AUTHORIZATION_FAILED,
                f"{name[:300]} keeps a group's commits: Kafka clients cannot delete it "
                "(dafka topics delete, by an admin, can)",
            )
        with self._admin_lock:
            client = self._metadata_client()
            try:
                if name not in client.config()["topics"]:
                    raise KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {name}")
                client.delete_topic(name)
            except DafkaError as exc:
                raise _admin_error(exc) from None
        self._override.pop(name, None)
        for topic, index in self.writers.opened():
            if topic == name:
                self.writers.close_partition(topic, index, timeout=0)
        self._wait_view(name, False)
        log.info("kafka.topic_deleted topic=%s", name)

    @_counted
    def describe_configs(self, topic: str) -> Mapping[str, str | None]:
        if not _valid_topic(topic):
            raise KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic[:300]!r}")
        settings = self._settings(topic)
        if settings is None:
            raise KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic}")
        out = to_kafka(settings)
        out["partitions"] = str(self._numbered(topic, settings))
        return out

    # -- groups --------------------------------------------------------------------------

    def group_coordinator(self, group: str) -> Broker | None:
        return self.leadership.group_coordinator(group)

    def _group_commits(self) -> GroupCommits:
        if self.commits is None:
            raise KafkaRequestError(
                Code.COORDINATOR_NOT_AVAILABLE, "this listener keeps no group commits"
            )
        return self.commits

    @_counted
    def commit_offsets(
        self, group: str, offsets: Mapping[tuple[str, int], tuple[int, str | None]]
    ) -> None:
        commits = self._group_commits()
        mapped: dict[TP, tuple[int, str | None]] = {}
        for (topic, index), value in offsets.items():
            _, pid = self._partition(topic, index)
            mapped[(topic, pid)] = value
        try:
            commits.commit(group, mapped, self.commit_timeout)
        except KafkaRequestError:
            raise
        except DafkaTimeout as exc:
            raise KafkaRequestError(Code.REQUEST_TIMED_OUT, str(exc)) from None
        except DafkaError as exc:
            raise KafkaRequestError(Code.COORDINATOR_NOT_AVAILABLE, str(exc)) from None

    @_counted
    def committed_offsets(
        self, group: str, partitions: Sequence[tuple[str, int]] | None
    ) -> Mapping[tuple[str, int], tuple[int, str | None]]:
        try:
            got = self._group_commits().committed(group)
        except KafkaRequestError:
            raise
        except DafkaError as exc:
            raise KafkaRequestError(Code.COORDINATOR_NOT_AVAILABLE, str(exc)) from None
        indexes: dict[str, dict[str, int]] = {}
        out: dict[tuple[str, int], tuple[int, str | None]] = {}
        for (topic, pid), value in got.items():
            if topic not in indexes:
                found = self._layout(topic)
                indexes[topic] = {
                    self._pid(topic, i, part): i for i, part in enumerate(found.parts)
                }
            index = indexes[topic].get(pid)
            if index is not None:
                out[(topic, index)] = value
        if partitions is not None:
            wanted = set(partitions)
            out = {tp: v for tp, v in out.items() if tp in wanted}
        return out

    def close(self) -> None:
        """Refuse new calls, end long polls, wait (up to :data:`CLOSE_WAIT`) for the calls
        in flight, then close the partitions' producers, the readers and the metadata."""
        with self._calls:
            self._closing = True
        with self._progress:
            self._progress.notify_all()
        deadline = time.monotonic() + CLOSE_WAIT
        with self._calls:
            while self._active and (left := deadline - time.monotonic()) > 0:
                self._calls.wait(left)
            if self._active:
                log.warning("kafka.close_with_calls_in_flight calls=%d", self._active)
        self.writers.close()
        close_commits = getattr(self.commits, "close", None)
        if close_commits is not None:
            close_commits()
        self._readers.close()
        if self._view is not None:
            self._view.stop()
        if self._admin_client is not None:
            self._admin_client.close()


def _valid_topic(topic: object, strict: bool = False) -> bool:
    if not isinstance(topic, str):
        return False
    try:
        (check_topic_name if strict else check_topic)(topic)
    except InvalidTopic:
        return False
    return True


def _partition_count(count: object, topic: str) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PARTITIONS:
        raise KafkaRequestError(
            Code.INVALID_PARTITIONS,
            f"{topic}: a partition count is 1 to {MAX_PARTITIONS}, not {count!r}",
        )
    return count


def _admin_error(exc: DafkaError) -> KafkaRequestError:
    if isinstance(exc, KafkaRequestError):
        return exc
    text = str(exc)
    if isinstance(exc, DafkaTimeout):
        return KafkaRequestError(Code.REQUEST_TIMED_OUT, text)
    if isinstance(exc, ConfigError):
        if "already exists" in text:
            return KafkaRequestError(Code.TOPIC_ALREADY_EXISTS, text)
        if "unknown topic" in text:
            return KafkaRequestError(Code.UNKNOWN_TOPIC_OR_PARTITION, text)
        if "admin key" in text or "admin" in text and "not" in text:
            return KafkaRequestError(Code.CLUSTER_AUTHORIZATION_FAILED, text)
        return KafkaRequestError(Code.INVALID_CONFIG, text)
    return KafkaRequestError(Code.UNKNOWN_SERVER_ERROR, text)
