"""How often a node's loop ticks its handler: often while the node works, seldom once it
has been quiet a while (issue 39, "an idle node costs under 1 ms of CPU a second").

A handler's :meth:`~dafka.io.node_plugins.NodeHandler.on_tick` drives its core's timers
(a producer's retries, a consumer's FETCH ahead, a store's replication rounds). While
records, ACKs, fetches or commands flow they want the time every ``TICK_INTERVAL``
(50 ms). An idle node's cores have nothing due for seconds, yet the loop woke 20 times a
second to tell them so; on the machine this was measured on, every wake-up of a blocked
thread is charged 80-160 us of CPU whatever the thread does then
(``docs/performance.md``), so the ticks alone were 2-3 ms/s of an idle node's 5.

:class:`TickPace` is the rule, kept apart from the loop so it is tested without sockets:
a turn in which the node did something (sent or received a message that is not a
heartbeat, a beacon or a HEAD, ran a command, had work pending, served a subscription or
a service) makes it busy; once nothing of that kind has happened for
``QUIET_AFTER`` seconds it ticks every ``QUIET_TICK_INTERVAL``, and reads the beacons the
towers relay on those ticks instead of waking for each (they are read too before discovery
judges an expiry, so that queued beacons never put one off). Nothing else is slowed: data,
commands and subscriptions still wake the loop at once, and discovery's beacons and a
handler's ``command_deadline`` are kept to the millisecond (a peer's expiry is judged on the
quiet node's next tick, at most an interval late: :meth:`TickPace.wake_due`). The first
turn with work is busy again, so a core's timers are late by at most
``QUIET_TICK_INTERVAL`` only after a quiet second.

A quiet node's wake-ups are then its peers' heartbeats, one each a second. They come
together: every node beacons and heartbeats on one beat grid, the wall clock's whole
beacon intervals (:func:`beat_phase`, ``Discovery(phase=...)``). A quiet node that has
just sent its own stops polling its data SUB for ``COLLECT_WINDOW`` (:meth:`TickPace.beaconed`),
while its peers' heartbeats arrive, and reads them all at the window's end (an expiry due
inside the window reads them first). Its quiet ticks are on the beat too, in the turn of its
beacon, so the HEADs an idle producer's core sends on its ticks reach its consumers inside
their windows. A record that reaches a quiet node in a window waits for its end: at most
``COLLECT_WINDOW`` once a beacon interval, and never on a node that has worked in the last
``QUIET_AFTER`` seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "COLLECT_WINDOW",
    "QUIET_AFTER",
    "QUIET_TICK_INTERVAL",
    "TICK_INTERVAL",
    "BeatRule",
    "TickPace",
    "beat_phase",
    "heartbeat_beat",
]

TICK_INTERVAL = 0.05
"""Seconds between two ticks while the node works."""

QUIET_TICK_INTERVAL = 1.0
"""Seconds at most between two ticks once it has been quiet ``QUIET_AFTER`` seconds (they
follow the beat grid: one with each beacon)."""

COLLECT_WINDOW = 0.04
"""Seconds a quiet node leaves its data SUB unread after its beacon, while its peers'
heartbeats, sent at the same beat, arrive."""

QUIET_AFTER = 1.0
"""Seconds without work after which the node ticks every ``QUIET_TICK_INTERVAL``."""


@dataclass
class TickPace:
    """When the next tick is due, from what each turn did (one per node loop)."""

    busy_interval: float = TICK_INTERVAL
    quiet_interval: float = QUIET_TICK_INTERVAL
    quiet_after: float = QUIET_AFTER
    collect_window: float = COLLECT_WINDOW
    last_work: float = float("-inf")
    """When a turn last did work (never, at first: a node starts quiet until it works)."""
    collect_until: float = float("-inf")
    """The end of the window after a quiet node's last beacon."""

    def worked(self, now: float) -> None:
        """This turn did work: tick every ``busy_interval`` for ``quiet_after`` seconds."""
        self.last_work = now

    def quiet(self, now: float) -> bool:
        """Whether the node has done no work for ``quiet_after`` seconds."""
        # guard: tick-pace-quiet-only-after-quiet-window
        return now - self.last_work >= self.quiet_after

    def interval(self, now: float) -> float:
        """Seconds from a tick at ``now`` to the next."""
        return self.quiet_interval if self.quiet(now) else self.busy_interval

    def beaconed(self, now: float) -> None:
        """Our beacon and heartbeat went out at ``now``: a quiet node collects its peers'
        for ``collect_window`` seconds before it reads them."""
        if self.quiet(now):
            self.collect_until = now + self.collect_window

    def collecting(self, now: float) -> bool:
        """Whether the data SUB waits unread (quiet, in the window after a beacon)."""
        # guard: quiet-node-collects-heartbeats
        return now < self.collect_until and self.quiet(now)

    def wake_due(self, now: float, next_tick: float, beacon: float, deadline: float) -> float:
        """When the loop wakes next for its ticks and for discovery. While the node works,
        at discovery's every ``deadline`` (a beacon, a peer's expiry, a grace's end). Once
        quiet, at its next tick or ``beacon`` only: a quiet node ticks on every beat, and the
        turn of a tick judges the expiries due by then, at most an interval late against a
        ``beacon_timeout`` of several; a peer's expiry falling a moment after a beat (it was
        last heard on one) cost a wake-up of its own, about every fourth beat."""
        # guard: quiet-loop-judges-expiries-on-its-ticks
        if self.quiet(now):
            return min(next_tick, beacon)
        return min(next_tick, deadline)

    def next_tick(self, now: float, next_beacon: float) -> float:
        """When the tick after one at ``now`` is due: ``busy_interval`` on while the node
        works; once quiet, with the next beacon (at most ``quiet_interval`` on)."""
        step = self.interval(now)
        if self.quiet(now) and now < next_beacon <= now + step:
            return next_beacon
        return now + step


