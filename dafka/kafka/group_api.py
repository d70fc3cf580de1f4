"""The consumer-group APIs over :class:`~dafka.kafka.coordinator.Coordinator`: ``kio``
requests in, ``kio`` responses (at the client's version) out.

JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups and ListGroups are answered by
the pure coordinator on the server's event-loop thread (joins and syncs that wait for the
others come out of :meth:`KafkaGroups.poll`). FindCoordinator, OffsetCommit and
OffsetFetch need the backend, which may block: they run on this API's own worker thread
(a bounded queue; full: COORDINATOR_LOAD_IN_PROGRESS, which clients retry), and answer
through :meth:`poll` once done (an OffsetCommit once the stores acknowledged it).
"""

from __future__ import annotations

import datetime
import functools
import logging
import queue
import threading
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from ..errors import DafkaError, DafkaTimeout, KafkaRequestError
from .coordinator import Coordinator, JoinResult, Limits, SyncResult
from .model import Backend, Code, Deferred

log = logging.getLogger(__name__)

__all__ = ["MAX_COMMIT_METADATA", "VERSIONS", "KafkaGroups"]

FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC = 10, 11, 12, 13, 14
OFFSET_COMMIT, OFFSET_FETCH, DESCRIBE, LIST = 8, 9, 15, 16
VERSIONS: Mapping[int, tuple[int, int]] = {
    FIND_COORDINATOR: (0, 4),
    JOIN: (0, 9),
    HEARTBEAT: (0, 4),
    LEAVE: (0, 5),
    SYNC: (0, 5),
    OFFSET_COMMIT: (2, 9),  # v10 names topics by id
    OFFSET_FETCH: (1, 9),
    DESCRIBE: (0, 5),
    LIST: (0, 4),
}
"""What the server may advertise in ApiVersions for these APIs."""
MAX_COMMIT_METADATA = 4096  # characters of an OffsetCommit's metadata string
MAX_COMMIT_PARTITIONS = 10_000  # per OffsetCommit / OffsetFetch request
MAX_KEYS = 100  # FindCoordinator v4+ keys, DescribeGroups groups, OffsetFetch v8+ groups
QUEUE = 256  # backend calls waiting for the worker
MAX_ELSEWHERE = 10_000  # groups remembered as coordinated by another listener


@functools.cache
def _kio() -> Any:
    """kio, imported on first use (it imports hypothesis when installed, which must come
    after pytest's assertion rewriting in the attack-mutant runs)."""
    import types

    from kio.index import load_response_schema
    from kio.schema.errors import ErrorCode
    from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

    return types.SimpleNamespace(
        response=load_response_schema,
        ErrorCode=ErrorCode,
        prims=(i8, i16, i32, i64),
        zero=i32Timedelta.parse(datetime.timedelta(0)),
    )


def load_response_schema(api_key: int, version: int) -> type:
    return _kio().response(api_key, version)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    import sys

    return typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))


@functools.cache
def _names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _item(cls: type, name: str) -> type:
    """The element class of ``cls``'s tuple field ``name`` (nullable or not)."""
    hint = _hints(cls)[name]
    args = typing.get_args(hint)
    if typing.get_origin(hint) is not tuple:  # tuple[X, ...] | None
        args = typing.get_args(args[0])
    return args[0]


def _mk(cls: type, **kw: Any) -> Any:
    """An instance of kio class ``cls`` from the ``kw`` it has fields for (the others are
    not in this version), converting ints to the field's primitive type."""
    k = _kio()
    hints = _hints(cls)
    names = _names(cls)
    args: dict[str, Any] = {}
    for name, value in kw.items():
        if name not in names:
            continue
        hint = hints[name]
        if hint is k.ErrorCode:
            value = k.ErrorCode(int(value))
        elif hint in k.prims and value is not None:
            value = hint(value)
        args[name] = value
    if "throttle_time" in names:
        args["throttle_time"] = k.zero
    return cls(**args)


def _ms(value: datetime.timedelta | int) -> float:
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return int(value) / 1000.0


def _valid_group(group: str) -> bool:
    """Whether ``group`` can name a group topic (``__group.NAME``: at most 255 bytes of
    printable text), where its commits are kept."""
    from ..groups.records import group_topic

    try:
        group_topic(group)
    except (DafkaError, ValueError):
        return False
    return True


