"""Why a producer's records are not acknowledged: one cause, said in one line.

A producer that waits for ACKs in vain used to say "is a store running and reachable
through the tower?" whatever the reason. It knows better: what it heard tells most
causes apart (:func:`explain`, a pure function of an :class:`AckEvidence` gathered on
the IO thread):

* no tower welcomed it (:attr:`~UnackedCause.TOWER_UNREACHABLE`);
* a topic's ``min_acks`` above the stores it trusts (:attr:`~UnackedCause.TOPIC_MIN_ACKS`,
  or :attr:`~UnackedCause.TOO_FEW_STORES` for its own ``min_acks``);
* ACKs came only from stores it does not trust (:attr:`~UnackedCause.UNTRUSTED_STORES`);
* fewer distinct stores acknowledged than ``min_acks`` asks (``TOO_FEW_STORES``, or
  ``TOPIC_MIN_ACKS`` when the topic's metadata asks it);
* no store connected to it (:attr:`~UnackedCause.NO_STORE`);
* stores connected that acknowledge nothing: with a probe (:func:`probe_profiles`, which
  ``dafka-producer`` runs and ``Producer.diagnose`` offers) the stores' own wire profile
  tells :attr:`~UnackedCause.OTHER_PROFILE` apart; else :attr:`~UnackedCause.NO_ACK`.

A tower name that does not resolve is refused before the producer starts
(:func:`check_towers_resolve`), as Kafka's clients refuse bootstrap servers none of which
resolves.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import TowerAddress
from ..errors import ConfigError, DafkaError, UnackedCause

if TYPE_CHECKING:
    from ..core.effects import Publish
    from ..io.node import NodeLoop

__all__ = [
    "AckEvidence",
    "Diagnosis",
    "TopicAcks",
    "check_towers_resolve",
    "diagnose",
    "explain",
    "probe_profiles",
    "read_evidence",
]

MAX_PROBED = 8
"""Stores a probe asks for their wire profile at most."""
NAMED = 3
"""Store IDs a message names at most (then: "and N more")."""


@dataclass(frozen=True, slots=True)
class TopicAcks:
    """One topic with records awaiting acknowledgement."""

    topic: str
    need: int
    """Distinct stores' ACKs a record needs."""
    topic_set: bool
    """``need`` is the topic's ``min_acks`` in the cluster metadata, above the producer's own."""
    acked_by: tuple[str, ...]
    """Stores whose ACKs of this topic counted (``""``: an rfc46 store, anonymous)."""


@dataclass(frozen=True, slots=True)
class AckEvidence:
    """What a producer heard that bears on why its records wait (read on its IO thread)."""

    profile: str
    towers: tuple[str, ...]
    welcomed: bool
    """A tower answered (its welcome arrived)."""
    stores: tuple[str, ...]
    """Stores connected to the producer: they subscribed to its data socket."""
    trusted: frozenset[str] | None
    """Stores whose ACKs count (None: any whose signature verifies)."""
    untrusted: tuple[str, ...]
    """Stores named by ACKs that did not count for want of trust."""
    topics: tuple[TopicAcks, ...]
    """The topics with records awaiting acknowledgement."""
    state_dir: str | None = None
    """Why the state directory cannot be written, if it cannot."""


@dataclass(frozen=True, slots=True)
class Diagnosis:
    cause: UnackedCause
    text: str


def _names(ids: Sequence[str] | frozenset[str]) -> str:
    ordered = sorted(ids)
    text = ", ".join(ordered[:NAMED])
    return text + (f" and {len(ordered) - NAMED} more" if len(ordered) > NAMED else "")


def _stores(n: int) -> str:
    return f"{n} store" if n == 1 else f"{n} stores"


