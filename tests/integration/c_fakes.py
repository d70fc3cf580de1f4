"""Stand-ins for C reference nodes (zeromq/dafka), as separate processes speaking rfc46.

    python -m tests.integration.c_fakes store --tower HOST:PORT --hold TOPIC:COUNT ...
    python -m tests.integration.c_fakes producer --tower HOST:PORT --topic T --sizes 10,N,10
    python -m tests.integration.c_fakes consumer --tower HOST:PORT --topic T --window 100

They frame messages themselves (a few ``struct`` calls, after
/work/shared/specs/dafka-wire-reference.md §3), not with our codec, and copy the
reference behaviours the interop tests need:

* ``store``: a store reader holding ``COUNT`` records of each ``--hold`` topic (one
  partition each); ``--hear-late S``: it connects to a peer S seconds after its first
  beacon (greeting it before it can hear it). It answers GET-HEADS and CONSUMER-HELLO **by topic prefix**, as
  the C store does (a request for ``hello`` also gets the heads of ``hello2``),
  greets consumers with STORE-HELLO, and answers a FETCH only if the record at its
  offset exists, with up to ``count + 1`` records (the reference's off-by-one).
* ``producer``: once the ``--wait-for`` subscriptions arrived (a store's ``M`` by
  default), publishes one record per ``--sizes`` entry (its content that many
  bytes) with no size cap, HEADs every second, keeps every record until an ACK
  covers it, answers FETCHes from what it keeps, and prints ``acked N`` on stderr
  for every ACK that moves.

* ``consumer``: reads ``--topic`` from the beginning the way the C consumer does
  (FETCH windows up to the next multiple of ``--window``, asked for only when a
  record shows a gap or a HEAD or DIRECT-HEAD shows more); prints ``got N``.

All beacon through the tower like any node and print ``ROLE ready ID on ENDPOINT``.
"""

from __future__ import annotations

import argparse
import struct
import sys
import time
import uuid

import zmq

VERSION = b"\x01"


def node_id() -> str:
    return uuid.uuid4().hex.upper()


def string(value: str | bytes) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return bytes((len(raw),)) + raw


def frame0(cmd: bytes, slot: str, fields: bytes) -> bytes:
    return cmd + slot.encode() + b"\0" + VERSION + fields


def read_string(buf: bytes, at: int) -> tuple[str, int]:
    n = buf[at]
    return buf[at + 1 : at + 1 + n].decode(), at + 1 + n


def split0(frame: bytes) -> tuple[bytes, str, bytes]:
    """``(cmd, slot, fields)`` of a frame 0, or raise ValueError."""
    nul = frame.index(b"\0")
    if frame[nul + 1 : nul + 2] != VERSION:
        raise ValueError("not version 1")
    return frame[:1], frame[1:nul].decode(), frame[nul + 2 :]


