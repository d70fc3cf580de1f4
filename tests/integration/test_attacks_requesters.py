"""FETCHes to a live CURVE producer, read in the requester's name or sent in another's
(issue 32, points 3 and 8), with a real tower and producer on 127.0.0.1.

The producer holds 50 records of ``sealed`` (no store acknowledges them), whose read ACL
names one consumer. The attackers are in-process nodes with CURVE keys of their own
(``--curve`` admits any key by default): each beacons, so the producer connects to its
XPUB and hears its FETCHes, and subscribes to its own ``D`` prefix on the producer.

* A stranger FETCHing in its own name read the topic (the issue: 263-284 of 284
  records); now it reads nothing, and the named consumer, FETCHing the same way, reads
  all 50: the producer checks the read ACL, and the connection a FETCH came on is bound
  to the node its key belongs to (``dafka.io.request_senders``).
* A stranger FETCHing in the named consumer's name made the producer send the consumer
  the records it asked for; now the producer refuses it (``request.not_own ...
  verdict=forged`` in its log) and the consumer receives nothing it did not ask for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from dafka.api.common import node_config
from dafka.core import messages as m
from dafka.core.effects import Publish
from dafka.core.read_guard import ReadView
from dafka.io.node import NodeLoop
from dafka.io.profiles import SignedProfile
from dafka.metadata import MetadataClient
from dafka.security import identity
from dafka.wire.rfc46 import Command, direct_prefix
from tests.integration.test_attacks_curve import LINES, CurveTower, keys
from tests.integration.test_attacks_read_acl import feed, live_producer
from tests.procs import Proc, wait_until


@pytest.fixture
def curve_tower() -> Iterator[CurveTower]:
    tower = CurveTower()
    yield tower
    tower.proc.kill()


class Fetcher:
    """A node handler: FETCHes every record of ``sealed`` from ``producer`` in
    ``requester``'s name every 0.2 s while ``fetching``, and keeps the offsets of the
    DIRECT-RECORDs addressed to itself."""

    def __init__(self, me: str, producer: str, requester: str | None) -> None:
        self.me = me
        self.producer = producer
        self.requester = requester
        self.fetching = threading.Event()
        self.got: set[int] = set()
        self._next = 0.0

    def subscriptions(self) -> list[bytes]:
        return [direct_prefix(Command.DIRECT_RECORD, self.me)]

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        return []

    def on_commands(self, now: float) -> list[Publish]:
        return []

    def on_messages(self, msgs: list[m.Message], now: float, sources: Sequence[str] = ()) -> list:
        for msg in msgs:
            if isinstance(msg, m.DirectRecord) and msg.recipient == self.me:
                self.got.update(range(msg.offset, msg.offset + msg.count))
        return []

    def on_subscription(self, sub: object, now: float) -> list[Publish]:
        return []

    def on_tick(self, now: float) -> list[Publish]:
        if self.requester is None or not self.fetching.is_set() or now < self._next:
            return []
        self._next = now + 0.2
        return [Publish(m.Fetch(self.producer, self.requester, "sealed", 0, 50))]

    def has_pending(self) -> bool:
        return False

    def accepting(self) -> bool:
        return True

    def on_stop(self) -> None:
        pass


def node(tower: CurveTower, me: identity.Identity, handler: Fetcher) -> NodeLoop:
    config = node_config(tower.address, curve=True)
    return NodeLoop(
        me.node_id, config, handler, identity=me, profile=SignedProfile(), read_view=ReadView()
    ).start()  # type: ignore[arg-type]


def test_a_stranger_reads_nothing_of_a_live_producer_by_fetch_and_may_not_fetch_for_another(
    curve_tower: CurveTower, tmp_path: Path
) -> None:
    k = keys(tmp_path, "reader", "producer")
    reader = identity.load(k["reader"][0])
    producer_id = identity.load(k["producer"][0]).node_id
    stranger = identity.Identity.generate()
    with MetadataClient(curve_tower.address) as admin:
        admin.create_topic("sealed", {"consumers": [reader.node_id]})
    own = Fetcher(stranger.node_id, producer_id, stranger.node_id)
    named = Fetcher(reader.node_id, producer_id, reader.node_id)
    loops: list[NodeLoop] = []
    producer: Proc | None = None
    try:
        producer = live_producer(curve_tower, k["producer"][0])
        loops += [node(curve_tower, stranger, own), node(curve_tower, reader, named)]
        feed(producer, LINES)
        # the named consumer FETCHes in its own name and reads every record (the producer
        # holds them all: no store acknowledges them)
        named.fetching.set()
        wait_until(lambda: len(named.got) == 50, 30, what="the named consumer's 50 records")
        named.fetching.clear()
        # point 3: the stranger FETCHes the same way in its own name: nothing
        own.fetching.set()
        time.sleep(3.0)  # 15 FETCHes
        assert not own.got, f"the stranger read {len(own.got)} records"
        # point 8: the stranger FETCHes in the named consumer's name: refused, and nothing
        # reaches the consumer that it did not ask for
        time.sleep(0.5)  # what the consumer asked for last has arrived
        named.got.clear()
        own.requester = reader.node_id
        wait_until(
            lambda: "verdict=forged" in producer.stderr,  # type: ignore[union-attr]
            20,
            what="the producer refusing the forged FETCH",
        )
        time.sleep(2.0)  # 10 forged FETCHes
        assert not named.got, f"{len(named.got)} records sent on forged FETCHes"
        assert not own.got
    finally:
        for loop in loops:
            loop.stop()
        if producer is not None:
            producer.kill()
