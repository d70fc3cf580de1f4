"""A store's query endpoint over an in-memory storage, in a thread of the test process.

For Spark tests of what no producer of this version writes yet, or ever should (a
signed lie): the test puts the blobs in, and the Spark source reads them through the
``stores`` option exactly as from a store (``dafka.query.server.serve``, the store's own
request logic)."""

from __future__ import annotations

import threading

import zmq

from dafka.errors import WireError
from dafka.query import protocol as qp
from dafka.query.server import serve
from dafka.storage.base import StoredBatch
from dafka.storage.memory import MemoryStorage


class FakeStore:
    def __init__(self) -> None:
        self.storage = MemoryStorage()
        self._lock = threading.Lock()
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        port = self._sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def put(self, topic: str, partition: str, blobs: list[tuple[int, int, bytes]]) -> None:
        with self._lock:
            self.storage.append([StoredBatch(topic, partition, f, last, b) for f, last, b in blobs])

    def _run(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(50):
                continue
            peer, *body = self._sock.recv_multipart()
            try:
                request = qp.decode_request(body)
            except WireError:
                continue
            with self._lock:
                reply = serve(self.storage, request, profile="signed")
            self._sock.send_multipart([peer, *qp.encode_reply(reply)])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close(0)
        self._ctx.term()
