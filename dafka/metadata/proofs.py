"""Proofs of the metadata state: every item carries the admin-signed command that set it.

A Raft snapshot replaces a replica's whole state at once, without the log that made it.
So that a snapshot cannot say more than the admins signed (issue 32), the state keeps, for
every item an admin controls, the signed envelope (the RequestUpdate data as it was logged,
:mod:`.signing`) of the command that last set it, with the revision that command made:

* ``stores[S]``: the ``store.trust`` of each trusted store;
* ``cluster[NAME]``: the ``cluster.set`` that set each cluster setting;
* ``topics[T]``: the ``topic.create`` of the topic (None for a topic created unsigned with
  the defaults, ``auto_create``) and, for each of its settings, the ``topic.create`` or
  ``topic.alter`` that set it;
* ``deleted[T]``: the ``topic.delete`` of each tombstone;
* ``grants[K]``: the ``admins.add`` of each admin key that is not a root admin, and of
  every key that signed one of the above (kept after the key is removed: what it signed
  while an admin stays valid);
* ``listeners[K]``: the first ``cluster.set`` that made K a listener (the listeners' grant);
* ``leases[R]``: the ``lease.take`` that set lease R, signed by a key a listener grant names
  from an earlier revision, and its ``lease.release`` once released; ``numbering[T][I]``: the
  ``partition.number`` that gave native partition I of topic T its number (:mod:`.leases`).

The root of trust is ``root``: the first admins (the unsigned ``admins.init`` the first
tower proposes from its ``--admin-key`` configuration) and the cluster name every signature
is bound to (:func:`.signing.signed_bytes`). :func:`verify` checks a decoded snapshot
against its proofs, refusing the whole snapshot on one bad link: every envelope's signature
over this cluster's name; every signer an admin by a chain of grants from the root, granted
before it signed; every item equal to what its proof set, and every proof's revision one
that its command could have made (``base`` < revision <= ``base`` + window + 1 and at most
the snapshot's revision). Whether the snapshot's root is the right one is for the caller
(:meth:`.state.MetadataStateMachine.check_snapshot`): a configured bootstrap admin list, or
the root this replica already holds.

What no proof can show: that nothing is missing. A snapshot may leave out an item (a store,
a topic, an admin) or show an older value an admin once signed for the same item (a topic's
earlier settings, a store trusted before it was revoked), and a removed admin's key can
still sign items that verify. The replica refuses a snapshot older than its own state, and
every snapshot a node installs comes from a Raft peer, which the transport authenticates
(docs/security.md); these proofs make the content of a snapshot worth no more than an admin
signature, not a replacement for authenticating who sends it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import ConfigError, WireError
from ..security import identity
from ..wire.packing import unpack as _unpack
from .leases import LISTENER_OPS, LeaseProof, layout, lease_touched
from .leases import prove as prove_lease
from .settings import check_cluster_settings as _cluster_settings
from .settings import check_settings as _topic_settings
from .settings import node_id
from .signing import ID_BYTES, MAX_COMMAND_BYTES, check_public_key, open_envelope, signed_bytes

__all__ = [
    "MAX_PROOFS",
    "Proof",
    "Proofs",
    "SignedCommand",
    "TopicProof",
    "touched",
    "verify",
]

MAX_PROOFS = 1_000_000
"""At most this many distinct envelopes in one snapshot (a state of 100,000 topics with
several settings each stays under it)."""
MAX_ENVELOPE_BYTES = MAX_COMMAND_BYTES
"""A proof's envelope is a command the state applied, so at most what it applies (it was
64 KiB, under what the state took: a ``cluster.set`` naming 2,000 clients made every
snapshot of its state refused, so no new or lagging replica could catch up)."""
_MISSING = object()


class Proof(NamedTuple):
    """A signed command as logged, and the revision its change made."""

    envelope: bytes
    revision: int


@dataclass
class TopicProof:
    create: Proof | None
    """The topic's ``topic.create``; None: created unsigned, with the defaults."""
    settings: dict[str, Proof] = field(default_factory=dict)
    """Each setting the topic has -> the ``topic.create`` or ``topic.alter`` that set it."""


class SignedCommand(NamedTuple):
    """An envelope opened and checked: its signer (hex), its command, its base revision."""

    signer: str
    cmd: dict[str, Any]
    base: int


