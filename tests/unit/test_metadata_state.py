"""The metadata state machine: every command, validation, versioning, dedup, snapshots."""

from __future__ import annotations

import msgpack
import pytest

from dafka.errors import ConfigError, WireError
from dafka.metadata.state import (
    COMMAND_VERSION,
    TOPIC_DEFAULTS,
    MetadataStateMachine,
    check_settings,
    command,
    decode_config,
    topic_settings,
)
from dafka.raft.codec import ZERO_REQID, Entry, EntryType
from dafka.raft.peer import StateMachine
from tests.admin import ADMIN_HEX, signed

STORE = "0123456789ABCDEF0123456789ABCDEF"
PRODUCER = "FEDCBA9876543210FEDCBA9876543210"


def reqid(seconds: int, n: int) -> bytes:
    return seconds.to_bytes(4, "big") + n.to_bytes(8, "big")


class Log:
    """A state machine whose admin is :data:`tests.admin.ADMIN`; :meth:`run` signs every
    version-1 command with that key (as ``dafka`` does) and passes other bytes as they are."""

    def __init__(self) -> None:
        self.sm = MetadataStateMachine(admins=[ADMIN_HEX])
        self.index = 0

    def run(self, data: bytes, rid: bytes = ZERO_REQID) -> object:
        try:
            cmd = msgpack.unpackb(data, raw=False)
        except Exception:
            cmd = None
        if isinstance(cmd, dict) and cmd.get("v") == COMMAND_VERSION and "op" in cmd:
            fields = {k: v for k, v in cmd.items() if k not in ("v", "op")}
            data = signed(self.sm, cmd["op"], **fields)
        self.index += 1
        return self.sm.apply(Entry(self.index, 1, EntryType.STATE, rid, data))

    def config(self) -> dict:
        return decode_config(self.sm.query([b"config"]))


def test_is_a_state_machine() -> None:
    assert isinstance(MetadataStateMachine(), StateMachine)


def test_topic_create_alter_delete() -> None:
    log = Log()
    assert log.run(command("topic.create", topic="ev", settings={"min_acks": 2})) is None
    assert log.config()["topics"] == {"ev": {"min_acks": 2}}
    assert topic_settings(log.config()["topics"]["ev"])["retention_ms"] is None
    log.run(command("topic.alter", topic="ev", settings={"retention_ms": 1000}))
    log.run(command("topic.alter", topic="ev", settings={"producers": [PRODUCER.lower()]}))
    assert log.config()["topics"]["ev"] == {
        "min_acks": 2,
        "retention_ms": 1000,
        "producers": [PRODUCER],
    }
    assert msgpack.unpackb(log.sm.query([b"topic", b"ev"])[0])["retention_ms"] == 1000
    log.run(command("topic.delete", topic="ev"))
    assert log.config()["topics"] == {}
    assert log.config()["revision"] == 4


def test_a_topics_consumers_acl_is_set_altered_and_opened_again() -> None:
    log = Log()
    assert TOPIC_DEFAULTS["consumers"] is None  # anyone may read by default
    log.run(command("topic.create", topic="ev", settings={"consumers": [STORE.lower(), STORE]}))
    assert log.config()["topics"]["ev"] == {"consumers": [STORE]}
    log.run(command("topic.alter", topic="ev", settings={"consumers": [PRODUCER, STORE]}))
    assert topic_settings(log.config()["topics"]["ev"])["consumers"] == [STORE, PRODUCER]
    log.run(command("topic.alter", topic="ev", settings={"consumers": None}))
    assert topic_settings(log.config()["topics"]["ev"])["consumers"] is None


def test_stores_and_cluster_settings() -> None:
    log = Log()
    log.run(command("store.trust", store=STORE.lower()))
    assert log.config()["stores"] == [STORE]
    log.run(command("store.revoke", store=STORE))
    assert log.config()["stores"] == []
    assert log.config()["cluster"] == {"auto_create": True}
    log.run(command("cluster.set", settings={"auto_create": False}))
    assert log.config()["cluster"] == {"auto_create": False}


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (command("topic.alter", topic="nope", settings={"min_acks": 2}), "unknown topic 'nope'"),
        (command("topic.delete", topic="nope"), "unknown topic 'nope'"),
        (command("topic.create", topic="t", settings={"min_acks": 0}), "bad min_acks 0"),
        (command("topic.create", topic="t", settings={"colour": 1}), "unknown topic setting"),
        (command("topic.create", topic="t", settings={"retention_ms": -5}), "bad retention_ms"),
        (command("topic.create", topic="t", settings={"profile": "x"}), "bad profile"),
        (command("topic.create", topic="t", settings={"max_record_bytes": 0}), "bad max_record"),
        (command("topic.create", topic="t", settings={"producers": ["zz"]}), "bad producer"),
        (command("topic.create", topic="t", settings={"consumers": ["zz"]}), "bad consumer"),
        (command("topic.create", topic="t", settings={"consumers": "x"}), "bad consumers"),
        (
            command("topic.create", topic="t", settings={"profile": "rfc46", "min_acks": 2}),
            "needs the signed profile",
        ),
        (command("topic.create", topic="", settings={}), "empty"),
        (command("store.trust", store="abc"), "bad store"),
        (command("store.revoke", store=STORE), "is not trusted"),
        (command("cluster.set", settings={"auto_create": 1}), "bad auto_create"),
        (command("nope"), "unknown command"),
        (msgpack.packb({"op": "topic.create"}), "bad command version"),
        (b"\xc1", "bad MessagePack"),
    ],
)
def test_bad_commands_change_nothing(data: bytes, error: str) -> None:
    log = Log()
    before = log.config()
    result = log.run(data)
    assert isinstance(result, str) and error in result
    after = log.config()
    after.pop("refused"), before.pop("refused")  # signed refusals are listed with their reason
    assert after == before
    assert log.sm.rejected == 1


