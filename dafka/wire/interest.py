"""Interest beacons: a node says which topics it uses, and towers relay it by topic.

The reference's discovery is a full mesh: every node hears every beacon and connects to
every node (issue 39 measured 2N(N+1) TCP sockets and a tower saturated near 600 nodes).
Under the ``signed`` profile a node instead sends, in place of its node beacon, an
*interest beacon* (node → tower, 6 frames)::

    "I" | node ID | host | port | Ed25519 public key or empty | topics

``topics`` is ``*`` (a node every node may need: a store, or one configured for the full
mesh) or up to :data:`MAX_INTEREST_TOPICS` topic names joined by NUL, at most
:data:`MAX_TOPICS_BYTES` bytes in all (empty: none yet; only the full view hears of it). A tower relays one interest beacon as:

* the tower beacon of its node (``"B" | node ID | endpoint [| key]``), which the nodes that
  keep the full view (stores, full-mesh and rfc46 nodes) subscribe to;
* for ``*``: the same frames under ``"A"``, which every node subscribes to;
* else once per topic under ``"T" topic NUL``: a node subscribes to the prefix of each topic
  it uses, so libzmq's prefix filter sends it only the beacons of the nodes sharing one
  (the NUL ends the topic: ``T hello NUL`` never matches ``T hello2 NUL``).

A node therefore hears, and connects to, the stores and the nodes sharing its topics, not
the cluster. Interest beacons are unsigned hints like node beacons: whoever can reach a
tower may claim any topics, which makes the nodes using them connect to the endpoint named
(as a node beacon made every node do). So the decoder bounds what one beacon costs a tower
(at most 64 distinct, valid topic names, one relayed message each), and the endpoint and
key are checked exactly as a node beacon's (:mod:`dafka.wire.beacon`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..errors import InvalidTopic, WireError
from ..ids import check_topic
from .beacon import ANY, BEACON, SCOPED, NodeBeacon, TowerBeacon, decode_node_beacon, endpoint_for

INTEREST = b"I"
ALL_TOPICS = b"*"
MAX_INTEREST_TOPICS = 64
"""Most topics one interest beacon names; a node using more announces ``*``."""
MAX_TOPICS_BYTES = 4000
"""Most bytes of the topics frame (a tower takes frames of at most 4 KiB)."""
INTEREST_FRAMES = 6


def scoped_prefix(topic: str) -> bytes:
    """The relay prefix of ``topic``'s beacons, which a node using it subscribes to."""
    return SCOPED + topic.encode("utf-8", "surrogatepass") + b"\0"


def relay_prefixes(interest: tuple[str, ...] | None) -> frozenset[bytes]:
    """What a node announcing ``interest`` subscribes its beacon SUB to: every beacon
    (``B``) for all topics, else those of the nodes every node needs (``A``) and each
    topic's prefix."""
    if interest is None:
        return frozenset((BEACON,))
    return frozenset((ANY, *(scoped_prefix(t) for t in interest)))


@dataclass(frozen=True, slots=True)
class InterestBeacon:
    node: NodeBeacon
    topics: tuple[str, ...] | None
    """The topics the node uses, sorted and distinct; None: every topic (``*``)."""

    def encode(self) -> list[bytes]:
        """The 6 frames; raises :class:`WireError` for what the decoder would refuse."""
        frames = self.node.encode()
        key = frames[4] if len(frames) == 5 else b""
        return [INTEREST, *frames[1:4], key, encode_topics(self.topics)]


def interest_of(topics: Collection[str] | None) -> tuple[str, ...] | None:
    """What a node using ``topics`` (None: all) announces: its distinct topics, sorted,
    or None (``*``) when they do not fit one beacon."""
    if topics is None:
        return None
    distinct = tuple(sorted(set(topics)))
    if len(distinct) > MAX_INTEREST_TOPICS:
        return None
    size = sum(len(t.encode("utf-8", "surrogatepass")) + 1 for t in distinct)
    if size - 1 > MAX_TOPICS_BYTES:
        return None
    return distinct


def encode_topics(topics: tuple[str, ...] | None) -> bytes:
    if topics is None:
        return ALL_TOPICS
    frame = b"\0".join(t.encode("utf-8", "surrogatepass") for t in topics)
    # guard: interest-topic-named-star-not-all
    if frame == ALL_TOPICS:  # the one topic "*", not every topic: named twice, read once
        frame = ALL_TOPICS + b"\0" + ALL_TOPICS
    decode_topics(frame)  # what the decoder would refuse is refused here
    return frame


def decode_topics(frame: bytes) -> tuple[str, ...] | None:
    """A beacon's topics frame: None for ``*``, else its distinct, valid topic names."""
    frame = bytes(frame)
    if frame == ALL_TOPICS:
        return None
    if not frame:
        return ()  # none yet: a producer before its first record, a consumer before a topic
    # guard: interest-topics-bounded
    if len(frame) > MAX_TOPICS_BYTES:
        raise WireError(f"an interest beacon's topics are over {MAX_TOPICS_BYTES} bytes")
    names = frame.split(b"\0")
    if len(names) > MAX_INTEREST_TOPICS:
        raise WireError(f"an interest beacon names over {MAX_INTEREST_TOPICS} topics")
    topics: list[str] = []
    for raw in names:
        try:
            topics.append(check_topic(raw.decode("utf-8")))
        except (UnicodeDecodeError, InvalidTopic) as exc:
            raise WireError("an interest beacon names an invalid topic") from exc
    # guard: interest-topics-distinct
    return tuple(sorted(set(topics)))


def decode_interest_beacon(frames: Sequence[bytes]) -> InterestBeacon:
    if len(frames) != INTEREST_FRAMES or bytes(frames[0]) != INTEREST:
        raise WireError("an interest beacon has 6 frames starting with 'I'")
    topics = decode_topics(frames[5])
    node_frames = [BEACON, *frames[1:4]]
    if frames[4]:
        node_frames.append(frames[4])
    return InterestBeacon(decode_node_beacon(node_frames), topics)


def relay_interest(beacon: InterestBeacon, peer_address: str | None) -> list[list[bytes]]:
    """What a tower relays for one interest beacon: its tower beacon under ``B`` (the
    full view), then under ``A`` (``*``) or under each topic's prefix."""
    node = beacon.node
    relayed = TowerBeacon(node.node_id, endpoint_for(node, peer_address), node.public_key).encode()
    rest = relayed[1:]
    if beacon.topics is None:
        return [relayed, [ANY, *rest]]
    return [relayed, *([scoped_prefix(topic), *rest] for topic in beacon.topics)]
