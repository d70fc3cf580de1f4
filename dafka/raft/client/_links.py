"""The sockets of a :class:`~dafka.raft.client.RaftClient` (a part it holds as ``_links``).

One DEALER per peer the client talks to (:meth:`ClientLinks.connect_only`: closing a
DEALER is a disconnect that takes effect at once), sends to the leader or round robin
over the connected peers, answers that arrived for another call put aside for it (the
stash), and a socket of its own per peer for the calls to one given peer
(:meth:`~ClientLinks.direct_call`). No Raft logic: which peer leads, and what an answer
means, is the client's.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import zmq

from ...errors import DafkaTimeout, TooManyFrames
from ...io.multipart import recv_bounded
from ..peer import CLIENT_ANSWER_FRAMES, CLIENT_FRAME_BYTES, ClientCurve, send_frames

__all__ = ["ClientLinks"]

log = logging.getLogger(__name__)


class ClientLinks:
    """A client's DEALERs and what arrived on them; see the module docstring."""

    def __init__(self, context: zmq.Context[Any] | None, curve: ClientCurve | None) -> None:
        self._curve = curve
        self._own_context = context is None
        self._ctx = context or zmq.Context()
        self._poller = zmq.Poller()
        self._socks: dict[str, zmq.Socket[Any]] = {}
        self._url_of: dict[zmq.Socket[Any], str] = {}
        self._rr = 0
        self._stash: list[tuple[str, list[bytes]]] = []
        self._direct: dict[str, zmq.Socket[Any]] = {}

    def close(self) -> None:
        self.connect_only(set())
        for sock in self._direct.values():
            sock.close(0)
        if self._own_context:
            self._ctx.term()

    @property
    def connected(self) -> bool:
        """Whether a DEALER to some peer is open (not: whether it is connected yet)."""
        return bool(self._socks)

    def wait(self, seconds: float) -> None:
        """Receive for ``seconds``, putting everything aside for the calls it answers."""
        self._stash.extend(self.receive(seconds, stash=False))

    def _open(self, url: str) -> zmq.Socket[Any]:
        sock = self._ctx.socket(zmq.DEALER)
        if self._curve is not None:
            self._curve.apply(sock, url)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, CLIENT_FRAME_BYTES)
        sock.setsockopt(zmq.IMMEDIATE, 1)  # no queueing for a peer we are not connected to
        sock.setsockopt(zmq.RECONNECT_IVL, 50)
        sock.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
        sock.connect(url)
        self._poller.register(sock, zmq.POLLIN)
        self._url_of[sock] = url
        return sock

    def connect_only(self, urls: set[str]) -> None:
        """Talk to exactly these peers. One DEALER per peer: closing it is a disconnect
        that takes effect at once (a shared DEALER's ``disconnect`` with
        ``ZMQ_IMMEDIATE`` lets the next message slip into the dying pipe, lost)."""
        for url in [u for u in self._socks if u not in urls]:
            sock = self._socks.pop(url)
            self._poller.unregister(sock)
            del self._url_of[sock]
            sock.close(0)
        for url in sorted(urls):
            if url not in self._socks:
                self._socks[url] = self._open(url)

    def send_now(self, frames: list[bytes]) -> str | None:
        """Send to the leader, or (no leader known) to the next connected peer in turn;
        the URL it went to, ``None`` if no peer is connected yet."""
        socks = self._socks
        if len(socks) == 1:  # the leader (or the one peer we know): no turn to take
            for url, sock in socks.items():
                try:
                    send_frames(sock, frames)
                    return url
                except zmq.Again:
                    return None
        urls = list(socks)
        if not urls:
            return None
        self._rr += 1
        for k in range(len(urls)):
            url = urls[(self._rr + k) % len(urls)]
            try:
                send_frames(self._socks[url], frames)
                return url
            except zmq.Again:
                continue
        return None

    def send_when_ready(self, frames: list[bytes], deadline: float) -> str | None:
        """:meth:`send_now` once a peer is connected; ``None`` if none was by ``deadline``."""
        while (url := self.send_now(frames)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.wait(min(left, 0.005))
        return url

    def receive(self, wait: float, stash: bool = True) -> list[tuple[str, list[bytes]]]:
        """Everything that arrived (after waiting up to ``wait`` seconds for the first),
        starting with what was put aside before (unless ``stash`` is false)."""
        if stash and self._stash:
            got, self._stash = self._stash, []
            wait = 0
        else:
            got = []
        if not self._socks:
            if wait > 0:
                time.sleep(wait)
            return got
        for sock, _ in self._poller.poll(int(wait * 1000) + (1 if wait > 0 else 0)):
            url = self._url_of[sock]
            while True:
                try:
                    got.append((url, recv_bounded(sock, CLIENT_ANSWER_FRAMES)))
                except zmq.Again:
                    break
                except TooManyFrames as exc:
                    log.debug("raft.client.malformed url=%s error=%s", url, exc)
        return got

    def recv_for(self, key: bytes, deadline: float) -> tuple[str, list[bytes]] | None:
        """The next message whose first frame is ``key`` (others are stashed)."""
        for k, (_, frames) in enumerate(self._stash):
            if frames and frames[0] == key:
                return self._stash.pop(k)
        while (left := deadline - time.monotonic()) > 0:
            found = None
            for url, frames in self.receive(left, stash=False):
                if found is None and frames and frames[0] == key:
                    found = (url, frames)
                else:
                    self._stash.append((url, frames))
            if len(self._stash) > 10_000:
                del self._stash[:5_000]
            if found is not None:
                return found
        return None

    def direct_call(self, url: str, frames: list[bytes], deadline: float) -> list[bytes]:
        """One request to one given peer on a socket of its own; the answer's frames."""
        sock = self._direct.get(url)
        if sock is None:
            sock = self._direct[url] = self._ctx.socket(zmq.DEALER)
            if self._curve is not None:
                self._curve.apply(sock, url)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.MAXMSGSIZE, CLIENT_FRAME_BYTES)
            sock.connect(url)
        sock.send_multipart(frames)
        while (left := deadline - time.monotonic()) > 0:
            if sock.poll(int(left * 1000) + 1, zmq.POLLIN):
                try:
                    answer = recv_bounded(sock, CLIENT_ANSWER_FRAMES, 0)
                except TooManyFrames as exc:
                    log.debug("raft.client.malformed url=%s error=%s", url, exc)
                    continue
                if answer and answer[0] == frames[0]:
                    return answer
        # drop what we queued for a peer that does not answer, or it arrives later
        sock.close(0)
        del self._direct[url]
        raise DafkaTimeout(f"no answer from {url}")