def test_create_twice_is_refused() -> None:
    log = Log()
    log.run(command("topic.create", topic="t", settings={}))
    assert "already exists" in log.run(command("topic.create", topic="t", settings={}))


def test_alter_keeps_settings_consistent() -> None:
    log = Log()
    log.run(command("topic.create", topic="t", settings={"min_acks": 2}))
    assert "needs the signed profile" in log.run(
        command("topic.alter", topic="t", settings={"profile": "rfc46"})
    )


def test_newer_versions_are_skipped_and_extra_fields_ignored() -> None:
    log = Log()
    newer = msgpack.packb({"v": COMMAND_VERSION + 1, "op": "topic.create", "topic": "t"})
    assert "newer" in log.run(newer)
    assert log.sm.skipped_newer == 1 and log.config()["topics"] == {}
    extra = msgpack.packb(
        {"v": COMMAND_VERSION, "op": "topic.create", "topic": "t", "future": [1, 2]}
    )
    assert log.run(extra) is None
    assert "t" in log.config()["topics"]


def test_dedup_by_reqid() -> None:
    log = Log()
    rid = reqid(1000, 1)
    log.run(command("topic.create", topic="t", settings={}), rid)
    log.run(command("topic.delete", topic="t"), reqid(1000, 2))
    log.run(command("topic.create", topic="t", settings={}), rid)  # a resend
    assert log.config()["topics"] == {}


def test_other_entry_types_are_not_applied() -> None:
    sm = MetadataStateMachine()
    sm.apply(Entry(1, 1, EntryType.CONFIG, ZERO_REQID, command("topic.create", topic="t")))
    assert sm.view()["topics"] == {}


def test_snapshot_round_trip_keeps_state_and_dedup() -> None:
    log = Log()
    rid = reqid(2000, 7)
    log.run(command("topic.create", topic="t", settings={"retention_bytes": 10}), rid)
    log.run(command("store.trust", store=STORE))
    log.run(command("cluster.set", settings={"auto_create": False}))
    other = MetadataStateMachine()
    other.restore(log.sm.snapshot())
    assert other.view() == log.sm.view()
    other.apply(Entry(9, 1, EntryType.STATE, rid, command("topic.delete", topic="t")))
    # the reqid came through the snapshot: the delete under it is a duplicate
    assert "t" in other.view()["topics"]


def test_restore_rejects_garbage() -> None:
    with pytest.raises(WireError):
        MetadataStateMachine().restore(msgpack.packb([1, 2]))
    with pytest.raises(WireError):
        MetadataStateMachine().restore(msgpack.packb({"format": 99, "topics": {}}))


def test_queries() -> None:
    sm = MetadataStateMachine()
    assert msgpack.unpackb(sm.query([b"topic", b"none"])[0]) is None
    with pytest.raises(WireError):
        sm.query([b"what"])
    with pytest.raises(WireError):
        sm.query([])


def test_an_answer_is_packed_once_per_state_and_follows_every_change() -> None:
    """The same query of the same state gets the same bytes object (a Raft peer sends it to
    every client without a copy and counts it once); any apply or restore makes a new one."""
    log = Log()
    log.run(command("topic.create", topic="a", settings={"min_acks": 1}))
    config, topic = log.sm.query([b"config"])[0], log.sm.query([b"topic", b"a"])[0]
    assert log.sm.query([b"config"])[0] is config
    assert log.sm.query([b"topic", b"a"])[0] is topic
    assert decode_config([config]) == log.sm.view()
    assert msgpack.unpackb(topic) == log.sm.topics["a"]

    log.run(command("topic.alter", topic="a", settings={"min_acks": 2}))
    after = log.sm.query([b"topic", b"a"])[0]
    assert msgpack.unpackb(after)["min_acks"] == 2
    assert decode_config(log.sm.query([b"config"]))["topics"]["a"]["min_acks"] == 2
    assert log.run(b"not a command") is not None  # refused: the refusal is recorded
    assert decode_config(log.sm.query([b"config"])) == log.sm.view()

    old = log.sm.snapshot()
    log.run(command("topic.delete", topic="a"))
    assert msgpack.unpackb(log.sm.query([b"topic", b"a"])[0]) is None
    assert "a" not in decode_config(log.sm.query([b"config"]))["topics"]
    # a restore makes new answers too (onto a replica behind: one never goes back)
    behind = MetadataStateMachine()
    behind.restore(old)
    assert msgpack.unpackb(behind.query([b"topic", b"a"])[0])["min_acks"] == 2
    assert decode_config(behind.query([b"config"])) == behind.view()
    behind.restore(log.sm.snapshot())
    assert msgpack.unpackb(behind.query([b"topic", b"a"])[0]) is None
    assert decode_config(behind.query([b"config"])) == log.sm.view()


def test_check_settings() -> None:
    assert check_settings({"retention_ms": None, "min_acks": 3}) == {
        "retention_ms": None,
        "min_acks": 3,
    }
    with pytest.raises(ConfigError, match="max_record_bytes"):
        check_settings({"max_record_bytes": 0})
    with pytest.raises(ConfigError, match="min_acks"):
        check_settings({"min_acks": True})
    assert set(topic_settings({})) == set(TOPIC_DEFAULTS)
