"""Who may subscribe to what on a node's data XPUB: the read ACL as a transport boundary.

A node publishes everything on one XPUB, and ZeroMQ routes each message to every
connection with a matching subscription prefix. With CURVE on, the XPUB runs in
``ZMQ_XPUB_MANUAL`` mode: no subscription takes effect until the node grants it, and a
subscription frame carries the ``User-Id`` of the connection it came on (the client's
CURVE public key, proven by the handshake; ``dafka.security.curve_keys``). This module
decides, without sockets, whether the node IDs of that key may receive what a prefix
matches (``docs/security.md`` "Read ACLs"):

* a topic prefix (``M`` RECORD, ``H`` HEAD, ``G`` GET-HEADS, with the topic and its NUL):
  the topic has no read ACL, or the ACL names the node, or the node is a trusted store
  (stores fill their gaps from each other);
* a prefix that may match several topics (a bare ``M``, ``H``, ``G`` or ``F``, a topic
  without its NUL, a FETCH to another partition): a trusted store, or any node while no
  topic has a read ACL;
* an addressed prefix (``D`` DIRECT-RECORD, ``E`` DIRECT-HEAD, ``K`` ACK, ``L``
  STORE-HELLO, ``W`` CONSUMER-HELLO, ``F`` FETCH to a partition): only the node it is
  addressed to;
* anything else (an empty prefix, an unknown command, a connection without a key): no.

Requests (FETCH, GET-HEADS, CONSUMER-HELLO) name their requester, and the answer goes to
that node: :func:`check_requester` says whether the connection a request came on belongs
to the node it names (:class:`Sender`, found by the IO shell, ``dafka.io.request_senders``),
and :meth:`ReadView.admits` whether the topic's read ACL lets that node read it.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..security.curve_keys import node_ids_of_curve_key
from ..wire.rfc46 import Command
from ..wire.signed import HEARTBEAT_CMD

__all__ = [
    "PROXY_SHARE",
    "Decision",
    "ReadView",
    "RequestLog",
    "RequesterCheck",
    "Sender",
    "SubscriptionGuard",
    "check_requester",
    "decide",
]

log = logging.getLogger(__name__)

PROXY_SHARE: Final = 8
"""A FETCH or head request that did not come on its requester's own connection (proxied:
:func:`check_requester`) is served from a budget this many times smaller, at producers and
stores alike."""

NODE_ID_CHARS: Final = 32
_TOPIC_CMDS: Final = frozenset({Command.RECORD.value, Command.HEAD.value, Command.GET_HEADS.value})
_ADDRESSED_CMDS: Final = frozenset(
    {
        Command.DIRECT_RECORD.value,
        Command.DIRECT_HEAD.value,
        Command.ACK.value,
        Command.STORE_HELLO.value,
        Command.CONSUMER_HELLO.value,
    }
)
_KEY_CACHE: Final = 4096
_MAX_GRANTS: Final = 65_536
_LOG_PERIOD: Final = 5.0


@dataclass(frozen=True, slots=True)
class ReadView:
    """What the guard knows of the cluster: per-topic readers and the trusted stores.

    ``readers`` holds only topics with a read ACL (metadata ``consumers``), each mapped
    to the node IDs it names; a topic not in it is open.
    """

    readers: Mapping[str, frozenset[str]] = field(default_factory=dict)
    stores: frozenset[str] = frozenset()

    @classmethod
    def of(cls, topics: Mapping[str, Mapping[str, Any]], stores: Iterable[str]) -> ReadView:
        """From metadata topic settings (``consumers``: None or node IDs) and trusted stores."""
        readers = {
            topic: frozenset(settings["consumers"])
            for topic, settings in topics.items()
            if settings.get("consumers") is not None
        }
        return cls(readers, frozenset(stores))

    def admits(self, node_id: str, topic: str) -> bool:
        """Whether ``topic``'s read ACL lets ``node_id`` read it (open, named, or a trusted
        store)."""
        names = self.readers.get(topic)
        return names is None or node_id in names or node_id in self.stores

    def narrows(self, old: ReadView) -> bool:
        """Whether this view could refuse something ``old`` granted."""
        if not old.stores <= self.stores:
            return True
        for topic, names in self.readers.items():
            before = old.readers.get(topic)
            if before is None or not before <= names:
                return True
        return False


class Decision(enum.Enum):
    """A verdict and its reason (the value, as logged)."""

    OPEN = "open"
    READER = "reader"
    STORE = "store"
    NO_ACL = "no-acl"
    OWN_ADDRESS = "own-address"
    NO_KEY = "no-key"
    EVERYTHING = "everything"
    NOT_A_READER = "not-a-reader"
    ALL_TOPICS = "all-topics"
    NOT_OWN_ADDRESS = "not-own-address"
    UNKNOWN_COMMAND = "unknown-command"
    HEARTBEAT = "heartbeat"
    """Peers' heartbeats (``Y``): they carry nothing but the sender's node ID."""

    @property
    def allowed(self) -> bool:
        return self in _ALLOWED


_ALLOWED: Final = frozenset(
    {
        Decision.OPEN,
        Decision.READER,
        Decision.STORE,
        Decision.NO_ACL,
        Decision.OWN_ADDRESS,
        Decision.HEARTBEAT,
    }
)


@dataclass(frozen=True, slots=True)
class Sender:
    """The node whose connection a request came on: the peer endpoint the node's data SUB
    connected to, and the node ID it connected to it for (``""``: not known).

    ``proven``: under CURVE the connection was made with that node's key, so only the
    holder of the key sent what came on it; under NULL it is what the beacons said.
    """

    node: str
    proven: bool


class RequesterCheck(enum.Enum):
    """Whether a request's requester is the node of its connection (the value, as logged)."""

    OWN = "own"
    """It is; or the shell knows no connection (in-process, tests): judged by its ID."""
    FORGED = "forged"
    """It names another node than the connection's: refused. Under CURVE the connection's
    key proves its node; without, the beacons named it (no request of ours names another
    node than its sender)."""
    PROXIED = "proxied"
    """NULL, and no connected endpoint matches the connection: answered only within a
    small budget per recipient, apart from the recipient's own."""


