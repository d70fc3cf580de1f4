"""What a discovery simulation follows while it runs: each churn event's outcome so far."""

from __future__ import annotations

from dataclasses import dataclass, field

from .report import JoinReport, LeaveReport, OutageReport, PauseReport


@dataclass(slots=True, eq=False)
class LeaveWatch:
    node: int
    at: float
    dropped_s: float | None = None

    def report(self) -> LeaveReport:
        return LeaveReport(self.node, self.at, self.dropped_s)


@dataclass(slots=True, eq=False)
class JoinWatch:
    node: int
    at: float
    pairs: int
    missing: set[tuple[int, int]] = field(default_factory=set)
    """(a, b): node a's data SUB is not yet connected to node b."""
    connected_s: float | None = None

    def report(self) -> JoinReport:
        return JoinReport(self.node, self.at, self.pairs, self.connected_s)


@dataclass(slots=True, eq=False)
class PauseWatch:
    node: int
    at: float
    seconds: float
    expired_before: int
    backlog: int = 0
    beacons_dropped: int = 0
    expired_own: int = 0
    disconnected_by: int = 0

    def report(self) -> PauseReport:
        return PauseReport(
            self.node,
            self.at,
            self.seconds,
            self.backlog,
            self.beacons_dropped,
            self.expired_own,
            self.disconnected_by,
        )


@dataclass(slots=True, eq=False)
class OutageWatch:
    tower: int
    at: float
    seconds: float
    expired_before: int
    expired_during: int = 0
    expired_until_converged: int = 0
    converge_s: float | None = None
    moving: set[int] = field(default_factory=set)
    """Fanout one: the nodes that used it and are not yet linked to a tower again."""
    relinked_s: float | None = None
    away: set[int] | None = None
    """Fanout one, once it is back: the nodes whose home it is, not yet back on it."""
    home_s: float | None = None
    returned_at: float | None = None

    def linked(self, node: int, tower: int, now: float) -> None:
        """Node ``node``'s link to ``tower`` came up at ``now``."""
        moving = self.moving
        if moving and node in moving:
            moving.discard(node)
            if not moving:
                self.relinked_s = now - self.at
        away = self.away
        if away and tower == self.tower and node in away:
            away.discard(node)
            if not away and self.returned_at is not None:
                self.home_s = now - self.returned_at

    def gone(self, node: int) -> None:
        """Node ``node`` left: it is waited for no more."""
        self.moving.discard(node)
        if self.away:
            self.away.discard(node)

    def report(self) -> OutageReport:
        return OutageReport(
            self.tower,
            self.at,
            self.seconds,
            self.expired_during,
            self.expired_until_converged,
            self.converge_s,
            self.relinked_s,
            self.home_s,
        )
