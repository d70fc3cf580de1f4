"""What towers cost when several share the beacon load (issue 39, point 3).

    python -m benchmarks.peered_towers --nodes 300 --topics 30 --seconds 10

N simulated signed nodes (raw sockets in this process: an interest beacon a second each, a
SUB on the prefixes of ``A`` and their one topic, as a producer or consumer has) against:

* ``one``: one tower, every node on it;
* ``unpeered``: two towers, every node beaconing to and listening to both (before);
* ``peered``: two peered towers, each node on the one its node ID hashes to.

Each tower is a relay process of its own (no Raft); reported: each tower's CPU (% of a
core, from /proc), the messages the nodes received a second, and how many copies of each
peer's beacon a node received. JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import zmq

from dafka.config import TowerAddress
from dafka.core.tower_choice import first_tower
from dafka.io.fd_limit import raise_fd_limit
from dafka.wire import beacon as wbeacon
from dafka.wire import interest as winterest
from tower.metadata import free_port_block

RELAY = """
import signal, sys
from dafka.io.fd_limit import raise_fd_limit
raise_fd_limit()
from dafka.config import TowerAddress
from tower.relay import Tower
host, port = sys.argv[1], int(sys.argv[2])
peers = [TowerAddress(host, int(p)) for p in sys.argv[3:]]
t = Tower(TowerAddress(host, port), peers=peers).start()
signal.signal(signal.SIGTERM, lambda *_: t.stop())
print("ready", flush=True)
t.wait()
"""

HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True)
class Result:
    mode: str
    nodes: int
    topics: int
    seconds: float
    tower_cpu_percent: list[float]
    received_per_second: float
    copies_per_beacon: float
    """Beacons of peers a node received, over those its topic's peers sent it."""


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(mode: str, nodes: int, topics: int, seconds: float, settle: float) -> Result:
    count = 1 if mode == "one" else 2
    ports = [free_port_block(HOST) for _ in range(count)]
    towers = [TowerAddress(HOST, p) for p in ports]
    procs = []
    for port in ports:
        peers = [str(p) for p in ports if p != port] if mode == "peered" else []
        proc = subprocess.Popen(
            [sys.executable, "-c", RELAY, HOST, str(port), *peers],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        procs.append(proc)
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, 4 * nodes + 64)
    pubs: list[zmq.Socket[bytes]] = []
    subs: list[zmq.Socket[bytes]] = []
    beacons: list[list[bytes]] = []
    try:
        for i in range(nodes):
            node_id = f"{i:032X}"
            topic = f"t{i % topics}"
            mine = towers if mode != "peered" else [towers[first_tower(node_id, count)]]
            pub, sub = ctx.socket(zmq.PUB), ctx.socket(zmq.SUB)
            for s in (pub, sub):
                s.setsockopt(zmq.LINGER, 0)
            for prefix in (wbeacon.ANY, winterest.scoped_prefix(topic)):
                sub.setsockopt(zmq.SUBSCRIBE, prefix)
            for t in mine:
                pub.connect(t.sub)
                sub.connect(t.pub)
            pubs.append(pub)
            subs.append(sub)
            node = wbeacon.NodeBeacon(node_id, HOST, 20000 + i)
            beacons.append(winterest.InterestBeacon(node, (topic,)).encode())
        poller = zmq.Poller()
        for s in subs:
            poller.register(s, zmq.POLLIN)

        def beacon_for(window: float) -> tuple[int, int]:
            """Each node beacons once a second, spread; returns (received, beacons sent)."""
            received = sent = 0
            start = time.monotonic()
            end = start + window
            i = 0
            while (now := time.monotonic()) < end:
                due = int((now - start) * nodes)  # beacons that should have gone by now
                while sent < due:
                    pubs[i].send_multipart(beacons[i])
                    i = (i + 1) % nodes
                    sent += 1
                for s, _ in poller.poll(5):
                    for _ in range(1000):
                        try:
                            s.recv_multipart(zmq.NOBLOCK)
                        except zmq.Again:
                            break
                        received += 1
            return received, sent

        beacon_for(settle)
        cpu0 = [_cpu(p.pid) for p in procs]
        t0 = time.monotonic()
        received, sent = beacon_for(seconds)
        elapsed = time.monotonic() - t0
        cpu = [(_cpu(p.pid) - c) / elapsed * 100 for p, c in zip(procs, cpu0, strict=True)]
        # each beacon is owed to the nodes of its topic (itself among them)
        owed = sent * (nodes // topics)
        return Result(
            mode,
            nodes,
            topics,
            round(elapsed, 2),
            [round(c, 1) for c in cpu],
            round(received / elapsed, 1),
            round(received / owed, 2),
        )
    finally:
        for s in (*pubs, *subs):
            s.close(0)
        ctx.term()
        for p in procs:
            p.terminate()
            p.wait(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=300)
    ap.add_argument("--topics", type=int, default=30)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--modes", default="one,unpeered,peered")
    args = ap.parse_args()
    raise_fd_limit()  # two sockets a node, each with a connection a tower
    results = [
        asdict(run(m, args.nodes, args.topics, args.seconds, args.settle))
        for m in args.modes.split(",")
    ]
    json.dump(results, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
