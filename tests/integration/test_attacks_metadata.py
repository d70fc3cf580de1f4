"""Attacks on the cluster metadata through a real tower (issue 10, point 1).

An attacker who can reach a tower's Raft port sends raw RequestUpdates (an
unsigned ``store.trust``, one signed by its own key, a replay of an admin's
command): the leader refuses them before appending (its admission check, the same
rules the state machine applies), so the log's last index does not move, nothing is
applied, and ``dafka stores list`` does not change. The admin's signed commands apply.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka.config import TowerAddress
from dafka.errors import RaftError
from dafka.metadata import MetadataClient
from dafka.metadata.client import raft_url
from dafka.metadata.state import command, signed_command
from dafka.raft.client import RaftClient
from dafka.security.identity import create_file
from tests.admin import ADMIN, ATTACKER
from tests.e2e.test_cli import assert_one_line_error
from tests.procs import Proc, Tower, py, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

EVIL_STORE = ATTACKER.node_id
GOOD_STORE = "0123456789ABCDEF0123456789ABCDEF"


@pytest.fixture(scope="module")
def tower() -> Iterator[Tower]:
    t = Tower()
    yield t
    t.stop()


def dafka(tower: Tower, *args: str, env: dict[str, str] | None = None) -> Proc:
    return Proc(py("dafka.cli.admin", *args, "--tower", tower.address), env=env)


def stores_list(tower: Tower) -> list[str]:
    proc = dafka(tower, "stores", "list")
    assert proc.wait() == 0, proc.stderr
    return bytes(proc.stdout).decode().split()


def raw_url(tower: Tower) -> str:
    host, port = tower.address.split(":")
    return raft_url(TowerAddress(host, int(port)))


def raw(tower: Tower) -> RaftClient:
    return RaftClient([raw_url(tower)], "dafka", timeout=10)


def test_raw_updates_from_an_attacker_are_not_appended(tower: Tower) -> None:
    before = stores_list(tower)
    assert EVIL_STORE not in before
    with raw(tower) as client, MetadataClient(tower.address) as admin:
        base = admin.config()["revision"]
        assert admin.config()["admins"] == [ADMIN.public_key.hex()]  # the tower's bootstrap
        attacks = [
            command("store.trust", store=EVIL_STORE),
            command("store.trust", store=EVIL_STORE, base=base, id=b"\1" * 16),
            signed_command(ATTACKER, "dafka", base, "store.trust", store=EVIL_STORE)[0],
            signed_command(ATTACKER, "dafka", base, "admins.add", key=ATTACKER.public_key.hex())[0],
            command("admins.init", admins=[ATTACKER.public_key.hex()]),
            command("cluster.set", settings={"auto_create": False}),
        ]
        last = client.log_info(raw_url(tower), timeout=5).last_index
        for data in attacks:
            # the leader refuses it with the protocol's final failure: nothing appended
            with pytest.raises(RaftError, match="admission check refused it"):
                client.update(data)
            assert client.log_info(raw_url(tower), timeout=5).last_index == last
        config = admin.config()
        assert EVIL_STORE not in config["stores"]
        assert config["admins"] == [ADMIN.public_key.hex()]
        assert config["cluster"]["auto_create"] is True
        assert config["revision"] == base
    assert stores_list(tower) == before
    # the tower said why, one rate-limited key=value line
    tower.proc.wait_line(r"raft\.peer\.refused id=\S+ kind=update-refused count=\d+ ", timeout=5)
    # the admin's own command, sent the same raw way, is appended and applied
    with raw(tower) as client, MetadataClient(tower.address) as admin:
        data, _ = signed_command(
            ADMIN, "dafka", admin.config()["revision"], "store.trust", store=GOOD_STORE
        )
        assert client.update(data) > last
    assert GOOD_STORE in stores_list(tower)


def test_a_replayed_admin_command_does_not_undo_a_newer_change(tower: Tower) -> None:
    with raw(tower) as client, MetadataClient(tower.address) as admin:
        admin.create_topic("replayed", {"min_acks": 2})
        revoke, _ = signed_command(
            ADMIN,
            "dafka",
            admin.config()["revision"],
            "topic.alter",
            topic="replayed",
            settings={"min_acks": 1},
        )
        client.update(revoke)
        wait_until(lambda: admin.describe("replayed")["min_acks"] == 1, 10, what="the change")
        admin.alter_topic("replayed", {"min_acks": 3})
        with pytest.raises(RaftError, match="admission check refused it"):
            client.update(revoke)  # captured on the wire, sent again: the leader knows it
        assert admin.describe("replayed")["min_acks"] == 3


def test_dafka_with_a_key_that_is_not_an_admin_is_refused(tower: Tower, tmp_path: Path) -> None:
    evil = tmp_path / "evil.key"
    create_file(evil, ATTACKER, what="admin key")
    with raw(tower) as client:
        last = client.log_info(raw_url(tower), timeout=5).last_index
        proc = dafka(tower, "stores", "trust", EVIL_STORE, "--admin-key", str(evil))
        # checked before sending, as the leader would: one line, and nothing sent
        error = "this admin key cannot change the metadata: key "
        assert_one_line_error(proc, 2, error + ATTACKER.public_key.hex() + " is not an admin")
        assert client.log_info(raw_url(tower), timeout=5).last_index == last
    assert EVIL_STORE not in stores_list(tower)
    missing = tmp_path / "none.key"
    proc = dafka(tower, "stores", "trust", EVIL_STORE, env={"DAFKA_ADMIN_KEY": str(missing)})
    assert_one_line_error(proc, 2, f"no admin key at {missing}")


def test_admins_rotate_through_the_metadata(tower: Tower, tmp_path: Path) -> None:
    new_file = tmp_path / "new.key"
    made = Proc(py("dafka.cli.keys", "create-admin", str(new_file), "--json"))
    assert made.wait() == 0, made.stderr
    import json

    new_key = json.loads(bytes(made.stdout))["public_key"]
    added = dafka(tower, "admins", "add", new_key)
    assert added.wait() == 0, added.stderr
    listed = dafka(tower, "admins", "list")
    assert listed.wait() == 0
    assert sorted(bytes(listed.stdout).decode().split()) == sorted(
        [ADMIN.public_key.hex(), new_key]
    )
    # the new admin removes the old one, then cannot remove itself
    old = ADMIN.public_key.hex()
    removed = dafka(tower, "admins", "remove", old, "--admin-key", str(new_file))
    assert removed.wait() == 0, removed.stderr
    assert_one_line_error(dafka(tower, "stores", "trust", GOOD_STORE), 2, "is not an admin")
    last = dafka(tower, "admins", "remove", new_key, "--admin-key", str(new_file))
    assert_one_line_error(last, 2, "last admin")
    back = dafka(tower, "admins", "add", old, "--admin-key", str(new_file))
    assert back.wait() == 0, back.stderr


def test_a_tower_that_loses_the_bootstrap_race_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tower.metadata as tm
    from dafka.config import TowerAddress

    node = tm.TowerNode(TowerAddress("127.0.0.1", 0), data_dir=tmp_path / "t").start()
    try:
        with RaftClient([node.raft_url], "dafka", timeout=10) as client:
            real = tm.decode_config
            reads = []

            def racing(frames: list[bytes]) -> dict:
                config = real(frames)
                if not reads:  # the tower read "no admins"; the attacker's init lands now
                    client.update(command("admins.init", admins=[ATTACKER.public_key.hex()]))
                reads.append(config)
                return config

            monkeypatch.setattr(tm, "decode_config", racing)
            node.bootstrap([ADMIN.public_key.hex()], wait=10)
        assert node.bootstrap_error is not None and not node.running
        assert "someone else set up this group" in str(node.bootstrap_error)
        assert node.sm.admins == [ATTACKER.public_key.hex()]
    finally:
        node.stop()


def test_an_admins_invalid_or_ineffective_commands_are_not_appended(tower: Tower) -> None:
    """Sent raw (past the CLI's own checks): an admin's deletion of an unknown topic, a
    store trusted twice. Before, the leader appended them (no-ops when applied); now it
    refuses them, and ``dafka`` says why."""
    with raw(tower) as client, MetadataClient(tower.address, admin=ADMIN) as admin:
        if GOOD_STORE not in admin.config()["stores"]:
            admin.trust_store(GOOD_STORE)
        base = admin.config()["revision"]
        last = client.log_info(raw_url(tower), timeout=5).last_index
        for k in range(20):
            data, _ = signed_command(ADMIN, "dafka", base, "topic.delete", topic=f"nope{k}")
            with pytest.raises(RaftError, match="admission check refused it"):
                client.update(data)
        data, _ = signed_command(ADMIN, "dafka", base, "store.trust", store=GOOD_STORE)
        with pytest.raises(RaftError, match="admission check refused it"):
            client.update(data)
        assert client.log_info(raw_url(tower), timeout=5).last_index == last
    proc = dafka(tower, "stores", "trust", GOOD_STORE)  # what is done already: exit 0
    assert proc.wait() == 0, proc.stderr
    assert f"nothing to change: store {GOOD_STORE} is trusted already" in proc.stderr
    proc = dafka(tower, "topics", "delete", "nope0")
    assert_one_line_error(proc, 2, "unknown topic 'nope0'")
