"""What one beacon costs the tower's relay, in microseconds (issue 39: "bounded far below 300 us").

    python -m benchmarks.tower_relay [--calls 20000] [--repeat 5] [--beacons 20000]
                                     [--subscribers 4] [--out FILE]

**Pure** (``pure``): :func:`tower.relay.relay_messages`, the function the relay thread calls
for every message a node sends it, timed in a loop (``--calls`` beacons, ``--repeat`` times;
``us_best`` is the fastest repeat, ``us_median`` the median) for each kind of beacon: a node
beacon (``B``, what an rfc46 node or the C reference sends: relayed under ``B`` and ``A``), and
an interest beacon (signed profile, ``docs/wire.md`` §6.3) naming ``*``, 1, 8 and 64 topics
(relayed under ``B`` and under ``A`` or once per topic: ``messages_out``). 256 distinct nodes
per kind, no CURVE key (a key adds its node-ID check).

**End to end** (``end_to_end``): a real :class:`tower.relay.Tower` on 127.0.0.1 (ephemeral
ports) in this process, and a peer process (this module, ``--peer``) with ``--subscribers``
SUB sockets on the tower's XPUB (the first subscribed to ``B``, the second to ``A``, the others
to the prefix of topic 0, 1, ...) and a PUB on its XSUB that sends ``--beacons`` beacons as fast
as it can (SNDHWM 0: none dropped before the tower), one run per kind (the node beacon, the
interest beacons with 8 and with 64 topics, the most one names). Measured here, from the
peer's first send to the tower's count of relayed beacons reaching ``--beacons`` (polled every
10 ms):

* ``beacons_per_s``: beacons relayed a second, with the tower as fast as it goes;
* ``process_cpu_us_per_beacon``: this process's CPU (``resource.getrusage(RUSAGE_SELF)``,
  user + system, every thread) over the window, divided by the beacons: the relay thread, the
  libzmq I/O thread of its context (the TCP reads and writes) and this idle main thread, the
  only busy one being the tower: the senders and subscribers are in the peer process;
* ``tower_thread_cpu_us_per_beacon``: the relay thread's own CPU (Linux
  ``/proc/self/task/TID/stat``, clock ticks: 10 ms resolution), null elsewhere.

``ratio_vs_300us`` divides each figure by the issue's old 300 us a beacon. The peer's
subscribers' counts (``received``) say what reached them: the XPUB drops for a subscriber
that falls behind (libzmq's high-water mark), which the relay's cost does not include.

Prints a table on stderr and the JSON report on stdout, and writes it to
benchmarks/results/tower-relay-<time>.json (or ``--out``; its path on stderr), with the
machine's load average at the start and end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import zmq

from dafka.config import TowerAddress
from dafka.wire import beacon as wbeacon
from dafka.wire import interest as winterest
from tower.relay import Tower, relay_messages

RESULTS = Path(__file__).resolve().parent / "results"
REFERENCE_US = 300.0
"""The issue's figure: about 300 us a beacon relayed through the Python thread."""
PEER = "127.0.0.1"
"""The Peer-Address the pure calls pass, as the relay thread does for a TCP peer."""
DISTINCT = 256
PURE_CASES: dict[str, int | None] = {
    "node B": -1,
    "interest *": None,
    "interest 1": 1,
    "interest 8": 8,
    "interest 64": 64,
}
"""Each kind of beacon timed: -1 a node beacon, None an interest beacon naming ``*``, else
one naming that many topics."""
END_TO_END_CASES = ("node B", "interest 8", "interest 64")
POLL_S = 0.01
WAIT_S = 60.0


def topic(i: int) -> str:
    return f"topic-{i:03d}"


def beacons(case: str, count: int = DISTINCT) -> list[list[bytes]]:
    """``count`` beacons of ``case`` (a key of :data:`PURE_CASES`), from distinct nodes."""
    kind = PURE_CASES[case]
    out = []
    for i in range(count):
        node = wbeacon.NodeBeacon(f"{i + 1:032X}", "127.0.0.1", 20000 + i)
        if kind == -1:
            out.append(node.encode())
        else:
            topics = None if kind is None else tuple(topic(t) for t in range(kind))
            out.append(winterest.InterestBeacon(node, topics).encode())
    return out


