"""A fresh-key flood from one host must not starve a new producer on another (issue 10,
point 6; root only: each host is a network namespace of its own).

New partitions are admitted at a rate per source host (the ``Peer-Address`` of the
connection a batch arrived on). Before, the rate was one budget for everyone: a host
publishing one batch from a fresh key every few hundred microseconds took every token,
and a brand-new real producer's first record was neither stored nor delivered while the
flood lasted. Here a flooder in its own namespace does that to a real store and a real
consumer (tower, store and consumer share a third namespace) while a new producer in a
fourth namespace sends one record: it must be acknowledged and delivered within 2 s.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.admin import tower_args
from tests.attack_mutants import mutated
from tests.faults import netns
from tests.procs import Proc, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(180),
    pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable())),
]

FLOOD_SECONDS = 25.0
FLOOD_RATE = 1500.0  # new partitions per second: far over the 100/s admitted, within reach
WITHIN = 2.0  # the criterion for a probe during a flood

FLOODER = r"""
import sys, time, zmq
from dafka.config import TowerAddress, parse_endpoint
from dafka.security.identity import Identity
from dafka.wire import beacon as wbeacon, signed

host, tower, seconds, rate = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
batches = []
for i in range(6000):  # fresh keys, one batch each; resent in turn (refused ones try again)
    key = Identity.from_seed((700_000 + i).to_bytes(32, "big"))
    batches.append([b"Mt\x00\x02", signed.encode_batch(key, "t", 0, [(None, b"flood")], 1)])
ctx = zmq.Context.instance()
beacons = ctx.socket(zmq.PUB)
beacons.connect(TowerAddress(*parse_endpoint(tower, "tower")).sub)
socks, frames = [], []
for n in range(PEERS):  # several nodes on this one host: as many connections to each victim
    data = ctx.socket(zmq.XPUB)
    data.setsockopt(zmq.SNDHWM, 0)
    port = data.bind_to_random_port(f"tcp://{host}")
    me = Identity.from_seed((800_000 + n).to_bytes(32, "big"))
    socks.append(data)
    frames.append(wbeacon.NodeBeacon(me.node_id, host, port).encode())
poller = zmq.Poller()
for data in socks:
    poller.register(data, zmq.POLLIN)
subscribers, sent, announced, next_beacon = 0, 0, False, 0.0
end = time.monotonic() + seconds + 60
started = None
while time.monotonic() < end and (started is None or time.monotonic() < started + seconds):
    now = time.monotonic()
    if now >= next_beacon:
        for beacon in frames:
            beacons.send_multipart(beacon)
        next_beacon = now + 0.5
    for data, _ in poller.poll(0):
        while data.poll(0):
            if data.recv().startswith(b"\x01M"):
                subscribers += 1
    if subscribers < 2 * PEERS:  # the store and the consumer, on every one
        poller.poll(50)
        continue
    if started is None:
        started = now
    # paced (a victim that keeps up reads small batches: then each token of a shared
    # budget goes to whichever new partition comes first, almost always the flood's)
    while sent < (now - started) * rate:
        socks[sent % PEERS].send_multipart(batches[sent % len(batches)])
        sent += 1
    if sent >= 1500 and not announced:  # past every burst: the rate is what admits now
        print("flooding", flush=True)
        announced = True
    poller.poll(1)
print(f"flooded {sent}", flush=True)
""".replace("PEERS", "20")

CONSUMER = r"""
import sys, time
from dafka import Consumer

host, tower, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
c = Consumer("t", towers=tower, host=host, offset_reset="earliest", metadata=False)
print("consumer started", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    rec = c.poll(0.2)
    if rec is not None and rec.value.startswith(b"probe"):
        print(f"delivered {rec.value.decode()} at {time.time():.3f}", flush=True)
c.close()
"""

PROBE = r"""
import sys, time
from dafka.producer._facade import Producer

host, tower = sys.argv[1], sys.argv[2]
p = Producer("t", towers=tower, host=host, metadata=False, trust_any_store=True)
sent = time.time()
print(f"sending at {sent:.3f}", flush=True)
try:
    p.send(b"probe").result(60)
    print(f"acked after {time.time() - sent:.3f}", flush=True)
finally:
    p.close(timeout=1)
"""


def _script(topo: netns.Topology, node: str, code: str, *args: str) -> Proc:
    return Proc([*topo.prefix_args(node), *mutated([sys.executable, "-c", code, *args])])


def _module(topo: netns.Topology, node: str, module: str, *args: str) -> Proc:
    return Proc([*topo.prefix_args(node), *mutated([sys.executable, "-m", module, *args])])


def test_a_new_producer_on_another_host_is_served_during_a_fresh_key_flood(
    tmp_path: Path,
) -> None:
    topo = netns.Topology(["svc", "flood", "probe"], prefix=f"dfsrc{os.getpid() % 100_000}")
    topo.create()
    procs: list[Proc] = []
    try:
        svc = topo.addresses["svc"]
        tower = _module(topo, "svc", "tower", "--bind", f"{svc}:0", *tower_args())
        procs.append(tower)
        port = tower.wait_line(rf"tower on tcp://{re.escape(svc)}:(\d+)", 60).group(1)
        towers = f"{svc}:{port}"
        store = _module(
            topo, "svc", "dafka.cli.store", "--data-dir", str(tmp_path / "s"), "--tower", towers,
            "--host", svc,
        )  # fmt: skip
        procs.append(store)
        store.wait_line(r"store [0-9A-F]{32} on tcp://", 60)
        consumer = _script(topo, "svc", CONSUMER, svc, towers, str(FLOOD_SECONDS + 30))
        procs.append(consumer)
        consumer.wait_line_stdout("consumer started", 60)
        flooder = _script(
            topo,
            "flood",
            FLOODER,
            topo.addresses["flood"],
            towers,
            str(FLOOD_SECONDS),
            str(FLOOD_RATE),
        )
        procs.append(flooder)
        flooder.wait_line_stdout("flooding", 60)

        probe = _script(topo, "probe", PROBE, topo.addresses["probe"], towers)
        procs.append(probe)
        sent = float(probe.wait_line_stdout(r"sending at ([0-9.]+)", 60).group(1))
        # without the rate per source: never acknowledged while the flood lasts
        acked = float(probe.wait_line_stdout(r"acked after ([0-9.]+)", FLOOD_SECONDS).group(1))
        delivered_at = float(
            consumer.wait_line_stdout(r"delivered probe at ([0-9.]+)", FLOOD_SECONDS).group(1)
        )
        assert flooder.p.poll() is None, "the flood ended before the probe was served"
        print(f"probe acked after {acked:.3f} s, delivered after {delivered_at - sent:.3f} s")
        assert acked < WITHIN and delivered_at - sent < WITHIN
        wait_until(lambda: probe.p.poll() is not None, 15, what="the probe to close")
    finally:
        for proc in reversed(procs):
            proc.kill()
        topo.destroy()
