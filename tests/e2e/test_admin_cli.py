"""``dafka topics|stores|cluster`` as a user runs them: output, exit codes, one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.e2e.test_cli import assert_one_line_error
from tests.procs import Proc, Tower, py

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]

STORE = "0123456789ABCDEF0123456789ABCDEF"


def admin(tower: str, *args: str) -> Proc:
    return Proc(py("dafka.cli.admin", *args, "--tower", tower))


def ok(tower: str, *args: str) -> str:
    proc = admin(tower, *args)
    assert proc.wait() == 0, proc.stderr
    return bytes(proc.stdout).decode()


@pytest.fixture(scope="module")
def tower():
    t = Tower()
    yield t.address
    t.stop()


def test_topics_create_list_describe_alter_delete(tower: str) -> None:
    assert "created topic ev" in ok(tower, "topics", "create", "ev", "--min-acks", "2")
    assert "altered topic ev" in ok(
        tower, "topics", "alter", "ev", "--retention-ms", "7d", "--retention-bytes", "1G"
    )
    listed = json.loads(ok(tower, "topics", "list", "--json"))
    assert listed["ev"]["min_acks"] == 2
    assert listed["ev"]["retention_ms"] == 7 * 86_400_000
    assert listed["ev"]["retention_bytes"] == 1 << 30
    described = ok(tower, "topics", "describe", "ev")
    assert "producers: any" in described and "min_acks: 2" in described
    assert "consumers: any" in described
    ok(tower, "topics", "alter", "ev", "--consumers", f"{STORE.lower()},{STORE}")
    assert json.loads(ok(tower, "topics", "describe", "ev", "--json"))["consumers"] == [STORE]
    ok(tower, "topics", "alter", "ev", "--consumers", "any")
    assert "consumers: any" in ok(tower, "topics", "describe", "ev")
    assert "deleted topic ev" in ok(tower, "topics", "delete", "ev")
    assert "ev " not in ok(tower, "topics", "list")


def test_record_model_settings_are_set_and_shown(tower: str) -> None:
    ok(tower, "topics", "create", "kv", "--cleanup-policy", "compact", "--compression", "zstd")
    ok(tower, "topics", "alter", "kv", "--delete-retention-ms", "1h", "--max-future-ms", "10m")
    listed = json.loads(ok(tower, "topics", "list", "--json"))["kv"]
    assert listed["cleanup_policy"] == "compact" and listed["compression"] == "zstd"
    assert listed["delete_retention_ms"] == 3_600_000 and listed["max_future_ms"] == 600_000
    described = ok(tower, "topics", "describe", "kv")
    assert "cleanup_policy: compact" in described and "delete_retention_ms: 1h" in described
    ok(tower, "topics", "alter", "kv", "--compression", "none")
    assert json.loads(ok(tower, "topics", "list", "--json"))["kv"]["compression"] is None
    ok(tower, "topics", "delete", "kv")


def test_group_topics_are_listed_only_with_internal(tower: str) -> None:
    ok(tower, "topics", "create", "orders")
    ok(tower, "topics", "create", "__group.billing")
    assert "orders " in ok(tower, "topics", "list")
    assert "__group.billing" not in ok(tower, "topics", "list")
    assert "__group.billing" not in json.loads(ok(tower, "topics", "list", "--json"))
    assert "__group.billing " in ok(tower, "topics", "list", "--internal")
    for t in ("orders", "__group.billing"):
        ok(tower, "topics", "delete", t)


def test_stores_trust_list_revoke(tower: str) -> None:
    ok(tower, "stores", "trust", STORE.lower())
    assert ok(tower, "stores", "list").split()[:2] == [STORE, "trusted,"]
    # again: the metadata has it already; said in one line, exit 0 (scripts can rerun)
    again = admin(tower, "stores", "trust", STORE)
    assert again.wait() == 0, again.stderr
    assert again.stderr_lines[-1:] == [
        f"nothing to change: store {STORE} is trusted already: the command changes nothing"
    ], again.stderr
    ok(tower, "stores", "revoke", STORE)
    assert ok(tower, "stores", "list").split() == []
    assert_one_line_error(admin(tower, "stores", "revoke", STORE), 2, "is not trusted")
    assert_one_line_error(admin(tower, "stores", "trust", "nope"), 2, "bad trusted store")


def test_cluster_status_and_settings(tower: str) -> None:
    out = ok(tower, "cluster", "status")
    assert " leader " in out and "auto_create=true" in out and "True" not in out
    ok(tower, "cluster", "set", "--no-auto-create")
    status = json.loads(ok(tower, "cluster", "status", "--json"))
    assert status["settings"] == {"auto_create": False}
    ok(tower, "cluster", "set", "--auto-create")
    again = admin(tower, "cluster", "set", "--auto-create")
    assert again.wait() == 0, again.stderr
    assert "nothing to change: the cluster has these settings already" in again.stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("topics", "alter", "nope", "--min-acks", "2"), "unknown topic 'nope'"),
        (("topics", "describe", "nope"), "unknown topic 'nope'"),
        (("topics", "delete", "nope"), "unknown topic 'nope'"),
        (("topics", "create", "bad", "--min-acks", "0"), "bad min_acks 0"),
        (("topics", "create", "bad", "--retention-ms", "soon"), "bad --retention-ms"),
        (("topics", "create", "bad", "--producers", "xyz"), "bad producer"),
        (("topics", "create", "bad", "--consumers", "xyz"), "bad consumer"),
        (("topics", "alter", "x"), "nothing to change"),
        (("topics", "create", "bad", "--cleanup-policy", "squash"), "--cleanup-policy"),
        (("topics", "create", "bad", "--max-future-ms", "30d"), "bad max_future_ms"),
        (("topics", "create", "bad", "--delete-retention-ms", "none"), "--delete-retention-ms"),
        (
            ("topics", "create", "bad", "--profile", "rfc46", "--cleanup-policy", "compact"),
            "needs the signed profile",
        ),
    ],
)
def test_user_mistakes_are_one_line_and_exit_2(tower: str, args: tuple, fragment: str) -> None:
    assert_one_line_error(admin(tower, *args), 2, fragment)


def test_creating_twice_is_refused(tower: str) -> None:
    ok(tower, "topics", "create", "twice")
    assert_one_line_error(admin(tower, "topics", "create", "twice"), 2, "already exists")


def test_no_reachable_leader_is_one_line_and_exit_1() -> None:
    proc = Proc(py("dafka.cli.admin", "topics", "list", "--tower", "127.0.0.1:9", "--timeout", "1"))
    assert_one_line_error(proc, 1, "no metadata leader answered")
    proc = Proc(
        py("dafka.cli.admin", "cluster", "status", "--tower", "127.0.0.1:9", "--timeout", "1")
    )
    assert proc.wait() == 1
    assert "unreachable" in bytes(proc.stdout).decode()


def test_tower_refuses_a_bad_raft_peer_list_in_one_line(tmp_path) -> None:
    proc = Proc(py("tower", "--bind", "127.0.0.1:0", "--raft-peers", "garbage"))
    assert_one_line_error(proc, 2, "bad --raft-peers item 'garbage'")
    proc = Proc(
        py(
            "tower",
            "--bind",
            "127.0.0.1:0",
            "--raft-peers",
            "t1=127.0.0.1:7001,t2=127.0.0.1:7005",
            "--raft-insecure-null",
            "--data-dir",
            str(tmp_path / "t"),
        )
    )
    assert_one_line_error(proc, 2, "is not in --raft-peers")