def explain(e: AckEvidence, profiles: Mapping[str, str] | None = None) -> Diagnosis:
    """The cause, and one line saying it. ``profiles`` (store ID -> wire profile) is what
    a probe of the stores found, if one ran."""
    if e.state_dir is not None:
        return Diagnosis(UnackedCause.STATE_DIR, e.state_dir)
    # guard: producer-says-tower-answered
    if not e.welcomed:
        return Diagnosis(
            UnackedCause.TOWER_UNREACHABLE,
            f"no tower answered at {', '.join(e.towers)}: is dafka-tower running there, "
            "and is it the beacon port (HOST:PORT, --tower)?",
        )
    for t in e.topics:
        # guard: producer-says-topic-min-acks
        if e.trusted is not None and t.need > len(e.trusted):
            who = (
                f"topic {t.topic!r} needs ACKs from {t.need} stores (its min_acks in the "
                "cluster metadata)"
                if t.topic_set
                else f"min_acks={t.need} (--min-acks) needs ACKs from {t.need} stores"
            )
            return Diagnosis(
                UnackedCause.TOPIC_MIN_ACKS if t.topic_set else UnackedCause.TOO_FEW_STORES,
                f"{who}, but only {_stores(len(e.trusted))} "
                f"{'is' if len(e.trusted) == 1 else 'are'} trusted ({_names(e.trusted)})",
            )
    for t in e.topics:
        # guard: producer-says-acks-came-untrusted
        if not t.acked_by and e.untrusted:
            return Diagnosis(
                UnackedCause.UNTRUSTED_STORES,
                f"{_stores(len(e.untrusted))} ({_names(e.untrusted)}) acknowledged, but "
                f"{'it is' if len(e.untrusted) == 1 else 'they are'} not trusted: the "
                f"trusted stores are {_names(e.trusted or frozenset())} (--trusted-store, "
                "trusted_stores, or the cluster's trusted stores)",
            )
    for t in e.topics:
        # guard: producer-says-fewer-stores-acknowledged
        if t.acked_by and len(t.acked_by) < t.need:
            why = (
                f"which needs {t.need} distinct stores (its min_acks in the cluster metadata)"
                if t.topic_set
                else f"and min_acks={t.need} (--min-acks) needs {t.need} distinct stores"
            )
            return Diagnosis(
                UnackedCause.TOPIC_MIN_ACKS if t.topic_set else UnackedCause.TOO_FEW_STORES,
                f"only {_stores(len(t.acked_by))} ({_names(t.acked_by)}) acknowledged "
                f"topic {t.topic!r}, {why}; {_stores(len(e.stores))} "
                f"{'is' if len(e.stores) == 1 else 'are'} connected to this producer",
            )
    if profiles:
        mine = [s for s, p in profiles.items() if p == e.profile]
        others = sorted({p for p in profiles.values() if p != e.profile})
        # guard: producer-says-stores-speak-other
        if not mine and others:
            return Diagnosis(
                UnackedCause.OTHER_PROFILE,
                f"the {_stores(len(profiles))} running ({_names(list(profiles))}) "
                f"speak{'s' if len(profiles) == 1 else ''} the {' and '.join(others)} wire "
                f"profile; this producer speaks {e.profile} (--profile)",
            )
    # guard: producer-says-store-there
    if not e.stores and not profiles:
        return Diagnosis(
            UnackedCause.NO_STORE,
            f"no store is connected to this producer{'' if profiles is None else ', nor announced'}"
            f" through the tower(s) {', '.join(e.towers)}: is a store running?",
        )
    connected = e.stores or tuple(profiles or ())
    return Diagnosis(
        UnackedCause.NO_ACK,
        f"{_stores(len(connected))} ({_names(connected)}) "
        f"{'is' if len(connected) == 1 else 'are'} connected but acknowledged nothing "
        "(a store of the other wire profile, a full disk, or the topic's producers list?)",
    )


def read_evidence(loop: NodeLoop, read: Callable[[], AckEvidence], wait: float) -> AckEvidence:
    """``read()`` run on the node's IO thread (at most ``wait`` s for it), or here once that
    thread has stopped (or does not answer)."""
    if loop.alive:
        box: list[AckEvidence] = []
        done = threading.Event()

        def call(now: float) -> list[Publish]:
            box.append(read())
            done.set()
            return []

        loop.call(call)
        if done.wait(wait) and box:
            return box[0]
    return read()


def diagnose(
    evidence: AckEvidence,
    towers: Sequence[TowerAddress],
    partition: str,
    probe: bool,
    wait: float,
) -> Diagnosis:
    """:func:`explain`, with a probe of the stores' profiles (``probe``) when what the
    producer heard leaves stores of the other profile possible."""
    profiles: dict[str, str] | None = None
    if probe and evidence.welcomed and evidence.topics:
        if explain(evidence).cause in (UnackedCause.NO_ACK, UnackedCause.NO_STORE):
            profiles = probe_profiles(towers, evidence.topics[0].topic, partition, wait)
    return explain(evidence, profiles)


def probe_profiles(
    towers: Sequence[TowerAddress], topic: str, partition: str, wait: float = 1.5
) -> dict[str, str]:
    """``store ID -> wire profile`` of the stores the towers relay (at most
    :data:`MAX_PROBED`, asked at their query endpoints; those that do not answer within
    ``wait`` s are left out). Not under CURVE (empty): its queries need keys."""
    from ..query.client import QueryClient
    from ..query.locator import StoreLocator

    if any(t.key is not None for t in towers):
        return {}
    found: dict[str, str] = {}
    try:
        with StoreLocator([str(t) for t in towers], wait=wait) as locator:
            stores = locator.stores()
    except DafkaError:
        return {}
    for node_id, endpoint in list(stores.items())[:MAX_PROBED]:
        client = QueryClient(endpoint, timeout=wait)
        try:
            found[node_id] = client.read(topic, partition, 0, max_records=1).profile
        except DafkaError:
            continue
        finally:
            client.close()
    return found


def check_towers_resolve(towers: Sequence[TowerAddress]) -> None:
    """Raise :class:`ConfigError` when no tower's host resolves (a misspelt name: the node
    would wait for ever for a tower it can never reach)."""
    failures = []
    for tower in towers:
        try:
            socket.getaddrinfo(tower.host, tower.port, type=socket.SOCK_STREAM)
            return
        except (OSError, UnicodeError) as exc:
            failures.append(f"{tower.host!r} does not resolve ({_reason(exc)})")
    # guard: producer-refuses-towers-none-whose
    if failures:
        raise ConfigError(f"tower host {'; '.join(failures)}: check --tower (towers=)")


def _reason(exc: BaseException) -> str:
    return str(getattr(exc, "strerror", None) or exc).lower()
