"""A worker process of ``benchmarks.scale``: several idle nodes in one process, and what
their discovery logged.

    python -m benchmarks.scale_nodes --tower HOST:PORT --dir DIR
                                     [--nodes producer:TOPIC,consumer:TOPIC,store:,...]
                                     [--no-metadata]

Starts the nodes through the library API (``Producer``, ``Consumer``, ``Store``), raises
the open-file limit as the commands do, prints ``{"ready": ...}`` on stdout once every node
has started, then answers each ``stats`` line on stdin with one JSON line: for each node
(keyed by its IO thread's name), the peers it holds and how many peers its discovery took
in (``new``), let expire (``expired``), took back within their grace (``returned``) and
refused (``refused``) so far; ``events`` answers with the expiries and the worker's stalls
since the last ``events`` (each expiry's wall time, node and endpoint; each time the
worker's watch thread woke more than ``STALL`` s late, a whole process held up: the GIL, the
CPU), so a run that churns says when and whether its processes stalled. The counts come
from discovery's own log lines (``discovery.peer.new`` / ``.expired`` / ``.returned`` / ``.refused``, by
the thread that logged them): the API exposes a node's peer count only as the
``dafka_peers`` gauge of an HTTP metrics server, which would add a listening socket and a
thread to every node measured. ``stop`` (or the end of stdin) closes the nodes and exits.
With no nodes it is the baseline: the same interpreter, imports and answers, no node.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any

from dafka import Consumer, Producer, Store
from dafka.config import MESHES, NodeConfig, parse_towers
from dafka.io.fd_limit import raise_fd_limit

EVENTS = {
    "discovery.peer.new": "new",
    "discovery.peer.expired": "expired",
    "discovery.peer.returned": "returned",
    "discovery.peer.refused": "refused",
}
KEPT = 5000
"""Most expiries and stalls a worker keeps between two ``events`` (the oldest go first)."""
WATCH = 0.25
"""How often the watch thread wakes (4 wake-ups a second: the baseline worker has it too)."""
STALL = 1.0
"""A wake-up this much later than asked is a stall."""


class PeerEvents(logging.Handler):
    """Counts discovery's peer events by the name of the thread that logged them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts: dict[str, Counter[str]] = {}
        self.expiries: deque[tuple[float, str, str]] = deque(maxlen=KEPT)
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.msg if isinstance(record.msg, str) else ""
        event = EVENTS.get(msg.split(" ", 1)[0])
        if event is None:
            return
        with self._guard:
            self.counts.setdefault(record.threadName or "?", Counter())[event] += 1
            if event == "expired":
                endpoint = record.args[0] if isinstance(record.args, tuple) else "?"
                self.expiries.append((record.created, record.threadName or "?", str(endpoint)))

    def take_expiries(self) -> list[tuple[float, str, str]]:
        with self._guard:
            out = list(self.expiries)
            self.expiries.clear()
            return out

    def snapshot(self, names: list[str]) -> dict[str, dict[str, int]]:
        with self._guard:
            out = {}
            for name in names:
                c = self.counts.get(name, Counter())
                out[name] = {
                    # a peer back within its grace is logged "returned", not "new"
                    "peers": c["new"] + c["returned"] - c["expired"],
                    "new": c["new"],
                    "expired": c["expired"],
                    "returned": c["returned"],
                    "refused": c["refused"],
                }
            return out


class Watch(threading.Thread):
    """Wakes every :data:`WATCH` s and keeps when it woke :data:`STALL` s or more late."""

    def __init__(self) -> None:
        super().__init__(name="scale-watch", daemon=True)
        self.stalls: deque[tuple[float, float]] = deque(maxlen=KEPT)
        self._guard = threading.Lock()

    def run(self) -> None:
        due = time.monotonic() + WATCH
        while True:
            time.sleep(max(0.0, due - time.monotonic()))
            late = time.monotonic() - due
            if late >= STALL:
                with self._guard:
                    self.stalls.append((time.time() - late, late))
            due = max(due + WATCH, time.monotonic())

    def take(self) -> list[tuple[float, float]]:
        with self._guard:
            out = list(self.stalls)
            self.stalls.clear()
            return out


def start_node(
    kind: str, topic: str, tower: str, directory: Path, metadata: bool | None, mesh: str
) -> Any:
    node = NodeConfig(towers=parse_towers(tower), mesh=mesh)
    if kind == "producer":
        return Producer(topic, node=node, metadata=metadata)
    if kind == "consumer":
        return Consumer([topic], node=node, metadata=metadata)
    if kind == "store":
        return Store(directory, node=node, metadata=metadata).start()
    raise SystemExit(f"unknown node kind {kind!r}")


def close_node(node: Any) -> None:
    if isinstance(node, Store):
        node.stop()
    elif isinstance(node, Producer):
        node.close(timeout=1)
    else:
        node.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tower", required=True)
    parser.add_argument("--dir", required=True, type=Path)
    parser.add_argument("--nodes", default="", help="KIND:TOPIC,... (store: takes no topic)")
    parser.add_argument("--no-metadata", action="store_true")
    parser.add_argument("--mesh", default="topics", choices=MESHES)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    events = PeerEvents()
    discovery = logging.getLogger("dafka.core.discovery")
    discovery.setLevel(logging.INFO)
    discovery.addHandler(events)
    limit = raise_fd_limit()
    watch = Watch()
    watch.start()
    metadata = False if args.no_metadata else None
    nodes: list[Any] = []
    names: list[str] = []
    for i, spec in enumerate(s for s in args.nodes.split(",") if s):
        kind, _, topic = spec.partition(":")
        node = start_node(kind, topic, args.tower, args.dir / f"store-{i}", metadata, args.mesh)
        nodes.append(node)
        names.append(f"dafka-{kind}-{node.node_id[:8]}")  # its IO thread's name
    print(json.dumps({"ready": len(nodes), "fd_limit": limit.after}), flush=True)
    try:
        for line in sys.stdin:
            if line.strip() == "events":
                taken = {"expired": events.take_expiries(), "stalls": watch.take()}
                print(json.dumps(taken), flush=True)
                continue
            if line.strip() != "stats":
                break
            print(json.dumps(events.snapshot(names)), flush=True)
    finally:
        for node in nodes:
            close_node(node)


if __name__ == "__main__":
    main()
