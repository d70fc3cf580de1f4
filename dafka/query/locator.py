"""Finding stores' query endpoints from the towers' service beacons.

Stores send ``"Q" | node ID | "tcp://host:port" | "store"`` with every beacon
(each beacon interval, 1 s by default); towers relay it on their XPUB to
subscribers of ``"Q"``. A :class:`StoreLocator` is such a subscriber: one SUB
connected to every tower. The first :meth:`StoreLocator.stores` call waits one
beacon interval plus a margin so that every live store is heard, unless every tower
has said sooner that it replayed every store it knows (``tower/service_replay.py``:
then it returns within milliseconds); later calls only drain what arrived since, and
forget a store not heard for ``expiry`` seconds. Like every zmq socket, a locator
belongs to the thread (and process) that created it.

CURVE: towers given as ``HOST:PORT@KEY`` are spoken to over CURVE (as ``key``, or a fresh
key), and the locator also hears the node beacons (``B``), whose fourth frame is a node's
public key (checked against its node ID when decoded): :meth:`StoreLocator.keys` gives the
stores' keys, which a :class:`~dafka.query.client.QueryClient` needs as ``server_key``.

Health: :data:`HEALTH` is this process's shared view of stores that failed to answer
(:class:`StoreHealth`): every query client, locator and Spark task of the process reports to
it, and readers ask stores in its order, so a dead store is asked last until it answers again
or ``expiry`` passes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable

import zmq

from ..config import parse_towers
from ..errors import ConfigError, DafkaError, TooManyFrames, WireError
from ..io.multipart import TOWER_BEACON_FRAMES, recv_bounded
from ..security.curve_keys import CurveConfig, make_client
from ..security.identity import Identity
from ..wire import beacon as wbeacon

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_WAIT", "HEALTH", "StoreHealth", "StoreLocator", "locate_stores"]

DEFAULT_WAIT = wbeacon.SERVICE_WARM_AFTER
"""One beacon interval (1 s) plus a margin."""
MAX_KEYS = 4096
"""Node keys, and stores, a locator remembers."""
LOGGED_STORES = 16
"""Stores a locator names at INFO as it hears them (the rest at DEBUG: a peer could send many)."""


class StoreHealth:
    """Which stores failed to answer lately: endpoint -> when it last failed.

    A store that failed is *suspect* for ``expiry`` seconds (or until it answers):
    :meth:`order` puts suspects last, the longest-failed first among them, so a
    reader asks a live replica first and a dead store costs a batch its failover
    deadline once, not once per task. Thread-safe; ``clock`` is injectable.
    """

    def __init__(
        self, *, expiry: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.expiry = expiry
        self._clock = clock
        self._failed: dict[str, float] = {}
        self._lock = threading.Lock()

    def failed(self, endpoint: str) -> None:
        with self._lock:
            if endpoint not in self._failed:
                log.info("health.store_suspect endpoint=%s", endpoint)
            self._failed[endpoint] = self._clock()
            if len(self._failed) > MAX_KEYS:  # bounded: forget the oldest
                del self._failed[min(self._failed, key=self._failed.__getitem__)]

    def ok(self, endpoint: str) -> None:
        with self._lock:
            if self._failed.pop(endpoint, None) is not None:
                log.info("health.store_answers endpoint=%s", endpoint)

    def suspect(self, endpoint: str) -> bool:
        with self._lock:
            when = self._failed.get(endpoint)
            if when is None:
                return False
            if self._clock() - when > self.expiry:
                del self._failed[endpoint]
                return False
            return True

    def order(self, endpoints: Iterable[str]) -> list[str]:
        """``endpoints`` with the suspects moved last (stable otherwise)."""
        eps = list(endpoints)
        suspects = {ep for ep in eps if self.suspect(ep)}
        with self._lock:
            failed = dict(self._failed)
        return [ep for ep in eps if ep not in suspects] + sorted(
            (ep for ep in eps if ep in suspects), key=lambda ep: failed.get(ep, 0.0)
        )


HEALTH = StoreHealth()
"""This process's view of store health, shared by its readers (and their tasks)."""


