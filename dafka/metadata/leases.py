"""Listener leases and the stable numbering of Kafka partitions, in the metadata.

The ``dafka-kafka`` listeners (issue 37) hold *leases* in the Raft-replicated metadata:
who serves a numbered partition, who coordinates a Kafka group, which broker ids are live.
A listener signs its lease commands with its own Ed25519 key, which an admin lists in the
cluster setting ``listeners`` (:mod:`.settings`); such a key may sign these four commands
and nothing else (every other command still needs an admin key)::

    {"v": 1, "op": "lease.take",    "resource": R, "epoch": E, "broker": B, "endpoint": "h:p"}
    {"v": 1, "op": "lease.renew",   "resources": [R, ...], "epochs": [E, ...]}
    {"v": 1, "op": "lease.release", "resource": R, "epoch": E}
    {"v": 1, "op": "partition.number", "topic": T, "partitions": [<node ID>, ...]}

Resources: ``p/TOPIC/INDEX`` (a Kafka-written partition of a numbered topic),
``g/GROUP`` (a Kafka group's coordinator) and ``b/BROKER`` (the listener's presence under
its broker id: it lists the listener among the live brokers and keeps two listeners from
using one broker id). A lease is ``{holder, epoch, broker, endpoint, beat}``:

* ``lease.take`` needs ``epoch`` = the lease's epoch + 1 (1 for a resource never leased),
  so of two listeners racing for one resource the Raft order decides and the second is
  refused, and a replayed old take changes nothing. The state machine reads no clock: it
  never judges whether the holder is alive, the keepers do (:mod:`dafka.kafka.leases`),
  from ``beat`` changing over their own clocks. A take also touches ``lease/R``
  (:attr:`~.state.MetadataStateMachine.modified`), so it is refused if the lease was
  renewed after the revision the taker read: a holder that renewed is never taken over.
* ``lease.renew`` adds 1 to the beat of every lease named, all held by the signer at the
  epochs named, else the whole command is refused (at most :data:`MAX_RENEW`).
* ``lease.release`` by the holder, or by an admin (to take a listener's leases from it at
  once), clears the holder; the epoch stays, so epochs only grow (Kafka clients ignore a
  leader epoch lower than one they saw). A released ``g/`` lease is forgotten instead: a
  group coordinator's epoch fences no write, and anonymous Kafka clients naming new groups
  must not fill the table (:data:`MAX_LEASES`).
* A key removed from ``listeners`` can renew nothing any more: its leases go stale and the
  keepers take them ``lease_s + margin`` later, as if it had died, not at once, since the
  removed listener may still be running and writing until it fences itself. An admin who
  knows it is gone releases them at once (``lease.release``).
* Deleting a topic drops its ``p/`` leases and its numbering.

Numbering: a numbered topic's Kafka partitions are its ``partitions`` Kafka-written ones
and the Dafka partitions written natively (a producer node ID each), readable, not
writable. ``partition.number`` appends native ones (duplicates ignored, at most
:data:`MAX_NUMBERED` a topic): each gets the next number after every number given so far
(``partitions`` + the natives numbered before), kept for ever. A later growth of
``partitions`` appends its new Kafka-written partitions after every number given, so no
number ever changes: Kafka partition ``n`` is native when ``n`` is in the numbering, else
Kafka-written (:func:`layout`), and ``p/T/n`` is leasable for Kafka-written ``n`` only.

Snapshots (:mod:`.proofs`): a lease is proven by the ``lease.take`` that set it, signed by
a key an admin-signed ``cluster.set`` made a listener before that take (as admin keys are
proven by grants: what a key signed while it was a listener stays proven after its
removal), and a released lease by its ``lease.release`` too; each numbered native
partition by the ``partition.number`` that appended it. ``beat`` is a liveness counter,
not a signed value: a snapshot's beat is only bounded (at most the revisions since the
take); a forged beat can make a lease look renewed once, never change who holds it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..ids import check_topic
from .settings import node_id

if TYPE_CHECKING:
    from .proofs import Proof

__all__ = [
    "LISTENER_OPS",
    "MAX_LEASES",
    "MAX_NUMBERED",
    "MAX_RENEW",
    "LeaseProof",
    "check_broker",
    "check_endpoint",
    "check_resource",
    "layout",
    "lease_touched",
    "plan",
]

LISTENER_OPS = frozenset({"lease.take", "lease.renew", "lease.release", "partition.number"})
"""The only commands a listener key may sign."""
MAX_RENEW = 10_000
"""Leases one ``lease.renew`` may name."""
MAX_NUMBERED = 10_000
"""Native partitions numbered per topic."""
MAX_LEASES = 100_000
"""Lease records the metadata holds (released ones included: their epochs stay)."""
MAX_GROUP_BYTES = 255
MAX_HOST = 253
_RESOURCE = re.compile(r"(p)/(.+)/(0|[1-9][0-9]{0,8})|(g)/(.+)|(b)/([1-9][0-9]{0,9})", re.S)
"""Matched whole (``fullmatch``: no trailing newline makes a second name of one resource)."""
_HOST = re.compile(r"^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\])$")
_INT32 = 2**31 - 1


@dataclass
class LeaseProof:
    take: Proof
    """The ``lease.take`` that set the holder, epoch, broker and endpoint."""
    end: Proof | None = None
    """The ``lease.release`` of that epoch, for a released lease."""


def check_broker(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _INT32:
        raise ConfigError(f"bad broker {value!r}: a Kafka broker id, an int32 > 0")
    return value


def check_endpoint(value: object) -> str:
    """``host:port`` as Kafka clients are told to connect (bounded, no spaces)."""
    text = value if isinstance(value, str) else ""
    host, _, port = text.rpartition(":")
    if (
        len(host) > MAX_HOST
        or not _HOST.match(host)
        or not port.isdigit()
        or not 0 < int(port) < 65536
        or port != str(int(port))
    ):
        raise ConfigError(f"bad endpoint {str(value)[:80]!r}: host:port")
    return text


def check_resource(value: object) -> tuple[str, str, int | None]:
    """``(kind, name, index)`` of a lease resource: ``("p", topic, index)``, ``("g", group,
    None)``, ``("b", "", broker)``; ConfigError otherwise."""
    text = value if isinstance(value, str) else ""
    # guard: metadata-lease-resource-whole
    m = _RESOURCE.fullmatch(text)
    if not m or len(text.encode(errors="replace")) > 16 + MAX_GROUP_BYTES:
        raise ConfigError(f"bad lease resource {str(value)[:80]!r}: p/TOPIC/INDEX, g/GROUP or b/ID")
    if m.group(1):
        return "p", check_topic(m.group(2)), int(m.group(3))
    if m.group(4):
        group = m.group(5)
        if len(group.encode()) > MAX_GROUP_BYTES or not group.isprintable():
            raise ConfigError(f"bad group {group[:80]!r}: printable, at most {MAX_GROUP_BYTES}")
        return "g", group, None
    broker = check_broker(int(m.group(7)))
    return "b", "", broker


def layout(partitions: int | None, numbering: Iterable[Iterable[Any]]) -> list[str | None]:
    """Every Kafka partition of a topic by number: None for a Kafka-written one (leased as
    ``p/T/n``), the producer node ID for a native one. ``numbering`` as the view has it:
    ``[[node ID, number], ...]``."""
    native = {int(n): str(i) for i, n in numbering}
    return [native.get(n) for n in range((partitions or 0) + len(native))]


def lease_touched(cmd: Mapping[str, Any]) -> list[str]:
    """What a lease command changes, as names of ``modified`` (malformed: nothing)."""
    op = cmd.get("op")
    if op in ("lease.take", "lease.release") and isinstance(cmd.get("resource"), str):
        return [f"lease/{cmd['resource']}"]
    if op == "lease.renew" and isinstance(cmd.get("resources"), list):
        return [f"lease/{r}" for r in cmd["resources"][: MAX_RENEW + 1] if isinstance(r, str)]
    if op == "partition.number" and isinstance(cmd.get("topic"), str):
        return [f"numbering/{cmd['topic']}"]
    return []


def _writable(sm: Any, topic: str, index: int) -> None:
    settings = sm.topics.get(topic)
    if settings is None:
        raise ConfigError(f"unknown topic {topic!r}")
    partitions = settings.get("partitions")
    if partitions is None:
        raise ConfigError(f"topic {topic!r} is not numbered (no partitions setting)")
    numbers = layout(partitions, sm.numbering.get(topic, ()))
    # guard: metadata-lease-partition-exists
    if index >= len(numbers) or numbers[index] is not None:
        raise ConfigError(f"topic {topic!r} has no Kafka-written partition {index}")


def plan(sm: Any, cmd: Mapping[str, Any], signer: str | None) -> tuple[Callable[[], None], None]:
    """What lease command ``cmd`` signed by ``signer`` would do against ``sm`` (a
    :class:`~.state.MetadataStateMachine`); ConfigError names what makes it invalid."""
    op = cmd.get("op")
    listeners = sm.cluster.get("listeners") or ()
    leases: dict[str, dict[str, Any]] = sm.leases
    if op == "partition.number":
        topic = cmd.get("topic")
        if not isinstance(topic, str) or topic not in sm.topics:
            raise ConfigError(f"unknown topic {str(topic)[:80]!r}")
        ids = cmd.get("partitions")
        if not isinstance(ids, list) or not 0 < len(ids) <= MAX_NUMBERED:
            raise ConfigError(f"partition.number: a list of 1 to {MAX_NUMBERED} node IDs")
        # guard: metadata-numbering-node-ids
        clean = [node_id(i, "partition") for i in ids]
        held = sm.numbering.get(topic, [])
        known = {i for i, _ in held}
        new = [i for i in dict.fromkeys(clean) if i not in known]
        if len(held) + len(new) > MAX_NUMBERED:
            raise ConfigError(f"topic {topic!r} would number over {MAX_NUMBERED} partitions")
        start = len(layout(sm.topics[topic].get("partitions"), held))
        numbered = [*held, *([i, start + k] for k, i in enumerate(new))]
        return lambda: sm.numbering.__setitem__(topic, numbered), None
    if op == "lease.renew":
        resources, epochs = cmd.get("resources"), cmd.get("epochs")
        # guard: metadata-renew-bounded
        if not isinstance(resources, list) or not 0 < len(resources) <= MAX_RENEW:
            raise ConfigError(f"lease.renew names 1 to {MAX_RENEW} leases")
        if not isinstance(epochs, list) or len(epochs) != len(resources):
            raise ConfigError("lease.renew needs one epoch per resource")
        if len(set(map(repr, resources))) != len(resources):
            raise ConfigError("lease.renew names a lease twice")
        for resource, epoch in zip(resources, epochs, strict=True):
            lease = leases.get(resource) if isinstance(resource, str) else None
            # guard: metadata-renew-only-own-leases
            if lease is None or lease["holder"] != signer or lease["epoch"] != epoch:
                raise ConfigError(
                    f"lease {str(resource)[:80]!r} is not held by {signer} at epoch {epoch!r}"
                )

        def renew() -> None:
            for resource in resources:
                leases[resource]["beat"] += 1

        return renew, None
    resource = cmd.get("resource")
    kind, name, index = check_resource(resource)
    assert isinstance(resource, str)
    epoch = cmd.get("epoch")
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise ConfigError(f"bad epoch {epoch!r}")
    lease = leases.get(resource)
    current = 0 if lease is None else lease["epoch"]
    if op == "lease.release":
        if lease is None or lease["holder"] is None or lease["epoch"] != epoch:
            raise ConfigError(f"lease {resource!r} is not held at epoch {epoch}")
        if signer != lease["holder"] and signer not in sm.admins:
            raise ConfigError(f"lease {resource!r} is held by another key")
        # guard: metadata-released-group-lease-forgotten
        if kind == "g":
            # A group coordinator's epoch fences no write (commits carry their own), so a
            # released one is forgotten: Kafka clients naming ever new groups (each one a
            # FindCoordinator, a take and, once no client asks, a release) never fill the
            # table up to MAX_LEASES, after which nothing new could be leased.
            return lambda: leases.__delitem__(resource), None
        released = {**lease, "holder": None, "broker": None, "endpoint": None}
        return lambda: leases.__setitem__(resource, released), None
    if op != "lease.take":
        raise ConfigError(f"unknown command {op!r}")
    if signer not in listeners:
        raise ConfigError("lease.take needs a listener key (the cluster setting listeners)")
    # guard: metadata-take-epoch-next
    if epoch != current + 1:
        raise ConfigError(
            f"lease {resource!r} is at epoch {current}: a take names epoch {current + 1}, "
            f"not {epoch}"
        )
    broker = check_broker(cmd.get("broker"))
    endpoint = check_endpoint(cmd.get("endpoint"))
    if kind == "p":
        assert index is not None
        _writable(sm, name, index)
    elif kind == "b" and index != broker:
        raise ConfigError(f"lease {resource!r} is taken by broker {index} only")
    if lease is None and len(leases) >= MAX_LEASES:
        raise ConfigError(f"the metadata holds {MAX_LEASES} leases: no new resource")
    taken = {"holder": signer, "epoch": epoch, "broker": broker, "endpoint": endpoint, "beat": 0}
    return lambda: leases.__setitem__(resource, taken), None


def drop_topic(sm: Any, topic: str) -> None:
    """Forget the leases and numbering of deleted ``topic`` (and their proofs)."""
    prefix = f"p/{topic}/"
    for resource in [r for r in sm.leases if r.startswith(prefix)]:
        del sm.leases[resource]
        sm.proofs.leases.pop(resource, None)
    sm.numbering.pop(topic, None)
    sm.proofs.numbering.pop(topic, None)


def prove(sm: Any, cmd: Mapping[str, Any], proof: Proof) -> None:
    """Keep ``proof`` for what lease command ``cmd`` just changed in ``sm``."""
    op, proofs = cmd.get("op"), sm.proofs
    if op == "lease.take":
        proofs.leases[str(cmd["resource"])] = LeaseProof(proof)
    elif op == "lease.release":
        resource = str(cmd["resource"])
        if resource in sm.leases:
            proofs.leases[resource].end = proof
        else:  # a group's lease, forgotten
            proofs.leases.pop(resource, None)
    elif op == "partition.number":
        topic = str(cmd["topic"])
        held = proofs.numbering.setdefault(topic, {})
        for partition, _ in sm.numbering.get(topic, ()):
            held.setdefault(partition, proof)
