"""Listener leases through a real tower (issue 37): the CLI's partitions and listeners, a
listener's lease commands signed with its own key, and the leader refusing before the log a
lease command from a key that is no listener, or a listener's admin command."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dafka.errors import ConfigError, RaftError
from dafka.kafka.leases import LeaseKeeper, Renew, Take
from dafka.metadata import MetadataClient
from dafka.metadata.state import signed_command
from dafka.raft.client import RaftClient
from dafka.security.identity import Identity
from tests.admin import ATTACKER
from tests.integration.test_attacks_metadata import dafka, raw, raw_url
from tests.procs import Tower

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

LISTENER = Identity.from_seed(bytes(range(1, 33)))


@pytest.fixture(scope="module")
def tower() -> Iterator[Tower]:
    t = Tower()
    yield t
    t.stop()


def _last(client: RaftClient, tower: Tower) -> int:
    return client.log_info(raw_url(tower), timeout=5).last_index


def test_partitions_and_listeners_through_the_cli(tower: Tower) -> None:
    assert dafka(tower, "topics", "create", "orders", "--partitions", "6").wait() == 0
    shrink = dafka(tower, "topics", "alter", "orders", "--partitions", "4")
    assert shrink.wait() == 2
    assert "partitions can only grow" in shrink.stderr
    key = LISTENER.public_key.hex()
    assert dafka(tower, "listeners", "add", key).wait() == 0
    listed = dafka(tower, "listeners", "list")
    assert listed.wait() == 0 and key in bytes(listed.stdout).decode()


def test_a_listener_keeps_its_leases_and_others_are_refused_before_the_log(tower: Tower) -> None:
    with MetadataClient(tower.address) as admin:
        if "orders" not in admin.topics():
            admin.create_topic("orders", {"partitions": 6})
        if LISTENER.public_key.hex() not in admin.listeners():
            admin.add_listener(LISTENER.public_key.hex())
    keeper = LeaseKeeper(LISTENER.public_key.hex())
    keeper.want(["p/orders/0", "p/orders/1", "b/1"])
    with MetadataClient(tower.address, listener=LISTENER) as me, raw(tower) as client:
        for now in (0.0, 4.0):  # takes, then a renewal
            keeper.observe(me.leases(), me.config()["revision"], now)
            for cmd in keeper.tick(now):
                if isinstance(cmd, Take):
                    me.take_lease(cmd.resource, cmd.epoch, 1, "127.0.0.1:9092", base=cmd.base)
                elif isinstance(cmd, Renew):
                    me.renew_leases(cmd.leases, base=cmd.base)
            keeper.observe(me.leases(), me.config()["revision"], now)
        assert set(keeper.held(4.0)) == {"p/orders/0", "p/orders/1", "b/1"}
        assert me.leases()["p/orders/0"]["beat"] == 1
        base, last = me.config()["revision"], _last(client, tower)
        attacks = [
            signed_command(
                ATTACKER,
                "dafka",
                base,
                "lease.take",
                resource="p/orders/2",
                epoch=1,
                broker=9,
                endpoint="evil:9092",
            )[0],
            signed_command(LISTENER, "dafka", base, "topic.create", topic="mine", settings={})[0],
            signed_command(
                ATTACKER,
                "dafka",
                base,
                "partition.number",
                topic="orders",
                partitions=[ATTACKER.node_id],
            )[0],
            signed_command(
                LISTENER, "dafka", base, "lease.renew", resources=["p/orders/0"], epochs=[7]
            )[0],
        ]
        for data in attacks:
            with pytest.raises(RaftError, match="admission check refused it"):
                client.update(data)
            assert _last(client, tower) == last
        with pytest.raises(ConfigError, match="a take names epoch 2"):
            me.take_lease("p/orders/0", 1, 1, "127.0.0.1:9092")
        assert "mine" not in me.topics()
