"""Which peers speak Dafka's Raft extensions, learned by asking them (no IO here).

The extensions (pre-vote, leader transfer with TimeoutNow, the ``RI``/``RL`` reads,
learners) are not in the ØMQ RAFT protocol. A reference peer
(the npm ``zmq-raft`` server) ignores what it does not know: it takes our pre-vote's
RequestVote as a real vote (and our term), and never answers TimeoutNow or the reads.
So a peer uses an extension only with peers that said they speak it.

Asking: the ClientDispatch type ``XF`` (request: request id, ``XF``, cluster). Our
peers answer as any dispatch (request id, status 1, JSON meta = the list of
:data:`FEATURES` spoken); a reference peer hands unknown types to its state machine,
which does not answer. A peer shell asks every other peer (on its DEALER, with a
request id starting with :data:`PROBE_PREFIX`) every :data:`PROBE_EVERY` seconds
until it answers (every ten times that after :data:`SILENT_AFTER` requests sent while
connected, when it logs ``raft.ext.fallback``; ``raft.ext.speaks`` if it answers after
all); a peer that has not answered is *plain*; with plain peers the core falls back:

* pre-vote: campaigns use real votes while any other voter is plain;
* leader transfer to a plain peer: refused (``ConfigError``);
* learners: a configuration change with learners is refused (ARGUMENT_ERROR) while
  any member is plain (a reference peer cannot read our learner config format);
* snapshots: not an extension; streamed to a plain peer as to any follower behind the
  compaction (InstallSnapshot is in the protocol; a reference peer stores the bytes as
  they are and serves them back as they are: ``docs/raft.md`` §4). ``"snapshot"`` stays
  in :data:`FEATURES` for peers of earlier versions, which refused plain peers one.

The client uses the same ``XF`` request to tell "this leader does not speak the read
extension" from "no leader" (:meth:`dafka.raft.client.RaftClient.read`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...errors import DafkaError, DafkaTimeout, ExtensionUnsupported
from ..codec import RaftWireError, decode_json, decode_uint

__all__ = [
    "DISPATCH_FEATURES",
    "FEATURES",
    "PLAIN",
    "PROBE_EVERY",
    "PROBE_PREFIX",
    "SILENT_AFTER",
    "Extensions",
    "decode_features",
    "read_unsupported",
]

DISPATCH_FEATURES = b"XF"
"""ClientDispatch type asking a peer which Dafka extensions it speaks."""
FEATURES = ("pre-vote", "timeout-now", "read-index", "learners", "snapshot")
PROBE_EVERY = 0.5
PLAIN = "not known to speak Dafka's Raft extensions (a ØMQ RAFT reference peer?)"
PROBE_PREFIX = b"dafka-xf"
SILENT_AFTER = 6
_U32 = struct.Struct(">I")


def decode_features(frames: Sequence[bytes]) -> frozenset[str]:
    """The features named in an ``XF`` answer (request id, status, JSON list)."""
    if len(frames) < 3 or decode_uint(frames[1]) != 1:
        raise RaftWireError("not an XF answer")
    names = decode_json(frames[2])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise RaftWireError("XF answer meta is not a list of names")
    return frozenset(names)


class Extensions:
    """What one peer has learned about the others (see the module docstring)."""

    def __init__(self, cluster: bytes) -> None:
        self.cluster = cluster
        self.known: dict[str, frozenset[str]] = {}
        self._due: dict[str, float] = {}
        self._asked: dict[str, int] = {}
        self._count = 0
        self.events: list[tuple[str, str]] = []
        """``("fallback", peer)``: it stayed silent to :data:`SILENT_AFTER` requests it
        was connected for; ``("speaks", peer)``: it answered after all (to log)."""

    def probe(
        self, peers: Iterable[str], now: float, send: Callable[[str, list[bytes]], bool]
    ) -> None:
        """Send the ``XF`` requests due now; ``send`` says whether the peer was connected
        (a request to a peer not connected yet does not count as unanswered)."""
        for peer in peers:
            if peer in self.known or self._due.get(peer, 0.0) > now:
                continue
            asked = self._asked.get(peer, 0)
            self._due[peer] = now + (PROBE_EVERY if asked < SILENT_AFTER else 10 * PROBE_EVERY)
            self._count = (self._count + 1) & 0xFFFFFFFF
            if not send(
                peer, [PROBE_PREFIX + _U32.pack(self._count), DISPATCH_FEATURES, self.cluster]
            ):
                continue
            self._asked[peer] = asked + 1
            if asked + 1 == SILENT_AFTER:
                self.events.append(("fallback", peer))

    def on_answer(self, peer: str, frames: Sequence[bytes]) -> bool:
        """Take an answer received from ``peer``; false when it is not an ``XF`` answer."""
        if not frames or not bytes(frames[0]).startswith(PROBE_PREFIX):
            return False
        try:
            self.known[peer] = decode_features([bytes(f) for f in frames])
        except RaftWireError:
            return True
        if self._asked.pop(peer, 0) >= SILENT_AFTER:
            self.events.append(("speaks", peer))
        return True

    def plain(self, peers: Iterable[str]) -> frozenset[str]:
        """The ``peers`` not known to speak every one of :data:`FEATURES`."""
        every = frozenset(FEATURES)
        return frozenset(p for p in peers if not every <= self.known.get(p, frozenset()))


def read_unsupported(client: Any) -> ExtensionUnsupported | None:
    """After a linearizable read timed out on ``client`` (a RaftClient): the error to
    raise instead when the cluster has a leader that does not speak ``XF`` (so not
    ``RI`` either), else None (no leader: the timeout says it)."""
    try:
        state = client.request_config(timeout=1.0)
    except DafkaError:
        return None
    try:
        if "read-index" in client.features(state.leader_url, timeout=0.5):
            return None
    except DafkaTimeout:
        pass
    except DafkaError:
        return None
    return ExtensionUnsupported(
        f"the Raft leader {state.leader} ({state.leader_url}) does not speak Dafka's "
        "linearizable read (RI): it did not answer RI nor XF (a ØMQ RAFT reference peer?); "
        "reads need one of our peers leading"
    )