class KafkaGroups:
    """:class:`~dafka.kafka.model.GroupApi` for one listener."""

    api_keys = frozenset(VERSIONS)

    def __init__(
        self,
        backend: Backend,
        limits: Limits = Limits(),
        commit_timeout: float = 10.0,
        node_id: int | None = None,
    ) -> None:
        self.backend = backend
        self.node_id = node_id  # this listener's broker id (FindCoordinator answers teach
        # it which groups another listener coordinates)
        self._elsewhere: dict[str, None] = {}  # groups another listener coordinates
        self._drops: list[str] = []  # groups to forget, on the loop thread
        self.core = Coordinator(limits)
        self.commit_timeout = commit_timeout
        self._wake: Callable[[], None] = lambda: None
        self._jobs: queue.Queue[tuple[int, Callable[[], object]] | None] = queue.Queue(QUEUE)
        self._done: list[tuple[int, object]] = []
        self._lock = threading.Lock()
        self._closed = False
        self._waiting: dict[int, tuple[type, Any]] = {}  # deferred joins and syncs
        self._thread = threading.Thread(target=self._work, name="dafka-kafka-groups", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------- GroupApi

    def set_waker(self, wake: Callable[[], None]) -> None:
        self._wake = wake

    def lost(self, group: str) -> None:
        """This listener no longer coordinates ``group`` (its lease went elsewhere): its
        members are told NOT_COORDINATOR from now on. Thread-safe."""
        with self._lock:
            self._mark_elsewhere(group)
        self._wake()

    def won(self, group: str) -> None:
        """This listener coordinates ``group`` again. Thread-safe."""
        with self._lock:
            self._elsewhere.pop(group, None)

    def _mark_elsewhere(self, group: str) -> None:
        """Holding the lock."""
        self._elsewhere.pop(group, None)
        self._elsewhere[group] = None
        # guard: kafka-groups-caps-elsewhere
        while len(self._elsewhere) > MAX_ELSEWHERE:
            del self._elsewhere[next(iter(self._elsewhere))]
        self._drops.append(group)

    def _is_elsewhere(self, group: str) -> bool:
        with self._lock:
            drops, self._drops = self._drops, []
            elsewhere = group in self._elsewhere
        for g in drops:
            self.core.drop(g)
        return elsewhere

    def handle(
        self,
        token: int,
        api_key: int,
        api_version: int,
        request: object,
        principal: str | None,
        now: float,
    ) -> object:
        lo, hi = VERSIONS.get(api_key, (0, -1))
        if not lo <= api_version <= hi:
            raise KafkaRequestError(
                Code.UNSUPPORTED_VERSION, f"api {api_key} v{api_version} is not served"
            )
        cls = load_response_schema(api_key, api_version)
        r: Any = request
        if api_key in (JOIN, SYNC, HEARTBEAT, LEAVE) and self._is_elsewhere(r.group_id):
            return self._not_coordinator(cls, api_key, api_version, r)
        if api_key == JOIN:
            # guard: kafka-join-needs-group-topic-name
            if not _valid_group(r.group_id):
                return self._respond_join(cls, JoinResult(Code.INVALID_GROUP_ID, r.member_id), r)
            answer = self._join(token, api_version, r, now)
            return self._respond_join(cls, answer, r) if answer is not None else Deferred(token)
        if api_key == SYNC:
            self._remember(token, SYNC, api_version, r)
            got = self.core.sync(
                token,
                r.group_id,
                int(r.generation_id),
                r.member_id,
                [(a.member_id, a.assignment) for a in r.assignments],
                now,
                protocol_type=getattr(r, "protocol_type", None),
                protocol_name=getattr(r, "protocol_name", None),
            )
            self._wake_if_ready()
            if got is None:
                return Deferred(token)
            self._waiting.pop(token, None)
            return self._respond_sync(cls, got)
        if api_key == HEARTBEAT:
            code = self.core.heartbeat(r.group_id, int(r.generation_id), r.member_id, now)
            return _mk(cls, error_code=code)
        if api_key == LEAVE:
            return self._leave(cls, api_version, r, now)
        if api_key == LIST:
            return self._list(cls, r)
        if api_key == DESCRIBE:
            return self._describe(cls, r)
        if api_key == FIND_COORDINATOR:
            return self._find(token, cls, api_version, r)
        if api_key == OFFSET_COMMIT:
            return self._commit(token, cls, r, now)
        if api_key == OFFSET_FETCH:
            return self._fetch(token, cls, api_version, r)
        raise AssertionError(api_key)  # every key of VERSIONS is answered above

    def poll(self, now: float) -> list[tuple[int, object]]:
        self._is_elsewhere("")  # groups lost meanwhile are forgotten first
        out: list[tuple[int, object]] = []
        for token, result in self.core.poll(now):
            waiting = self._waiting.pop(token, None)
            if waiting is None:  # not ours to answer (cannot happen: every wait is noted)
                continue
            cls, r = waiting
            if isinstance(result, JoinResult):
                out.append((token, self._respond_join(cls, result, r)))
            else:
                out.append((token, self._respond_sync(cls, result)))
        with self._lock:
            done, self._done = self._done, []
        return out + done

    def next_wakeup(self) -> float | None:
        return self.core.next_wakeup()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._jobs.put_nowait(None)
        except queue.Full:
            pass
        self._thread.join(timeout=self.commit_timeout + 1)

    # ------------------------------------------------------------- members

    def _not_coordinator(self, cls: type, api_key: int, version: int, r: Any) -> Any:
        code = Code.NOT_COORDINATOR
        if api_key == JOIN:
            return self._respond_join(cls, JoinResult(code, r.member_id), r)
        if api_key == SYNC:
            return self._respond_sync(cls, SyncResult(code))
        if api_key == LEAVE and version >= 3:
            return _mk(cls, error_code=code, members=())
        return _mk(cls, error_code=code)

    def _remember(self, token: int, api_key: int, version: int, request: Any) -> None:
        self._waiting[token] = (load_response_schema(api_key, version), request)

    def _wake_if_ready(self) -> None:
        if self.core.has_answers():
            self._wake()

    def _join(self, token: int, version: int, r: Any, now: float) -> JoinResult | None:
        self._remember(token, JOIN, version, r)
        rebalance = getattr(r, "rebalance_timeout", None)
        got = self.core.join(
            token,
            r.group_id,
            r.member_id,
            r.protocol_type,
            [(p.name, p.metadata) for p in r.protocols],
            _ms(r.session_timeout),
            _ms(rebalance) if rebalance is not None else -1.0,
            now,
            instance_id=getattr(r, "group_instance_id", None),
            require_known_id=version >= 4,
        )
        if got is not None:
            self._waiting.pop(token, None)
        self._wake_if_ready()
        return got

    def _respond_join(self, cls: type, a: JoinResult, r: Any) -> Any:
        member = _item(cls, "members")
        members = tuple(
            _mk(member, member_id=m.member_id, group_instance_id=m.instance_id, metadata=m.metadata)
            for m in a.members
        )
        return _mk(
            cls,
            error_code=a.error,
            generation_id=a.generation,
            protocol_type=a.protocol_type,
            protocol_name=a.protocol_name if a.protocol_name is not None else "",
            leader=a.leader,
            member_id=a.member_id,
            members=members,
        )

    def _respond_sync(self, cls: type, a: SyncResult) -> Any:
        return _mk(
            cls,
            error_code=a.error,
            protocol_type=a.protocol_type,
            protocol_name=a.protocol_name,
            assignment=a.assignment,
        )

    def _leave(self, cls: type, version: int, r: Any, now: float) -> Any:
        if version < 3:
            codes = self.core.leave(r.group_id, [r.member_id], now)
            self._wake_if_ready()
            return _mk(cls, error_code=codes[0])
        ids = [m.member_id for m in r.members[: self.core.limits.max_members]]
        codes = self.core.leave(r.group_id, ids, now)
        self._wake_if_ready()
        item = _item(cls, "members")
        rows = tuple(
            _mk(item, member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=c)
            for m, c in zip(r.members, codes, strict=False)
        )
        return _mk(cls, error_code=Code.NONE, members=rows)

    def _list(self, cls: type, r: Any) -> Any:
        states = set(getattr(r, "states_filter", ()) or ())
        item = _item(cls, "groups")
        rows = tuple(
            _mk(item, group_id=g, protocol_type=t, group_state=s, group_type="classic")
            for g, t, s in self.core.groups()
            if not states or s in states
        )
        return _mk(cls, error_code=Code.NONE, groups=rows)

    def _describe(self, cls: type, r: Any) -> Any:
        item = _item(cls, "groups")
        member = _item(item, "members")
        rows = []
        for group in r.groups[:MAX_KEYS]:
            state, ptype, pname, members = self.core.describe(group)
            rows.append(
                _mk(
                    item,
                    error_code=Code.NONE,
                    group_id=group,
                    group_state=state.value if members else "Dead",
                    protocol_type=ptype,
                    protocol_data=pname,
                    authorized_operations=-2147483648,
                    members=tuple(
                        _mk(
                            member,
                            member_id=m.member_id,
                            group_instance_id=m.instance_id,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            member_metadata=meta,
                            member_assignment=m.assignment,
                        )
                        for m, meta in members
                    ),
                )
            )
        return _mk(cls, groups=tuple(rows))

    # ------------------------------------------------------------- backend calls

    def _submit(self, token: int, job: Callable[[], object]) -> bool:
        try:
            self._jobs.put_nowait((token, job))
            return True
        except queue.Full:
            return False

    def _work(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            token, job = item
            try:
                answer = job()
            except Exception:  # a job builds its own error answers; this is a bug's
                log.exception("kafka.groups.job_failed")
                continue
            with self._lock:
                self._done.append((token, answer))
            self._wake()

    def _find(self, token: int, cls: type, version: int, r: Any) -> Any:
        keys = list(r.coordinator_keys[:MAX_KEYS]) if version >= 4 else [r.key]
        key_type = int(getattr(r, "key_type", 0))

        def one(key: str) -> dict[str, Any]:
            if key_type != 0:
                return {"error_code": Code.COORDINATOR_NOT_AVAILABLE, "error_message": "no txn"}
            if not key or len(key) > self.core.limits.max_group_id or not _valid_group(key):
                return {"error_code": Code.INVALID_GROUP_ID}
            try:
                b = self.backend.group_coordinator(key)
            except KafkaRequestError as exc:
                return {"error_code": exc.code, "error_message": str(exc)[:200]}
            except Exception as exc:
                log.warning("kafka.find_coordinator_failed group=%s error=%s", key[:64], exc)
                return {"error_code": Code.COORDINATOR_NOT_AVAILABLE}
            if b is None:
                return {"error_code": Code.COORDINATOR_NOT_AVAILABLE}
            if self.node_id is not None:
                if b.node_id == self.node_id:
                    self.won(key)
                else:
                    with self._lock:
                        self._mark_elsewhere(key)
            return {"error_code": Code.NONE, "node_id": b.node_id, "host": b.host, "port": b.port}

        def job() -> Any:
            empty = {"node_id": -1, "host": "", "port": -1, "error_message": None}
            if version < 4:
                return _mk(cls, **{**empty, **one(keys[0])})
            item = _item(cls, "coordinators")
            return _mk(
                cls, coordinators=tuple(_mk(item, key=k, **{**empty, **one(k)}) for k in keys)
            )

        if self._submit(token, job):
            return Deferred(token)
        busy = {
            "node_id": -1,
            "host": "",
            "port": -1,
            "error_code": Code.COORDINATOR_LOAD_IN_PROGRESS,
        }
        if version < 4:
            return _mk(cls, **busy)
        item = _item(cls, "coordinators")
        return _mk(cls, coordinators=tuple(_mk(item, key=k, **busy) for k in keys))

    def _commit(self, token: int, cls: type, r: Any, now: float) -> Any:
        topic_cls = _item(cls, "topics")
        part_cls = _item(topic_cls, "partitions")

        def answer(codes: Mapping[tuple[str, int], int]) -> Any:
            by: dict[str, list[Any]] = {}
            for (t, p), c in codes.items():
                by.setdefault(t, []).append(_mk(part_cls, partition_index=p, error_code=c))
            return _mk(
                cls,
                topics=tuple(_mk(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by.items()),
            )

        total = sum(len(t.partitions) for t in r.topics)
        # guard: kafka-commit-caps-partitions
        if total > MAX_COMMIT_PARTITIONS:
            log.warning("kafka.commit_refused group=%s partitions=%d", r.group_id[:64], total)
            return _mk(cls, topics=())  # cheap: no per-partition answer for such a request
        keys = [(t.name, int(p.partition_index)) for t in r.topics for p in t.partitions]
        if not _valid_group(r.group_id):
            code: int = Code.INVALID_GROUP_ID
        elif self._is_elsewhere(r.group_id):
            code = Code.NOT_COORDINATOR
        else:
            code = self.core.check_commit(
                r.group_id, int(r.generation_id_or_member_epoch), r.member_id, now
            )
        if code != Code.NONE:
            return answer(dict.fromkeys(keys, code))
        codes: dict[tuple[str, int], int] = {}
        offsets: dict[tuple[str, int], tuple[int, str | None]] = {}
        for t in r.topics:
            for p in t.partitions:
                key = (t.name, int(p.partition_index))
                meta = p.committed_metadata
                if meta is not None and len(meta) > MAX_COMMIT_METADATA:
                    codes[key] = Code.OFFSET_METADATA_TOO_LARGE
                elif int(p.committed_offset) < 0 or key[1] < 0:
                    codes[key] = Code.INVALID_REQUEST
                else:
                    offsets[key] = (int(p.committed_offset), meta)
        group = r.group_id
        if not offsets:
            return answer(codes)

        def job() -> Any:
            try:
                self.backend.commit_offsets(group, offsets)
                code: int = Code.NONE
            except KafkaRequestError as exc:
                code = exc.code
            except DafkaTimeout:
                code = Code.REQUEST_TIMED_OUT
            except Exception as exc:
                log.warning("kafka.commit_failed group=%s error=%s", group[:64], exc)
                code = Code.UNKNOWN_SERVER_ERROR
            return answer({**codes, **dict.fromkeys(offsets, code)})

        if self._submit(token, job):
            return Deferred(token)
        return answer({**codes, **dict.fromkeys(offsets, Code.COORDINATOR_LOAD_IN_PROGRESS)})

    def _fetch(self, token: int, cls: type, version: int, r: Any) -> Any:
        if version >= 8:
            asks = [(g.group_id, g.topics) for g in r.groups[:MAX_KEYS]]
            group_cls = _item(cls, "groups")
            topic_cls = _item(group_cls, "topics")
        else:
            asks = [(r.group_id, r.topics)]
            topic_cls = _item(cls, "topics")
        part_cls = _item(topic_cls, "partitions")

        def topics_of(found: Mapping[tuple[str, int], tuple[int, str | None]], code: int) -> tuple:
            by: dict[str, list[Any]] = {}
            for (t, p), (off, meta) in sorted(found.items()):
                by.setdefault(t, []).append(
                    _mk(
                        part_cls,
                        partition_index=p,
                        committed_offset=off,
                        committed_leader_epoch=-1,
                        metadata=meta if meta is not None else "",
                        error_code=code,
                    )
                )
            return tuple(_mk(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by.items())

        def one(group: str, topics: Any) -> tuple[tuple, int]:
            if not _valid_group(group):
                return (), Code.INVALID_GROUP_ID
            wanted = None
            if topics is not None:
                # guard: kafka-fetch-caps-partitions
                if sum(len(t.partition_indexes) for t in topics) > MAX_COMMIT_PARTITIONS:
                    return (), Code.INVALID_REQUEST
                wanted = [(t.name, int(p)) for t in topics for p in t.partition_indexes]
            try:
                got = self.backend.committed_offsets(group, wanted)
                code: int = Code.NONE
            except KafkaRequestError as exc:
                got, code = {}, exc.code
            except Exception as exc:
                log.warning("kafka.offset_fetch_failed group=%s error=%s", group[:64], exc)
                got, code = {}, Code.COORDINATOR_NOT_AVAILABLE
            found = dict(got)
            if wanted is not None:
                found = {k: got.get(k, (-1, None)) for k in wanted}
            return topics_of(found, code if version < 2 else Code.NONE), code

        def job() -> Any:
            if version >= 8:
                rows = []
                for group, topics in asks:
                    ts, code = one(group, topics)
                    rows.append(_mk(group_cls, group_id=group, topics=ts, error_code=code))
                return _mk(cls, groups=tuple(rows))
            ts, code = one(*asks[0])
            return _mk(cls, topics=ts, error_code=code)

        if self._submit(token, job):
            return Deferred(token)
        if version >= 8:
            busy = Code.COORDINATOR_LOAD_IN_PROGRESS
            return _mk(
                cls,
                groups=tuple(
                    _mk(group_cls, group_id=g, topics=(), error_code=busy) for g, _ in asks
                ),
            )
        return _mk(cls, topics=(), error_code=Code.COORDINATOR_LOAD_IN_PROGRESS)