def beat_phase(clock: Callable[[], float], interval: float) -> float | None:
    """A moment of ``clock`` on the beat grid: a whole multiple of ``interval`` of the wall
    clock (None for a clock other than ``time.monotonic``: a test's own time)."""
    if clock is not time.monotonic or not interval > 0 or not math.isfinite(interval):
        return None
    return time.monotonic() - time.time() % interval


ECHO_FRESH = 2.5
"""Beacon intervals for which the node's own beacon, relayed back by a tower, says the towers
relay (:func:`heartbeat_beat`, :class:`BeatRule`): more than the two between the beacons
of a node that sends them on odd beats only, its echo read on its next beat."""
SKIP_TIMEOUT = 4.0
"""Beacon intervals a ``beacon_timeout`` must span for a node to skip heartbeats."""


def heartbeat_beat(
    now: float,
    beat: float,
    after: float,
    pairs: float | None,
    interval: float,
    expiry: float,
    echoed: float,
) -> bool:
    """Whether the beacon due at ``beat`` and sent at ``now`` (the next due at ``after``) goes
    with a heartbeat, and a quiet node collects its peers' after it (issue 39: an idle node's
    CPU).

    Heartbeats keep a peer alive while the towers are away. While a tower relays the node's
    own beacon back (``echoed``: when it last did, within ``ECHO_FRESH`` intervals), its
    peers are likely to hear that beacon too, so it heartbeats on the even beats only: those
    of the wall clock's grid of two intervals (``pairs``, :func:`beat_phase` of twice the
    interval), the same for every node whose clock NTP keeps close, so that their windows
    line up (its beacon then goes on the odd beats only: :class:`BeatRule`). The beat is
    the one *due*, not the moment the loop got to it, so a late loop still heartbeats on
    every even beat it serves, and an odd beat whose next (``after``) is odd too (a loop so
    late that the even one between is never due) heartbeats: no two beats in a row are
    skipped. A peer that hears the node by heartbeats alone (a peer tower's
    relay down, a beacon dropped) then hears it at least every two intervals plus the
    lateness of the loop's turn on the next even beat, against an ``expiry``
    (``beacon_timeout``) of at least ``SKIP_TIMEOUT`` intervals (a shorter one: every beat).
    Every beat when not echoed, or off the grid (``pairs`` None: a test's clock). A late loop
    has an interval less room than with a heartbeat every beat (docs/wire.md §6.2)."""
    # guard: heartbeats-every-beat-without-the-tower
    if pairs is None or not now - echoed <= ECHO_FRESH * interval:
        return True
    # guard: heartbeats-skipped-only-under-a-long-timeout
    if expiry < SKIP_TIMEOUT * interval:
        return True
    # guard: heartbeat-parity-of-the-beat-due
    odd = round((beat - pairs) / interval) % 2 == 1
    # guard: heartbeat-when-the-next-beat-is-odd-too
    return not odd or round((after - pairs) / interval) % 2 == 1


@dataclass(frozen=True, slots=True)
class BeatRule:
    """What a node sends on each of its beats: its beacon, its heartbeat, or both, for the
    loop of one node (issue 39: an idle node's CPU).

    The heartbeat follows :func:`heartbeat_beat`. The beacon of a node that heartbeats and
    may alternate follows the same rule on the grid an interval on, the odd beats: while
    the towers relay the node's own beacon back and the expiry spans ``SKIP_TIMEOUT``
    intervals, a peer hears the node by its heartbeat on each even beat, so its beacon goes
    on the odd beats only. A peer then hears one message of the node's an interval (its
    beacon, relayed, then its heartbeat), where it heard one and a half, and a tower relays
    half as many beacons. As for the heartbeat, the beat due decides, and an even beat
    whose next (``after``) is even too (the odd one between never due: a late loop) sends
    it: no two beats in a row go without one. A beacon that answers new peers or a welcome,
    and one changing the node's topics, are not beats: they always go (the shell does not
    ask). Every beat when not echoed, under a short expiry, or off the grid."""

    interval: float
    expiry: float
    """The node's ``beacon_timeout``."""
    pairs: float | None
    """:func:`beat_phase` of two intervals (None: off the grid, both every beat)."""
    heartbeats: bool
    """The node heartbeats (the signed profile): else its beacon goes on every beat."""
    alternate: bool
    """Its beacon may skip even beats (``node_beacons.TowerLink.alternates``: not on one
    tower of several, nor for a store under CURVE)."""

    def sends(self, now: float, beat: float, after: float, echoed: float) -> tuple[bool, bool]:
        """(beacon, heartbeat) for the beat due at ``beat``, sent at ``now``."""
        interval, expiry, pairs = self.interval, self.expiry, self.pairs
        heartbeat = heartbeat_beat(now, beat, after, pairs, interval, expiry, echoed)
        # guard: beacon-skipped-only-with-heartbeats
        if not (self.heartbeats and self.alternate):
            return True, heartbeat
        # guard: beacon-grid-an-interval-on
        shifted = None if pairs is None else pairs + interval
        return heartbeat_beat(now, beat, after, shifted, interval, expiry, echoed), heartbeat