@dataclass
class Proofs:
    """The proofs of one state (see the module docstring)."""

    root: list[str] = field(default_factory=list)
    grants: dict[str, Proof] = field(default_factory=dict)
    stores: dict[str, Proof] = field(default_factory=dict)
    cluster: dict[str, Proof] = field(default_factory=dict)
    topics: dict[str, TopicProof] = field(default_factory=dict)
    deleted: dict[str, Proof] = field(default_factory=dict)
    listeners: dict[str, Proof] = field(default_factory=dict)
    leases: dict[str, LeaseProof] = field(default_factory=dict)
    numbering: dict[str, dict[str, Proof]] = field(default_factory=dict)

    def envelopes(self) -> Iterable[Proof]:
        yield from self.grants.values()
        yield from self.stores.values()
        yield from self.cluster.values()
        for topic in self.topics.values():
            if topic.create is not None:
                yield topic.create
            yield from topic.settings.values()
        yield from self.deleted.values()
        yield from self.listeners.values()
        for lease in self.leases.values():
            yield lease.take
            if lease.end is not None:
                yield lease.end
        for numbered in self.numbering.values():
            yield from numbered.values()

    def note(self, cmd: Mapping[str, Any], proof: Proof | None, sm: Any) -> None:
        """Keep ``proof`` (None: an unsigned command) for what ``cmd`` just changed in
        ``sm`` (the :class:`~.state.MetadataStateMachine` that applied it)."""
        op = cmd.get("op")
        if op == "admins.init":
            self.root = list(sm.admins)
            return
        if op == "topic.create":
            topic = str(cmd["topic"])
            settings = sm.topics[topic]
            self.topics[topic] = TopicProof(proof, dict.fromkeys(settings, proof) if proof else {})
            return
        assert proof is not None, "only two commands come unsigned"
        if op in LISTENER_OPS:
            prove_lease(sm, cmd, proof)
        elif op == "topic.alter":
            changed = _topic_settings(cmd.get("settings") or {})
            self.topics[str(cmd["topic"])].settings.update(dict.fromkeys(changed, proof))
        elif op == "topic.delete":
            self.topics.pop(str(cmd["topic"]), None)
            self.deleted[str(cmd["topic"])] = proof
        elif op == "store.trust":
            self.stores[node_id(cmd.get("store"), "store")] = proof
        elif op == "store.revoke":
            self.stores.pop(node_id(cmd.get("store"), "store"), None)
        elif op == "cluster.set":
            changed = _cluster_settings(cmd.get("settings") or {})
            self.cluster.update(dict.fromkeys(changed, proof))
            for key in changed.get("listeners") or ():  # the first grant, as for admins
                self.listeners.setdefault(key, proof)
        elif op == "admins.add":  # the first grant: what the key signed since stays proven
            self.grants.setdefault(check_public_key(cmd.get("key")), proof)

    # -- the snapshot form: a table of distinct envelopes, items referring to it by index ---

    def encode(self, admins: Iterable[str], signer: Callable[[bytes], str]) -> dict[str, Any]:
        """The proofs as plain data. Grants are kept for the current ``admins`` and for
        every key that signed a kept proof (``signer`` names an envelope's key), no others."""
        table: list[list[Any]] = []
        index: dict[bytes, int] = {}

        def ref(proof: Proof) -> int:
            at = index.get(proof.envelope)
            if at is None:
                at = index[proof.envelope] = len(table)
                table.append([proof.envelope, proof.revision])
            return at

        items = {
            "stores": {k: ref(p) for k, p in self.stores.items()},
            "cluster": {k: ref(p) for k, p in self.cluster.items()},
            "topics": {
                name: [
                    -1 if t.create is None else ref(t.create),
                    {k: ref(p) for k, p in t.settings.items()},
                ]
                for name, t in self.topics.items()
            },
            "deleted": {k: ref(p) for k, p in self.deleted.items()},
            "leases": {
                r: [ref(p.take), -1 if p.end is None else ref(p.end)]
                for r, p in self.leases.items()
            },
            "numbering": {t: {i: ref(p) for i, p in n.items()} for t, n in self.numbering.items()},
        }
        signers = {signer(envelope) for envelope, _ in table}
        items["listeners"] = {k: ref(p) for k, p in self.listeners.items() if k in signers}
        needed = set(admins) | {signer(envelope) for envelope, _ in table}
        grants: dict[str, int] = {}
        pending = sorted(needed)
        while pending:  # a grant's signer needs its own grant (unless a root admin)
            key = pending.pop()
            grant = self.grants.get(key)
            if grant is None or key in grants:
                continue
            grants[key] = ref(grant)
            granter = signer(grant.envelope)
            if granter not in grants:
                pending.append(granter)
        return {"root": list(self.root), "table": table, "grants": grants, **items}

    @classmethod
    def decode(cls, obj: object) -> Proofs:
        """The proofs of a snapshot (:meth:`encode`), types and bounds checked; nothing
        verified yet (:func:`verify`). WireError names the first thing malformed."""
        if not isinstance(obj, dict):
            raise WireError("a metadata snapshot needs its proofs (format 3)")
        table = obj.get("table")
        if not isinstance(table, list) or len(table) > MAX_PROOFS:
            raise WireError("metadata proofs: bad envelope table")
        proofs: list[Proof] = []
        for item in table:
            if (
                not isinstance(item, list)
                or len(item) != 2
                or not isinstance(item[0], bytes)
                or len(item[0]) > MAX_ENVELOPE_BYTES
                or not _is_int(item[1])
            ):
                raise WireError("metadata proofs: bad envelope")
            proofs.append(Proof(item[0], item[1]))

        def at(ref: object) -> Proof:
            if not isinstance(ref, int) or isinstance(ref, bool) or not 0 <= ref < len(proofs):
                raise WireError(f"metadata proofs: bad reference {ref!r}")
            return proofs[ref]

        def refs_raw(value: object, what: str) -> dict[str, object]:
            if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
                raise WireError(f"metadata proofs: bad {what}")
            return value

        def refs(value: object, what: str) -> dict[str, Proof]:
            return {k: at(v) for k, v in refs_raw(value, what).items()}

        root = obj.get("root")
        if not isinstance(root, list) or len(root) > 64:
            raise WireError("metadata proofs: bad root")
        topics: dict[str, TopicProof] = {}
        raw_topics = obj.get("topics")
        if not isinstance(raw_topics, dict):
            raise WireError("metadata proofs: bad topics")
        for name, item in raw_topics.items():
            if not isinstance(name, str) or not isinstance(item, list) or len(item) != 2:
                raise WireError("metadata proofs: bad topic")
            create = None if item[0] == -1 else at(item[0])
            topics[name] = TopicProof(create, refs(item[1], "topic settings"))
        leases: dict[str, LeaseProof] = {}
        for resource, item in refs_raw(obj.get("leases", {}), "leases").items():
            if not isinstance(item, list) or len(item) != 2:
                raise WireError("metadata proofs: bad lease")
            leases[resource] = LeaseProof(at(item[0]), None if item[1] == -1 else at(item[1]))
        numbering = {
            t: refs(n, "numbering") for t, n in refs_raw(obj.get("numbering", {}), "n").items()
        }
        try:
            root_keys = sorted({check_public_key(k) for k in root})
        except ConfigError as exc:
            raise WireError(f"metadata proofs: bad root: {exc}") from None
        return cls(
            root=root_keys,
            grants=refs(obj.get("grants"), "grants"),
            stores=refs(obj.get("stores"), "stores"),
            cluster=refs(obj.get("cluster"), "cluster"),
            topics=topics,
            deleted=refs(obj.get("deleted"), "deleted"),
            listeners=refs(obj.get("listeners", {}), "listeners"),
            leases=leases,
            numbering=numbering,
        )


