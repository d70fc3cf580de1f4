"""Topic-scoped meshes (issue 39), with a real tower and store: a node connects to the
stores and to the nodes sharing one of its topics, and to no other; a node configured for
the full mesh hears, and is heard by, everyone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka import Consumer, Producer
from dafka.config import NodeConfig, parse_towers
from dafka.io.node import NodeLoop
from tests.procs import StoreProc, Tower, wait_until
from tests.unit.test_attacks_peer_liveness import on_loop

pytestmark = pytest.mark.integration


def _peers(loop: NodeLoop) -> set[str]:
    return set(on_loop(loop, lambda: loop.discovery.peers))


def _endpoint(node: Producer | Consumer) -> str:
    return node._loop.endpoint


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, StoreProc]]:
    tower = Tower()
    store = StoreProc(tmp_path / "store", tower.address)
    yield tower.address, store
    store.kill()
    tower.stop()


def test_nodes_connect_only_to_stores_and_to_the_nodes_sharing_a_topic(
    cluster: tuple[str, StoreProc],
) -> None:
    towers, store = cluster
    with (
        Producer("mesh-a", towers=towers) as pa,
        Producer("mesh-b", towers=towers) as pb,
        Consumer("mesh-a", towers=towers, offset_reset="earliest") as ca,
    ):
        a, b, c = _endpoint(pa), _endpoint(pb), _endpoint(ca)
        # each side of a shared topic hears the other, and everyone hears the store
        wait_until(lambda: {store.endpoint, c} <= _peers(pa._loop), 15, what="pa's peers")
        wait_until(lambda: {store.endpoint, a} <= _peers(ca._loop), 15, what="ca's peers")
        wait_until(lambda: store.endpoint in _peers(pb._loop), 15, what="pb hears the store")
        pa.send(b"for a").result(timeout=15)
        pb.send(b"for b").result(timeout=15)
        got: list[bytes] = []
        wait_until(
            lambda: bool(got.extend(r.value for r in ca.poll_batch(100, timeout=0.1))) or got,
            15,
            what="ca's record",
        )
        # two more beacon intervals: nothing of topic b reaches a node of topic a
        for _ in range(20):
            got.extend(r.value for r in ca.poll_batch(100, timeout=0.1))
        assert got == [b"for a"]
        assert b not in _peers(ca._loop) and b not in _peers(pa._loop)
        assert a not in _peers(pb._loop) and c not in _peers(pb._loop)


def test_a_full_mesh_node_hears_everyone_and_everyone_hears_it(
    cluster: tuple[str, StoreProc],
) -> None:
    towers, store = cluster
    full = NodeConfig(towers=parse_towers(towers), mesh="full")
    with (
        Producer("mesh-a", towers=towers) as pa,
        Producer("mesh-b", towers=towers) as pb,
        Consumer("mesh-c", towers=towers, node=full) as wide,
    ):
        w = _endpoint(wide)
        wait_until(
            lambda: {store.endpoint, _endpoint(pa), _endpoint(pb)} <= _peers(wide._loop),
            15,
            what="the full-mesh node hears every producer",
        )
        wait_until(lambda: w in _peers(pa._loop), 15, what="pa hears the full-mesh node")
        wait_until(lambda: w in _peers(pb._loop), 15, what="pb hears the full-mesh node")