def check_requester(requester: str, sender: Sender | None) -> RequesterCheck:
    """Judge a request naming ``requester`` that came on ``sender``'s connection."""
    if sender is None or sender.node == requester:
        return RequesterCheck.OWN
    # guard: request-naming-another-node-connection
    if sender.proven or sender.node:
        return RequesterCheck.FORGED
    return RequesterCheck.PROXIED


class RequestLog:
    """Counts requests refused or proxied (:func:`check_requester`) and logs them at most
    every 5 s (a peer sends as many as it likes)."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.forged = 0
        self.proxied = 0
        self._logged = -math.inf

    def note(
        self, check: RequesterCheck, kind: str, requester: str, sender: Sender | None, now: float
    ) -> None:
        if check is RequesterCheck.FORGED:
            self.forged += 1
        elif check is RequesterCheck.PROXIED:
            self.proxied += 1
        else:
            return
        if now - self._logged >= _LOG_PERIOD:
            self._logged = now
            log.warning(
                "request.not_own id=%s kind=%s requester=%.32s from=%s verdict=%s forged=%d "
                "proxied=%d",
                self.node,
                kind,
                requester,
                (sender.node if sender is not None else "") or "-",
                check.value,
                self.forged,
                self.proxied,
            )


def _topic(node_ids: frozenset[str], topic: bytes, view: ReadView) -> Decision:
    try:
        names = view.readers.get(topic.decode())
    except UnicodeDecodeError:
        names = None  # no topic has this name, so the prefix matches nothing
    if names is None:
        return Decision.OPEN
    # guard: topic-subscription-needs-reader-trusted
    if node_ids & names:
        return Decision.READER
    if node_ids & view.stores:
        return Decision.STORE
    return Decision.NOT_A_READER


def _all_topics(node_ids: frozenset[str], view: ReadView) -> Decision:
    if node_ids & view.stores:
        return Decision.STORE
    if not view.readers:
        return Decision.NO_ACL
    return Decision.ALL_TOPICS


def _addressed_to(node_ids: frozenset[str], rest: bytes) -> bool:
    if len(rest) < NODE_ID_CHARS:
        return False  # a shorter prefix matches other nodes' IDs too
    try:
        return rest[:NODE_ID_CHARS].decode("ascii") in node_ids
    except UnicodeDecodeError:
        return False


def decide(node_ids: frozenset[str], prefix: bytes, view: ReadView) -> Decision:
    """May the node that owns one of ``node_ids`` receive what ``prefix`` matches?"""
    if not node_ids:
        return Decision.NO_KEY
    if not prefix:
        return Decision.EVERYTHING
    cmd, rest = prefix[:1], prefix[1:]
    if cmd in _TOPIC_CMDS:
        end = rest.find(b"\0")
        return _all_topics(node_ids, view) if end < 0 else _topic(node_ids, rest[:end], view)
    if cmd in _ADDRESSED_CMDS:
        # guard: addressed-subscription-needs-addressee
        return Decision.OWN_ADDRESS if _addressed_to(node_ids, rest) else Decision.NOT_OWN_ADDRESS
    if cmd == Command.FETCH.value:  # to a partition: its producer; stores serve any
        return (
            Decision.OWN_ADDRESS if _addressed_to(node_ids, rest) else _all_topics(node_ids, view)
        )
    if prefix == HEARTBEAT_CMD:
        return Decision.HEARTBEAT
    return Decision.UNKNOWN_COMMAND


class SubscriptionGuard:
    """:func:`decide` for subscription frames, with each connection's key; counts denials
    and remembers what it granted, so that a new view tells whether a grant must go.

    ``view`` None means the node does not know the metadata yet: nothing is decided then
    (the IO shell leaves subscriptions queued until :meth:`set_view`).
    """

    def __init__(self, view: ReadView | None) -> None:
        self.view = view
        self.refused = 0
        self.granted = 0
        self._ids: dict[str, frozenset[str]] = {}
        self._grants: dict[tuple[frozenset[str], bytes], int] = {}
        self._overflow = False  # too many grants remembered: judge views by narrows()
        self._logged = -math.inf

    def set_view(self, view: ReadView) -> bool:
        """Take a new view; True when it refuses a subscription granted before (the shell
        then closes every connection, whose subscriptions come again: :meth:`forget_grants`)."""
        old, self.view = self.view, view
        if old is None:
            return False
        if self._overflow:
            return view.narrows(old)
        return any(not decide(ids, prefix, view).allowed for ids, prefix in self._grants)

    def forget_grants(self) -> None:
        """Every connection was closed: nothing granted stands any more."""
        self._grants.clear()
        self._overflow = False

    def node_ids(self, user_id: str | None) -> frozenset[str]:
        """The node IDs a ZAP ``User-Id`` (a CURVE public key in Z85) stands for."""
        if not user_id:
            return frozenset()
        ids = self._ids.get(user_id)
        if ids is None:
            if len(self._ids) >= _KEY_CACHE:
                self._ids.clear()
            ids = self._ids[user_id] = node_ids_of_curve_key(user_id)
        return ids

    def check(
        self, user_id: str | None, prefix: bytes, now: float = 0.0, node: str = "-"
    ) -> Decision:
        """The decision for a subscription to ``prefix`` from the connection of ``user_id``;
        a refusal is counted, and logged at most every 5 s (``now``; ``node``: ours)."""
        assert self.view is not None, "no view yet"
        ids = self.node_ids(user_id)
        decision = decide(ids, prefix, self.view)
        if decision.allowed:
            self.granted += 1
            key = (ids, prefix)
            if key in self._grants or len(self._grants) < _MAX_GRANTS:
                self._grants[key] = self._grants.get(key, 0) + 1
            else:
                self._overflow = True
            return decision
        self.refused += 1
        if now - self._logged >= _LOG_PERIOD:
            self._logged = now
            log.warning(
                "curve.subscription_refused id=%s from=%s prefix=%r reason=%s total=%d",
                node,
                ",".join(sorted(ids)) or "-",
                prefix[:48],
                decision.value,
                self.refused,
            )
        return decision

    def release(self, user_id: str | None, prefix: bytes) -> Decision:
        """An unsubscription: forget one grant of it; the decision a subscription would get."""
        assert self.view is not None, "no view yet"
        ids = self.node_ids(user_id)
        key = (ids, prefix)
        count = self._grants.get(key, 0)
        if count > 1:
            self._grants[key] = count - 1
        elif count:
            del self._grants[key]
        return decide(ids, prefix, self.view)
