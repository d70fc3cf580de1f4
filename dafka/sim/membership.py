"""Who should hear whom: the peers each live node of a simulation should hold."""

from __future__ import annotations

from .model import SimNode


class Membership:
    """The live nodes by what they announce, and each one's expected peers (cached until
    a node starts or leaves): every live node for a node announcing ``*``, else the nodes
    announcing ``*`` and those sharing one of its topics, itself excepted. That is what
    the relay prefixes bring it (``dafka.wire.interest``), so it is what its discovery
    should hold, up to ``max_peers``."""

    def __init__(self, max_peers: int) -> None:
        self.max_peers = max_peers
        self._members: dict[str, set[str]] = {}
        """Topic -> the endpoints of the live nodes announcing it."""
        self._everyone: set[str] = set()
        """The endpoints of the live nodes announcing ``*`` (heard by every node)."""
        self._all: set[str] = set()
        self._version = 0
        self._expected: dict[int, tuple[int, frozenset[str]]] = {}

    def add(self, node: SimNode) -> None:
        self._all.add(node.endpoint)
        if node.topics is None:
            self._everyone.add(node.endpoint)
        else:
            for topic in node.topics:
                self._members.setdefault(topic, set()).add(node.endpoint)
        self._version += 1

    def remove(self, node: SimNode) -> None:
        self._all.discard(node.endpoint)
        self._everyone.discard(node.endpoint)
        for topic in node.topics or ():
            self._members[topic].discard(node.endpoint)
        self._version += 1

    def expected(self, node: SimNode) -> frozenset[str]:
        """The endpoints of the live nodes ``node`` should hold as peers."""
        cached = self._expected.get(node.index)
        if cached is not None and cached[0] == self._version:
            return cached[1]
        if node.topics is None:
            found = set(self._all)
        else:
            found = set(self._everyone)
            for topic in node.topics:
                found |= self._members.get(topic, set())
        found.discard(node.endpoint)
        expected = frozenset(found)
        self._expected[node.index] = (self._version, expected)
        return expected

    def saturated(self, node: SimNode) -> bool:
        """Whether ``node`` should hold more peers than ``max_peers`` allows."""
        return len(self.expected(node)) > self.max_peers

    def holds(self, node: SimNode) -> bool:
        """Whether ``node``'s peers are exactly those it should hold (``max_peers`` of
        them, all expected, when it should hold more)."""
        expected = self.expected(node)
        peers = node.discovery.peers
        want = min(len(expected), self.max_peers)
        return len(peers) == want and all(p in expected for p in peers)