def touched(cmd: Mapping[str, Any], signer: str | None) -> list[str]:
    """What ``cmd`` changes, and the admin whose authority it uses (``signer``), as the
    names of :attr:`.state.MetadataStateMachine.modified`. Malformed fields name nothing (the
    command is refused for them anyway)."""
    op = cmd.get("op")
    out = [] if signer is None else [f"admin/{signer}"]
    if op in ("topic.create", "topic.alter", "topic.delete"):
        if isinstance(cmd.get("topic"), str):
            out.append(f"topic/{cmd['topic']}")
    elif op in ("store.trust", "store.revoke"):
        if isinstance(cmd.get("store"), str):
            out.append(f"store/{cmd['store'].strip().upper()}")
    elif op == "cluster.set":
        settings = cmd.get("settings")
        if isinstance(settings, Mapping):
            out.extend(f"cluster/{name}" for name in settings if isinstance(name, str))
    elif op in ("admins.add", "admins.remove"):
        key = cmd.get("key")
        if isinstance(key, str | bytes):
            out.append(f"admin/{key.hex() if isinstance(key, bytes) else key.strip().lower()}")
    else:
        out.extend(lease_touched(cmd))
    return out  # admins.init changes no admin: commands its admins made before still apply


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def open_signed(
    envelope: bytes, cluster: str, decode: Callable[[bytes], dict[str, Any] | None]
) -> SignedCommand:
    """The signer, command and base of ``envelope`` if its signature over ``cluster``
    verifies; ConfigError otherwise. ``decode`` turns command bytes into a command of a
    version this machine knows (None: newer)."""
    obj = _unpack(envelope)
    if not isinstance(obj, dict) or obj.get("op") != "signed":
        raise ConfigError("a proof is not a signed command")
    sealed = open_envelope(obj)
    if not identity.verify(sealed.signer, signed_bytes(cluster, sealed.command), sealed.signature):
        raise ConfigError("bad signature on a proof")
    return _parsed(sealed.signer.hex(), sealed.command, decode)


