"""Leadership from leases in the metadata: several ``dafka-kafka`` listeners over one cluster.

:class:`LeaseLeadership` is the IO shell around the pure :class:`~.leases.LeaseKeeper`: one
thread that, every :data:`TICK` seconds (sooner when the metadata view changes), shows the
keeper the view's leases, tells it what this listener wants (its presence ``b/BROKER``,
every Kafka-written partition ``p/TOPIC/N`` of every numbered topic, and the groups clients
asked it to coordinate), and sends the keeper's take, renew and release commands signed with
the listener's key. The backend's questions (:class:`~.leadership.Leadership`) are answered
from the keeper under one lock, so an answer is one step against one state of the keeper.

Native Dafka partitions that the metadata has not numbered yet are numbered by this thread
too (``partition.number``, signed with the listener key), so every listener gives a native
partition the same Kafka number for ever.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DafkaError, NothingToChange
from ..metadata.client import DEFAULT_CLUSTER, MetadataClient
from ..metadata.follower import MetadataView
from ..metadata.leases import layout
from ..security.identity import Identity, create_file, load_file
from .leases import Command, LeaseKeeper, Release, Renew, Take
from .model import Broker

log = logging.getLogger(__name__)

__all__ = ["LISTENER_KEY_FILE", "LeaseLeadership", "broker_id", "listener_key", "register_listener"]

TICK = 0.25
"""Seconds between two looks at the leases (renews go every ``lease_s / 3``)."""
MAX_GROUPS = 1000
"""Groups this listener asks to coordinate at most (the least recently asked go first)."""
LISTENER_KEY_FILE = "listener.key"
BROKER_ID_FILE = "broker.id"


def listener_key(state_dir: Path) -> Identity:
    """The listener's key in ``state_dir`` (made, mode 0600, on first use)."""
    path = state_dir / LISTENER_KEY_FILE
    if not (path.exists() or path.is_symlink()):
        try:
            return create_file(path, what="listener key")
        except ConfigError:
            if not path.exists():
                raise
    return load_file(path, what="listener key")


def broker_id(state_dir: Path) -> int:
    """This listener's Kafka broker id, kept in ``state_dir`` (a random one on first use:
    the ``b/BROKER`` lease keeps two live listeners from using one)."""
    path = state_dir / BROKER_ID_FILE
    try:
        text = path.read_text("ascii").strip()
    except FileNotFoundError:
        value = 1 + secrets.randbelow(2**31 - 2)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(f"{value}\n", "ascii")
        os.replace(tmp, path)
        return value
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not text.isdigit() or not 0 <= int(text) < 2**31:
        raise ConfigError(f"{path} holds {text[:40]!r}, not a broker id (0 to 2^31-1)")
    return int(text)


def register_listener(towers: Any, admin_key_file: str | None, key: str, secret_id: str) -> None:
    """Check the listener's key is listed in ``listeners`` and its partition secret is the
    cluster's (``kafka_secret``); list it, and pin the secret when none is, with the admin
    key if this listener has one, else say how."""
    client = MetadataClient(towers, admin=admin_key_file)
    try:
        pinned = client.config()["cluster"].get("kafka_secret")
        if pinned is None and admin_key_file is not None:
            client.set_cluster({"kafka_secret": secret_id})
            pinned = client.config()["cluster"].get("kafka_secret")
        # guard: kafka-cli-refuses-another-secret
        if pinned is not None and pinned != secret_id:
            raise ConfigError(
                f"this listener's partition secret (fingerprint {secret_id}) is not the "
                f"cluster's ({pinned}): give every listener the same --partition-secret file"
            )
        if key in client.listeners():
            return
        if admin_key_file is None:
            raise ConfigError(
                f"this listener's key {key} is not among the cluster's listeners: list it "
                f"with `dafka listeners add {key}` (or give --admin-key)"
            )
        try:
            client.add_listener(key)
        except NothingToChange:
            pass
        log.info("kafka.listener_listed key=%s", key)
    finally:
        client.close()


