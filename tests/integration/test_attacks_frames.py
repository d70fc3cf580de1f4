"""A message of a million frames (issue 10: libzmq bounds frames, not messages).

``ZMQ_MAXMSGSIZE`` bounds each frame of a message, not their number, so a peer can send
one message of 1,000,000 empty frames: 2 MB on the wire. libzmq holds it whole (about
60 bytes a frame) before the first frame can be read; that part no node can refuse.
``recv_multipart(copy=False)`` then made a :class:`zmq.Frame` of each (about 200 bytes),
so the store's query endpoint and the tower each paid some 200 MiB more, and a message of
10,000 frames of the largest size was copied whole before any decoder saw its count.
Every peer-reachable socket now reads with :func:`dafka.io.multipart.recv_bounded`, which
keeps at most the protocol's frames and drops the rest unread.

Each test sends the message through a raw socket, then a genuine request behind it on the
same connection (first in, first out: once it is answered the flood has been read), and
compares the victim's peak RSS (``VmHWM``) before and after.

    python -m tests.integration.test_attacks_frames [FRAMES]

prints the figures (MiB of peak RSS added by the flood at the store and the tower, and what
libzmq holds of a message that never ends).
"""

from __future__ import annotations

import os
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

import pytest
import zmq

from dafka.config import TowerAddress, parse_endpoint
from dafka.query import protocol as qp
from dafka.wire import beacon as wbeacon
from tests.procs import StoreProc, Tower, peak_rss_mib, rss_mib, wait_until
from tests.signing import PRODUCER

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

FRAMES = 1_000_000
BOUND_MIB = 128  # libzmq's own copy (about 60 MiB) and noise; recv_multipart: over 250


def _send_frames(sock: zmq.Socket[bytes], count: int, last: list[bytes] | None = None) -> None:
    """One message of ``count`` empty frames (then ``last``'s frames, if given)."""
    for _ in range(count - 1):
        sock.send(b"", zmq.SNDMORE)
    if last:
        sock.send(b"", zmq.SNDMORE)
        sock.send_multipart(last)
    else:
        sock.send(b"")


def query_flood(tmp: Path, frames: int = FRAMES) -> float:
    """MiB of peak RSS a store's query endpoint pays for one message of ``frames``."""
    tower = Tower()
    store = None
    ctx = zmq.Context()
    client = ctx.socket(zmq.DEALER)
    client.setsockopt(zmq.LINGER, 0)
    try:
        store = StoreProc(tmp / "s", tower.address)
        client.connect(store.query_endpoint)

        def answered(rid: int) -> bool:
            client.send_multipart(qp.encode_request(qp.HeadsRequest(rid)))
            if not client.poll(2000):
                return False
            reply = qp.decode_reply(client.recv_multipart())
            assert isinstance(reply, qp.HeadsReply), reply
            return True

        wait_until(lambda: answered(1), 30, what="the store's query endpoint")
        before = peak_rss_mib(store.proc.p.pid)
        _send_frames(client, frames)
        wait_until(lambda: answered(2), 120, interval=0.1, what="an answer behind the flood")
        return peak_rss_mib(store.proc.p.pid) - before
    finally:
        client.close(0)
        ctx.term()
        for proc in (store.proc if store else None, tower.proc):
            if proc is not None:
                proc.kill()


def tower_flood(frames: int = FRAMES) -> float:
    """MiB of peak RSS a tower pays for one message of ``frames`` to its beacon XSUB."""
    tower = Tower()
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    sub = ctx.socket(zmq.SUB)
    for sock in (pub, sub):
        sock.setsockopt(zmq.LINGER, 0)
    try:
        address = TowerAddress(*parse_endpoint(tower.address, "tower"))
        pub.connect(address.sub)
        sub.setsockopt(zmq.SUBSCRIBE, wbeacon.BEACON)
        sub.connect(address.pub)
        beacon = wbeacon.NodeBeacon(PRODUCER.node_id, "127.0.0.1", 40000).encode()

        def relayed() -> bool:
            pub.send_multipart(beacon)
            while sub.poll(200):
                if sub.recv_multipart()[1] == PRODUCER.node_id.encode():
                    return True
            return False

        wait_until(relayed, 30, what="the tower to relay a beacon")
        before = peak_rss_mib(tower.proc.p.pid)
        pub.send(wbeacon.BEACON, zmq.SNDMORE)  # a beacon's prefix, so the XSUB takes it
        _send_frames(pub, frames - 1)
        wait_until(relayed, 120, interval=0.1, what="a beacon behind the flood")
        return peak_rss_mib(tower.proc.p.pid) - before
    finally:
        pub.close(0)
        sub.close(0)
        ctx.term()
        tower.proc.kill()


def in_progress_mib(frames: int = 300, size: int = 1_000_000) -> float:
    """MiB a ROUTER's process (this one) grows by while a raw ZMTP peer sends ``frames``
    frames of ``size`` bytes of a message it never ends: libzmq holds them, unreadable."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.MAXMSGSIZE, 2 * size)
    port = router.bind_to_random_port("tcp://127.0.0.1")
    peer = socket.create_connection(("127.0.0.1", port))
    try:
        # ZMTP 3.0: the greeting (NULL mechanism, as client), READY as a DEALER, then frames
        peer.sendall(b"\xff" + bytes(8) + b"\x7f\x03\x00" + b"NULL".ljust(20, b"\0") + bytes(32))
        ready = b"\x05READY\x0bSocket-Type" + struct.pack(">I", 6) + b"DEALER"
        peer.sendall(bytes([0x04, len(ready)]) + ready)
        before = rss_mib(os.getpid())
        frame = b"\x03" + struct.pack(">Q", size) + bytes(size)  # long frame, MORE set
        for _ in range(frames):
            peer.sendall(frame)
        grown = 0.0
        for _ in range(100):  # until libzmq has read them all, at most 10 s
            grown = rss_mib(os.getpid()) - before
            if grown >= frames * size / 2**20 * 0.95:
                break
            time.sleep(0.1)
        assert not router.poll(0), "a message in progress is not readable"
        return grown
    finally:
        peer.close()
        router.close(0)
        ctx.term()


def test_a_million_frame_message_costs_the_query_endpoint_no_frame_objects(
    tmp_path: Path,
) -> None:
    added = query_flood(tmp_path)
    # recv_multipart(copy=False): a zmq.Frame for each of the million frames
    assert added < BOUND_MIB, added


def test_a_million_frame_message_costs_the_tower_no_frame_objects() -> None:
    added = tower_flood()
    assert added < BOUND_MIB, added


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else FRAMES
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{count} frames: store +{query_flood(Path(tmp), count):.0f} MiB peak RSS")
    print(f"{count} frames: tower +{tower_flood(count):.0f} MiB peak RSS")
    print(f"300 frames of 1 MB of a message in progress: +{in_progress_mib():.0f} MiB RSS")