def time_pure(case: str, calls: int, repeat: int) -> dict[str, Any]:
    """µs per :func:`relay_messages` call for ``case``: each repeat's mean, best and median."""
    batch = beacons(case)
    frames = (batch * (calls // len(batch) + 1))[:calls]
    messages_out = len(relay_messages(batch[0], PEER))
    per_call = []
    for _ in range(repeat):
        started = time.perf_counter()
        for f in frames:
            relay_messages(f, PEER)
        per_call.append((time.perf_counter() - started) / calls * 1e6)
    return {
        "case": case,
        "messages_out": messages_out,
        "calls": calls,
        "repeat": repeat,
        "us_best": round(min(per_call), 3),
        "us_median": round(statistics.median(per_call), 3),
        "ratio_vs_300us": round(min(per_call) / REFERENCE_US, 5),
    }


def subscriptions(subscribers: int) -> list[bytes]:
    """What the peer's SUB sockets subscribe to: ``B``, ``A``, then topic 0, 1, ..."""
    prefixes = [wbeacon.BEACON, wbeacon.ANY]
    prefixes += [winterest.scoped_prefix(topic(i)) for i in range(max(0, subscribers - 2))]
    return prefixes[:subscribers]


def thread_cpu_s(native_id: int | None) -> float | None:
    """A thread's CPU seconds (user + system) from ``/proc``; None where that is not there."""
    if native_id is None:
        return None
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _line(peer: subprocess.Popen[str], deadline: float) -> dict[str, Any]:
    assert peer.stdout is not None
    line = peer.stdout.readline()  # the peer exits, closing it, if it cannot go on
    if not line or time.monotonic() > deadline:
        raise RuntimeError(f"the peer process stopped (exit {peer.poll()})")
    result: dict[str, Any] = json.loads(line)
    return result


def end_to_end(case: str, count: int, subscribers: int) -> dict[str, Any]:
    """One run through a real tower: rate and CPU per beacon (see the module's doc)."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    tower = Tower(TowerAddress("127.0.0.1", 0), context=ctx).start()
    peer = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.tower_relay", "--peer", case]
        + [tower.address.sub, tower.address.pub, str(count), str(subscribers)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert peer.stdin is not None
    deadline = time.monotonic() + WAIT_S
    try:
        _line(peer, deadline)  # ready: every subscriber has heard a probe through the tower
        tid = tower._thread.native_id
        before = tower.relayed
        cpu0, thread0 = process_cpu_s(), thread_cpu_s(tid)
        started = time.perf_counter()
        peer.stdin.write("go\n")
        peer.stdin.flush()
        while tower.relayed - before < count:
            if time.monotonic() > deadline or not tower.running:
                raise RuntimeError(f"{tower.relayed - before} of {count} relayed in {WAIT_S} s")
            time.sleep(POLL_S)
        seconds = time.perf_counter() - started
        cpu, thread1 = process_cpu_s() - cpu0, thread_cpu_s(tid)
        peer.stdin.write("done\n")
        peer.stdin.flush()
        received = _line(peer, deadline)["received"]
        peer.wait(timeout=WAIT_S)
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()
        tower.stop()
        ctx.term()
    thread = None if thread0 is None or thread1 is None else thread1 - thread0
    per = cpu / count * 1e6
    thread_per = None if thread is None else thread / count * 1e6
    return {
        "case": case,
        "beacons": count,
        "messages_out_per_beacon": len(relay_messages(beacons(case, 1)[0], PEER)),
        "subscribers": [p.decode("utf-8", "replace") for p in subscriptions(subscribers)],
        "received": received,
        "malformed": tower.malformed,
        "seconds": round(seconds, 4),
        "beacons_per_s": round(count / seconds),
        "wall_us_per_beacon": round(seconds / count * 1e6, 2),
        "process_cpu_s": round(cpu, 4),
        "process_cpu_us_per_beacon": round(per, 2),
        "tower_thread_cpu_s": None if thread is None else round(thread, 4),
        "tower_thread_cpu_us_per_beacon": None if thread_per is None else round(thread_per, 2),
        "ratio_vs_300us": {
            "process_cpu": round(per / REFERENCE_US, 4),
            "tower_thread_cpu": None if thread_per is None else round(thread_per / REFERENCE_US, 4),
        },
    }


def run_peer(case: str, sub_endpoint: str, pub_endpoint: str, count: int, subscribers: int) -> None:
    """The peer process: subscribers on the tower's XPUB, a sender on its XSUB. Prints
    ``{"ready": true}`` once every subscriber has heard a probe, sends ``count`` beacons of
    ``case`` on ``go``, and on ``done`` prints what each subscriber received after the probes."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    prefixes = subscriptions(subscribers)
    subs = []
    for prefix in prefixes:
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.RCVHWM, 0)
        s.setsockopt(zmq.SUBSCRIBE, prefix)
        s.connect(pub_endpoint)
        subs.append(s)
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.SNDHWM, 0)  # never drop before the tower: it sets the pace
    pub.connect(sub_endpoint)
    # a probe every 50 ms (an interest beacon naming every subscribed topic, and a node beacon:
    # one reaches B, A and each topic) until each subscriber heard one: subscriptions are set up
    probe_topics = tuple(topic(i) for i in range(max(1, subscribers - 2)))
    probe = wbeacon.NodeBeacon(f"{DISTINCT + 1:032X}", "127.0.0.1", 20000)
    probe_id = probe.node_id.encode()  # beacons() names nodes 1..DISTINCT
    heard = [False] * len(subs)
    poller = zmq.Poller()
    for s in subs:
        poller.register(s, zmq.POLLIN)
    deadline = time.monotonic() + WAIT_S
    while not all(heard) and time.monotonic() < deadline:
        pub.send_multipart(winterest.InterestBeacon(probe, probe_topics).encode())
        pub.send_multipart(probe.encode())
        time.sleep(0.05)
        for i, s in enumerate(subs):
            while s.poll(0):
                s.recv_multipart()
                heard[i] = True
    if not all(heard):
        sys.exit(1)
    time.sleep(0.2)  # the last probes' copies
    for s in subs:
        while s.poll(0):
            s.recv_multipart()
    print(json.dumps({"ready": True}), flush=True)
    received = [0] * len(subs)
    stop = threading.Event()

    def drain() -> None:  # the subscribers, read as they arrive (their counts: received)
        while not stop.is_set():
            poller.poll(100)
            for i, s in enumerate(subs):
                while True:
                    try:
                        frames = s.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    if frames[1] != probe_id:  # a late probe's copy is not counted
                        received[i] += 1

    if sys.stdin.readline().strip() != "go":
        sys.exit(1)
    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    batch = beacons(case)
    for i in range(count):
        pub.send_multipart(batch[i % len(batch)])
    sys.stdin.readline()  # done: every beacon relayed
    time.sleep(0.3)  # the last copies in flight
    stop.set()
    reader.join()
    print(
        json.dumps({"received": dict(zip([p.decode() for p in prefixes], received, strict=True))})
    )
    for s in [*subs, pub]:
        s.close(0)
    ctx.term()


