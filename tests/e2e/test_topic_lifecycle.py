"""Topics are created before a producer reports success, and deleted for real
(issue 9, point 5), with the CLIs as a user runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka.consumer._facade import Consumer
from dafka.errors import TopicDeletedError
from dafka.metadata import MetadataClient
from dafka.producer._facade import Producer
from dafka.query.client import QueryClient
from tests.e2e.test_admin_cli import admin
from tests.e2e.test_cli import assert_one_line_error, consumer, producer
from tests.procs import StoreProc, Tower, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def test_short_lived_producers_create_their_topics_before_they_exit(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        topics = [f"hello{i}" for i in range(4)]
        for topic in topics:  # like `seq 3 | dafka-producer hello` with fresh topics
            p = producer(tower.address, topic, b"1\n2\n3\n")
            assert p.wait() == 0, p.stderr
        for topic in topics:  # at once: no waiting for a background creation
            d = admin(tower.address, "topics", "describe", topic)
            assert d.wait() == 0, f"{topic}: {d.stderr}"
    finally:
        store.kill()
        tower.stop()


def test_deleting_a_topic_drops_its_records_and_tells_consumers(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    live = watcher = None
    try:
        p = producer(tower.address, "gone", b"a\nb\nc\n")
        assert p.wait() == 0, p.stderr
        # a consumer in a service, and one on the command line, both reading it
        live = Consumer("gone", towers=tower.address, offset_reset="earliest", metadata=True)
        got = [r.value for r in live.poll_batch(10, timeout=15)]
        while len(got) < 3:
            more = live.poll_batch(10, timeout=15)
            assert more, got
            got += [r.value for r in more]
        assert got == [b"a", b"b", b"c"]
        watcher = consumer(tower.address, "gone", "--from-beginning")
        watcher.wait_line_stdout(r"(?m)^c$")
        query = QueryClient(store.query_endpoint, timeout=5)
        assert [p.head for p in query.heads(["gone"])] == [2]

        d = admin(tower.address, "topics", "delete", "gone")
        assert d.wait() == 0, d.stderr
        # the stores drop the records ...
        wait_until(lambda: query.heads(["gone"]) == [], 15, what="the store to drop the topic")
        query.close()
        # ... consumers are told, once ...
        with pytest.raises(TopicDeletedError, match="topic 'gone' was deleted"):
            wait_until(lambda: live.poll(0.2), 15, what="the consumer told")  # type: ignore[union-attr]
        assert live.poll(0.3) is None
        assert_one_line_error(watcher, 1, "topic 'gone' was deleted")
        # ... and nobody reads them any more
        c = consumer(tower.address, "gone", "--from-beginning", "-e", "--timeout", "20")
        # issue 34: -e on a topic that does not exist is exit 1, not a silent 0
        assert_one_line_error(c, 1, "topic 'gone' does not exist (deleted at metadata revision")
        assert bytes(c.stdout) == b""
        # producing to it again creates a new topic: only its own records are there
        p = producer(tower.address, "gone", b"new\n")
        assert p.wait() == 0, p.stderr
        assert admin(tower.address, "topics", "describe", "gone").wait() == 0
        c = consumer(tower.address, "gone", "--from-beginning", "-e", "--timeout", "20")
        assert c.wait() == 0, c.stderr
        assert bytes(c.stdout) == b"new\n"
        got = wait_until(lambda: live.poll(0.2), 15, what="the live consumer goes on")  # type: ignore[union-attr]
        assert got.value == b"new"  # type: ignore[attr-defined]
    finally:
        if live is not None:
            live.close()
        if watcher is not None:
            watcher.kill()
        store.kill()
        tower.stop()


def test_a_live_producer_is_told_and_its_next_send_makes_a_new_topic(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    p = None
    try:
        with MetadataClient(tower.address) as meta:
            meta.create_topic("ev", {"min_acks": 2})  # one store: never durable
            p = Producer("ev", towers=tower.address, metadata=True)
            fut = p.send(b"old")
            query = QueryClient(store.query_endpoint, timeout=5)
            wait_until(lambda: query.heads(["ev"]), 15, what="the store to hold the record")
            meta.delete_topic("ev")
            with pytest.raises(TopicDeletedError, match="topic 'ev' was deleted"):
                fut.result(15)
            assert p.unacked == 0
            # the next send creates a new topic (defaults: min_acks 1); offsets go on
            assert p.send(b"new").result(15) == 1
            assert meta.describe("ev")["min_acks"] == 1
            (part,) = query.heads(["ev"])
            assert (part.tail, part.head) == (1, 1)  # the old record did not come back
            query.close()
    finally:
        if p is not None:
            p.close(1)
        store.kill()
        tower.stop()
