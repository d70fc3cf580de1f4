"""``dafka-consumer --table TOPIC`` and ``Consumer.table()`` with real processes: a tower,
a store, a producer writing keys (and overwriting some), then the table printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from dafka import Consumer, Producer
from tests.procs import Proc, StoreProc, Tower, py, stored_head

pytestmark = pytest.mark.integration


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


def test_table_prints_the_newest_value_of_each_key(tower: Tower, tmp_path: Path) -> None:
    data = tmp_path / "store"
    store = StoreProc(data, tower.address)
    try:
        with Producer("kv", towers=tower.address) as p:
            partition = p.node_id
            p.send_many([b"1", b"x", b"2"], keys=[b"a", b"b", b"a"])
            p.send(b"3", key=b"a")
            p.send(b"only", key=b"c")
            p.send(b"no key")
            p.flush(30)
        assert stored_head(data, "kv", partition) == 5
        cli = table_cli(tower, "kv")
        assert cli.wait(90) == 0, cli.stderr
        assert bytes(cli.stdout) == b"a\t3\nb\tx\nc\tonly\n"
        with Consumer(towers=tower.address) as c:  # the API: a reader of its own
            table = c.table("kv", timeout=60)
            assert c.positions() == {}  # this consumer's positions did not move
        assert {k: (r.value, r.offset, r.partition) for k, r in table.items()} == {
            b"a": (b"3", 3, partition),
            b"b": (b"x", 1, partition),
            b"c": (b"only", 4, partition),
        }
    finally:
        store.kill()
