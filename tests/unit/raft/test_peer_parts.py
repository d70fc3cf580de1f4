"""The parts RaftPeer is composed of, each built alone around one PeerShared (no peer, no
loop): the snapshot stage, the client service and the peer transport."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from dafka.errors import DafkaError
from dafka.raft import codec as w
from dafka.raft.codec import ClusterConfig, Peer, SnapshotMeta, pack_snapshot
from dafka.raft.core import RaftCore, Ready, SnapshotChunk
from dafka.raft.peer._clientservice import ClientService
from dafka.raft.peer._guard import BadInput, PeerGuard
from dafka.raft.peer._peerstate import PeerOptions, PeerShared
from dafka.raft.peer._peertransport import PeerTransport
from dafka.raft.peer._snapshotstage import SnapshotStage
from dafka.raft.peer._statemachine import KvStateMachine
from dafka.raft.peer._storage import FileStorage

CLUSTER = b"parts"


class _Refusing(KvStateMachine):
    def check_snapshot(self, data: bytes) -> None:
        raise DafkaError("not signed")


@pytest.fixture
def ctx() -> Iterator[zmq.Context[Any]]:
    context: zmq.Context[Any] = zmq.Context()
    yield context
    context.destroy(linger=0)


def _shared(
    tmp_path: Path, ctx: zmq.Context[Any], sm: KvStateMachine | None = None, **options: Any
) -> PeerShared:
    storage = FileStorage(tmp_path / "raft")
    storage.load()
    config = ClusterConfig((Peer("a", "tcp://127.0.0.1:1"), Peer("b", "tcp://127.0.0.1:2")))
    core = RaftCore("a", config, rng=random.Random(1))
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    return PeerShared(
        "a",
        CLUSTER,
        PeerOptions(**options),
        sm if sm is not None else KvStateMachine(),
        storage,
        core,
        router,
        BadInput("a"),
    )


def _close(shared: PeerShared) -> None:
    shared.router.close(0)
    shared.storage.close()


def test_the_shared_state_is_eight_references_and_nothing_else(tmp_path, ctx) -> None:
    shared = _shared(tmp_path, ctx)
    with pytest.raises(AttributeError):
        shared.extra = 1  # type: ignore[attr-defined]
    assert len(PeerShared.__slots__) == 8
    _close(shared)


def test_the_snapshot_stage_refuses_what_the_state_machine_refuses(tmp_path, ctx) -> None:
    shared = _shared(tmp_path, ctx, _Refusing())
    drained: list[bool] = []
    stage = SnapshotStage(shared, tmp_path, 0, lambda: drained.append(True))
    assert stage.read_snapshot(1, 0, 10) is None  # nothing to serve yet
    assert stage.snapshot_data() == (0, b"")
    blob = pack_snapshot(SnapshotMeta(5, 1, shared.core.config), b"state")
    chunk = SnapshotChunk(index=5, term=1, offset=0, total_size=len(blob), data=blob)
    rd = Ready(snapshot_chunks=(chunk,))
    completed = stage.stage_chunks(rd, sync=False)
    assert completed is not None and completed.index == 5
    stage.restore_staged(completed)
    assert dict(shared.bad.snapshot()).get("snapshot-refused") == 1
    assert shared.core.snapshot.index == 0  # never reached the core
    with pytest.raises(Exception, match="not staged"):
        stage.save_staged(completed)
    stage.close()
    _close(shared)


def test_the_client_service_refuses_an_oversize_update_alone(tmp_path, ctx) -> None:
    shared = _shared(tmp_path, ctx, max_entry_bytes=1000)
    stage = SnapshotStage(shared, tmp_path, 0, lambda: None)
    clients = ClientService(shared, stage, PeerGuard("a", None, True), None, None)
    replies: list[Any] = []
    clients._reply = lambda env, rid, resp: replies.append(resp)  # type: ignore[method-assign,assignment]
    clients.on_update((b"c",), b"r" * 12, b"x" * 1001)
    assert [r.status for r in replies] == [w.UpdateStatus.EXPIRED]
    assert dict(shared.bad.snapshot()) == {"oversize-update": 1}
    assert clients.updates == [] and not clients.waiting() and clients.streams == 0
    clients.on_update((b"c",), b"s" * 12, b"x" * 1000)
    assert len(clients.updates) == 1  # proposed at the drain's end
    clients.flush_updates()  # not the leader: told so, nothing waits
    assert clients.updates == [] and replies[-1].status == w.UpdateStatus.NOT_LEADER
    stage.close()
    _close(shared)


def test_the_transport_connects_a_dealer_per_other_peer(tmp_path, ctx) -> None:
    shared = _shared(tmp_path, ctx)
    poller = zmq.Poller()
    transport = PeerTransport(shared, ctx, poller, None, ())
    transport.sync_peers()
    assert sorted(transport._dealers) == ["b"]  # never ours
    transport.sync_peers()  # the same configuration: nothing new
    assert len(poller.sockets) == 1
    transport.close()
    _close(shared)