class LeaseLeadership:
    """:class:`~.leadership.Leadership` from leases; see the module docstring.

    ``view``: the metadata view the backend reads too; ``key``: the listener's key, listed
    in the cluster setting ``listeners``. ``on_change(now)`` is called on the lease thread
    after leases moved (the backend closes the producers of partitions it lost);
    ``on_group(group, held)`` when this listener starts or stops coordinating a group."""

    def __init__(
        self,
        *,
        towers: Any,
        me: Broker,
        key: Identity,
        view: MetadataView,
        cluster: str = DEFAULT_CLUSTER,
        lease_s: float = 10.0,
        margin: float = 1.0,
        client: MetadataClient | None = None,
        clock: Callable[[], float] = time.monotonic,
        secret_id: str | None = None,
    ) -> None:
        self.me = me
        self.view = view
        self.clock = clock
        self.secret_id = secret_id
        """This listener's partition secret fingerprint (``kafka_secret``)."""
        self.mismatch: str | None = None
        """The cluster's ``kafka_secret`` when it is not this listener's (then it holds
        nothing)."""
        self.keeper = LeaseKeeper(key.public_key.hex(), lease_s=lease_s, margin=margin)
        self._client = client or MetadataClient(towers, cluster=cluster, listener=key)
        self._lock = threading.Lock()
        self._groups: OrderedDict[str, None] = OrderedDict()
        self._held_groups: set[str] = set()
        self._to_number: dict[str, set[str]] = {}
        self.on_change: Callable[[float], None] = lambda now: None
        self.on_group: Callable[[str, bool], None] = lambda group, held: None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dafka-kafka-leases", daemon=True)

    def start(self) -> LeaseLeadership:
        self._step(self.clock())  # the first view of the leases before serving
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing (what this listener holds, it stops writing within the margin)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def release(self) -> None:
        """After :meth:`stop` and once this listener's writes ended: release what it holds,
        so that others take it at once rather than once stale."""
        self.stop()
        with self._lock:
            held = self.keeper.held(self.clock())
            base = self.keeper.revision
        for resource, epoch in sorted(held.items()):
            try:
                self._client.release_lease(resource, epoch, base=base)
            except DafkaError as exc:
                log.info("kafka.lease_release_failed resource=%s: %s", resource, exc)
        self._client.close()

    # -- Leadership ------------------------------------------------------------------------

    def leads(self, topic: str, index: int, now: float) -> bool:
        with self._lock:
            # guard: kafka-leads-only-while-held
            return self.keeper.holds(f"p/{topic}/{index}", now)

    def leader(self, topic: str, index: int) -> Broker | None:
        return self._holder(f"p/{topic}/{index}")

    def group_coordinator(self, group: str) -> Broker | None:
        resource = f"g/{group}"
        with self._lock:
            self._groups.pop(group, None)
            self._groups[group] = None
            while len(self._groups) > MAX_GROUPS:
                self._groups.popitem(last=False)
        return self._holder(resource)

    def brokers(self) -> list[Broker]:
        now = self.clock()
        with self._lock:
            live = self.keeper.brokers(now)
        out = [self.me]
        for node_id, endpoint in live:
            if node_id == self.me.node_id:
                continue
            host, _, port = endpoint.rpartition(":")
            out.append(Broker(node_id, host.strip("[]"), int(port)))
        return out

    def number(self, topic: str, ids: Iterable[str]) -> None:
        """Ask the metadata to number native partitions ``ids`` of ``topic`` (on the lease
        thread, soon; thread-safe)."""
        with self._lock:
            wanted = self._to_number.setdefault(topic, set())
            if len(self._to_number) <= MAX_GROUPS:
                wanted.update(ids)

    def _holder(self, resource: str) -> Broker | None:
        now = self.clock()
        with self._lock:
            if self.keeper.holds(resource, now):
                return self.me
            lease = self.keeper.live_lease(resource, now)
        # guard: kafka-leader-unconfirmed-is-nobody
        if lease is None or lease["holder"] is None or lease["holder"] == self.keeper.key:
            return None  # unheld, stale, or ours and not confirmed yet: clients retry
        host, _, port = str(lease["endpoint"]).rpartition(":")
        return Broker(int(lease["broker"]), host.strip("[]"), int(port))

    # -- the lease thread ------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(TICK):
            try:
                self._step(self.clock())
            except Exception:  # a bug here must not stop the renews
                log.exception("kafka.lease_step_failed")

    def _wants(self, config: dict[str, Any]) -> set[str]:
        pinned = (config.get("cluster") or {}).get("kafka_secret")
        # guard: kafka-secret-must-match-the-cluster
        if pinned is not None and self.secret_id is not None and pinned != self.secret_id:
            if self.mismatch != pinned:
                log.error(
                    "kafka.partition_secret_mismatch cluster=%s ours=%s: this listener takes "
                    "no partition; give it the cluster's --partition-secret file",
                    pinned,
                    self.secret_id,
                )
            self.mismatch = pinned
            return set()  # its partition keys are not the cluster's: write nothing
        self.mismatch = None
        wants = {f"b/{self.me.node_id}"}
        numbering = config.get("numbering", {})
        for topic, settings in config.get("topics", {}).items():
            partitions = settings.get("partitions")
            if not partitions:
                continue
            for n, native in enumerate(layout(partitions, numbering.get(topic, ()))):
                if native is None:
                    wants.add(f"p/{topic}/{n}")
        wants.update(f"g/{g}" for g in self._groups)
        return wants

    def _step(self, now: float) -> None:
        config = self.view.config
        if config is None:
            return
        with self._lock:
            self.keeper.observe(config.get("leases", {}), int(config["revision"]), now)
            self.keeper.want(self._wants(config))
            commands = self.keeper.tick(now)
            numbering, self._to_number = self._to_number, {}
        for command in commands:
            self._send(command)
        for topic, ids in numbering.items():
            known = {i for i, _ in config.get("numbering", {}).get(topic, ())}
            new = sorted(ids - known)
            if new and topic in config.get("topics", {}):
                try:
                    self._client.number_partitions(topic, new[:64])
                except DafkaError as exc:
                    log.info("kafka.numbering_refused topic=%s: %s", topic, exc)
        now = self.clock()
        with self._lock:
            held = {r[2:] for r in self.keeper.held(now) if r.startswith("g/")}
            won, lost = held - self._held_groups, self._held_groups - held
            self._held_groups = held
        for group in sorted(lost):
            self.on_group(group, False)
        for group in sorted(won):
            self.on_group(group, True)
        # guard: kafka-leases-moved-close-partitions
        if commands or lost:
            self.on_change(now)

    def _send(self, command: Command) -> None:
        endpoint = f"{self.me.host}:{self.me.port}"
        try:
            if isinstance(command, Take):
                self._client.take_lease(
                    command.resource,
                    command.epoch,
                    self.me.node_id,
                    endpoint,
                    base=command.base,
                )
            elif isinstance(command, Renew):
                self._client.renew_leases(list(command.leases), base=command.base)
            elif isinstance(command, Release):
                self._client.release_lease(command.resource, command.epoch, base=command.base)
        except ConfigError as exc:  # refused: it will never apply
            log.debug("kafka.lease_refused command=%s: %s", command, exc)
            with self._lock:
                self.keeper.refused(command, self.clock())
        except DafkaError as exc:  # perhaps applied: the keeper learns it from the view
            log.info("kafka.lease_unanswered command=%s: %s", type(command).__name__, exc)