def print_table(report: dict[str, Any]) -> None:
    err = sys.stderr
    print(f"{'relay_messages (pure)':<22} {'out':>4} {'us best':>9} {'us median':>10} "
          f"{'/300 us':>8}", file=err)  # fmt: skip
    for r in report["pure"]:
        print(f"{r['case']:<22} {r['messages_out']:>4} {r['us_best']:>9.2f} "
              f"{r['us_median']:>10.2f} {r['ratio_vs_300us']:>8.4f}", file=err)  # fmt: skip
    print(f"\n{'through a Tower':<22} {'beacons/s':>10} {'wall us':>8} {'proc CPU us':>12} "
          f"{'/300 us':>8} {'thread CPU us':>14} {'/300 us':>8}", file=err)  # fmt: skip
    for r in report["end_to_end"]:
        thread = r["tower_thread_cpu_us_per_beacon"]
        ratio = r["ratio_vs_300us"]["tower_thread_cpu"]
        print(
            f"{r['case']:<22} {r['beacons_per_s']:>10} {r['wall_us_per_beacon']:>8.2f} "
            f"{r['process_cpu_us_per_beacon']:>12.2f} {r['ratio_vs_300us']['process_cpu']:>8.4f} "
            f"{'-' if thread is None else f'{thread:.2f}':>14} "
            f"{'-' if ratio is None else f'{ratio:.4f}':>8}",
            file=err,
        )
    print(f"load average {report['load_avg_start']} -> {report['load_avg_end']}", file=err)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="pure calls per repeat")
    parser.add_argument("--repeat", type=int, default=5, help="pure repeats")
    parser.add_argument("--beacons", type=int, default=20_000, help="beacons sent end to end")
    parser.add_argument("--subscribers", type=int, default=4, help="SUB sockets on the tower")
    parser.add_argument("--out", type=Path, help="JSON report (default: benchmarks/results)")
    parser.add_argument("--peer", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.peer:
        case, sub, pub, count, subscribers = args.peer
        run_peer(case, sub, pub, int(count), int(subscribers))
        return
    if min(args.calls, args.repeat, args.beacons, args.subscribers) < 1:
        parser.error("--calls, --repeat, --beacons and --subscribers must be 1 or more")
    load_start = os.getloadavg()
    started = time.perf_counter()
    pure = [time_pure(case, args.calls, args.repeat) for case in PURE_CASES]
    e2e = [end_to_end(case, args.beacons, args.subscribers) for case in END_TO_END_CASES]
    report = {
        "benchmark": "tower_relay",
        "python": platform.python_version(),
        "zmq": zmq.zmq_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "args": {k: v for k, v in vars(args).items() if k not in ("out", "peer")},
        "reference_us": REFERENCE_US,
        "cpu_measure": "process CPU: resource.getrusage(RUSAGE_SELF), user + system, the "
        "tower the only busy thread (senders and subscribers in a peer process); tower "
        "thread CPU: /proc/self/task/TID/stat",
        "pure": pure,
        "end_to_end": e2e,
        "wall_s": round(time.perf_counter() - started, 2),
        "load_avg_start": [round(x, 2) for x in load_start],
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
    }
    print_table(report)
    print(json.dumps(report, indent=2))
    out = args.out
    if out is None:
        RESULTS.mkdir(exist_ok=True)
        out = RESULTS / f"tower-relay-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"JSON: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