class StoreLocator:
    """Collects ``node ID -> query endpoint`` of the stores the towers relay."""

    def __init__(
        self,
        towers: str | Iterable[str] | None,
        *,
        wait: float = DEFAULT_WAIT,
        expiry: float = 4.0,
        service: str = "store",
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        key: Identity | None = None,
    ) -> None:
        self.towers = parse_towers(towers)
        keyed = [t for t in self.towers if t.key is not None]
        if key is not None and len(keyed) != len(self.towers):
            raise ConfigError("CURVE needs every tower's public key: give --tower HOST:PORT@KEY")
        self.curve = bool(keyed) and len(keyed) == len(self.towers)
        self.key = key if key is not None or not self.curve else Identity.generate()
        self._keys: dict[str, bytes] = {}
        self.wait = wait
        self.expiry = expiry
        self.service = service
        self._pid = os.getpid()
        self._ctx = context or zmq.Context.instance()
        self._clock = time.monotonic
        self._started: float | None = None
        self._seen: dict[str, tuple[str, float]] = {}
        self._replayed: set[str] = set()
        """Towers (by the ID in their end-of-replay beacon) that replayed every store they know."""
        self._sub: zmq.Socket[bytes] | None = None
        self.malformed = 0
        self.health = HEALTH

    def _socket(self) -> zmq.Socket[bytes]:
        if os.getpid() != self._pid:
            raise DafkaError("a StoreLocator cannot cross a fork: create it where it is used")
        if self._sub is None:
            sub = self._ctx.socket(zmq.SUB)
            sub.setsockopt(zmq.LINGER, 0)
            sub.setsockopt(zmq.MAXMSGSIZE, 4096)
            sub.setsockopt(zmq.RCVHWM, 10_000)
            sub.setsockopt(zmq.SUBSCRIBE, wbeacon.SERVICE)
            if self.curve:
                sub.setsockopt(zmq.SUBSCRIBE, wbeacon.BEACON)  # node beacons carry keys
            for tower in self.towers:
                if self.curve and self.key is not None and tower.key is not None:
                    make_client(sub, CurveConfig(True), self.key, tower.key)
                sub.connect(tower.pub)
            self._sub = sub
            self._started = self._clock()
        return self._sub

    def _drain(self, sub: zmq.Socket[bytes], now: float) -> None:
        while True:
            try:
                frames = recv_bounded(sub, TOWER_BEACON_FRAMES)
            except zmq.Again:
                return
            except TooManyFrames:
                self.malformed += 1
                continue
            try:
                if frames and bytes(frames[0]) == wbeacon.BEACON:
                    node = wbeacon.decode_tower_beacon(frames)
                    if node.public_key is not None and len(self._keys) < MAX_KEYS:
                        self._keys[node.node_id] = node.public_key
                    continue
                beacon = wbeacon.decode_service_beacon(frames)
            except WireError:
                self.malformed += 1
                continue
            if beacon.service == self.service:
                if beacon.node_id not in self._seen:
                    # guard: locator-remembers-bounded-number-stores
                    if len(self._seen) >= MAX_KEYS:
                        continue  # bounded; stores() forgets the stale, and a store beacons again
                    log.log(
                        logging.INFO if len(self._seen) < LOGGED_STORES else logging.DEBUG,
                        "locator.store node=%s endpoint=%s",
                        beacon.node_id,
                        beacon.endpoint,
                    )
                self._seen[beacon.node_id] = (beacon.endpoint, now)
            elif beacon.service == wbeacon.REPLAYED and len(self._replayed) < len(self.towers):
                self._replayed.add(beacon.node_id)

    def _heard_all(self) -> bool:
        """Every tower replayed what it knows (and, over CURVE, every store's key is known)."""
        if len(self._replayed) < len(self.towers):
            return False
        return not self.curve or all(node_id in self._keys for node_id in self._seen)

    def stores(self, wait: float | None = None) -> dict[str, str]:
        """``node ID -> query endpoint`` of live stores; the first call waits ``wait`` seconds."""
        sub = self._socket()
        assert self._started is not None
        deadline = self._started + (self.wait if wait is None else wait)
        while True:
            now = self._clock()
            self._drain(sub, now)
            left = deadline - now
            if left <= 0 or self._heard_all():
                break
            sub.poll(max(1, int(left * 1000)), zmq.POLLIN)
        self._expire(self._clock())
        return {node_id: endpoint for node_id, (endpoint, _) in sorted(self._seen.items())}

    def _expire(self, now: float) -> None:
        for node_id, (_, seen) in list(self._seen.items()):
            if now - seen > self.expiry:
                del self._seen[node_id]

    def keys(self) -> dict[str, bytes]:
        """``node ID -> Ed25519 public key`` of the nodes heard (CURVE towers only)."""
        return dict(self._keys)

    def close(self) -> None:
        if self._sub is not None and os.getpid() == self._pid:
            self._sub.close(0)
        self._sub = None

    def __enter__(self) -> StoreLocator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SHARED: dict[tuple[object, ...], StoreLocator] = {}
_LOCKS: dict[tuple[object, ...], threading.Lock] = {}
_SHARED_LOCK = threading.Lock()
_SHARED_PID = os.getpid()
MAX_SHARED = 16
"""Most locators one process keeps open for reuse (one per tower list and client key)."""


def shared_locator(
    towers: str | Iterable[str] | None, *, wait: float, key: Identity | None
) -> tuple[StoreLocator, threading.Lock]:
    """A locator kept open for this process, with the lock its users hold while using it.

    A fresh locator must listen ``wait`` seconds for the towers to relay the stores'
    beacons; one kept open has heard them already, so a Spark driver planning its next
    read of the same cluster (a warm session) does not wait again. Its SUB socket keeps
    receiving between uses, bounded by its RCVHWM and drained at each use (beacons queued
    while it was idle count as heard when drained, so a store that died meanwhile may be
    listed once more; readers then skip it after one hedged request). A forked
    child starts afresh; at most :data:`MAX_SHARED` are kept (the oldest is closed).
    """
    global _SHARED_PID
    ident = (
        tuple(str(t) for t in parse_towers(towers)),
        None if key is None else key.public_key,
        wait,
    )
    with _SHARED_LOCK:
        if _SHARED_PID != os.getpid():
            _SHARED.clear()  # the parent's sockets are not ours
            _LOCKS.clear()
            _SHARED_PID = os.getpid()
        locator = _SHARED.get(ident)
        if locator is None:
            if len(_SHARED) >= MAX_SHARED:
                oldest = next(iter(_SHARED))
                with _LOCKS.pop(oldest):
                    _SHARED.pop(oldest).close()
            locator = _SHARED[ident] = StoreLocator(towers, wait=wait, key=key)
            _LOCKS[ident] = threading.Lock()
        return locator, _LOCKS[ident]


def close_shared() -> None:
    """Close every locator :func:`shared_locator` keeps (this process's)."""
    with _SHARED_LOCK:
        if _SHARED_PID == os.getpid():
            for ident, locator in _SHARED.items():
                with _LOCKS[ident]:
                    locator.close()
        _SHARED.clear()
        _LOCKS.clear()


def locate_stores(towers: str | Iterable[str] | None, wait: float = DEFAULT_WAIT) -> dict[str, str]:
    """One-shot: the stores heard through ``towers`` within ``wait`` seconds."""
    with StoreLocator(towers, wait=wait) as locator:
        return locator.stores()
