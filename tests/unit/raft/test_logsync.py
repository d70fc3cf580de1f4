"""The leader's log fsync on its own thread (dafka.raft.peer._logsync) and what a peer does
when it fails."""

from __future__ import annotations

import select
import threading
import time
from pathlib import Path

import pytest
import zmq

from dafka.errors import StorageError
from dafka.raft.codec import Entry, EntryType, Peer, ReqIdGenerator
from dafka.raft.core import AppendEntries, AppendResponse, Message
from dafka.raft.peer import PeerOptions, RaftPeer
from dafka.raft.peer._logsync import LogSyncer

from .solo import free_tcp_url, settle, solo_leader

THREAD = PeerOptions(fsync_thread=True)


def wait_readable(fd: int, timeout: float = 5.0) -> None:
    ready, _, _ = select.select([fd], [], [], timeout)
    assert ready, "no report from the fsync thread"


def test_one_fsync_covers_every_write_handed_over_while_the_last_ran() -> None:
    calls = 0
    release = threading.Event()

    def sync() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            assert release.wait(5)

    syncer = LogSyncer(sync)
    try:
        syncer.request(1)
        deadline = time.monotonic() + 5
        while calls == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        for write in (2, 3, 4):  # while the first fsync runs
            syncer.request(write)
        assert syncer.pending
        release.set()
        assert syncer.drain() == 4 and not syncer.pending
        assert calls == 2  # the second fsync covered writes 2, 3 and 4
        wait_readable(syncer.fileno)
        assert syncer.take() == 4
    finally:
        syncer.close()


def test_a_failed_fsync_is_raised_on_the_loop_thread() -> None:
    def sync() -> None:
        raise OSError(5, "Input/output error")

    syncer = LogSyncer(sync)
    try:
        syncer.request(1)
        wait_readable(syncer.fileno)
        with pytest.raises(StorageError, match="fsync failed"):
            syncer.take()
        with pytest.raises(StorageError):
            syncer.drain()
        with pytest.raises(StorageError):
            syncer.request(2)
    finally:
        syncer.close()


def test_a_solo_leader_applies_nothing_before_its_fsync(tmp_path: Path) -> None:
    peer = solo_leader("solo", tmp_path / "solo", "dafka", options=THREAD)
    try:
        assert peer._logsync is not None
        release = threading.Event()
        sync = peer._logsync._sync
        peer._logsync._sync = lambda: (release.wait(5), sync())  # type: ignore[method-assign]
        applied = peer.core.applied
        peer._on_router_frames([b"client", ReqIdGenerator()(), b"=", b"dafka", b"x"])
        peer._flush_updates()
        peer._process_ready()
        assert peer.core.last_index == applied + 1 and peer.storage.last_index == applied + 1
        assert peer.core.commit == applied and peer.core.applied == applied  # written, not durable
        release.set()
        settle(peer)
        assert peer.core.applied == applied + 1
    finally:
        peer._teardown()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_peer_whose_fsync_thread_fails_stops_its_loop(tmp_path: Path) -> None:
    assert not PeerOptions().fsync_thread  # (off by default: docs/raft.md section 7)
    url = free_tcp_url()
    peer = RaftPeer("p1", url, [], tmp_path / "p1", "dafka", options=THREAD).start()
    ctx = zmq.Context()
    client = ctx.socket(zmq.DEALER)
    client.setsockopt(zmq.LINGER, 0)
    try:
        deadline = time.monotonic() + 10
        while not peer.core.applied_in_term and time.monotonic() < deadline:
            time.sleep(0.01)
        assert peer.core.applied_in_term and peer._logsync is not None

        def broken() -> None:
            raise OSError(5, "Input/output error")

        peer._logsync._sync = broken  # type: ignore[method-assign]
        client.connect(url)
        client.send_multipart([ReqIdGenerator()(), b"=", b"dafka", b"x"])
        while peer.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not peer.running  # a process hosting it exits non-zero (RaftPeer.running)
        assert isinstance(peer.error, StorageError)
    finally:
        client.close(0)
        ctx.term()
        peer.stop()


def test_a_follower_acknowledges_entries_only_once_its_fsync_reported_back(
    tmp_path: Path,
) -> None:
    leader = [Peer("l", free_tcp_url())]
    peer = RaftPeer(
        "f", free_tcp_url(), leader, tmp_path / "f", "dafka", options=THREAD, insecure_null=True
    )
    peer._setup()
    try:
        assert peer._logsync is not None
        sent: list[Message] = []
        peer.transport.send_response = sent.append  # type: ignore[method-assign]
        release = threading.Event()
        sync = peer._logsync._sync
        peer._logsync._sync = lambda: (release.wait(5), sync())  # type: ignore[method-assign]
        entries = tuple(Entry(k, 1, EntryType.STATE, bytes(12), b"x") for k in (1, 2))
        peer.core.step(AppendEntries("l", "f", 1, 0, 0, 0, entries, 1))
        peer._process_ready()  # the term changed: written and fsynced before it answers
        assert [type(msg) for msg in sent] == [AppendResponse] and not peer._logsync.pending
        more = (Entry(3, 1, EntryType.STATE, bytes(12), b"y"),)
        peer.core.step(AppendEntries("l", "f", 1, 2, 1, 2, more, 2))
        peer.core.step(AppendEntries("l", "f", 1, 3, 1, 2, (), 3))  # a heartbeat after it
        peer._process_ready()
        assert peer.storage.last_index == 3 and len(sent) == 1  # written, not acknowledged
        assert peer._logsync.pending
        release.set()
        wait_readable(peer._logsync.fileno)  # durable; the loop has not read the pipe yet
        peer.core.step(AppendEntries("l", "f", 1, 3, 1, 3, (), 4))
        peer._process_ready()  # its answer goes after the held ones
        assert [(msg.last_index, msg.seq) for msg in sent[1:]] == [(3, 2), (3, 3), (3, 4)]  # type: ignore[attr-defined]
        assert all(isinstance(msg, AppendResponse) and msg.success for msg in sent)
        peer._log_synced()
        assert len(sent) == 4 and peer.core.stable_index == 3
    finally:
        peer._teardown()
