"""Kafka's classic consumer-group protocol as a pure state machine (no sockets, no threads,
no clock: every call takes ``now``, seconds).

A group goes EMPTY → PREPARING (a rebalance: every member must send JoinGroup again) →
AWAITING_SYNC (the round is complete: the leader got every member's metadata and computes
the assignment) → STABLE (the leader's SyncGroup handed each member its share). A join of
a new member, a changed member, a leave or a member silent past its session timeout starts
a new round; members that do not rejoin within the rebalance timeout are dropped.

Joins and syncs that must wait for others answer later: the call returns None and the
answer comes out of :meth:`Coordinator.poll` as ``(token, result)``. Member ids are ours,
random 128-bit hex, so nobody guesses another's (Kafka binds nothing to a connection).
Static membership (``group.instance.id``) is not supported: such a member is served as a
dynamic one (its instance id is echoed to the leader, nothing else).

Every size a client controls is bounded (:class:`Limits`).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from .model import Code

log = logging.getLogger(__name__)

__all__ = [
    "Coordinator",
    "GroupState",
    "JoinResult",
    "Limits",
    "MemberInfo",
    "SyncResult",
]


@dataclass(frozen=True, slots=True)
class Limits:
    max_groups: int = 1000
    max_members: int = 1000  # per group, members and ids handed out but not yet joined
    max_members_total: int = 10_000  # per listener
    max_group_id: int = 255
    max_protocols: int = 16
    max_metadata_bytes: int = 1 << 20  # per member, all its protocols together
    max_assignment_bytes: int = 1 << 20  # per member
    max_assignments_total: int = 64 << 20  # per SyncGroup
    min_session: float = 1.0
    max_session: float = 1800.0
    max_rebalance: float = 1800.0
    tick: float = 0.1  # how often poll scans for expired sessions


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING = "PreparingRebalance"
    AWAITING_SYNC = "CompletingRebalance"
    STABLE = "Stable"


@dataclass(frozen=True, slots=True)
class MemberInfo:
    member_id: str
    instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: Code
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[MemberInfo, ...] = ()  # the leader's only


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: Code
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class _Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session: float
    rebalance: float
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    seen: float
    join_token: int | None = None
    sync_token: int | None = None
    assignment: bytes = b""

    def metadata(self, name: str) -> bytes:
        for n, m in self.protocols:
            if n == name:
                return m
        return b""


@dataclass(slots=True)
class _Group:
    name: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: dict[str, _Member] = field(default_factory=dict)  # in join order
    pending: dict[str, float] = field(default_factory=dict)  # id handed out -> expiry
    deadline: float | None = None  # end of the rebalance round


Answer = tuple[int, JoinResult | SyncResult]


class Coordinator:
    def __init__(
        self, limits: Limits = Limits(), new_id: Callable[[], str] = lambda: secrets.token_hex(16)
    ) -> None:
        self.limits = limits
        self._new_id = new_id
        self._groups: dict[str, _Group] = {}
        self._ready: list[Answer] = []
        self._members_total = 0
        self._scanned: float | None = None

    # ------------------------------------------------------------- reading

    def groups(self) -> list[tuple[str, str, str]]:
        """(group, protocol type, state) of every group this coordinator holds."""
        return [(g.name, g.protocol_type or "", g.state.value) for g in self._groups.values()]

    def describe(self, group: str) -> tuple[GroupState, str, str, list[tuple[_Member, bytes]]]:
        g = self._groups.get(group)
        if g is None:
            return GroupState.EMPTY, "", "", []
        name = g.protocol_name or ""
        rows = [(m, m.metadata(name)) for m in g.members.values()]
        return g.state, g.protocol_type or "", name, rows

    def has_answers(self) -> bool:
        return bool(self._ready)

    # ------------------------------------------------------------- joining

    def join(
        self,
        token: int,
        group: str,
        member_id: str,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        session: float,
        rebalance: float,
        now: float,
        *,
        instance_id: str | None = None,
        require_known_id: bool = False,
        client_id: str = "",
        client_host: str = "",
    ) -> JoinResult | None:
        """JoinGroup: the answer now, or None when it comes later out of :meth:`poll`."""
        lim = self.limits
        bad = self._check_group_id(group)
        if bad is not None:
            return JoinResult(bad, member_id)
        if not lim.min_session <= session <= lim.max_session:
            return JoinResult(Code.INVALID_SESSION_TIMEOUT, member_id)
        rebalance = min(max(rebalance, session), lim.max_rebalance)  # v0: -1, the session's
        if not protocol_type or not protocols or len(protocols) > lim.max_protocols:
            return JoinResult(Code.INCONSISTENT_GROUP_PROTOCOL, member_id)
        # guard: kafka-join-caps-member-metadata
        if sum(len(n) + len(m) for n, m in protocols) > lim.max_metadata_bytes:
            return JoinResult(Code.INVALID_REQUEST, member_id)
        g = self._groups.get(group)
        if g is None:
            if len(self._groups) >= lim.max_groups:
                return JoinResult(Code.COORDINATOR_NOT_AVAILABLE, member_id)
            g = _Group(group)
        if g.members and (
            protocol_type != g.protocol_type
            or not self._candidates(g, {n for n, _ in protocols}, member_id)
        ):
            return JoinResult(Code.INCONSISTENT_GROUP_PROTOCOL, member_id)
        fresh = member_id == "" or member_id in g.pending  # an id we just handed out
        if member_id == "":
            # guard: kafka-join-caps-members-per-group
            if len(g.members) + len(g.pending) >= lim.max_members:
                return JoinResult(Code.GROUP_MAX_SIZE_REACHED)
            if self._members_total >= lim.max_members_total:
                return JoinResult(Code.GROUP_MAX_SIZE_REACHED)
            member_id = self._new_id()
            self._groups[group] = g
            if require_known_id:
                g.pending[member_id] = now + session
                self._members_total += 1
                return JoinResult(Code.MEMBER_ID_REQUIRED, member_id)
            self._members_total += 1
        elif member_id in g.pending:
            del g.pending[member_id]
        # guard: kafka-join-refuses-unknown-member
        if not fresh and member_id not in g.members:
            return JoinResult(Code.UNKNOWN_MEMBER_ID, member_id)
        m = g.members.get(member_id)
        if m is not None and m.join_token is not None:  # a join sent twice: the newer one waits
            self._ready.append((m.join_token, JoinResult(Code.UNKNOWN_MEMBER_ID, member_id)))
        if m is not None and m.sync_token is not None:
            self._ready.append((m.sync_token, SyncResult(Code.REBALANCE_IN_PROGRESS)))
            m.sync_token = None
        g.members[member_id] = _Member(
            member_id,
            instance_id,
            client_id[:256],
            client_host[:256],
            session,
            rebalance,
            protocol_type,
            tuple(protocols),
            now,
            join_token=token,
        )
        g.protocol_type = protocol_type
        if g.state is not GroupState.PREPARING:
            self._prepare(g, now)
        self._try_complete(g, now)
        return self._take(token)

    def sync(
        self,
        token: int,
        group: str,
        generation: int,
        member_id: str,
        assignments: Sequence[tuple[str, bytes]],
        now: float,
        *,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResult | None:
        lim = self.limits
        g = self._groups.get(group)
        m = g.members.get(member_id) if g is not None else None
        if g is None or m is None:
            return SyncResult(Code.UNKNOWN_MEMBER_ID)
        if generation != g.generation:
            return SyncResult(Code.ILLEGAL_GENERATION)
        if (protocol_type is not None and protocol_type != g.protocol_type) or (
            protocol_name is not None and protocol_name != g.protocol_name
        ):
            return SyncResult(Code.INCONSISTENT_GROUP_PROTOCOL)
        m.seen = now
        if g.state is GroupState.PREPARING:
            return SyncResult(Code.REBALANCE_IN_PROGRESS)
        if g.state is GroupState.STABLE:
            return self._sync_answer(g, m)
        if member_id == g.leader:
            total = 0
            given: dict[str, bytes] = {}
            for mid, data in assignments:
                total += len(data)
                # guard: kafka-sync-caps-assignment-bytes
                if len(data) > lim.max_assignment_bytes or total > lim.max_assignments_total:
                    return SyncResult(Code.INVALID_REQUEST)
                if mid in g.members:
                    given[mid] = data
            for mid, other in g.members.items():
                other.assignment = given.get(mid, b"")
                if other.sync_token is not None and mid != member_id:
                    self._ready.append((other.sync_token, self._sync_answer(g, other)))
                    other.sync_token = None
            g.state = GroupState.STABLE
            log.info("kafka.group.stable group=%s generation=%d", g.name, g.generation)
            return self._sync_answer(g, m)
        if m.sync_token is not None:
            self._ready.append((m.sync_token, SyncResult(Code.REBALANCE_IN_PROGRESS)))
        m.sync_token = token
        return None

    def heartbeat(self, group: str, generation: int, member_id: str, now: float) -> Code:
        g = self._groups.get(group)
        m = g.members.get(member_id) if g is not None else None
        # guard: kafka-heartbeat-refuses-unknown-member
        if g is None or m is None:
            return Code.UNKNOWN_MEMBER_ID
        if generation != g.generation:
            return Code.ILLEGAL_GENERATION
        m.seen = now
        if g.state is GroupState.PREPARING:
            return Code.REBALANCE_IN_PROGRESS
        return Code.NONE

    def leave(self, group: str, member_ids: Sequence[str], now: float) -> list[Code]:
        """LeaveGroup: one code per member named."""
        g = self._groups.get(group)
        out: list[Code] = []
        for mid in member_ids:
            if g is None or mid not in g.members:
                out.append(Code.UNKNOWN_MEMBER_ID)
                continue
            self._remove(g, mid)
            out.append(Code.NONE)
        if g is not None and Code.NONE in out:
            log.info("kafka.group.leave group=%s members=%d", g.name, out.count(Code.NONE))
            self._changed(g, now)
        return out

    def check_commit(self, group: str, generation: int, member_id: str, now: float) -> Code:
        """Whether OffsetCommit may go ahead: a member of the current generation, or a
        standalone commit (generation -1, no member) of a group with no members."""
        g = self._groups.get(group)
        if generation < 0 and member_id == "":
            if g is None or not g.members:
                return Code.NONE
            return Code.UNKNOWN_MEMBER_ID
        m = g.members.get(member_id) if g is not None else None
        if g is None or m is None:
            return Code.UNKNOWN_MEMBER_ID
        # guard: kafka-commit-checks-generation
        if generation != g.generation:
            return Code.ILLEGAL_GENERATION
        m.seen = now
        if g.state is not GroupState.STABLE:
            return Code.REBALANCE_IN_PROGRESS
        return Code.NONE

    def drop(self, group: str) -> None:
        """Forget ``group`` (this listener no longer coordinates it): its waiting joins and
        syncs are answered NOT_COORDINATOR, so their clients look for the new one."""
        g = self._groups.pop(group, None)
        if g is None:
            return
        self._members_total -= len(g.members) + len(g.pending)
        for m in g.members.values():
            if m.join_token is not None:
                self._ready.append((m.join_token, JoinResult(Code.NOT_COORDINATOR, m.member_id)))
            if m.sync_token is not None:
                self._ready.append((m.sync_token, SyncResult(Code.NOT_COORDINATOR)))
        log.info("kafka.group.dropped group=%s members=%d", group, len(g.members))

    # ------------------------------------------------------------- time

    def poll(self, now: float) -> list[Answer]:
        """Answers now ready: of calls that completed a round, and of expired timers."""
        if self._scanned is None or now - self._scanned >= self.limits.tick:
            self._scanned = now
            for g in list(self._groups.values()):
                self._expire(g, now)
        out, self._ready = self._ready, []
        return out

    def next_wakeup(self) -> float | None:
        if not self._groups:
            return None
        return (self._scanned or 0.0) + self.limits.tick

    # ------------------------------------------------------------- internals

    def _check_group_id(self, group: str) -> Code | None:
        # guard: kafka-join-caps-group-id
        if not group or len(group) > self.limits.max_group_id:
            return Code.INVALID_GROUP_ID
        return None

    def _take(self, token: int) -> JoinResult | None:
        for i, (t, result) in enumerate(self._ready):
            if t == token:
                del self._ready[i]
                assert isinstance(result, JoinResult)
                return result
        return None

    def _candidates(self, g: _Group, names: set[str], skip: str = "") -> list[str]:
        """Protocols every member (but ``skip``, replaced by ``names``) supports, in the
        first member's order of preference."""
        common = set(names)
        first: list[str] | None = None
        for mid, m in g.members.items():
            if mid == skip:
                continue
            own = [n for n, _ in m.protocols]
            first = own if first is None else first
            common &= set(own)
        order = first if first is not None else sorted(names)
        return [n for n in order if n in common]

    def _choose(self, g: _Group) -> str:
        members = list(g.members.values())
        common = set.intersection(*({n for n, _ in m.protocols} for m in members))
        votes: dict[str, int] = {}
        for m in members:
            for n, _ in m.protocols:
                if n in common:
                    votes[n] = votes.get(n, 0) + 1
                    break
        first = [n for n, _ in members[0].protocols if n in common]
        return max(first, key=lambda n: (votes.get(n, 0), -first.index(n)))

    def _prepare(self, g: _Group, now: float) -> None:
        g.state = GroupState.PREPARING
        g.deadline = now + max(m.rebalance for m in g.members.values())
        for m in g.members.values():
            if m.sync_token is not None:
                self._ready.append((m.sync_token, SyncResult(Code.REBALANCE_IN_PROGRESS)))
                m.sync_token = None
        log.info("kafka.group.rebalance group=%s members=%d", g.name, len(g.members))

    def _try_complete(self, g: _Group, now: float) -> None:
        if g.state is not GroupState.PREPARING:
            return
        if any(m.join_token is None for m in g.members.values()):
            return
        if not g.members:
            self._drop_if_empty(g)
            return
        g.generation += 1
        g.protocol_name = self._choose(g)
        if g.leader not in g.members:
            g.leader = next(iter(g.members))
        g.state = GroupState.AWAITING_SYNC
        g.deadline = None
        everyone = tuple(
            MemberInfo(m.member_id, m.instance_id, m.metadata(g.protocol_name))
            for m in g.members.values()
        )
        for m in g.members.values():
            m.seen = now
            m.assignment = b""
            result = JoinResult(
                Code.NONE,
                m.member_id,
                g.generation,
                g.protocol_type,
                g.protocol_name,
                g.leader,
                everyone if m.member_id == g.leader else (),
            )
            assert m.join_token is not None
            self._ready.append((m.join_token, result))
            m.join_token = None
        log.info(
            "kafka.group.generation group=%s generation=%d members=%d protocol=%s",
            g.name,
            g.generation,
            len(g.members),
            g.protocol_name,
        )

    def _sync_answer(self, g: _Group, m: _Member) -> SyncResult:
        return SyncResult(Code.NONE, g.protocol_type, g.protocol_name, m.assignment)

    def _remove(self, g: _Group, mid: str) -> None:
        m = g.members.pop(mid)
        self._members_total -= 1
        if m.join_token is not None:
            self._ready.append((m.join_token, JoinResult(Code.UNKNOWN_MEMBER_ID, mid)))
        if m.sync_token is not None:
            self._ready.append((m.sync_token, SyncResult(Code.UNKNOWN_MEMBER_ID)))

    def _changed(self, g: _Group, now: float) -> None:
        """Members went: a new round if some remain, else the group is forgotten."""
        if not g.members:
            g.state = GroupState.EMPTY
            g.deadline = None
            self._drop_if_empty(g)
            return
        if g.state is not GroupState.PREPARING:
            self._prepare(g, now)
        self._try_complete(g, now)

    def _drop_if_empty(self, g: _Group) -> None:
        if not g.members and not g.pending:
            self._groups.pop(g.name, None)

    def _expire(self, g: _Group, now: float) -> None:
        for mid, until in list(g.pending.items()):
            if until <= now:
                del g.pending[mid]
                self._members_total -= 1
        gone = False
        if g.state is GroupState.PREPARING and g.deadline is not None and now >= g.deadline:
            for mid in [mid for mid, m in g.members.items() if m.join_token is None]:
                log.info("kafka.group.not_rejoined group=%s member=%s", g.name, mid)
                self._remove(g, mid)
                gone = True
        for mid, m in list(g.members.items()):
            # a member waiting in a join or a sync is alive (the rebalance timeout bounds
            # a join; the leader's session or sync ends a sync's wait)
            waiting = m.join_token is not None or m.sync_token is not None
            if not waiting and m.seen + m.session <= now:
                log.info("kafka.group.session_expired group=%s member=%s", g.name, mid)
                self._remove(g, mid)
                gone = True
        if gone:
            self._changed(g, now)
        else:
            self._drop_if_empty(g)
