"""The metadata view a node holds: loaded at start, followed live, kept when towers are down.

A :class:`MetadataView` runs one thread that replays the Raft log into a local
:class:`~dafka.metadata.state.MetadataStateMachine` replica: RequestEntries from the
leader (the snapshot first when the log was compacted), then it waits on the towers'
StateBroadcast PUBs (beacon port + 3): a broadcast that continues what it has is
applied at once, one that skips ahead is filled in with RequestEntries, and without
broadcasts it asks again every ``refresh`` seconds. When no tower answers, the node
keeps the configuration it last saw and says so in its log; it catches up when a
tower is back.

Listeners (:meth:`MetadataView.subscribe`) are called on the view's thread with the
new configuration (plain data, see :meth:`MetadataStateMachine.view`) after every change;
they must not block.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import zmq

from ..config import parse_towers
from ..errors import ClosedError, ConfigError, DafkaError, DafkaTimeout, WireError
from ..io.multipart import recv_bounded
from ..raft import (
    BROADCAST_FRAMES,
    CLIENT_FRAME_BYTES,
    ClientCurve,
    Entry,
    RaftClient,
    SnapshotChunk,
    served_state,
)
from ..raft import codec as w
from .client import (
    BROADCAST_PORT_OFFSET,
    DEFAULT_CLUSTER,
    RAFT_PORT_OFFSET,
    tower_curve,
)
from .state import MetadataStateMachine, command, topic_settings

__all__ = ["BROADCAST_PORT_OFFSET", "MetadataView", "require_transport", "tower_curve"]

log = logging.getLogger(__name__)

_UNREACHABLE_SAID: set[tuple[str, ...]] = set()
"""Tower lists whose metadata this process has already warned it could not reach."""
_MAX_UNREACHABLE_SAID = 64


def _first_unreachable(raft_urls: Sequence[str]) -> bool:
    """Whether this process has not yet warned that ``raft_urls`` were unreachable (and
    remember that it has: a bounded set; past its bound, every list counts as said)."""
    key = tuple(raft_urls)
    # guard: process-warns-tower-list-metadata
    if key in _UNREACHABLE_SAID or len(_UNREACHABLE_SAID) >= _MAX_UNREACHABLE_SAID:
        return False
    _UNREACHABLE_SAID.add(key)
    return True


Listener = Callable[[dict[str, Any]], None]

MAX_SNAPSHOT_BYTES = 256 << 20
"""A snapshot a tower streams is held whole before it is verified: at most this many bytes
(10,000 topics with their proofs take 3.3 MB)."""
REFUSED_LOG_PERIOD = 30.0
"""Seconds between two ``metadata.snapshot_refused`` lines of one view."""
CREATE_TIMEOUT = 5.0
"""Seconds a first use of an unknown topic waits for its creation to be committed."""


def require_transport(view: MetadataView, curve: bool) -> None:
    """The cluster setting ``curve``: a node that runs NULL in a cluster that requires CURVE
    refuses to start (:class:`ConfigError`), and says so loudly when it is turned on later."""
    if curve:
        return
    message = (
        "the cluster requires CURVE (cluster setting curve = true): start this node with "
        "--curve and --tower HOST:PORT@KEY (docs/security.md)"
    )
    started = threading.Event()
    required: list[int] = []

    def check(config: dict[str, Any]) -> None:
        if (config.get("cluster") or {}).get("curve"):
            if not started.is_set():
                required.append(int(config.get("revision", 0)))
            else:
                log.error("node.curve_required revision=%s: %s", config.get("revision"), message)

    view.subscribe(check)  # called at once when the view is loaded
    started.set()
    # guard: null-nodes-refuse-cluster-requires
    if required:
        raise ConfigError(message)


class _CreateRequest:
    """A topic creation asked for by another thread; ``done`` is set when it is settled."""

    __slots__ = ("done", "error", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.done = threading.Event()
        self.error: DafkaError | None = None


class MetadataView:
    """A thread-safe, live copy of the cluster metadata; see the module docstring."""

    def __init__(
        self,
        towers: str | Iterable[str] | None = None,
        *,
        cluster: str = DEFAULT_CLUSTER,
        timeout: float = 2.0,
        refresh: float = 2.0,
        curve: ClientCurve | None = None,
        anchors: Sequence[str] = (),
    ) -> None:
        """``anchors``: the cluster's bootstrap admin keys, if this node knows them: the
        snapshots it is sent must descend from them (without, the first one it takes names
        the root it holds to from then on; docs/metadata.md "Snapshots")."""
        addresses = parse_towers(towers)
        # CURVE to towers started with --raft-curve: keys by their Raft and broadcast URLs
        self.curve = curve
        self.raft_urls = [f"tcp://{t.host}:{t.port + RAFT_PORT_OFFSET}" for t in addresses]
        self.broadcast_urls = [
            f"tcp://{t.host}:{t.port + BROADCAST_PORT_OFFSET}" for t in addresses
        ]
        self.cluster = cluster
        self.timeout = timeout
        self.refresh = refresh
        self._lock = threading.Lock()
        self._replica = MetadataStateMachine(cluster=cluster, anchors=anchors)
        self._refused_log_after = 0.0
        self._config: dict[str, Any] | None = None
        self._listeners: list[Listener] = []
        self._creates: list[_CreateRequest] = []
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._loaded = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._prev = 0
        self._published = -1
        """The revision listeners last heard of (-1: none yet)."""
        self.online = False
        self.syncs = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, wait: float = 0.0) -> bool:
        """Start following; wait up to ``wait`` s for the first load. True once loaded."""
        self._thread = threading.Thread(target=self._run, name="dafka-metadata", daemon=True)
        self._thread.start()
        return self._loaded.wait(wait) if wait > 0 else self._loaded.is_set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return  # the thread still polls the pipe: leave it open
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except OSError:
            pass  # full (the thread is awake anyway) or closed

    def wait_loaded(self, timeout: float) -> bool:
        return self._loaded.wait(timeout)

    # -- reading -----------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        return self._loaded.is_set()

    @property
    def config(self) -> dict[str, Any] | None:
        """The last configuration seen (None before the first load)."""
        with self._lock:
            return self._config

    @property
    def revision(self) -> int:
        config = self.config
        return -1 if config is None else int(config["revision"])

    def topic(self, name: str) -> dict[str, Any] | None:
        """A topic's full settings (defaults filled in), or None if it does not exist."""
        config = self.config
        if config is None or name not in config["topics"]:
            return None
        return topic_settings(config["topics"][name])

    def trusted_stores(self) -> tuple[str, ...]:
        config = self.config
        return () if config is None else tuple(config["stores"])

    def auto_create(self) -> bool:
        """The cluster setting: an unknown topic is created with defaults on first use."""
        config = self.config
        return True if config is None else bool(config["cluster"].get("auto_create", True))

    def create_topic(self, name: str, timeout: float = CREATE_TIMEOUT) -> None:
        """Create ``name`` with the default settings and return once the creation is
        committed and this view holds it (a topic that exists by then is left alone).

        Raises :class:`DafkaTimeout` when no metadata leader committed it within
        ``timeout`` s, or the :class:`DafkaError` that made the creation fail.
        """
        request = _CreateRequest(name)
        with self._lock:
            self._creates.append(request)
        self._wake()
        if not request.done.wait(timeout):
            raise DafkaTimeout(
                f"could not create topic {name!r}: no metadata leader answered within "
                f"{timeout:g} s (towers' Raft peers: {', '.join(self.raft_urls)})"
            )
        if request.error is not None:
            raise request.error

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(config)`` after every change (and now, if loaded)."""
        with self._lock:
            self._listeners.append(listener)
            config = self._config
        if config is not None:
            listener(config)

    # -- the thread --------------------------------------------------------------------------

    def _run(self) -> None:
        # the process's shared context, as nodes without CURVE use: a context of its own
        # was an I/O thread more per node, woken by every broadcast (issue 39: an idle
        # node's CPU). Its sockets are clients only (CURVE client keys are per socket), and
        # they are closed, not the context, when the view stops.
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.MAXMSGSIZE, CLIENT_FRAME_BYTES)
        sub.setsockopt(zmq.SUBSCRIBE, self.cluster.encode())
        for url in self.broadcast_urls:
            if self.curve is not None:
                self.curve.apply(sub, url)  # the server key is taken per connect
            sub.connect(url)
        client = RaftClient(
            self.raft_urls, self.cluster, timeout=self.timeout, context=ctx, curve=self.curve
        )
        poller = zmq.Poller()
        poller.register(sub, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        next_sync = 0.0
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if self._creates:
                    self._create_topics(client)
                if now >= next_sync:
                    self._sync(client)
                    next_sync = time.monotonic() + (self.refresh if self.online else 1.0)
                # nothing to do before the next sync: a stop or a create wakes the pipe
                wait = max(0.0, next_sync - time.monotonic())
                events = dict(poller.poll(int(wait * 1000) + 1))
                if self._wake_r in events:
                    try:
                        os.read(self._wake_r, 4096)
                    except OSError:
                        pass
                if sub in events:
                    try:
                        frames = recv_bounded(sub, BROADCAST_FRAMES, 0)
                        msg = w.StateBroadcast.decode(frames)
                    except (WireError, ValueError):  # TooManyFrames too
                        continue
                    if msg.last_index > self._prev and not self._take_broadcast(msg):
                        next_sync = 0.0
                    elif not self.online:
                        next_sync = 0.0  # a tower is back: confirm with RequestEntries
                    # guard: follower-syncs-only-without-broadcasts
                    elif msg.last_index == self._prev:  # in step: no sync while they come
                        next_sync = max(next_sync, time.monotonic() + self.refresh)
        finally:
            with self._lock:
                requests, self._creates = self._creates, []
            for request in requests:
                request.error = ClosedError(f"could not create topic {request.name!r}: closed")
                request.done.set()
            client.close()
            sub.close(0)

    def _create_topics(self, client: RaftClient) -> None:
        with self._lock:
            requests, self._creates = self._creates, []
        for request in requests:
            name = request.name
            try:
                if name not in self._replica.topics:
                    index = client.update(command("topic.create", topic=name, settings={}))
                    self._sync(client)  # the committed entry, so the view holds the topic
                    if self._prev < index:
                        raise DafkaTimeout(f"the metadata log did not reach index {index}")
                    if name not in self._replica.topics:
                        why = self._replica.last_error or "deleted again at once"
                        raise ConfigError(f"topic {name!r} was not created: {why}")
                    log.info("metadata.topic_created topic=%s", name)
            except DafkaError as exc:
                if self._created_meanwhile(client, name):
                    log.info("metadata.topic_created_by_another topic=%s", name)
                    request.done.set()
                    continue
                log.warning("metadata.topic_create.failed topic=%s error=%s", name, exc)
                request.error = (
                    exc
                    if isinstance(exc, ConfigError)
                    else DafkaTimeout(f"could not create topic {name!r}: {exc}")
                )
            request.done.set()

    def _created_meanwhile(self, client: RaftClient, name: str) -> bool:
        """Whether ``name`` exists after all: another node created it at the same time, and
        the leader refused our second creation of it."""
        try:
            self._sync(client)
        except DafkaError:
            return False
        return name in self._replica.topics

    def _take_broadcast(self, msg: w.StateBroadcast) -> bool:
        """Apply a broadcast that continues what we have; False when there is a gap."""
        entries = [e for e in msg.entries if e.index > self._prev]
        if not entries or entries[0].index != self._prev + 1:
            return False
        try:
            for entry in entries:
                self._replica.apply(entry)
                self._prev = entry.index
        finally:
            self._publish_changes()
        return self._prev >= msg.last_index

    def _sync(self, client: RaftClient) -> None:
        snapshot = bytearray()
        try:
            for item in client.stream_entries(self._prev, timeout=self.timeout):
                if self._stop.is_set():
                    return
                if isinstance(item, SnapshotChunk):
                    if item.offset == 0:
                        snapshot.clear()
                    if len(snapshot) + len(item.data) > MAX_SNAPSHOT_BYTES:
                        raise WireError(
                            f"a metadata snapshot over {MAX_SNAPSHOT_BYTES} bytes: not taken"
                        )
                    snapshot += item.data
                    if item.last:  # RequestEntries streams the state machine's own bytes
                        if not self._restore(bytes(snapshot), item.index):
                            return  # behind, as it was: asked again at the next sync
                        self._prev = item.index
                elif isinstance(item, Entry):
                    self._replica.apply(item)
                    self._prev = item.index
        except DafkaError as exc:
            if self.online or not self.syncs:
                rev = self.revision
                kept = (
                    f"keeping the configuration last seen (revision {rev})"
                    if rev >= 0
                    else ("running with local settings")
                )
                # a first sync that fails is said once per process and tower list (a
                # Spark executor follows the metadata anew in every task); losing a
                # metadata group this view had reached, each time
                first = self.online or _first_unreachable(self.raft_urls)
                log.log(
                    logging.WARNING if first else logging.INFO,
                    "metadata.unreachable towers=%s: %s; %s",
                    self.raft_urls,
                    exc,
                    kept,
                )
            self.online = False
            self.syncs += 1
            return
        finally:
            # what was applied is published even when a later entry or the stream failed:
            # a replica that holds a change nobody hears of is worse than an older one
            self._publish_changes()
        if not self.online:
            log.info("metadata.online index=%d revision=%d", self._prev, self._replica.revision)
        self.online = True
        self.syncs += 1
        if not self._loaded.is_set():
            self._publish()

    def _restore(self, data: bytes, index: int) -> bool:
        """Replace the replica by a snapshot it verifies (:meth:`MetadataStateMachine.
        check_snapshot`); a refused one leaves it as it was, one log line per period."""
        try:
            # a ØMQ RAFT reference peer serves the InstallSnapshot stream our leader sent it
            # guard: metadata-view-restores-snapshots-onto
            self._replica.restore(served_state(data, index))
        except WireError as exc:
            now = time.monotonic()
            if now >= self._refused_log_after:
                self._refused_log_after = now + REFUSED_LOG_PERIOD
                log.warning(
                    "metadata.snapshot_refused index=%d count=%d: %.300s",
                    index,
                    self._replica.snapshots_refused,
                    exc,
                )
            return False
        return True

    @property
    def snapshots_refused(self) -> int:
        """Snapshots a tower sent that did not verify (the replica kept its state)."""
        return self._replica.snapshots_refused

    def _publish_changes(self) -> None:
        """Publish the replica if it changed since the last publication."""
        if self._replica.revision != self._published:
            self._publish()

    def _publish(self) -> None:
        config = self._replica.view()
        self._published = config["revision"]
        with self._lock:
            before, self._config = self._config, config
            listeners = list(self._listeners)
        self._loaded.set()
        # a listener's lease renewal (every few seconds) is no news worth a line at info
        leases_only = before is not None and all(
            before.get(k) == config.get(k) for k in ("topics", "stores", "cluster", "admins")
        )
        log.log(
            logging.DEBUG if leases_only else logging.INFO,
            "metadata.change revision=%d topics=%d",
            config["revision"],
            len(config["topics"]),
        )
        for listener in listeners:
            try:
                listener(config)
            except Exception:
                log.exception("metadata.listener.failed")
