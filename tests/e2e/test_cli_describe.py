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
        (part,) = [w for w in lines if len(w) == 5]
        assert part[1:] == ["0..2", "on", "store", store.node_id], text
        assert "None" not in text
        settings = json.loads(out(admin(tower, "topics", "describe", "desc", "--json")))
        assert settings["retention_ms"] == 7 * 86_400_000
        assert [(r["tail"], r["head"], r["store"]) for r in settings["partitions"]] == [
            (0, 2, store.node_id)
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
        assert obj["trusted"] is True and obj["holds"][0]["head"] == 2
        store.kill()
        admin(tower, "stores", "trust", "AB" * 16)
        listed = out(admin(tower, "stores", "list"))
        assert f"{'AB' * 16} trusted, not heard through the towers" in listed
    finally:
        store.kill()
        tower.stop()
