"""The producer's record model (issue 36): headers, own timestamps, tombstones and
compression through ``send``/``send_many``, sealed in format 5 only when a batch needs
it, and carried unchanged by a durable producer's log across a restart.

No store: what the producer sealed is read from what it holds (and its log)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dafka.errors import ConfigError, ProfileError
from dafka.producer._facade import Producer
from dafka.producer._wal import ProducerLog
from dafka.wire.signed import open_batch, verify_batch
from dafka.wire.signed_rich import Codec
from tests.procs import Tower, wait_until


def held(p: Producer, topic: str = "lonely", count: int | None = None) -> list:
    """The batches ``p`` published and holds (never acknowledged here), verified."""
    wait_until(lambda: p._handler.records_sent == (count or p.unacked), 10)
    state = p._core._topics.get(topic)
    return [verify_batch(blob) for blob in (state.held if state else [])]


def test_plain_records_stay_format_3_and_records_that_need_it_go_format_5(
    lonely: Producer,
) -> None:
    lonely.send(b"plain", key=b"k")
    lonely.send_many([b"p1", b"p2"])
    lonely.send(b"plain", headers=[])  # empty headers: nothing besides, the fast path
    assert [b.format for b in held(lonely)] == [3] * len(held(lonely))
    first = len(held(lonely))
    fut = lonely.send(b"v", key=b"k", headers=[("traceparent", "00-ab-01"), ("n", None)])
    lonely.send(None, key=b"k")  # a tombstone
    lonely.send(b"late", timestamp=1_000)
    many = lonely.send_many(
        [b"a", None, b"c"],
        keys=[b"1", b"2", b"3"],
        headers=[None, None, {"h": b"x"}],
        timestamps=[7, None, None],
    )
    rich = held(lonely)[first:]
    assert {b.format for b in rich} == {5}
    recs = [open_batch(b) for b in rich]
    values = [v for r in recs for v in r.values]
    headers = [h for r in recs for h in r.headers]
    times = [t for r in recs for t in r.timestamps]
    assert values == [b"v", None, b"late", b"a", None, b"c"]
    assert headers[0] == (("traceparent", b"00-ab-01"), ("n", None))
    assert headers[5] == (("h", b"x"),)
    assert times[2] == 1_000 and times[3] == 7
    assert not fut.done() and not many.done()  # nobody acknowledged them
    assert lonely.unacked == 4 + 6


def test_send_checks_what_it_is_given(lonely: Producer) -> None:
    with pytest.raises(TypeError, match="int"):
        lonely.send(b"v", timestamp="now")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="int"):
        lonely.send(b"v", timestamp=True)
    with pytest.raises(ValueError, match="timestamp"):
        lonely.send(b"v", timestamp=-1)
    with pytest.raises(ValueError, match="tombstone"):
        lonely.send(None)  # no key: nothing to delete
    with pytest.raises(ValueError, match="2 headers for 1 values"):
        lonely.send_many([b"v"], headers=[None, None])
    with pytest.raises(TypeError, match="pairs"):
        lonely.send(b"v", headers=b"a=b")  # type: ignore[arg-type]
    assert lonely.unacked == 0


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
def test_a_producer_compresses_with_its_codec(nowhere: str, codec: str) -> None:
    with Producer("z", towers=nowhere, metadata=False, compression=codec) as p:
        p.send_many([b'{"event": "click", "user": 1}'] * 200)
        (batch,) = held(p, "z", 200)
        assert batch.format == 5 and batch.blob[batch.blob[1] + 2 + 36] == Codec[codec.upper()]
        assert open_batch(batch).values == [b'{"event": "click", "user": 1}'] * 200
        p.close(timeout=0)


def test_the_topics_compression_and_compaction_from_the_metadata_make_format_5(
    lonely: Producer,
) -> None:
    def sealing(codecs: dict, compacted: frozenset) -> None:
        lonely._loop.call(lambda now: lonely._handler.set_topic_sealing(codecs, compacted) or [])

    sealing({"lonely": Codec.LZ4}, frozenset())
    wait_until(lambda: lonely._handler.sealing("lonely") == (Codec.LZ4, False), 5)
    lonely.send(b"a")
    sealing({}, frozenset({"lonely"}))
    wait_until(lambda: lonely._handler.sealing("lonely") == (Codec.NONE, True), 5)
    lonely.send(b"b", key=b"k")
    batches = held(lonely, count=2)
    assert [b.format for b in batches] == [5, 5]
    assert [open_batch(b).values for b in batches] == [[b"a"], [b"b"]]
    # the producer's own choice wins over the topic's
    lonely._handler.codec = Codec.NONE
    assert lonely._handler.sealing("lonely") == (Codec.NONE, True)


def test_cli_rejects_a_bad_codec_in_one_line(nowhere: str) -> None:
    with pytest.raises(ConfigError, match="compression 'gzip' is not one of none, zstd, lz4"):
        Producer("z", towers=nowhere, metadata=False, compression="gzip")
    with pytest.raises(ProfileError, match="signed profile"):
        Producer("z", towers=nowhere, metadata=False, compression="lz4", profile="rfc46")


def test_a_durable_producer_carries_format_5_records_across_a_restart(
    nowhere: str, tmp_path: Path
) -> None:
    state = tmp_path / "p"
    headers = (("traceparent", b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),)
    with Producer("wal", towers=nowhere, state_dir=state, durable=True, metadata=False) as p:
        p.send(b"with headers", key=b"k", headers=headers, timestamp=123)
        p.send(None, key=b"k")  # returned once logged
        blobs = [b.content for b in ProducerLog(state / "producer.wal").pending({})]
        p.close(timeout=0)
    logged = [open_batch(verify_batch(blob)) for blob in blobs]
    assert [v for r in logged for v in r.values] == [b"with headers", None]
    assert logged[0].headers == [headers] and logged[0].timestamps == [123]
    # restarted (no store holds anything): what its log holds is published again, verbatim
    with Producer(
        "wal", towers=nowhere, state_dir=state, durable=True, metadata=False, recovery_wait=0.3
    ) as again:
        topic = again._core._topics

        wait_until(lambda: "wal" in topic and len(topic["wal"].held) == len(blobs), 10)
        assert list(topic["wal"].held) == blobs
        assert again.send(b"next", headers={"n": b"1"}) is not None
        again.close(timeout=0)


def test_dafka_producer_sends_headers_compressed_and_a_store_acknowledges_them(
    tower: Tower, start_store
) -> None:
    start_store()
    result = subprocess.run(
        [sys.executable, "-m", "dafka.cli.producer", "hdr", "--tower", tower.address]
        + ["-H", "a=1", "-H", "nul", "-z", "zstd", "--timeout", "30"],
        input=b"one\ntwo\n",
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert b"2 records acknowledged, 0 failed" in result.stderr


def test_headers_bytes_are_held_in_the_budget_and_given_back_on_ack(
    tower: Tower, start_store
) -> None:
    start_store()
    # small batches: a send_many of 100 is taken in parts over several turns
    with Producer("budget", towers=tower.address, metadata=False, max_batch_records=16) as p:
        one = p.send(b"v", key=b"k", headers=[("h", b"x" * 1000)])
        assert p._budget.counts()[3] == 1 + 6 + 1 + 1000
        many = p.send_many(
            [b"v%d" % i for i in range(100)],
            headers=[[("h", b"y" * 100)] if i % 3 else None for i in range(100)],
        )
        p.send(None, key=b"k")
        p.flush(30)
        assert one.result(0) == 0 and many.result(0) == range(1, 101)
        assert p._budget.counts()[2:] == (0, 0)  # every byte reserved was given back


def test_a_producer_following_the_metadata_knows_compacted_and_compressed_topics(
    tower: Tower,
) -> None:
    from dafka.metadata.client import MetadataClient

    with MetadataClient(tower.address) as admin:
        admin.create_topic("table", {"cleanup_policy": "compact", "compression": "lz4"})
        with Producer("table", towers=tower.address, metadata=True) as p:
            wait_until(lambda: p._handler.sealing("table") == (Codec.LZ4, True), 10)
            with pytest.raises(ConfigError, match="compacted"):
                p.send(b"no key")
            p.send(b"v", key=b"k")
            (batch,) = held(p, "table", 1)
            assert batch.format == 5 and batch.blob[batch.blob[1] + 2 + 36] == Codec.LZ4
            admin.alter_topic("table", {"cleanup_policy": "delete", "compression": "none"})
            wait_until(lambda: p._handler.sealing("table") == (Codec.NONE, False), 10)
            wait_until(lambda: "table" not in p._policy.compacted, 10)
            p.send(b"no key now")  # the topic is no longer compacted
            p.close(timeout=0)
