"""The cluster metadata: a Raft state machine holding topics, trusted stores and ACLs.

Commands are MessagePack maps with a version field, sent signed by an admin key
(RequestUpdate data is an envelope, :mod:`.signing`)::

    {"v": 1, "op": "topic.create", "topic": "events", "settings": {"min_acks": 2}}
    {"v": 1, "op": "topic.alter",  "topic": "events", "settings": {"retention_ms": 60000}}
    {"v": 1, "op": "topic.delete", "topic": "events"}
    {"v": 1, "op": "store.trust",  "store": "<node ID>"}
    {"v": 1, "op": "store.revoke", "store": "<node ID>"}
    {"v": 1, "op": "cluster.set",  "settings": {"auto_create": false, "curve_clients": "metadata"}}
    {"v": 1, "op": "admins.add",   "key": "<64 hex>"}
    {"v": 1, "op": "admins.remove", "key": "<64 hex>"}

and, signed by a listener key (the cluster setting ``listeners``) or an admin, the lease and
numbering commands of :mod:`.leases` (``lease.take``, ``lease.renew``, ``lease.release``,
``partition.number``), the only ones a listener key may sign.

Who may change it (DESIGN §11): a signed command is applied only when its signature
verifies over :func:`.signing.signed_bytes` (the cluster name is in it) and its key
is one of :attr:`MetadataStateMachine.admins`. It also carries ``base``, the revision
its admin read, and ``id``, 16 random bytes: it is applied only while the revision is
within :data:`REPLAY_WINDOW` changes of ``base``, and only once (the state remembers the
commands it saw for that window), so a captured command replayed later changes nothing.
Nor does a command the leader refused, sent again once it would pass: a signed command is
refused when anything it touches (a topic, a store, a cluster setting, an admin key, its
signer's admin entry) changed after its ``base`` (:attr:`MetadataStateMachine.modified`,
etcd's compare on ``mod_revision``), by revisions only, alike on every replica.

Snapshots (format 4; 3 is read, without leases) carry, for every item, the signed command that set it
(:mod:`.proofs`); :meth:`MetadataStateMachine.check_snapshot` verifies them from the root
admins (``admins.init``) before a snapshot replaces the state, refusing it whole on one bad
link (:mod:`.snapshot`).
Two commands need no signature, and can change nothing else:

* ``{"v": 1, "op": "admins.init", "admins": [<64 hex>, ...]}``: the first admins, taken
  only while the metadata lists none (the first tower proposes it from its
  configuration, ``dafka-tower --admin-key``);
* ``{"v": 1, "op": "topic.create", "topic": T, "settings": {}}``: a producer's creation
  of an unknown topic with the defaults, taken only while ``auto_create`` is on, for a
  name that does not exist, up to :data:`MAX_AUTO_TOPICS` topics.

Everything else unsigned, badly signed, signed by a non-admin, stale or replayed is a
no-op (every peer decides the same), counted in ``rejected`` and logged (rate-limited).
Every applied change is recorded with its signer (``changes``, the last
:data:`CHANGES_KEPT`; ``by`` is None for the two unsigned commands); signed commands
refused are listed in ``refused`` with the reason, so the admin client can say why.
The leader checks the same rules before it appends a command to the log
(:meth:`MetadataStateMachine.admission`, wired into the Raft peer by the tower), so a
command refused for who sent it normally never reaches the log at all.

Versioning: a command names the version of the command format it was written in
(``v``). This machine applies every version up to :data:`COMMAND_VERSION`; unknown
extra keys are ignored, so later versions may add fields that older readers skip.
A command of a newer version than we know is skipped (the same way on every peer
of one software version) and counted in :attr:`MetadataStateMachine.skipped_newer`.

Every command is validated on apply; an invalid one (unknown topic, bad setting)
changes nothing and is counted (every peer decides the same). Clients validate
first (:func:`check_settings`, the linearizable read) so users get one clear error.

Topic settings (:data:`TOPIC_DEFAULTS`): ``retention_ms`` / ``retention_bytes``
(``None``: keep forever), ``min_acks`` (1..16), ``profile`` (``signed`` or
``rfc46``), ``max_record_bytes`` (``None``: only the wire profile's limit), ``producers`` (``None``: any producer may write;
a list of producer node IDs: only those) and ``consumers`` (``None``: anyone may read; a list
of node IDs: only those, at stores and on their query endpoints; docs/security.md "Read ACLs").

Deletion: ``topic.delete`` removes the topic and leaves a tombstone, ``deleted[topic]``
= the revision of the deletion (kept when the topic is created again, replaced when it
is deleted again). Nodes act on tombstones newer than the last they acted on: stores
drop the topic's data, consumers are told, producers stop writing it (docs/metadata.md).

Queries: ``[b"config"]`` → MessagePack of :meth:`MetadataStateMachine.view`;
``[b"topic", name]`` → the topic's settings or nil.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ..errors import ConfigError, WireError
from ..groups.resets import SETTING as RESET_SETTING
from ..ids import check_topic, check_topic_name, is_group_topic
from ..raft import REQUEST_ID_TTL, ZERO_REQID, Entry, EntryType, reqid_time
from ..security import identity
from ..wire.packing import pack as _pack
from ..wire.packing import unpack as _unpack
from . import leases as _leases
from .proofs import Proof, Proofs, touched
from .settings import (
    CLUSTER_DEFAULTS,
    MAX_ADMINS,
    TOPIC_DEFAULTS,
    admin_list,
    check_cluster_settings,
    check_growth,
    check_settings,
    node_id,
    topic_settings,
)
from .signing import (
    ID_BYTES,
    MAX_COMMAND_BYTES,
    check_public_key,
    open_envelope,
    seal,
    signed_bytes,
)
from .snapshot import signer_of, state_fields, verified_state

log = logging.getLogger(__name__)

_NIL = _pack(None)
"""The answer to a query of a topic that does not exist."""

__all__ = [
    "CLUSTER_DEFAULTS",
    "COMMAND_VERSION",
    "SNAPSHOT_FORMAT",
    "TOPIC_DEFAULTS",
    "REPLAY_WINDOW",
    "MetadataStateMachine",
    "Refusal",
    "check_cluster_settings",
    "check_settings",
    "command",
    "decode_config",
    "signed_command",
    "topic_settings",
]

COMMAND_VERSION = 1
SNAPSHOT_FORMAT = 4
"""2: admins, replay memory, changes (a format-1 reader would take unsigned commands);
3: the proofs of every item (:mod:`.proofs`) and the revisions objects changed at (read
still); 4: leases and numbering (:mod:`.leases`) with theirs. Format 2 proves nothing and is
refused."""
REPLAY_WINDOW = 1000
"""A signed command applies while the revision is from its ``base`` to ``base`` + this."""
CHANGES_KEPT = 64
MAX_AUTO_TOPICS = 10_000
"""Unsigned creations stop at this many topics (admins may create more)."""
REJECT_LOG_PERIOD = 5.0
"""Seconds between two ``metadata.rejected`` lines of one replica (the others are counted)."""


class AdminsInitRefused(ConfigError):
    """``admins.init`` with admins set already; ``same``: it names exactly those admins (the
    other towers' proposals of the first admin, expected and harmless)."""

    def __init__(self, message: str, same: bool) -> None:
        super().__init__(message)
        self.same = same


def command(op: str, **fields: Any) -> bytes:
    """RequestUpdate data for one command of the current version."""
    return _pack({"v": COMMAND_VERSION, "op": op, **fields})


def signed_command(
    admin: identity.Identity, cluster: str, base: int, op: str, **fields: Any
) -> tuple[bytes, bytes]:
    """(RequestUpdate data, command id): ``op`` signed by ``admin`` for ``cluster``,
    written against revision ``base``."""
    cmd_id = os.urandom(ID_BYTES)
    return seal(admin, cluster, command(op, base=base, id=cmd_id, **fields)), cmd_id


def decode_config(frames: Sequence[bytes]) -> dict[str, Any]:
    """The answer to the ``[b"config"]`` query."""
    if len(frames) != 1:
        raise WireError(f"a metadata answer has 1 frame, got {len(frames)}")
    value = _unpack(frames[0])
    if not isinstance(value, dict):
        raise WireError("a metadata answer is a map")
    return value


class Refusal(NamedTuple):
    """Why the metadata leader refuses a command (:meth:`MetadataStateMachine.refusal`)."""

    reason: str
    effect: bool
    """True: the command is an admin's, refused for what it would do now."""
    nothing: bool = False
    """True: what it would do is done already (the metadata is as it asks)."""


class MetadataStateMachine:
    """The cluster configuration; see the module docstring. Deduplicates by reqid."""

    def __init__(
        self,
        dedup_ttl: float = REQUEST_ID_TTL,
        *,
        cluster: str = "dafka",
        admins: Sequence[str] = (),
        anchors: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``cluster`` is the name signatures are bound to. ``admins`` seeds the admin list
        (and the root admins) for tests and tools: a replica of a Raft log starts empty and
        learns its admins from the log (``admins.init``), as every other replica does.
        ``anchors``: the bootstrap admin keys this node was configured with (a tower's
        ``--admin-key``); a snapshot whose root admins are not all among them is refused
        (:meth:`check_snapshot`)."""
        self.dedup_ttl = dedup_ttl
        self.cluster_name = cluster
        self.admins: list[str] = sorted({check_public_key(k) for k in admins})
        self.anchors: list[str] = sorted({check_public_key(k) for k in anchors})
        self.proofs = Proofs(root=list(self.admins))
        """What proves every item (:mod:`.proofs`), carried in snapshots."""
        self.modified: OrderedDict[str, int] = OrderedDict()
        """Object (``topic/T``, ``store/S``, ``cluster/NAME``, ``admin/K``) -> the revision
        it last changed at, oldest first, for the last :data:`REPLAY_WINDOW` revisions: a
        signed command made at an older revision than a change of what it touches is
        refused (:meth:`_check_signed`)."""
        self.snapshots_refused = 0
        self._checked: tuple[bytes, dict[str, Any]] | None = None
        self.replays: OrderedDict[bytes, int] = OrderedDict()
        """Signed commands seen: a digest of (key, command) -> its base revision."""
        self.changes: deque[dict[str, Any]] = deque(maxlen=CHANGES_KEPT)
        self.refused: deque[dict[str, Any]] = deque(maxlen=CHANGES_KEPT)
        self._cmd_id: bytes | None = None
        self.topics: dict[str, dict[str, Any]] = {}
        self.stores: set[str] = set()
        self.cluster: dict[str, Any] = dict(CLUSTER_DEFAULTS)
        self.deleted: dict[str, int] = {}
        """Tombstones: topic -> the revision that deleted it."""
        self.leases: dict[str, dict[str, Any]] = {}
        """Resource -> its lease (:mod:`.leases`)."""
        self.numbering: dict[str, list[list[Any]]] = {}
        """Topic -> its native partitions' numbers, ``[[node ID, number], ...]``."""
        self.revision = 0
        """Changes applied so far (every peer counts the same)."""
        self.seen: OrderedDict[bytes, int] = OrderedDict()
        self.newest = 0
        self.rejected = 0
        self.skipped_newer = 0
        self.last_error: str | None = None
        self._clock = clock
        self._log_after = -math.inf
        self._unlogged = 0
        self._answers: dict[str | None, bytes] = {}
        """Packed query answers of the current state (None: the config), until it changes."""

    # -- the protocol --------------------------------------------------------------------------

    def apply(self, entry: Entry) -> Any:
        if entry.type is not EntryType.STATE:
            return None
        if entry.reqid != ZERO_REQID:
            if entry.reqid in self.seen:
                return None
            stamp = reqid_time(entry.reqid)
            self.seen[entry.reqid] = stamp
            self.newest = max(self.newest, stamp)
            self._forget_old()
        return self.apply_data(entry.data)

    def apply_data(self, data: bytes) -> str | None:
        """Apply one command; returns None or the error that made it a no-op."""
        self._answers.clear()
        self._checked = None
        self._cmd_id = None
        try:
            cmd = self._decode(data)
            if cmd is None:
                return self.last_error
            if cmd.get("op") == "signed":
                signer, inner = self._open_signed(cmd)
                if inner is None:
                    return self.last_error
                self._apply(inner, signer)
                if inner.get("op") != "lease.renew":  # a heartbeat: its beat shows it
                    self._record(inner, signer)
                self._prove(inner, Proof(data, self.revision + 1), signer)
            else:
                self._apply_unsigned(cmd)
                self._record(cmd, None)
                self._prove(cmd, None, None)
        except (ConfigError, WireError) as exc:
            return self._reject(str(exc), quiet=isinstance(exc, AdminsInitRefused) and exc.same)
        self.revision += 1
        self._forget_modified()
        return None

    def _prove(self, cmd: dict[str, Any], proof: Proof | None, signer: str | None) -> None:
        """Keep ``proof`` (None: an unsigned command) for what ``cmd`` just changed, and
        note the revision it changed at."""
        proofs, revision = self.proofs, self.revision + 1
        for obj in touched(cmd, None):
            self.modified[obj] = revision
            self.modified.move_to_end(obj)
        proofs.note(cmd, proof, self)

    def _forget_modified(self) -> None:
        """Forget changes older than the window: a command made before them is stale."""
        horizon = self.revision - REPLAY_WINDOW
        modified = self.modified
        while modified:
            obj, revision = next(iter(modified.items()))
            if revision > horizon:
                return
            del modified[obj]

    def _decode(self, data: bytes, count: bool = True) -> dict[str, Any] | None:
        """A command of a version we know; None (counted unless not ``count``) for a newer one."""
        # guard: metadata-command-bytes-bounded
        if len(data) > MAX_COMMAND_BYTES:
            raise ConfigError(
                f"a metadata command of {len(data)} bytes is over the {MAX_COMMAND_BYTES} limit"
            )
        cmd = _unpack(data)
        if not isinstance(cmd, dict):
            raise ConfigError("a command is a map")
        version = cmd.get("v")
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ConfigError(f"bad command version {version!r}")
        if version > COMMAND_VERSION:
            if count:
                self.skipped_newer += 1
                self.last_error = f"command version {version} is newer than {COMMAND_VERSION}"
            return None
        return cmd

    def _open_signed(self, envelope: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
        """(signer, command) of an envelope whose signature, key, base and id pass; the
        command is remembered against replays."""
        signer, cmd, digest = self._check_signed(envelope)
        if cmd is not None:
            self.replays[digest] = cmd["base"]
            self._forget_replays()
        return signer, cmd

    def _check_signed(
        self, envelope: dict[str, Any], count: bool = True
    ) -> tuple[str, dict[str, Any] | None, bytes]:
        """(signer, command or None for a newer version, replay digest) of an envelope whose
        signature, key, base and id pass; ConfigError names the first that does not.
        Changes nothing but the id noted for :meth:`_reject` (and the newer-version count)."""
        sealed = open_envelope(envelope)
        # guard: metadata-command-signature
        if not identity.verify(
            sealed.signer, signed_bytes(self.cluster_name, sealed.command), sealed.signature
        ):
            raise ConfigError("bad signature on a metadata command")
        signer = sealed.signer.hex()
        digest = hashlib.blake2b(sealed.signer + sealed.command, digest_size=16).digest()
        cmd = self._decode(sealed.command, count)
        if cmd is None:
            return signer, None, digest
        cmd_id, base = cmd.get("id"), cmd.get("base")
        if not isinstance(cmd_id, bytes) or len(cmd_id) != ID_BYTES:
            raise ConfigError(f"a signed command needs an id of {ID_BYTES} bytes")
        self._cmd_id = cmd_id
        # guard: metadata-admin-list
        if signer not in self.admins:
            none = "" if self.admins else " (it has no admin yet: see dafka-tower --admin-key)"
            # guard: metadata-listener-key-listed
            if signer not in (self.cluster.get("listeners") or ()):
                raise ConfigError(
                    f"key {signer} is not an admin of cluster {self.cluster_name}{none}"
                )
            # guard: metadata-listener-signs-lease-ops-only
            if cmd.get("op") not in _leases.LISTENER_OPS:
                raise ConfigError(
                    f"key {signer} is a listener of cluster {self.cluster_name}: it may sign "
                    f"lease commands only, not {cmd.get('op')!r}"
                )
        if isinstance(base, bool) or not isinstance(base, int):
            raise ConfigError("a signed command needs its base revision")
        # guard: metadata-replay-window
        if not base <= self.revision <= base + REPLAY_WINDOW:
            raise ConfigError(
                f"stale command: written at revision {base}, the metadata is at "
                f"{self.revision} (a command applies within {REPLAY_WINDOW} changes)"
            )
        # guard: metadata-replay-memory
        if digest in self.replays:
            raise ConfigError("replayed command: it was applied or refused before")
        for obj in touched(cmd, signer if signer in self.admins else None):
            changed = self.modified.get(obj, 0)
            # guard: metadata-command-refused-what-touches
            if changed > base:
                raise ConfigError(
                    f"the metadata changed since this command was made ({obj} changed at "
                    f"revision {changed}, the command was made at {base}); run it again"
                )
        return signer, cmd, digest

    def _forget_replays(self) -> None:
        horizon = self.revision - REPLAY_WINDOW
        while self.replays:
            digest, base = next(iter(self.replays.items()))
            if base >= horizon:
                return
            del self.replays[digest]

    def _apply_unsigned(self, cmd: dict[str, Any]) -> None:
        self._check_unsigned(cmd)
        if cmd.get("op") == "admins.init":
            self.admins = admin_list(cmd.get("admins"))
        else:
            # guard: metadata-refuses-unsigned-changes-2
            self._apply({"op": "topic.create", "topic": cmd.get("topic"), "settings": {}})

    def _check_unsigned(self, cmd: dict[str, Any]) -> None:
        """ConfigError unless ``cmd`` is one of the two unsigned commands, taken now."""
        op = cmd.get("op")
        if op == "admins.init":
            # guard: metadata-admins-init-without-admins
            if self.admins:
                raise AdminsInitRefused(
                    "the metadata has admins already: admins.init is refused",
                    same=self._names_the_admins(cmd.get("admins")),
                )
        # guard: metadata-unsigned-creation-takes
        elif op == "topic.create" and not cmd.get("settings"):
            if not self.cluster.get("auto_create", True):
                raise ConfigError("unsigned topic.create refused: auto_create is off")
            if len(self.topics) >= MAX_AUTO_TOPICS:
                raise ConfigError(f"unsigned topic.create refused: {MAX_AUTO_TOPICS} topics")
            topic = cmd.get("topic")
            if not isinstance(topic, str):
                raise ConfigError("no topic named")
            # guard: metadata-refuses-topic-create-whose-2
            check_topic_name(topic)
            if topic in self.topics:  # the leader refuses it too, so a flood costs no log
                raise ConfigError(f"topic {topic!r} already exists")
        else:
            # guard: metadata-refuses-unsigned-changes
            raise ConfigError(f"unsigned command {op!r} refused: sign it with an admin key")

    # -- admission: who may append to the metadata log ---------------------------------------

    def admission(self, data: bytes) -> str | None:
        """Why RequestUpdate ``data`` must not be appended to the metadata log, or None.

        The Raft leader asks before it proposes (``RaftPeer(admit=...)``, as the tower wires
        it), so that a command :meth:`apply_data` would refuse for *who* sent it never costs
        every tower's disk. The rules are :meth:`apply_data`'s, by the same code, against
        this replica's state: the signature over this cluster's name, the signer one of the
        admins, the base revision within the window, no replay; unsigned, only the two
        commands it takes (``admins.init`` while there is no admin, a default
        ``topic.create`` while ``auto_create`` is on); and *what* the command does, by
        :meth:`_plan`, the code :meth:`_apply` runs: an unknown topic, a bad setting, a store
        that is not trusted, an admin who is one already. Stricter than apply in two ways: a
        command that would change nothing (settings a topic or the cluster has already, a
        store trusted already) is refused, where apply takes it as a change; and a command
        of a newer version than this machine knows (which apply skips) is admitted only
        signed by an admin, and not at all unsigned, since it cannot be checked. A command
        admitted here can still be refused when it is applied (another one in between
        deleted its topic or its signer's key): apply decides that the same way on every
        replica. Changes nothing."""
        refusal = self.refusal(data)
        return None if refusal is None else refusal.reason

    def refusal(self, data: bytes) -> Refusal | None:
        """:meth:`admission`, saying also whether the refusal is about what the command
        does (an admin's command that is invalid or changes nothing now) or about who sent
        it (everything else)."""
        try:
            cmd = self._decode(data, count=False)
            if cmd is None:
                reason = "a command of a newer format than this leader knows: upgrade the towers"
                return Refusal(reason, effect=False)
            if cmd.get("op") != "signed":
                self._check_unsigned(cmd)
                return None
            signer, inner, _ = self._check_signed(cmd, count=False)
            if inner is None and signer not in self.admins:
                raise ConfigError(f"key {signer} is not an admin of cluster {self.cluster_name}")
        except (ConfigError, WireError) as exc:
            # guard: metadata-admission-refuses-what-apply
            return Refusal(str(exc), effect=False)
        finally:
            self._cmd_id = None
        # guard: metadata-leader-refuses-admin-invalid
        if inner is None:
            return None
        try:
            nothing = self._plan(inner, signer)[1]
        except (ConfigError, WireError) as exc:
            return Refusal(str(exc), effect=True)
        if nothing is not None:
            return Refusal(f"{nothing}: the command changes nothing", effect=True, nothing=True)
        return None

    @classmethod
    def from_view(cls, view: Mapping[str, Any], cluster: str) -> MetadataStateMachine:
        """A replica holding ``view`` (what :meth:`view` returned, e.g. a client's read), to
        ask :meth:`admission` about a command before sending it."""
        sm = cls(cluster=cluster)
        state = state_fields(_unpack(_pack(dict(view))))
        state["modified"] = OrderedDict(state["modified"])
        sm._install(state)
        return sm

    def _record(self, cmd: dict[str, Any], signer: str | None) -> None:
        change: dict[str, Any] = {
            "revision": self.revision + 1,
            "op": cmd.get("op"),
            "by": signer,
            "id": self._cmd_id.hex() if self._cmd_id else None,
        }
        for field in ("topic", "store", "key", "resource"):
            if isinstance(cmd.get(field), str):
                change[field] = cmd[field]
        self.changes.append(change)

    def _names_the_admins(self, value: object) -> bool:
        try:
            return admin_list(value) == self.admins
        except ConfigError:
            return False

    def _reject(self, error: str, quiet: bool = False) -> str:
        """Count (and log, at most once a period) a command refused. ``quiet``: one every
        replica expects (each tower started with ``--admin-key`` proposes the same
        ``admins.init``, and all but the first are refused), logged at debug only, so that
        every metadata follower (a consumer's view, say) does not print it as a warning."""
        self.rejected += 1
        self.last_error = error
        if self._cmd_id is not None:
            self.refused.append({"id": self._cmd_id.hex(), "error": error})
        if quiet:
            log.debug("metadata.rejected.expected error=%.200s", error)
            return error
        now = self._clock()  # when to log only: what is applied never depends on it
        # guard: metadata-rejections-logged-per-period
        if now >= self._log_after:
            log.warning(
                "metadata.rejected count=%d unlogged=%d error=%.200s",
                self.rejected,
                self._unlogged,
                error,
            )
            self._log_after = now + REJECT_LOG_PERIOD
            self._unlogged = 0
        else:
            self._unlogged += 1
        return error

    def _apply(self, cmd: dict[str, Any], signer: str | None = None) -> None:
        self._plan(cmd, signer)[0]()

    def _plan(
        self, cmd: dict[str, Any], signer: str | None = None
    ) -> tuple[Callable[[], None], str | None]:
        """What applying ``cmd`` would do, checked against the state now (ConfigError
        names what makes it invalid), without doing it: the change, and why it would
        change nothing (None if it changes something). :meth:`_apply` runs the change;
        :meth:`admission` only asks."""
        op = cmd.get("op")
        if op in _leases.LISTENER_OPS:
            return _leases.plan(self, cmd, signer)
        if op in ("topic.create", "topic.alter", "topic.delete"):
            topic = cmd.get("topic")
            if not isinstance(topic, str):
                raise ConfigError("no topic named")
            check_topic(topic)  # alter, delete: a topic named before names were checked
            given = cmd.get("settings")
            # guard: metadata-reset-offsets-group-topics-only
            if isinstance(given, Mapping) and RESET_SETTING in given and not is_group_topic(topic):
                raise ConfigError(f"{RESET_SETTING} is a group topic's setting, not {topic!r}'s")
            if op == "topic.create":
                # guard: metadata-refuses-topic-create-whose
                check_topic_name(topic)  # from any peer or admin: where a name enters
                if topic in self.topics:
                    raise ConfigError(f"topic {topic!r} already exists")
                settings = check_settings(cmd.get("settings") or {})
                return lambda: self.topics.__setitem__(topic, settings), None
            if topic not in self.topics:
                raise ConfigError(f"unknown topic {topic!r}")
            if op == "topic.alter":
                changes = check_settings(cmd.get("settings") or {})
                merged = {**self.topics[topic], **changes}
                check_settings(merged)
                check_growth(topic, self.topics[topic], merged)
                unchanged = merged == self.topics[topic]
                return lambda: self.topics.__setitem__(topic, merged), (
                    f"topic {topic!r} has these settings already" if unchanged else None
                )

            def delete() -> None:
                del self.topics[topic]
                _leases.drop_topic(self, topic)
                self.deleted[topic] = self.revision + 1  # this command's revision

            return delete, None
        if op == "store.trust":
            store = node_id(cmd.get("store"), "store")
            trusted = store in self.stores
            return lambda: self.stores.add(store), (
                f"store {store} is trusted already" if trusted else None
            )
        if op == "store.revoke":
            store = node_id(cmd.get("store"), "store")
            if store not in self.stores:
                raise ConfigError(f"store {store} is not trusted")
            return lambda: self.stores.discard(store), None
        if op == "cluster.set":
            changes = check_cluster_settings(cmd.get("settings") or {})
            unchanged = {**self.cluster, **changes} == self.cluster
            return lambda: self.cluster.update(changes), (
                "the cluster has these settings already" if unchanged else None
            )
        if op == "admins.add":
            key = check_public_key(cmd.get("key"))
            if key in self.admins:
                raise ConfigError(f"key {key} is an admin already")
            if len(self.admins) >= MAX_ADMINS:
                raise ConfigError(f"the metadata has {MAX_ADMINS} admins: remove one first")
            admins = sorted([*self.admins, key])
            return lambda: setattr(self, "admins", admins), None
        if op == "admins.remove":
            key = check_public_key(cmd.get("key"))
            if key not in self.admins:
                raise ConfigError(f"key {key} is not an admin")
            if len(self.admins) == 1:
                raise ConfigError("refusing to remove the last admin: add another one first")
            admins = [k for k in self.admins if k != key]
            return lambda: setattr(self, "admins", admins), None
        raise ConfigError(f"unknown command {op!r}")

    def _forget_old(self) -> None:
        horizon = self.newest - self.dedup_ttl
        while self.seen:
            reqid, stamp = next(iter(self.seen.items()))
            if stamp > horizon:
                return
            del self.seen[reqid]

    def view(self) -> dict[str, Any]:
        """The configuration as plain data (what nodes and the admin CLI read)."""
        return {
            "format": SNAPSHOT_FORMAT,
            "revision": self.revision,
            "topics": copy.deepcopy(self.topics),
            "stores": sorted(self.stores),
            "cluster": dict(self.cluster),
            "deleted": dict(self.deleted),
            "admins": list(self.admins),
            "leases": {r: dict(lease) for r, lease in self.leases.items()},
            "numbering": {t: [list(n) for n in ns] for t, ns in self.numbering.items()},
            "changes": [dict(c) for c in self.changes],
            "refused": [dict(r) for r in self.refused],
        }

    def snapshot(self) -> bytes:
        state = self.view()
        state["seen"] = [[reqid, stamp] for reqid, stamp in self.seen.items()]
        state["newest"] = self.newest
        state["replays"] = [[digest, base] for digest, base in self.replays.items()]
        state["modified"] = [[obj, revision] for obj, revision in self.modified.items()]
        state["proofs"] = self.proofs.encode(self.admins, signer_of)
        return _pack(state)

    def check_snapshot(self, data: bytes) -> None:
        """Verify a snapshot before it may replace this replica's state (the Raft peer asks
        before its core installs one); WireError says why it is refused, counted in
        :attr:`snapshots_refused`. Changes nothing else: a later :meth:`restore` of the same
        bytes object does not verify them again.

        Refused: a snapshot older than this state (a lower revision); one whose root admins
        differ from the root this replica holds, or are not all among the configured
        ``anchors``; one whose items do not match their proofs (:func:`.proofs.verify`). A
        replica that holds no root and was configured with none (a new client, a tower
        without ``--admin-key`` on an empty data directory) takes the root the first
        snapshot names: it checks that everything else follows from that root, not that
        the root is the cluster's."""
        try:
            loaded = verified_state(self, data)
        except (ConfigError, WireError, ValueError, TypeError, KeyError) as exc:
            self.snapshots_refused += 1
            raise WireError(f"metadata snapshot refused: {exc}") from None
        self._checked = (data, loaded)

    def restore(self, data: bytes) -> None:
        """Replace the state by a snapshot that :meth:`check_snapshot` accepts; WireError
        (and nothing changed) otherwise."""
        checked = self._checked
        if checked is None or checked[0] is not data:
            self.check_snapshot(data)
            checked = self._checked
        assert checked is not None
        self._install(checked[1])

    def _install(self, state: dict[str, Any]) -> None:
        self._answers.clear()
        self._checked = None
        self.topics = state["topics"]
        self.stores = set(state["stores"])
        self.cluster = state["cluster"]
        self.deleted = state["deleted"]
        self.leases = state["leases"]
        self.numbering = state["numbering"]
        self.revision = state["revision"]
        self.seen = state["seen"]
        self.newest = state["newest"]
        self.admins = state["admins"]
        self.replays = state["replays"]
        self.changes = deque(state["changes"], maxlen=CHANGES_KEPT)
        self.refused = deque(state["refused"], maxlen=CHANGES_KEPT)
        self.modified = state["modified"]
        self.proofs = state.get("proofs") or Proofs(root=list(self.admins))

    def query(self, args: Sequence[bytes]) -> list[bytes]:
        """``config`` (the :meth:`view`) or ``topic NAME`` (its settings, nil if none). An
        answer is packed once per state and kept until the next apply or restore: the same
        query of the same state gets the same bytes object, which a Raft peer sends to
        every client without a copy and counts once (:mod:`dafka.raft.peer._answer_budget`);
        packing the config of 10,000 topics (2.1 MB) costs 10-30 ms."""
        if not args:
            raise WireError("empty metadata query")
        answers = self._answers
        if args[0] == b"config" and len(args) == 1:
            # guard: metadata-answer-packed-per-state
            if (config := answers.get(None)) is None:
                config = answers[None] = _pack(self.view())
            return [config]
        if args[0] == b"topic" and len(args) == 2:
            name = bytes(args[1]).decode(errors="replace")
            if name not in self.topics:
                return [_NIL]
            if (settings := answers.get(name)) is None:
                settings = answers[name] = _pack(self.topics[name])
            return [settings]
        raise WireError(f"unknown metadata query {bytes(args[0])!r}")
