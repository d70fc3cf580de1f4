"""A one-peer Raft group driven by hand in the test's thread (no loop thread, no client):
the peer's sockets are set up, its core ticked until it leads and has applied an entry
of its term, and the test then feeds it frames as its ROUTER would deliver them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import zmq

from dafka.raft.peer import RaftPeer


def free_tcp_url() -> str:
    """A loopback TCP URL nobody is bound to now (bound once, then closed)."""
    with zmq.Context() as probe:
        sock = probe.socket(zmq.ROUTER)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        sock.close(0)
    return f"tcp://127.0.0.1:{port}"


def solo_leader(
    peer_id: str, directory: Path, cluster: str | bytes, *args: Any, **kw: Any
) -> RaftPeer:
    """``RaftPeer(peer_id, URL, [], directory, cluster, *args, **kw)`` set up and ticked (at
    most 10 election timeouts) until it leads with an entry of its term applied. The
    caller tears it down (``peer._teardown()``)."""
    peer = RaftPeer(peer_id, free_tcp_url(), [], directory, cluster, *args, **kw)
    peer._setup()
    try:
        for _ in range(10 * peer.options.election_tick):
            peer.core.tick()
            settle(peer)
            if peer.core.applied_in_term:
                break
        assert peer.core.applied_in_term, "the solo peer did not take the lead"
    except BaseException:
        peer._teardown()
        raise
    return peer


def settle(peer: RaftPeer) -> None:
    """The loop's Ready processing, then waiting for the leader's log fsync (run on its
    own thread, :mod:`dafka.raft.peer._logsync`) and processing what it lets commit."""
    peer._process_ready()
    while peer._logsync is not None and peer._logsync.pending:
        peer._drain_log()
        peer._process_ready()


def send_update(peer: RaftPeer, reqid: bytes, data: bytes, cluster: bytes = b"dafka") -> int:
    """A client's RequestUpdate of ``data`` as the ROUTER delivers it, then the loop's
    steps that propose and persist it; returns the log's last index after."""
    peer._on_router_frames([b"client", reqid, b"=", cluster, data])
    peer._flush_updates()
    settle(peer)
    return peer.core.last_index
