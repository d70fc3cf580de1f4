"""The floor under any Raft cluster written in Python on pyzmq: the I/O of replication alone.

Issue 11 asks for 5x the reference server's commits/s with 64 updates in flight. That is
a budget of CPU per update on two shared cores (``docs/raft.md`` §8), so this measures
what the least a Python leader and its followers must do per update costs, with the same
client and wire as the real cluster. Three processes:

* the **leader** reads each RequestUpdate off its ROUTER (the 5 frames our peer reads,
  with :func:`~dafka.io.multipart.recv_bounded`), makes its log entry frame (reqid, type,
  term, data), and at the end of each drain sends all of them as one multipart to each
  follower, appends them to a file (a CRC and a length each) and ``fdatasync``\\ s it;
  when a follower says a batch is durable, the leader answers each update of it and of
  the batches before (``[reqid, true, index]``, what :class:`~dafka.raft.client.RaftClient`
  takes as committed);
* each **follower** drains its ROUTER, appends every entry frame of what it read to a
  file the same way, ``fdatasync``\\ s once, and answers each batch with its number.

Nothing else: no terms, votes, checks, state machine, snapshots, dedup, metrics or
logging, no retransmission (a lost frame stalls the run: it is a benchmark on loopback).
Any real peer does all of this and more, so no Python peer on pyzmq can be faster than
this floor on the same machine: ``python -m benchmarks.raft`` prints it beside our peers
and the reference server.

    python -m benchmarks.raft_floor leader --bind URL --follower URL --follower URL --dir D
    python -m benchmarks.raft_floor follower --bind URL --dir D

Each prints ``floor <role> on <URL>`` on stderr once bound, and runs until killed or until
the process that started it is gone (checked after each second with nothing to read: the
benchmark is the floor's only client, so once it is gone nothing comes).
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import zlib
from collections import deque
from pathlib import Path
from typing import Any

import zmq

from dafka.io.multipart import recv_bounded
from dafka.raft.codec import (
    Peer,
    RequestConfigResponse,
    decode_uint32,
    encode_bool,
    encode_json_index,
)
from dafka.raft.peer import send_frames
from tests.procs import Proc, free_port, py

_HEAD = struct.Struct("<II")  # crc32, length: the least a log record can carry
_TERM = (1).to_bytes(7, "little")
_STATE = b"\x00"
_TRUE = encode_bool(True)
_MAX_FRAMES = 100_000  # a follower reads a leader's whole batch as one message


_PARENT = os.getppid()


def _parent_alive() -> bool:
    """False once the benchmark that started this process is gone (it was reparented):
    a floor process never outlives its run, even when the benchmark is killed."""
    return os.getppid() == _PARENT


def _records(frames: list[bytes]) -> bytes:
    """The log records of ``frames``: a CRC and a length before each body."""
    head, crc32 = _HEAD.pack, zlib.crc32
    return b"".join([part for f in frames for part in (head(crc32(f), len(f)), f)])


def _append(fd: int, frames: list[bytes], fsync: bool) -> None:
    os.write(fd, _records(frames))
    if fsync:
        os.fdatasync(fd)


def _open_log(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    return os.open(directory / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)


def _config(request_id: bytes, url: str) -> list[bytes]:
    """The answer to a RequestConfig: this process leads, alone (once per client)."""
    rid = decode_uint32(request_id)
    return RequestConfigResponse(rid, True, "p1", (Peer("p1", url),)).encode()


def run_leader(bind: str, followers: list[str], directory: Path, fsync: bool) -> None:
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.bind(bind)
    dealers = []
    for url in followers:
        dealer = ctx.socket(zmq.DEALER)
        dealer.connect(url)
        dealers.append(dealer)
    fd = _open_log(directory)
    poller = zmq.Poller()
    for sock in (router, *dealers):
        poller.register(sock, zmq.POLLIN)
    print(f"floor leader on {bind}", file=sys.stderr, flush=True)
    index = batch = done = 0
    waiting: deque[tuple[int, list[tuple[bytes, bytes, int]]]] = deque()
    while True:
        events = poller.poll(1000)
        if not events and not _parent_alive():  # checked when idle: not a cost per turn
            return
        entries: list[bytes] = []
        answers: list[tuple[bytes, bytes, int]] = []
        for sock, _ in events:
            if sock is router:
                while True:
                    try:
                        frames = recv_bounded(router, 5)
                    except zmq.Again:
                        break
                    if len(frames) != 5:  # the client's RequestConfig, before the updates
                        send_frames(router, [frames[0], *_config(frames[1], bind)])
                        continue
                    identity, reqid, _kind, _cluster, data = frames
                    index += 1
                    entries.append(b"".join((reqid, _STATE, _TERM, data)))
                    answers.append((identity, reqid, index))
            else:
                while True:
                    try:
                        acked = int(sock.recv(zmq.NOBLOCK))
                    except zmq.Again:
                        break
                    done = max(done, acked)  # durable on a follower and (below) here
                while waiting and waiting[0][0] <= done:
                    for identity, reqid, at in waiting.popleft()[1]:
                        send_frames(router, [identity, reqid, _TRUE, encode_json_index(at)])
        if entries:
            batch += 1
            head = b"%d" % batch
            for dealer in dealers:  # sent before the write, as our leader does
                send_frames(dealer, [head, *entries])
            _append(fd, entries, fsync)
            waiting.append((batch, answers))


def run_follower(bind: str, directory: Path, fsync: bool) -> None:
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.bind(bind)
    fd = _open_log(directory)
    print(f"floor follower on {bind}", file=sys.stderr, flush=True)
    while True:
        if not router.poll(1000) and not _parent_alive():  # checked when idle
            return
        entries: list[bytes] = []
        read: list[tuple[bytes, bytes]] = []
        while True:
            try:
                frames = recv_bounded(router, _MAX_FRAMES)
            except zmq.Again:
                break
            read.append((frames[0], frames[1]))
            entries += frames[2:]
        if read:
            _append(fd, entries, fsync)
            for identity, head in read:
                send_frames(router, [identity, head])


def start_floor(directory: Path, fsync: bool) -> tuple[list[Proc], str, dict[str, int]]:
    """The three floor processes on free loopback ports: ``(procs, the leader's URL,
    {"p1": leader pid, "p2"..., "p3"...})``. The caller kills them."""
    ports: set[int] = set()
    urls = [f"tcp://127.0.0.1:{free_port(ports)}" for _ in range(3)]
    sync = ["--fsync" if fsync else "--no-fsync"]
    procs: list[Proc] = []
    try:
        for k, url in enumerate(urls[1:], start=2):
            proc = Proc(
                py(__name__, "follower", "--bind", url, "--dir", str(directory / f"p{k}"), *sync)
            )
            procs.append(proc)
            proc.wait_line("floor follower on ")
        args = ["leader", "--bind", urls[0], "--dir", str(directory / "p1"), *sync]
        args += [f"--follower={url}" for url in urls[1:]]
        leader = Proc(py(__name__, *args))
        procs.insert(0, leader)
        leader.wait_line("floor leader on ")
    except BaseException:
        for proc in procs:
            proc.kill()
        raise
    return procs, urls[0], {f"p{k + 1}": proc.p.pid for k, proc in enumerate(procs)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.raft_floor", description=__doc__)
    parser.add_argument("role", choices=["leader", "follower"])
    parser.add_argument("--bind", required=True)
    parser.add_argument("--follower", action="append", default=[], help="a follower's URL")
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--fsync", action=argparse.BooleanOptionalAction, default=True)
    args: Any = parser.parse_args(argv)
    if args.role == "leader":
        if len(args.follower) != 2:
            parser.error("the leader needs two --follower URLs")
        run_leader(args.bind, args.follower, args.dir, args.fsync)
    else:
        run_follower(args.bind, args.dir, args.fsync)


if __name__ == "__main__":
    main()
