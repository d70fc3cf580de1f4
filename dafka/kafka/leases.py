"""The lease keeper: which leases a ``dafka-kafka`` listener takes, renews and releases.

A pure core (no sockets, no sleeps, time passed in): the listener's shell feeds it the
metadata view's leases and revision as they change (:meth:`LeaseKeeper.observe`), the
resources it wants (:meth:`~LeaseKeeper.want`), and the monotonic time; it answers the
commands to send (:meth:`~LeaseKeeper.tick`: :class:`Take`, :class:`Renew`,
:class:`Release`, each to be signed with the listener's key through
:class:`~dafka.metadata.client.MetadataClient` against its ``base`` revision) and whether
the listener holds a resource now (:meth:`~LeaseKeeper.holds`). The metadata's rules are in
:mod:`dafka.metadata.leases`; the state machine reads no clock, the keepers judge liveness.

Rules, with ``lease_s`` (10 s) and ``margin`` (1 s):

* **Renew** every lease held every ``lease_s / 3``, in one command.
* **Take** a wanted resource that is unheld (never leased, or released), or whose lease
  (holder, epoch, beat) has not changed for ``lease_s + margin`` by this keeper's own clock
  since it last saw it change (first sight counts as a change), at its epoch + 1. Of two
  keepers taking one resource the Raft order decides: the second take names an epoch that
  is taken by then and is refused; its keeper sees the new lease, whose change restarts its
  wait, and backs off. A take is made against the revision the keeper read (``base``), and
  the metadata refuses it if the lease was renewed after that revision, so a holder that
  renewed in time is never taken over.
* **Holds** ``resource`` only while ``now < s + lease_s - margin``, where ``s`` is the
  time this keeper *sent* the last renew (or the take) that it has since *seen committed*.
  The shell must start no write for a resource it does not hold, and finish or drop the
  ones in flight within ``margin``.

**Why the old holder fences itself before anyone takes over.** Let the last renew that
committed before a take be sent at real time ``T_s`` (on the holder's clock, ``s``); it
committed at ``T_c >= T_s`` and the taker saw it at ``T_v >= T_c``. The holder stops at
``s + lease_s - margin`` on its clock; the taker takes no earlier than ``lease_s + margin``
after ``T_v`` on its own. If the two clocks' rates differ from real time by at most ``r``
(a fraction), the holder stops by real time ``T_s + (lease_s - margin) / (1 - r)`` and the
taker takes at the earliest at ``T_v + (lease_s + margin) / (1 + r)``; since ``T_v >= T_s``
the first comes before the second whenever ``(lease_s - margin)(1 + r) <= (lease_s +
margin)(1 - r)``, i.e. ``r <= margin / lease_s``: 10 % with the defaults, where monotonic
clocks differ by parts per million. Clock *offsets* do not matter (each keeper compares its
own readings only); a renew in flight when the take applies is refused (its epoch is gone),
and a renew that applied after the taker read refuses the take. With renews possibly lost or
late, a keeper that sees its beat grow attributes it to the earliest renew it has in flight
(any renew that committed was sent before the commit the taker saw, so the earliest is never
later than the one that committed); one made against a revision more than the replay window
old can no longer apply and is forgotten.

**Balance.** A listener holds a ``b/BROKER`` lease for itself (its presence), so the live
listeners are the holders of leases whose lease changed within ``lease_s + margin`` by this
keeper's clock, and itself. Of the ``p/`` resources it wants (every Kafka-written partition
of every numbered topic), it takes at most ``ceil(wanted / live)`` and releases what it holds
beyond that (the highest resource names first, after it stopped holding them for
``margin``), so a listener that joins gets its share from the others; ``g/`` and ``b/``
leases are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..metadata.state import REPLAY_WINDOW

__all__ = ["Command", "LeaseKeeper", "Release", "Renew", "Take"]

MAX_IN_FLIGHT = 4
"""Renews of one lease sent and not seen committed, at most (then the keeper waits)."""


@dataclass(frozen=True, slots=True)
class Take:
    resource: str
    epoch: int
    base: int
    """The revision the keeper decided at: sign the command against it."""


@dataclass(frozen=True, slots=True)
class Renew:
    leases: tuple[tuple[str, int], ...]
    """(resource, epoch) of every lease renewed."""
    base: int


@dataclass(frozen=True, slots=True)
class Release:
    resource: str
    epoch: int
    base: int


Command = Take | Renew | Release


@dataclass(slots=True)
class _Seen:
    sig: tuple[Any, ...] | None
    """(holder, epoch, beat) as last seen (None: no lease)."""
    since: float
    """When this keeper saw it change (its own clock)."""


class LeaseKeeper:
    """See the module docstring. ``key``: this listener's public key (hex), as leases name
    their holder."""

    def __init__(self, key: str, *, lease_s: float = 10.0, margin: float = 1.0) -> None:
        if not 0 < margin < lease_s / 3:
            raise ConfigError(f"lease margin {margin} must be > 0 and < lease_s / 3")
        self.key = key
        self.lease_s = lease_s
        self.margin = margin
        self.revision = -1
        self._wants: set[str] = set()
        self._leases: dict[str, Mapping[str, Any]] = {}
        self._seen: dict[str, _Seen] = {}
        self._mine: dict[str, int] = {}
        """Resource -> epoch: the leases the view shows this key holding."""
        self._confirmed: dict[str, float] = {}
        """Resource -> send time of the last take or renew seen committed."""
        self._renews: dict[str, list[tuple[float, int]]] = {}
        """Resource -> renews in flight: (send time, base)."""
        self._takes: dict[str, tuple[int, float, int]] = {}
        """Resource -> the take in flight: (epoch, send time, base)."""
        self._releasing: dict[str, tuple[int, float, bool]] = {}
        """Resource -> (epoch, when it stopped holding, release sent)."""
        self._backoff: dict[str, float] = {}
        self._last_renew = -math.inf

    # -- inputs ----------------------------------------------------------------------------

    def want(self, resources: Iterable[str]) -> None:
        """The resources this listener wants to hold (replaces the previous set)."""
        self._wants = set(resources)

    def observe(self, leases: Mapping[str, Mapping[str, Any]], revision: int, now: float) -> None:
        """The metadata view's ``leases`` at ``revision``, seen at ``now``."""
        if revision < self.revision:
            return  # an older view: nothing new in it
        self.revision = revision
        self._leases = dict(leases)
        for resource in set(leases) | set(self._seen) | set(self._mine) | set(self._takes):
            lease = leases.get(resource)
            sig = None if lease is None else (lease["holder"], lease["epoch"], lease["beat"])
            seen = self._seen.get(resource)
            if seen is None or seen.sig != sig:
                self._seen[resource] = _Seen(sig, now)
            if lease is None:
                if seen is None:
                    del self._seen[resource]
                self._lose(resource)
                continue
            epoch = lease["epoch"]
            take = self._takes.get(resource)
            if lease["holder"] == self.key and lease["holder"] is not None:
                if self._mine.get(resource, epoch) != epoch:  # a new epoch: nothing confirmed
                    self._confirmed.pop(resource, None)
                    self._renews.pop(resource, None)
                if take is not None and take[0] == epoch:
                    self._confirmed[resource] = take[1]
                    del self._takes[resource]
                elif (
                    self._mine.get(resource) == epoch
                    and seen is not None
                    and seen.sig is not None
                    and seen.sig[1] == epoch
                    and lease["beat"] > seen.sig[2]
                    and self._renews.get(resource)
                ):
                    self._confirmed[resource] = min(t for t, _ in self._renews[resource])
                    self._renews[resource] = []
                self._mine[resource] = epoch  # also one of ours from before a restart
            else:
                self._lose(resource)
                if take is not None and epoch >= take[0]:  # the race was lost
                    del self._takes[resource]
                    self._backoff[resource] = now + self.lease_s / 3
        for resource, sent in list(self._renews.items()):
            self._renews[resource] = [(t, b) for t, b in sent if b + REPLAY_WINDOW >= revision]
        for resource, (_, _, base) in list(self._takes.items()):
            if base + REPLAY_WINDOW < revision:
                del self._takes[resource]

    def refused(self, command: Command, now: float) -> None:
        """The metadata refused ``command`` (it will never apply)."""
        if isinstance(command, Take):
            self._takes.pop(command.resource, None)
            self._backoff[command.resource] = now + self.lease_s / 3
        elif isinstance(command, Renew):
            for resource, _ in command.leases:
                sent = self._renews.get(resource, [])
                self._renews[resource] = [(t, b) for t, b in sent if b != command.base]
        else:
            releasing = self._releasing.get(command.resource)
            if releasing is not None:
                self._releasing[command.resource] = (releasing[0], releasing[1], False)

    def _lose(self, resource: str) -> None:
        self._mine.pop(resource, None)
        self._confirmed.pop(resource, None)
        self._renews.pop(resource, None)
        self._releasing.pop(resource, None)

    # -- outputs ---------------------------------------------------------------------------

    def holds(self, resource: str, now: float) -> bool:
        """True while this listener may write ``resource`` (see the module docstring)."""
        sent = self._confirmed.get(resource)
        # guard: lease-keeper-fences-itself
        if sent is None or now >= sent + self.lease_s - self.margin:
            return False
        return resource in self._mine and resource not in self._releasing

    def held(self, now: float) -> dict[str, int]:
        """Resource -> epoch of every lease this listener holds now."""
        return {r: e for r, e in self._mine.items() if self.holds(r, now)}

    def live(self, now: float) -> set[str]:
        """The listeners (keys) seen alive: holders of a lease that changed within
        ``lease_s + margin``, and this one."""
        alive = {
            str(s.sig[0])
            for s in self._seen.values()
            if s.sig is not None and s.sig[0] is not None and now - s.since < self.stale_s
        }
        return alive | {self.key}

    @property
    def stale_s(self) -> float:
        return self.lease_s + self.margin

    def quota(self, now: float) -> int:
        """How many ``p/`` resources this listener takes at most."""
        wanted = sum(1 for r in self._wants if r.startswith("p/"))
        return math.ceil(wanted / len(self.live(now)))

    def tick(self, now: float) -> list[Command]:
        """The commands to send now (each once: the keeper notes it sent them)."""
        out: list[Command] = []
        base = self.revision
        if base < 0:
            return out  # no view yet
        quota = self.quota(now)
        kept = sorted(r for r in self._mine if r.startswith("p/") and r in self._wants)
        extra = {r for r in self._mine if r not in self._wants} | set(kept[quota:])
        for resource in extra - set(self._releasing):
            self._releasing[resource] = (self._mine[resource], now, False)
        for resource, (epoch, since, sent) in sorted(self._releasing.items()):
            if not sent and now >= since + self.margin:  # stopped writing for margin
                out.append(Release(resource, epoch, base))
                self._releasing[resource] = (epoch, since, True)
        if now >= self._last_renew + self.lease_s / 3:
            renew = tuple(
                (r, e)
                for r, e in sorted(self._mine.items())
                if r not in self._releasing and len(self._renews.get(r, ())) < MAX_IN_FLIGHT
            )
            if renew:
                self._last_renew = now
                out.append(Renew(renew, base))
                for resource, _ in renew:
                    self._renews.setdefault(resource, []).append((now, base))
        taking = len(kept) + sum(1 for r in self._takes if r.startswith("p/"))
        for resource in sorted(self._wants):
            if resource in self._mine or resource in self._takes:
                continue
            if self._backoff.get(resource, -math.inf) > now:
                continue
            if resource.startswith("p/") and taking >= quota:
                continue
            lease = self._leases.get(resource)
            seen = self._seen.get(resource)
            unheld = lease is None or lease["holder"] is None
            # guard: lease-keeper-waits-stale
            if not unheld and (seen is None or now - seen.since < self.stale_s):
                continue
            epoch = 1 if lease is None else int(lease["epoch"]) + 1
            out.append(Take(resource, epoch, base))
            self._takes[resource] = (epoch, now, base)
            taking += resource.startswith("p/")
        return out

    def live_lease(self, resource: str, now: float) -> Mapping[str, Any] | None:
        """``resource``'s lease if it is held and changed within ``lease_s + margin``."""
        lease = self._leases.get(resource)
        seen = self._seen.get(resource)
        if lease is None or lease["holder"] is None or seen is None:
            return None
        return lease if now - seen.since < self.stale_s else None

    def brokers(self, now: float) -> list[tuple[int, str]]:
        """(broker id, endpoint) of every live ``b/`` lease (this listener's included)."""
        out = []
        for resource, lease in sorted(self._leases.items()):
            seen = self._seen.get(resource)
            if (
                resource.startswith("b/")
                and lease["holder"] is not None
                and seen is not None
                and (now - seen.since < self.stale_s or lease["holder"] == self.key)
            ):
                out.append((int(lease["broker"]), str(lease["endpoint"])))
        return out
