"""Which CURVE client keys a node's servers admit: from the cluster metadata, live.

With CURVE on (``--curve``), each node's ZAP handler asks a :class:`ClientGate` about
every client key that completes a handshake with one of its servers (data XPUB, query
endpoint). The gate holds a :class:`ClientPolicy`, replaced whenever the metadata changes
(:func:`follow`):

* ``restricted`` False: any key is admitted (the cluster setting ``curve_clients = open``,
  the default, on a node given no ``--curve-allow``);
* ``restricted`` True: only a key that maps to a node ID in ``node_ids``: the node IDs the
  metadata names (trusted ``stores``, every topic's ``producers`` and ``consumers``, the
  ``admins``' keys, the cluster setting ``clients``) plus the static ones (the node's own
  key, its towers' keys, ``--curve-allow``). That is ``curve_clients = metadata``, or any
  node given ``--curve-allow``.

Node IDs are hashes of Ed25519 keys and a CURVE key is derived from an Ed25519 key, so a
client's CURVE key is mapped back to the two node IDs it can stand for
(:func:`~dafka.security.curve_keys.node_ids_of_curve_key`) and admitted when one is named.

A node that follows the metadata starts closed (:meth:`ClientGate.hold`): until its first
view is loaded it admits the static keys only, since it cannot know yet whether the
cluster says ``metadata``, and a connection admitted in that window would outlive the
policy (ZAP runs once per connection). Other handshakes wait for the load, up to
:data:`HOLD_WAIT` seconds, and are refused after that: ZeroMQ does not retry a connection
refused at the handshake, so refusing at once would lose a legitimate peer for good. See docs/security.md "Who may connect".
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .curve_keys import node_ids_of_curve_key
from .identity import node_id_for

if TYPE_CHECKING:
    from ..config import NodeConfig
    from ..metadata.follower import MetadataView
    from .identity import Identity

log = logging.getLogger(__name__)

__all__ = [
    "ClientGate",
    "ClientPolicy",
    "metadata_node_ids",
    "policy_for",
    "static_ids",
]

HOLD_WAIT: Final = 10.0
"""Seconds a handshake waits for the first metadata load before it is refused."""
_CACHE: Final = 4096
"""Client keys whose node IDs a gate remembers (the map costs a modular inversion)."""


@dataclass(frozen=True, slots=True)
class ClientPolicy:
    """The ZAP decision of one node; see the module docstring."""

    restricted: bool
    node_ids: frozenset[str] = frozenset()
    reason: str = "static"
    """Where it came from: ``static``, ``pending`` (metadata not loaded yet) or ``metadata``."""

    def admits_ids(self, ids: Iterable[str]) -> bool:
        """Whether a client whose key stands for ``ids`` may connect."""
        if not self.restricted:
            return True
        return any(i in self.node_ids for i in ids)


def static_ids(keys: Iterable[bytes]) -> frozenset[str]:
    """Node IDs of Ed25519 public keys (own key, towers, ``--curve-allow``)."""
    return frozenset(node_id_for(k) for k in keys)


def metadata_node_ids(config: Mapping[str, Any]) -> frozenset[str]:
    """Every node ID the metadata names: trusted stores, topic producers and consumers,
    admins (by their keys' node IDs) and the cluster's ``clients``."""
    ids: set[str] = set(config.get("stores") or ())
    for settings in (config.get("topics") or {}).values():
        # guard: metadata-names-acl-keys
        for acl in ("producers", "consumers"):
            ids.update((settings or {}).get(acl) or ())
    for key in config.get("admins") or ():
        try:
            ids.add(node_id_for(bytes.fromhex(key)))
        except (ValueError, TypeError):
            continue
    ids.update((config.get("cluster") or {}).get("clients") or ())
    return frozenset(ids)


def policy_for(
    config: Mapping[str, Any] | None, static: frozenset[str], *, allow_given: bool
) -> ClientPolicy:
    """The policy of a node with static node IDs ``static`` (``allow_given``: it was given
    ``--curve-allow``) under the metadata ``config`` (None: not loaded yet)."""
    if config is None:
        return ClientPolicy(True, static, "pending")
    mode = (config.get("cluster") or {}).get("curve_clients", "open")
    # guard: curve-clients-metadata-restricts-curve
    if mode != "metadata" and not allow_given:
        return ClientPolicy(False, frozenset(), "metadata")
    return ClientPolicy(True, static | metadata_node_ids(config), "metadata")


class ClientGate:
    """The ZAP credentials provider of a node (``callback`` runs on the ZAP thread).

    ``static``: the node IDs of the node's own key, its towers' keys and ``--curve-allow``;
    ``allow_given``: ``--curve-allow`` was given (the node restricts even in an open cluster).
    It starts with the static policy (:meth:`static_policy`, a node that follows no
    metadata): any key, or the static ones only when ``--curve-allow`` was given.
    """

    hold_wait: float = HOLD_WAIT

    def __init__(self, static: Iterable[bytes] = (), *, allow_given: bool = False) -> None:
        self.static = static_ids(static)
        self.allow_given = allow_given
        self.policy = self.static_policy()
        self._settled = threading.Event()
        self._settled.set()
        self._hold_until = 0.0
        self.refused = 0
        self._ids: OrderedDict[bytes, frozenset[str]] = OrderedDict()
        self._lock = threading.Lock()
        self._last_log = 0.0

    @classmethod
    def for_node(cls, config: NodeConfig, identity: Identity | None) -> ClientGate:
        """The gate of a node: its own key, its towers' keys and ``--curve-allow`` are static."""
        keys = [t.key for t in config.towers if t.key is not None]
        keys += sorted(config.curve_allowed or ())
        keys += [identity.public_key] if identity is not None else []
        return cls(keys, allow_given=config.curve_allowed is not None)

    def static_policy(self) -> ClientPolicy:
        return ClientPolicy(self.allow_given, self.static if self.allow_given else frozenset())

    def hold(self) -> None:
        """Admit the static keys only until :meth:`follow` has a loaded view; other
        handshakes wait for it up to :attr:`hold_wait` seconds from now, in all."""
        self._hold_until = time.monotonic() + self.hold_wait
        # guard: node-holds-curve-clients-until
        self.set(policy_for(None, self.static, allow_given=self.allow_given))

    def update(self, config: Mapping[str, Any]) -> None:
        """Take the policy the metadata ``config`` asks for (any thread)."""
        self.set(policy_for(config, self.static, allow_given=self.allow_given))

    def follow(self, view: MetadataView) -> None:
        """Stay closed until ``view`` loads, then keep in step with every change."""
        if not view.loaded:
            self.hold()
        view.subscribe(self.update)

    def set(self, policy: ClientPolicy) -> None:
        """Use ``policy`` from the next handshake on (any thread)."""
        if policy.reason == "pending":
            self._settled.clear()
        if policy != self.policy:
            self.policy = policy
            log.info(
                "curve.clients reason=%s admitted=%s",
                policy.reason,
                len(policy.node_ids) if policy.restricted else "any",
            )
        if policy.reason != "pending":
            self._settled.set()

    def _node_ids(self, key: bytes) -> frozenset[str]:
        with self._lock:
            ids = self._ids.get(key)
            if ids is None:
                ids = node_ids_of_curve_key(key)
                self._ids[key] = ids
                if len(self._ids) > _CACHE:
                    self._ids.popitem(last=False)
            return ids

    def admits(self, key: bytes) -> bool:
        policy = self.policy
        # guard: zap-accepts-allowed-curve-keys
        return not policy.restricted or policy.admits_ids(self._node_ids(key))

    def callback(self, domain: str, client_key: bytes) -> bool:
        if self.policy.reason == "pending" and not self.admits(client_key):
            # ZeroMQ does not retry a connection refused at the handshake: rather than refuse
            # a peer for good because our metadata is not loaded yet, hold its handshake
            # guard: handshake-waits-first-metadata-load
            self._settled.wait(max(0.0, self._hold_until - time.monotonic()))
        if self.admits(client_key):
            return True
        self.refused += 1
        now = time.monotonic()
        if now - self._last_log >= 1.0:
            self._last_log = now
            log.warning(
                "curve.refused domain=%s client_key=%s policy=%s total=%d",
                domain,
                client_key.decode("ascii", "replace"),
                self.policy.reason,
                self.refused,
            )
        return False
