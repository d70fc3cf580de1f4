"""``dafka-consumer --table TOPIC`` and ``Consumer.table()`` with real processes: a tower,
a store, a producer writing keys (overwriting some, deleting one with a tombstone), then
the table printed."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path

import pytest

from dafka import Consumer, Producer
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed_rich import RichRecord, seal_rich
from tests.procs import Proc, StoreProc, Tower, py, stored_head

pytestmark = pytest.mark.integration

TOMBSTONE = b"\0tombstone"
NATIVE = "timestamp" in inspect.signature(Producer.send).parameters
"""The producer sends tombstones itself (``send(None, key=...)``, i36-producer); until then
the test's producer seals format 5 with :func:`format5`."""


def tombstone(p: Producer, key: bytes) -> None:
    p.send(None if NATIVE else TOMBSTONE, key=key).result(30)  # type: ignore[arg-type]


def seal_format5(monkeypatch: pytest.MonkeyPatch) -> None:
    if not NATIVE:
        monkeypatch.setattr(SignedProfile, "seal", format5)


def format5(
    self: SignedProfile,
    topic: str,
    first_offset: int,
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes],
    timestamp_ms: int,
    *args: object,
    **kwargs: object,
) -> list[tuple[int, int, bytes]]:
    """The producer's batches in format 5, ``TOMBSTONE`` values as tombstones (value None):
    what ``send(None, key=...)`` makes (the producer's record model, issue 36)."""
    keys = keys if keys is not None else [None] * len(values)
    records = [
        RichRecord(k, None if v == TOMBSTONE else bytes(v), timestamp_ms)
        for k, v in zip(keys, values, strict=True)
    ]
    blob = seal_rich(self.identity, topic.encode(), first_offset, records, timestamp_ms)
    return [(first_offset, len(records), blob)]


def table_cli(tower: Tower, topic: str, *extra: str) -> Proc:
    return Proc(
        py(
            "dafka.cli.consumer",
            "--table",
            topic,
            "--wait",
            "30",
            "--timeout",
            "60",
            "--tower",
            tower.address,
            *extra,
        )
    )


def test_table_prints_the_newest_value_of_each_key(
    tower: Tower, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seal_format5(monkeypatch)
    data = tmp_path / "store"
    store = StoreProc(data, tower.address)
    try:
        with Producer("kv", towers=tower.address) as p:
            partition = p.node_id
            p.send_many([b"1", b"x", b"2"], keys=[b"a", b"b", b"a"]).result(30)
            p.send(b"3", key=b"a").result(30)
            p.send(b"only", key=b"c").result(30)
            tombstone(p, b"b")  # deletes b
            p.send(b"no key").result(30)
            p.flush(30)
        assert stored_head(data, "kv", partition) == 6
        cli = table_cli(tower, "kv")
        assert cli.wait(90) == 0, cli.stderr
        assert bytes(cli.stdout) == b"a\t3\nc\tonly\n"
        with Consumer(towers=tower.address) as c:  # the API: a reader of its own
            table = c.table("kv", timeout=60)
            assert c.positions() == {}  # this consumer's positions did not move
        assert {k: (r.value, r.offset, r.partition) for k, r in table.items()} == {
            b"a": (b"3", 3, partition),
            b"c": (b"only", 4, partition),
        }
    finally:
        store.kill()
