"""``dafka topics describe`` and ``dafka stores list`` show what the stores hold (issue 12
point 5): partitions with their tails and heads, each store's address, identity and trust;
settings as an admin gives them (``7d``, not milliseconds), never ``None``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.procs import Proc, StoreProc, Tower, py

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def admin(tower: Tower, *args: str) -> Proc:
    proc = Proc(py("dafka.cli.admin", *args, "--tower", tower.address))
    assert proc.wait() == 0, proc.stderr
    return proc


def out(proc: Proc) -> str:
    return bytes(proc.stdout).decode()


def test_an_empty_cluster_says_so() -> None:
    tower = Tower()
    try:
        listed = admin(tower, "stores", "list")
        assert out(listed) == "" and "no stores" in listed.stderr
        topics = admin(tower, "topics", "list")
        assert out(topics) == "" and "no topics" in topics.stderr
        admin(tower, "topics", "create", "quiet")
        described = out(admin(tower, "topics", "describe", "quiet"))
        assert "partitions: unknown (no store heard through the towers)" in described
        assert "None" not in described
    finally:
        tower.stop()


def test_describe_and_list_show_partitions_heads_and_stores(tmp_path: Path) -> None:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        p = Proc(
            py("dafka.cli.producer", "desc", "--tower", tower.address, "-q"), stdin=b"a\nb\nc\n"
        )
        assert p.wait() == 0, p.stderr
        admin(tower, "topics", "alter", "desc", "--retention-ms", "7d", "--retention-bytes", "1G")
        text = out(admin(tower, "topics", "describe", "desc"))
        assert "retention_ms: 7d" in text and "retention_bytes: 1G" in text, text
        assert "max_record_bytes: none" in text and "producers: any" in text
        assert "partitions: 1 (from 1 store(s)" in text
        lines = [line.split() for line in text.splitlines() if line.startswith("  ")]
        (part,) = [w for w in lines if len(w) == 8]
        # Kafka's watermarks, as --watermarks and dafka query heads print them (issue 34)
        assert part[1:] == ["low", "0", "high", "3", "on", "store", store.node_id], text
        assert "None" not in text
        settings = json.loads(out(admin(tower, "topics", "describe", "desc", "--json")))
        assert settings["retention_ms"] == 7 * 86_400_000
        assert [(r["low"], r["high"], r["store"]) for r in settings["partitions"]] == [
            (0, 3, store.node_id)
        ]

        (row,) = out(admin(tower, "stores", "list")).splitlines()
        assert row.startswith(f"{store.node_id} untrusted, query tcp://127.0.0.1:"), row
        assert row.endswith("holds 1 partition(s), 3 record(s) of 1 topic(s): desc"), row
        admin(tower, "stores", "trust", store.node_id)
        (row,) = out(admin(tower, "stores", "list")).splitlines()
        assert row.startswith(f"{store.node_id} trusted, query "), row
        (obj,) = [
            json.loads(x) for x in out(admin(tower, "stores", "list", "--json")).split("\n") if x
        ]
        assert obj["trusted"] is True and obj["holds"][0]["high"] == 3
        store.kill()
        admin(tower, "stores", "trust", "AB" * 16)
        listed = out(admin(tower, "stores", "list"))
        assert f"{'AB' * 16} trusted, not heard through the towers" in listed
    finally:
        store.kill()
        tower.stop()


def test_partitions_below_min_acks_are_flagged(tmp_path: Path) -> None:
    """Issue 33, point 2: with min_acks raised to 2 and one store holding the partition,
    both commands flag it (text, JSON and one warning line on stderr)."""
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        p = Proc(py("dafka.cli.producer", "few", "--tower", tower.address, "-q"), stdin=b"a\nb\n")
        assert p.wait() == 0, p.stderr
        text = out(admin(tower, "topics", "describe", "few"))
        assert "BELOW" not in text and "below min_acks" not in text, text
        admin(tower, "topics", "alter", "few", "--min-acks", "2")
        described = admin(tower, "topics", "describe", "few")
        text = out(described)
        (row,) = [line for line in text.splitlines() if store.node_id in line]
        assert row.endswith("BELOW min_acks (1 of 2 copies)"), text
        assert "below min_acks: 1 partition(s)" in text
        assert "fewer stores holding their head than the topic's min_acks" in described.stderr
        obj = json.loads(out(admin(tower, "topics", "describe", "few", "--json")))
        assert [(r["copies"], r["below_min_acks"]) for r in obj["partitions"]] == [(1, True)]
        assert len(obj["below_min_acks"]) == 1
        listed = admin(tower, "stores", "list")
        (row,) = out(listed).splitlines()
        assert "; BELOW min_acks: 1 of them (few/" in row and row.endswith(" 1 of 2)"), row
        assert "fewer stores holding their head" in listed.stderr
        (obj,) = [
            json.loads(x) for x in out(admin(tower, "stores", "list", "--json")).split("\n") if x
        ]
        assert obj["holds"][0]["below_min_acks"] is True and obj["holds"][0]["copies"] == 1
    finally:
        store.kill()
        tower.stop()
