"""The leader's admission hook (``RaftPeer(admit=...)``), on a one-voter peer driven by hand:
no thread, no client; RequestUpdate frames go in as the ROUTER delivers them and the
answers are caught before the socket."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq

from dafka.raft.codec import _wire as w
from dafka.raft.peer import KvStateMachine, RaftPeer

from .solo import settle

CLUSTER = b"admit"


_SECONDS = int(time.time())  # once: ids made a second apart must still be the same id


def reqid(n: int) -> bytes:
    return _SECONDS.to_bytes(4, "big") + n.to_bytes(8, "big")


class Harness:
    def __init__(self, peer: RaftPeer, monkeypatch: pytest.MonkeyPatch) -> None:
        self.peer = peer
        self.replies: list[tuple[bytes, Any]] = []
        self.committed: list[tuple[bytes, int]] = []
        monkeypatch.setattr(
            peer.clients, "_reply", lambda env, rid, resp: self.replies.append((rid, resp))
        )
        monkeypatch.setattr(
            peer.clients,
            "_answer_waiter",
            lambda wt, pending=False: (
                None if pending else self.committed.append((wt.reqid, wt.index))
            ),
        )

    def send(self, rid: bytes, data: bytes) -> None:
        self.peer._on_router_frames([b"client", rid, b"=", CLUSTER, data])
        self.peer._flush_updates()
        settle(self.peer)


@pytest.fixture
def harness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Harness]]:
    peers: list[RaftPeer] = []

    def make(admit: Callable[[bytes], str | None]) -> Harness:
        with zmq.Context() as probe:
            sock = probe.socket(zmq.ROUTER)
            port = sock.bind_to_random_port("tcp://127.0.0.1")
            sock.close(0)
        peer = RaftPeer(
            "solo",
            f"tcp://127.0.0.1:{port}",
            [],
            tmp_path / "solo",
            CLUSTER,
            KvStateMachine(),
            admit=admit,
        )
        peer._setup()
        peers.append(peer)
        return Harness(peer, monkeypatch)

    yield make
    for peer in peers:
        peer._teardown()


def _elect(peer: RaftPeer) -> None:
    """Tick until the peer leads, without running its Ready loop (nothing applied yet)."""
    for _ in range(10 * peer.options.election_tick):
        peer.core.tick()
        if peer.core.is_leader:
            return
    raise AssertionError("no election")


def only_ok(data: bytes) -> str | None:
    return None if data.startswith(b"ok") else "not ok"


def test_refused_updates_are_never_appended_and_get_the_final_failure(harness) -> None:
    h = harness(only_ok)
    _elect(h.peer)
    settle(h.peer)
    last = h.peer.core.last_index
    h.send(reqid(1), b"bad")
    assert h.peer.core.last_index == last and h.peer.storage.last_index == last
    ((rid, reply),) = h.replies
    assert rid == reqid(1) and reply == w.RequestUpdateResponse(reqid(1), w.UpdateStatus.EXPIRED)
    assert h.peer._bad.counts == {"update-refused": 1}
    h.send(reqid(2), b"ok 2")
    assert h.committed == [(reqid(2), last + 1)]


def test_a_new_leader_holds_updates_until_it_applied_an_entry_of_its_term(harness) -> None:
    h = harness(only_ok)
    _elect(h.peer)
    assert h.peer.core.is_leader and not h.peer.core.applied_in_term
    h.peer._on_router_frames([b"client", reqid(1), b"=", CLUSTER, b"ok 1"])
    h.peer._flush_updates()  # not checked, not proposed, not answered: held
    assert h.peer.clients.updates and h.replies == [] and h.committed == []
    settle(h.peer)  # the leader's first entry is applied
    assert h.peer.core.applied_in_term
    h.peer._flush_updates()
    settle(h.peer)
    assert [rid for rid, _ in h.committed] == [reqid(1)] and h.replies == []


def test_a_resend_of_an_appended_update_is_answered_from_the_log(harness) -> None:
    verdicts: list[str | None] = [None]
    h = harness(lambda data: verdicts[-1])
    _elect(h.peer)
    settle(h.peer)
    h.send(reqid(1), b"x")
    ((_, index),) = h.committed
    verdicts.append("now refused")  # e.g. the admin was removed since
    h.send(reqid(1), b"x")
    assert h.committed == [(reqid(1), index), (reqid(1), index)] and h.replies == []


def test_a_failing_hook_refuses_and_the_loop_goes_on(harness) -> None:
    def broken(data: bytes) -> str | None:
        raise ValueError("boom")

    h = harness(broken)
    _elect(h.peer)
    settle(h.peer)
    last = h.peer.core.last_index
    h.send(reqid(1), b"x")
    assert h.peer.core.last_index == last
    assert [resp.status for _, resp in h.replies] == [w.UpdateStatus.EXPIRED]