class Node:
    def __init__(self, tower: str, hear_late: float = 0.0) -> None:
        """``hear_late``: connect to a peer that many seconds after its first beacon (a
        node whose SUB connects late, issue 34 point 2)."""
        host, port = tower.rsplit(":", 1)
        self.id = node_id()
        self.ctx = zmq.Context()
        self.data = self.ctx.socket(zmq.XPUB)
        self.data.setsockopt(zmq.XPUB_VERBOSE, 1)
        self.port = self.data.bind_to_random_port("tcp://127.0.0.1")
        self.sub = self.ctx.socket(zmq.SUB)
        self.bpub = self.ctx.socket(zmq.PUB)
        self.bsub = self.ctx.socket(zmq.SUB)
        self.bpub.connect(f"tcp://{host}:{port}")
        self.bsub.connect(f"tcp://{host}:{int(port) + 1}")
        self.bsub.setsockopt(zmq.SUBSCRIBE, b"B")
        self.bsub.setsockopt(zmq.SUBSCRIBE, b"W")
        self.peers: set[str] = set()
        self.next_beacon = 0.0
        self.hear_late = hear_late
        self.later: list[tuple[float, str]] = []  # (when, endpoint) to connect to

    def beacon(self, now: float) -> None:
        if now >= self.next_beacon:
            self.bpub.send_multipart([b"B", self.id.encode(), b"127.0.0.1", b"%d" % self.port])
            self.next_beacon = now + 0.5
        while self.bsub.poll(0):
            frames = self.bsub.recv_multipart()
            if len(frames) == 3 and frames[0] == b"B" and frames[1].decode() != self.id:
                endpoint = frames[2].decode()
                if endpoint not in self.peers:
                    self.peers.add(endpoint)
                    self.later.append((now + self.hear_late, endpoint))
        for when, endpoint in [e for e in self.later if e[0] <= now]:
            self.later.remove((when, endpoint))
            self.sub.connect(endpoint)

    def receive(self, timeout_ms: int = 50) -> tuple[bytes, str, bytes] | None:
        """The next data message's ``(cmd, slot, fields)``; None on timeout or when its
        frame 0 is not one."""
        if not self.sub.poll(timeout_ms):
            return None
        frames = self.sub.recv_multipart()
        try:
            return split0(frames[0])
        except ValueError:
            return None

    def ready(self, role: str) -> None:
        print(f"{role} ready {self.id} on tcp://127.0.0.1:{self.port}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- store


def run_store(tower: str, holds: list[str], hear_late: float = 0.0) -> None:
    node = Node(tower, hear_late)
    held: dict[tuple[str, str], list[bytes]] = {}
    for item in holds:
        topic, count = item.rsplit(":", 1)
        held[(topic, node_id())] = [f"{topic} {i}".encode() for i in range(int(count))]
    for prefix in (b"F", b"G", b"W" + node.id.encode()):
        node.sub.setsockopt(zmq.SUBSCRIBE, prefix)
    node.ready("store")

    def heads(requester: str, wanted: str) -> None:
        for (topic, partition), records in held.items():
            if topic.startswith(wanted):  # the reference's prefix match
                fields = string(partition) + string(topic) + struct.pack(">Q", len(records) - 1)
                node.data.send_multipart([frame0(b"E", requester, fields)])

    while True:
        node.beacon(time.monotonic())
        if node.data.poll(0):  # subscriptions: greet consumers
            sub = node.data.recv()
            if sub[:2] == b"\x01L" and len(sub) == 34:
                consumer = sub[2:].decode()
                node.data.send_multipart([frame0(b"L", consumer, string(node.id))])
        got = node.receive()
        if got is None:
            continue
        cmd, slot, fields = got
        if cmd == b"G":
            requester, _ = read_string(fields, 0)
            heads(requester, slot)
        elif cmd == b"W" and slot == node.id:
            requester, at = read_string(fields, 0)
            (n,) = struct.unpack_from(">I", fields, at)
            at += 4
            for _ in range(n):
                (size,) = struct.unpack_from(">I", fields, at)
                heads(requester, fields[at + 4 : at + 4 + size].decode())
                at += 4 + size
        elif cmd == b"F":
            requester, at = read_string(fields, 0)
            topic, at = read_string(fields, at)
            offset, count = struct.unpack_from(">QI", fields, at)
            records = held.get((topic, slot))
            if records is None or offset >= len(records):
                continue
            for i in range(offset, min(offset + count + 1, len(records))):
                head = frame0(b"D", requester, string(slot) + string(topic) + struct.pack(">Q", i))
                node.data.send_multipart([head, records[i]])


# ------------------------------------------------------------------------ producer


def run_producer(tower: str, topic: str, sizes: list[int], wait_for: list[bytes]) -> None:
    node = Node(tower)
    for prefix in (b"K", b"F"):
        node.sub.setsockopt(zmq.SUBSCRIBE, prefix + node.id.encode())
    node.ready("producer")
    records = [(b"%d:" % i).ljust(size, b"x")[:size] for i, size in enumerate(sizes)]
    acked = -1
    next_head = 0.0
    # A C producer publishes as soon as it is asked to; wait for the subscriptions named
    # (a store's `M`, a consumer's `M<topic>\0`) so that the test is about the size of a
    # record, not about slow joiners.
    waiting = set(wait_for)
    while waiting:
        node.beacon(time.monotonic())
        if node.data.poll(50):
            waiting.discard(node.data.recv())
    for i, content in enumerate(records):
        head = frame0(b"M", topic, string(node.id) + string(topic) + struct.pack(">Q", i))
        node.data.send_multipart([head, content])
    print(f"published {len(records)}", file=sys.stderr, flush=True)
    while True:
        now = time.monotonic()
        node.beacon(now)
        if now >= next_head:
            fields = string(node.id) + string(topic) + struct.pack(">Q", len(records) - 1)
            node.data.send_multipart([frame0(b"H", topic, fields)])
            next_head = now + 1.0
        while node.data.poll(0):
            node.data.recv()
        got = node.receive()
        if got is None:
            continue
        cmd, _slot, fields = got
        if cmd == b"K":
            _subject, at = read_string(fields, 0)
            (offset,) = struct.unpack_from(">Q", fields, at)
            if offset > acked:
                acked = offset
                print(f"acked {acked}", file=sys.stderr, flush=True)
        elif cmd == b"F":
            requester, at = read_string(fields, 0)
            _subject, at = read_string(fields, at)
            offset, count = struct.unpack_from(">QI", fields, at)
            for i in range(max(offset, acked + 1), min(offset + count, len(records))):
                fields_i = string(node.id) + string(topic) + struct.pack(">Q", i)
                node.data.send_multipart([frame0(b"D", requester, fields_i), records[i]])


# ------------------------------------------------------------------------ consumer


def run_consumer(tower: str, topic: str, window: int) -> None:
    """From the beginning, as the C console consumer with ``--from-beginning``: FETCHes
    only when a record shows a gap or a HEAD / DIRECT-HEAD shows more, for the distance
    to the next multiple of ``window`` (100,000 in the reference); prints ``got N``
    whenever delivery moves."""
    node = Node(tower)
    me = node.id
    for prefix in (b"M" + topic.encode(), b"H" + topic.encode()):
        node.sub.setsockopt(zmq.SUBSCRIBE, prefix)
    for cmd in (b"D", b"E", b"L"):
        node.sub.setsockopt(zmq.SUBSCRIBE, cmd + me.encode())
    node.ready("consumer")
    last: dict[tuple[str, str], int] = {}
    asked: set[tuple[str, str, int, int]] = set()  # the reference's fetch filter, per second

    def fetch(subject: str, partition: str, offset: int) -> None:
        key = (subject, partition, offset // window, int(time.monotonic()))
        if key in asked:
            return
        asked.add(key)
        count = (offset // window + 1) * window - offset
        fields = string(me) + string(subject) + struct.pack(">QI", offset, count)
        node.data.send_multipart([frame0(b"F", partition, fields)])

    def hello(store: str) -> None:
        fields = string(me) + struct.pack(">I", 1) + struct.pack(">I", len(topic)) + topic.encode()
        node.data.send_multipart([frame0(b"W", store, fields)])

    next_get_heads = 0.0
    while True:
        now = time.monotonic()
        node.beacon(now)
        if now >= next_get_heads and node.peers:
            node.data.send_multipart([frame0(b"G", topic, string(me))])
            next_get_heads = now + 1e9  # once, as the reference does
        while node.data.poll(0):
            sub = node.data.recv()
            if sub[:2] == b"\x01W" and len(sub) == 34:
                hello(sub[2:].decode())
        got = node.receive()
        if got is None:
            continue
        cmd, _slot, fields = got
        if cmd == b"L":
            store, _ = read_string(fields, 0)
            hello(store)
            continue
        partition, at = read_string(fields, 0)
        subject, at = read_string(fields, at)
        (seq,) = struct.unpack_from(">Q", fields, at)
        key = (subject, partition)
        known = last.get(key, -1)
        if cmd in (b"M", b"D"):
            if seq > known + 1:
                fetch(subject, partition, known + 1)
            elif seq == known + 1:
                last[key] = seq
                print(f"got {seq + 1}", file=sys.stderr, flush=True)
        elif cmd in (b"H", b"E"):
            if key not in last or seq > known:
                last.setdefault(key, -1)
                fetch(subject, partition, known + 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=("store", "producer", "consumer"))
    parser.add_argument("--window", type=int, default=100_000)
    parser.add_argument("--tower", required=True)
    parser.add_argument("--hold", action="append", default=[])
    parser.add_argument("--topic", default="hello")
    parser.add_argument("--sizes", default="")
    parser.add_argument(
        "--hear-late",
        type=float,
        default=0.0,
        help="connect to each peer this many seconds after its first beacon",
    )
    parser.add_argument(
        "--wait-for",
        action="append",
        default=[],
        help="producer: publish once these subscriptions (escaped, e.g. 'M', 'Mhello\\0') arrived",
    )
    args = parser.parse_args()
    try:
        if args.role == "store":
            run_store(args.tower, args.hold, args.hear_late)
        elif args.role == "consumer":
            run_consumer(args.tower, args.topic, args.window)
        else:
            sizes = [int(s) for s in args.sizes.split(",") if s]
            wanted = [b"\x01" + w.encode().decode("unicode_escape").encode() for w in args.wait_for]
            run_producer(args.tower, args.topic, sizes, wanted or [b"\x01M"])
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