def _parsed(
    signer: str, command: bytes, decode: Callable[[bytes], dict[str, Any] | None]
) -> SignedCommand:
    cmd = decode(command)
    if cmd is None:
        raise ConfigError("a proof of a newer command version than this machine knows")
    base, cmd_id = cmd.get("base"), cmd.get("id")
    if not isinstance(base, int) or isinstance(base, bool):
        raise ConfigError("a proof without its base revision")
    if not isinstance(cmd_id, bytes) or len(cmd_id) != ID_BYTES:
        raise ConfigError("a proof without its id")
    return SignedCommand(signer, cmd, base)


def unverified(envelope: bytes, decode: Callable[[bytes], dict[str, Any] | None]) -> SignedCommand:
    """:func:`open_signed` without the signature check: for an envelope this replica
    verified already (it holds the same bytes)."""
    obj = _unpack(envelope)
    if not isinstance(obj, dict):
        raise ConfigError("a proof is not a signed command")
    sealed = open_envelope(obj)
    return _parsed(sealed.signer.hex(), sealed.command, decode)


def verify(
    state: Mapping[str, Any],
    proofs: Proofs,
    *,
    cluster: str,
    window: int,
    decode: Callable[[bytes], dict[str, Any] | None],
    check_topic_settings: Callable[[Mapping[str, Any]], dict[str, Any]],
    check_cluster_settings: Callable[[Mapping[str, Any]], dict[str, Any]],
    cluster_defaults: Mapping[str, Any],
    known: Iterable[bytes] = (),
) -> dict[str, int]:
    """Check ``state`` (a decoded snapshot: ``revision``, ``admins``, ``stores``,
    ``cluster``, ``topics``, ``deleted``) against ``proofs``; ConfigError names the first
    bad link. Envelopes in ``known`` (held by this replica already, so verified before)
    skip the signature check. Returns the revision each proven object last changed at
    (``store/S``, ``topic/T``, ``cluster/NAME``, ``admin/K``), for :mod:`.state`'s check
    of commands made against an older revision."""
    revision = state["revision"]
    seen = set(known)
    opened: dict[bytes, SignedCommand] = {}

    def check(proof: Proof, op: str | tuple[str, ...], **fields: str) -> SignedCommand:
        signed = opened.get(proof.envelope)
        if signed is None:
            if proof.envelope in seen:
                signed = unverified(proof.envelope, decode)
            else:
                signed = open_signed(proof.envelope, cluster, decode)
            opened[proof.envelope] = signed
        ops = (op,) if isinstance(op, str) else op
        if signed.cmd.get("op") not in ops:
            raise ConfigError(f"a proof of {signed.cmd.get('op')!r} where {op!r} was due")
        for name, value in fields.items():
            if signed.cmd.get(name) != value:
                raise ConfigError(f"a proof of {op} for {signed.cmd.get(name)!r}, not {value!r}")
        if not signed.base < proof.revision <= min(revision, signed.base + window + 1):
            raise ConfigError(
                f"a proof made at revision {proof.revision} by a command written at "
                f"{signed.base} (the snapshot is at {revision})"
            )
        return signed

    # who was an admin, from when: the root from the start, a grant from its revision on
    since: dict[str, int] = dict.fromkeys(proofs.root, 0)
    grants = dict(proofs.grants)
    while grants:
        progress = False
        for key, grant in list(grants.items()):
            signed = check(grant, "admins.add")
            if check_public_key(signed.cmd.get("key")) != key:
                raise ConfigError(f"the grant of admin {key} names another key")
            if signed.signer in since:
                if grant.revision <= since[signed.signer]:
                    raise ConfigError(f"admin {key} granted by a key before it was an admin")
                since[key] = min(since.get(key, grant.revision), grant.revision)
                del grants[key]
                progress = True
        if not progress:
            raise ConfigError(f"no chain of grants from the root admins to {sorted(grants)}")

    def authorised(proof: Proof, signed: SignedCommand) -> None:
        start = since.get(signed.signer)
        # guard: metadata-snapshot-signers-admins-time
        if start is None or proof.revision <= start:
            raise ConfigError(f"a proof signed by {signed.signer}, not an admin at the time")

    def settled(proof: Proof, op: str | tuple[str, ...], **fields: str) -> SignedCommand:
        signed = check(proof, op, **fields)
        authorised(proof, signed)
        return signed

    modified: dict[str, int] = {}
    admins = state["admins"]
    for key in admins:
        if key not in since:
            raise ConfigError(f"admin {key} has no grant from the root admins")
        if key in proofs.grants:
            modified[f"admin/{key}"] = proofs.grants[key].revision
    if set(proofs.stores) != set(state["stores"]):
        raise ConfigError("the trusted stores and their proofs differ")
    for store, proof in proofs.stores.items():
        signed = settled(proof, "store.trust")
        if str(signed.cmd.get("store", "")).strip().upper() != store:
            raise ConfigError(f"the proof of store {store} trusts another store")
        modified[f"store/{store}"] = proof.revision
    for name, value in state["cluster"].items():
        found = proofs.cluster.get(name)
        if found is None:
            if name not in cluster_defaults or cluster_defaults[name] != value:
                raise ConfigError(f"cluster setting {name} has no proof")
            continue
        proof = found
        signed = settled(proof, "cluster.set")
        if check_cluster_settings(signed.cmd.get("settings") or {}).get(name, _MISSING) != value:
            raise ConfigError(f"cluster setting {name} is not what its proof set")
        modified[f"cluster/{name}"] = proof.revision
    if not set(proofs.cluster) <= set(state["cluster"]):
        raise ConfigError("a proof of a cluster setting the state does not have")
    if set(proofs.topics) != set(state["topics"]):
        raise ConfigError("the topics and their proofs differ")
    for name, settings in state["topics"].items():
        topic = proofs.topics[name]
        changed = 0
        if topic.create is not None:
            settled(topic.create, "topic.create", topic=name)
            changed = topic.create.revision
        if set(topic.settings) != set(settings):
            raise ConfigError(f"topic {name!r}: the settings and their proofs differ")
        for setting, proof in topic.settings.items():
            signed = settled(proof, ("topic.create", "topic.alter"), topic=name)
            given = check_topic_settings(signed.cmd.get("settings") or {})
            if given.get(setting, _MISSING) != settings[setting] or proof.revision < changed:
                raise ConfigError(f"topic {name!r}: {setting} is not what its proof set")
            modified[f"topic/{name}"] = max(modified.get(f"topic/{name}", 0), proof.revision)
        check_topic_settings(settings)
        if changed:
            modified[f"topic/{name}"] = max(modified.get(f"topic/{name}", 0), changed)
    if set(proofs.deleted) != set(state["deleted"]):
        raise ConfigError("the tombstones and their proofs differ")
    for name, proof in proofs.deleted.items():
        settled(proof, "topic.delete", topic=name)
        if state["deleted"][name] != proof.revision:
            raise ConfigError(f"the tombstone of {name!r} is not at its proof's revision")
        modified[f"topic/{name}"] = max(modified.get(f"topic/{name}", 0), proof.revision)
    modified.update(
        _verify_leases(state, proofs, check, settled, authorised, check_cluster_settings)
    )
    return modified


