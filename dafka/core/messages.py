"""The messages node cores take and return, whatever the wire profile.

Cores never see frames. A :class:`~dafka.wire.profiles.Profile` in the IO shell
decodes frames into these messages and encodes the cores' messages into frames
(and signs what the ``signed`` profile signs), so there is one node logic for
both profiles (DESIGN §3).

A RECORD is a *batch*: offsets ``offset .. offset + count - 1`` of one
partition, carried as one opaque ``content``:

* under ``rfc46`` a batch of one unsigned record, and ``content`` is that
  record's value;
* under ``signed`` the producer's signed batch blob (``docs/wire.md`` §9.3),
  which no core trusts before the profile has verified it
  (:meth:`~dafka.wire.profiles.Profile.open_records`).

Field names and order follow the rfc46 dataclasses, so an rfc46 message and its
core message read alike. FETCH, GET-HEADS and the two HELLOs are the same in
both profiles and are rfc46's dataclasses, re-exported here.

``proof`` fields carry the profile's signed original (a ``signed.Head`` or
``signed.Ack``) so that a core can have the profile verify it, and a store can
pass a producer's signed HEAD on verbatim. They take no part in equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..frozen import quick_init
from ..wire.rfc46 import ConsumerHello, Fetch, GetHeads, StoreHello, Subscription

__all__ = [
    "Ack",
    "ConsumerHello",
    "DirectHead",
    "DirectRecord",
    "Fetch",
    "GetHeads",
    "Head",
    "Message",
    "Oversized",
    "Record",
    "StoreHello",
    "Subscription",
]


@quick_init  # one per record under rfc46
@dataclass(frozen=True, slots=True)
class Record:
    """A batch published live on ``topic`` by the producer owning ``partition``."""

    topic: str
    partition: str
    offset: int
    """The batch's first offset."""
    content: bytes = field(repr=False)
    """rfc46: the record's value; signed: the batch blob (unverified until opened)."""
    count: int = 1

    @property
    def last_offset(self) -> int:
        return self.offset + self.count - 1


@quick_init  # one per record under rfc46
@dataclass(frozen=True, slots=True)
class DirectRecord:
    """A batch sent to one node (``recipient``) in answer to a FETCH."""

    recipient: str
    topic: str
    partition: str
    offset: int
    content: bytes = field(repr=False)
    count: int = 1

    @property
    def last_offset(self) -> int:
        return self.offset + self.count - 1


@dataclass(frozen=True, slots=True)
class Head:
    """A producer's last published offset of ``partition``; ``proof`` its signed form, if any."""

    topic: str
    partition: str
    offset: int
    proof: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class DirectHead:
    """A store tells one consumer the last offset it holds of a partition.

    ``head`` is the newest producer HEAD the store has verified for it (signed
    profile), passed on so the consumer can check it itself. ``tail`` is the first
    offset the store still holds when retention deleted records (signed profile;
    ``None``: not told); ``tail_proof`` its form signed by the store, if any.
    """

    recipient: str
    topic: str
    partition: str
    offset: int
    head: Head | None = field(default=None, compare=False)
    tail: int | None = None
    tail_proof: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Ack:
    """A store holds ``partition`` of ``topic`` durably up to ``offset`` (cumulative).

    ``store`` is the acknowledging store's node ID when the profile can say
    (signed: derived from the key that signed it; rfc46: ``None``, anonymous).
    """

    partition: str
    topic: str
    offset: int
    store: str | None = None
    proof: object = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Oversized:
    """A RECORD or DIRECT-RECORD (``recipient`` set) whose content is over the node's
    ``max_message_size``: the IO shell read its header and dropped the content, so the
    core can refuse that offset knowingly (a C producer has no size cap)."""

    recipient: str | None
    topic: str
    partition: str
    offset: int
    size: int
    """Bytes of the content that was dropped."""


Message = (
    Record
    | DirectRecord
    | Fetch
    | Ack
    | Head
    | DirectHead
    | GetHeads
    | ConsumerHello
    | StoreHello
    | Oversized
)
