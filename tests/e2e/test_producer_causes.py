"""dafka-producer says which cause kept its records unacknowledged (issue 34, point 5).

One message, "is a store running and reachable through the tower?", was printed for five
causes. Each now has its own line: stores of the other wire profile, ``--min-acks`` above
the stores there are, a topic's ``min_acks`` above the trusted stores, an untrusted
``--trusted-store``, a tower name that does not resolve; and, apart, no store and no tower.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka import Producer
from dafka.errors import NotAcknowledged, UnackedCause
from tests.procs import Proc, StoreProc, Tower, free_tower_address, py

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

STRANGER = "0123456789ABCDEF0123456789ABCDEF"
ERROR = "error: 1 of 1 records were not acknowledged within 2 s: "


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, StoreProc]]:
    tower = Tower()
    store = StoreProc(tmp_path_factory.mktemp("causes") / "store", tower.address)
    yield tower.address, store
    store.kill()
    tower.stop()


def produce(tower: str, topic: str, *args: str) -> tuple[int, list[str]]:
    proc = Proc(
        py("dafka.cli.producer", topic, "--tower", tower, "--timeout", "2", *args),
        stdin=b"one record\n",
    )
    code = proc.wait(60)
    return code, [line for line in proc.stderr_lines if line.strip()]


def test_stores_of_the_other_profile(platform: tuple[str, StoreProc]) -> None:
    tower, store = platform
    code, lines = produce(tower, "causes-profile", "--profile", "rfc46")
    assert code == 1
    assert lines[-1] == (
        f"{ERROR}the 1 store running ({store.node_id}) speaks the signed wire profile; "
        "this producer speaks rfc46 (--profile); 0 acknowledged, 0 failed"
    )


def test_min_acks_above_the_stores_there_are(platform: tuple[str, StoreProc]) -> None:
    tower, store = platform
    code, lines = produce(tower, "causes-min-acks", "--min-acks", "2")
    assert code == 1
    assert lines[-1] == (
        f"{ERROR}only 1 store ({store.node_id}) acknowledged topic 'causes-min-acks', and "
        "min_acks=2 (--min-acks) needs 2 distinct stores; 1 store is connected to this "
        "producer; 0 acknowledged, 0 failed"
    )


def test_an_untrusted_trusted_store(platform: tuple[str, StoreProc]) -> None:
    tower, store = platform
    code, lines = produce(tower, "causes-trust", "--trusted-store", STRANGER)
    assert code == 1
    assert lines[-1] == (
        f"{ERROR}1 store ({store.node_id}) acknowledged, but it is not trusted: the trusted "
        f"stores are {STRANGER} (--trusted-store, trusted_stores, or the cluster's trusted "
        "stores); 0 acknowledged, 0 failed"
    )


def test_a_tower_name_that_does_not_resolve() -> None:
    code, lines = produce("no-such-tower.invalid:5556", "causes-name")
    assert code == 2
    assert lines == [
        "error: tower host 'no-such-tower.invalid' does not resolve (name or service not "
        "known): check --tower (towers=)"
    ]


def test_a_topic_min_acks_above_the_trusted_stores(tmp_path: Path) -> None:
    tower = Tower()  # its own: trusting a store in the metadata changes every producer's trust
    store = StoreProc(tmp_path / "store", tower.address)
    try:
        for args in (
            ["topics", "create", "causes-topic", "--min-acks", "2"],
            ["stores", "trust", store.node_id],
        ):
            admin = Proc(py("dafka.cli.admin", *args, "--tower", tower.address))
            assert admin.wait(30) == 0, admin.stderr
        code, lines = produce(tower.address, "causes-topic")
        assert code == 1
        assert lines[-1] == (
            f"{ERROR}topic 'causes-topic' needs ACKs from 2 stores (its min_acks in the "
            f"cluster metadata), but only 1 store is trusted ({store.node_id}); "
            "0 acknowledged, 0 failed"
        )
    finally:
        store.kill()
        tower.stop()


def test_no_store() -> None:
    tower = Tower()
    try:
        code, lines = produce(tower.address, "causes-none")
        assert code == 1
        assert lines[-1] == (
            f"{ERROR}no store is connected to this producer, nor announced through the "
            f"tower(s) {tower.address}: is a store running?; 0 acknowledged, 0 failed"
        )
    finally:
        tower.stop()


def test_no_tower() -> None:
    address = free_tower_address()
    code, lines = produce(address, "causes-tower", "--log-level", "error")
    assert code == 1
    assert lines[-1] == (
        f"{ERROR}no tower answered at {address}: is dafka-tower running there, and is it "
        "the beacon port (HOST:PORT, --tower)?; 0 acknowledged, 0 failed"
    )


def test_flush_raises_not_acknowledged_carrying_the_cause(platform: tuple[str, StoreProc]) -> None:
    tower, store = platform
    with Producer("causes-api", towers=tower, trusted_stores=[STRANGER]) as producer:
        producer.send(b"one record")
        with pytest.raises(NotAcknowledged) as caught:
            producer.flush(2)
        assert caught.value.cause is UnackedCause.UNTRUSTED_STORES
        assert caught.value.unacknowledged == 1
        assert f"1 store ({store.node_id}) acknowledged, but it is not trusted" in str(caught.value)
        producer.close(timeout=0)
