"""State machines driven by the Raft peer (:mod:`dafka.raft.peer._peer`).

The peer applies committed log entries to a :class:`StateMachine`, snapshots it for
log compaction, restores it from a snapshot (at start and after an InstallSnapshot)
and hands it read-only queries (ClientDispatch ``RI`` / ``RL``, see
:mod:`dafka.raft.peer._peer`). Everything runs on the peer's one loop thread: a state
machine needs no locking.

Contract
--------
* :meth:`StateMachine.apply` sees every committed ``STATE`` entry exactly once per
  life of the object, in log order (CONFIG and CHECKPOINT entries are the peer's
  business). It must be deterministic: every peer applies the same entries and must
  reach the same state. Its result is ignored by the wire (RequestUpdate answers
  with the log index); it is there for embedding.
* :meth:`StateMachine.snapshot` returns the whole state as bytes; after
  :meth:`StateMachine.restore` with those bytes the machine behaves as if it had
  applied the same entries.
* Deduplication. The Raft core recognises a resent RequestUpdate (same reqid) while
  the original entry is still in its log, but not once it was compacted into a
  snapshot: a client that resends across a restart and a compaction may get its
  update appended twice. A state machine whose commands are not idempotent must skip
  an entry whose ``reqid`` it has applied before, and carry the recent reqids in its
  snapshots, as :class:`KvStateMachine` does.
* :meth:`StateMachine.query` answers a read (frames in, frames out) without changing
  the state.
* Optional: ``check_snapshot(data)``. A snapshot received from another peer is input from
  that peer. A state machine that can check one (the cluster metadata verifies that every
  item carries the admin-signed command that set it, :mod:`dafka.metadata.proofs`) defines
  this method, raising a :class:`~dafka.errors.DafkaError` to refuse ``data``; the peer
  asks it before its core installs the snapshot (:mod:`dafka.raft.peer._snapshotstage`), and a
  refused snapshot changes nothing. :meth:`StateMachine.restore` may check again (and
  raise): at start a peer restores its own stored snapshot, and refuses to start on one
  that fails.

:class:`KvStateMachine` is a small key/value map used by tests and benchmarks
(the cluster metadata machine is a separate implementation of the same protocol).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ...errors import WireError
from ...wire.packing import pack as _pack
from ...wire.packing import unpack as _unpack
from ..codec import REQID_SIZE, REQUEST_ID_TTL, ZERO_REQID, Entry, EntryType, reqid_time

__all__ = [
    "KvStateMachine",
    "StateMachine",
    "decode_value",
    "del_command",
    "dump_query",
    "get_query",
    "put_command",
]


@runtime_checkable
class StateMachine(Protocol):
    """What the Raft peer drives; see the module docstring for the contract."""

    def apply(self, entry: Entry) -> Any:
        """Apply one committed STATE entry (in log order)."""
        ...

    def snapshot(self) -> bytes:
        """The whole state, for a snapshot at the last applied entry."""
        ...

    def restore(self, data: bytes) -> None:
        """Replace the whole state by a snapshot made by :meth:`snapshot`."""
        ...

    def query(self, args: Sequence[bytes]) -> list[bytes]:
        """Answer a read; must not change the state."""
        ...


# -- the KV machine ---------------------------------------------------------------------------


def put_command(key: str, value: Any) -> bytes:
    """RequestUpdate data that sets ``key`` to ``value`` (any MessagePack value)."""
    return _pack(["put", key, value])


def del_command(key: str) -> bytes:
    """RequestUpdate data that removes ``key``."""
    return _pack(["del", key])


def get_query(key: str) -> list[bytes]:
    """Query frames reading ``key``; the answer decodes with :func:`decode_value`."""
    return [b"get", key.encode()]


def dump_query() -> list[bytes]:
    """Query frames reading the whole map (tests)."""
    return [b"dump"]


def decode_value(frames: Sequence[bytes]) -> Any:
    """The value in the answer to :func:`get_query` or :func:`dump_query`."""
    if len(frames) != 1:
        raise WireError(f"a KV answer has 1 frame, got {len(frames)}")
    return _unpack(frames[0])


_STATE = EntryType.STATE  # a module global: an Enum class attribute costs 10x per entry


class KvStateMachine:
    """A map of str keys to MessagePack values, deduplicating updates by reqid.

    Commands (RequestUpdate data, MessagePack): ``["put", key, value]`` and
    ``["del", key]`` (see :func:`put_command`, :func:`del_command`); anything else is
    applied as a no-op (every peer ignores it the same way). Queries:
    ``[b"get", key]`` → ``[msgpack(value or nil)]``, ``[b"dump"]`` → ``[msgpack(map)]``.

    Dedup: the reqids of applied entries are remembered until they are
    ``dedup_ttl`` seconds older than the newest one applied (by the time encoded in
    the reqid, so every peer forgets the same ids at the same entry); an entry whose
    reqid is remembered is skipped. The peer refuses RequestUpdates whose reqid is
    older than the request TTL (8 hours), so the default window covers every resend it
    would still accept. Snapshots carry the remembered reqids.
    """

    def __init__(self, dedup_ttl: float = REQUEST_ID_TTL) -> None:
        self.dedup_ttl = dedup_ttl
        self.kv: dict[str, Any] = {}
        self.seen: OrderedDict[bytes, int] = OrderedDict()
        """reqid -> its time (seconds), oldest first."""
        self.newest = 0
        self.applied_count = 0
        self.skipped = 0
        self._front_checked = False
        """The oldest remembered reqid is known to be within the window (see apply)."""
        self._dump: bytes | None = None
        """The packed map until it changes: each dump query of one state gets the same
        bytes, which a peer sends to every client without a copy and counts once."""

    def apply(self, entry: Entry) -> Any:
        if entry.type is not _STATE:
            return None
        reqid = entry.reqid
        if reqid != ZERO_REQID:
            seen = self.seen
            if reqid in seen:
                self.skipped += 1
                return None
            stamp = int.from_bytes(reqid[:4], "big")  # reqid_time, inline: per entry
            seen[reqid] = stamp
            # forget the reqids now out of the window, oldest first: only a newer newest
            # (once a second) moves the window; the front changes only when a reqid is
            # forgotten or added to none; a restore may bring expired ones. Otherwise the
            # front was checked and stays in the window: nothing to forget
            if stamp > self.newest:
                self.newest = stamp
                self._forget_old()
            elif not self._front_checked:
                self._forget_old()
        self.applied_count += 1
        try:
            op = _unpack(entry.data)
        except WireError:
            return None
        if not isinstance(op, list) or len(op) < 2 or not isinstance(op[1], str):
            return None
        if op[0] == "put" and len(op) == 3:
            self._dump = None
            previous = self.kv.get(op[1])
            self.kv[op[1]] = op[2]
            return previous
        if op[0] == "del" and len(op) == 2:
            self._dump = None
            return self.kv.pop(op[1], None)
        return None

    def _forget_old(self) -> None:
        horizon = self.newest - self.dedup_ttl
        seen = self.seen
        while seen:
            reqid, stamp = next(iter(seen.items()))
            if stamp > horizon:
                self._front_checked = True
                return
            del seen[reqid]
        self._front_checked = False

    def snapshot(self) -> bytes:
        # the remembered reqids as one blob, oldest first: each one's time is its first
        # 4 bytes (reqid_time), so no [reqid, time] pair is built per reqid (the snapshot
        # is taken on the peer's loop, and the memory holds every reqid of the window)
        return _pack(
            {
                "kv": self.kv,
                "seen_ids": b"".join(self.seen),
                "newest": self.newest,
                "applied": self.applied_count,
            }
        )

    def restore(self, data: bytes) -> None:
        obj = _unpack(data)
        if not isinstance(obj, dict) or not isinstance(obj.get("kv"), dict):
            raise WireError("not a KvStateMachine snapshot")
        self.kv = dict(obj["kv"])
        self._dump = None
        if "seen_ids" in obj:
            blob = obj["seen_ids"]
            if not isinstance(blob, bytes) or len(blob) % REQID_SIZE:
                raise WireError("a KvStateMachine snapshot's reqids are not whole reqids")
            ids = [blob[k : k + REQID_SIZE] for k in range(0, len(blob), REQID_SIZE)]
            self.seen = OrderedDict((rid, reqid_time(rid)) for rid in ids)
        else:  # written before the blob: [[reqid, time], ...]
            self.seen = OrderedDict((bytes(r), int(t)) for r, t in obj.get("seen", []))
        self.newest = int(obj.get("newest", 0))
        self.applied_count = int(obj.get("applied", 0))
        self._front_checked = False

    def query(self, args: Sequence[bytes]) -> list[bytes]:
        if not args:
            raise WireError("empty KV query")
        if args[0] == b"get" and len(args) == 2:
            return [_pack(self.kv.get(args[1].decode(errors="replace")))]
        if args[0] == b"dump" and len(args) == 1:
            if self._dump is None:
                self._dump = _pack(self.kv)
            return [self._dump]
        raise WireError(f"unknown KV query {bytes(args[0])!r}")