Check = Callable[..., SignedCommand]


def _verify_leases(
    state: Mapping[str, Any],
    proofs: Proofs,
    check: Check,
    settled: Check,
    authorised: Callable[[Proof, SignedCommand], None],
    check_cluster_settings: Callable[[Mapping[str, Any]], dict[str, Any]],
) -> dict[str, int]:
    """:func:`verify` of the listeners' grants, the leases and the numbering
    (:mod:`.leases`)."""
    revision, modified = state["revision"], dict[str, int]()
    since: dict[str, int] = {}  # who was a listener, from when: its grant
    for key, grant in proofs.listeners.items():
        signed = settled(grant, "cluster.set")
        named = check_cluster_settings(signed.cmd.get("settings") or {}).get("listeners")
        if key not in (named or ()):
            raise ConfigError(f"the grant of listener {key} names other keys")
        since[key] = grant.revision

    def by_listener(proof: Proof, signed: SignedCommand) -> None:
        start = since.get(signed.signer)
        # guard: metadata-snapshot-lease-signed-by-listener
        if start is None or proof.revision <= start:
            raise ConfigError(f"a proof signed by {signed.signer}, not a listener at the time")

    leases = state.get("leases", {})
    if set(proofs.leases) != set(leases):
        raise ConfigError("the leases and their proofs differ")
    for resource, lease in leases.items():
        proof = proofs.leases[resource]
        take = check(proof.take, "lease.take", resource=resource)
        by_listener(proof.take, take)
        held = (take.signer, take.cmd.get("broker"), take.cmd.get("endpoint"))
        if (
            take.cmd.get("epoch") != lease["epoch"]
            or lease["beat"] > revision - proof.take.revision
        ):
            raise ConfigError(f"lease {resource!r} is not what its take set")
        changed = proof.take.revision
        if proof.end is None:
            if (lease["holder"], lease["broker"], lease["endpoint"]) != held:
                raise ConfigError(f"lease {resource!r} is not what its take set")
        else:
            end = check(proof.end, "lease.release", resource=resource)
            if end.signer != take.signer:
                authorised(proof.end, end)  # an admin's release
            if (
                end.cmd.get("epoch") != lease["epoch"]
                or proof.end.revision <= changed
                or lease["holder"] is not None
            ):
                raise ConfigError(f"lease {resource!r} is not what its release set")
            changed = proof.end.revision
        if resource.startswith("p/"):
            topic, _, index = resource[2:].rpartition("/")
            settings = state["topics"].get(topic) or {}
            numbers = layout(settings.get("partitions"), state.get("numbering", {}).get(topic, ()))
            if int(index) >= len(numbers) or numbers[int(index)] is not None:
                raise ConfigError(f"lease {resource!r} of no Kafka-written partition")
        modified[f"lease/{resource}"] = changed
    numbering = state.get("numbering", {})
    if set(proofs.numbering) != set(numbering):
        raise ConfigError("the numbering and its proofs differ")
    for topic, numbered in numbering.items():
        settings = state["topics"].get(topic)
        given = proofs.numbering[topic]
        given_numbers = [int(n) for _, n in numbered]
        if (
            settings is None
            or set(given) != {i for i, _ in numbered}
            or len(given) != len(numbered)
            or given_numbers != sorted(set(given_numbers))
            or any(
                n >= (settings.get("partitions") or 0) + len(given_numbers) for n in given_numbers
            )
        ):
            raise ConfigError(f"the numbering of topic {topic!r} is not what its proofs set")
        for partition, given_proof in given.items():
            signed = check(given_proof, "partition.number", topic=topic)
            if signed.signer in since:
                by_listener(given_proof, signed)
            else:
                authorised(given_proof, signed)
            ids = signed.cmd.get("partitions")
            if not isinstance(ids, list) or partition not in (str(i).upper() for i in ids):
                raise ConfigError(f"topic {topic!r}: {partition} is not what its proof numbered")
            key = f"numbering/{topic}"
            modified[key] = max(modified.get(key, 0), given_proof.revision)
    return modified
