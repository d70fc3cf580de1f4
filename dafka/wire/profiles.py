"""Wire profiles as objects: frames in and out of the one node logic.

The node cores (``dafka.core``) speak :mod:`dafka.core.messages`, whatever the
profile. A :class:`Profile` is a pure codec (no socket, and no clock but the one it is
given), below the cores, which seal and check with it; the IO shell decodes and encodes
with it. It

* decodes frames into core messages (:meth:`Profile.decode`), refusing the
  other profile's frames with :class:`OtherProfile`, so a node never mixes
  the profiles;
* encodes core messages into frames (:meth:`Profile.encode`), signing what the
  ``signed`` profile signs (HEADs as the producer, ACKs as the store) with the
  node's :class:`~dafka.security.identity.Identity`;
* verifies for the cores what they must not trust: a RECORD batch before a
  store keeps it (:meth:`Profile.check_records`) or a consumer delivers any of
  its records (:meth:`Profile.open_records`), a HEAD before anyone acts on it,
  an ACK before a producer counts it;
* seals a producer's queued records into batches (:meth:`Profile.seal`).

``rfc46`` (:class:`Rfc46Profile`) carries one unsigned record per RECORD and
verifies nothing: its ``check_*`` methods accept everything, as the reference
does. ``signed`` (:class:`SignedProfile`) is the default; see ``docs/wire.md``
§9 and §11.

Both profiles put the same command and topic first in frame 0, so ZeroMQ
prefix subscriptions are the same, and a node receives the other profile's
frames too: they differ in the version octet, and :meth:`Profile.decode`
drops them (the IO shell counts them apart from malformed input).

:func:`records_of` reads a stored batch of either profile (for the store's
query endpoint).
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Final, NamedTuple

from ..core import messages as m
from ..core.effects import PublishRecords
from ..errors import ConfigError, ProfileError, WireError
from ..security.identity import Identity
from ..storage.base import StoredBatch
from . import rfc46, signed
from .signed_batch import _BATCH_FIXED
from .signed_builder import RecordExtra, needs_rich, seal_rich_batches
from .signed_rich import (
    BATCH_FORMAT_V5,
    MAX_RAW_BYTES,
    Codec,
    DecompressionBomb,
    Header,
    RichRecords,
    RootMismatch,
    rich_layout,
)

log = logging.getLogger(__name__)

__all__ = [
    "PROFILE_NAMES",
    "Opened",
    "OtherProfile",
    "PayloadRefused",
    "RichOpened",
    "Profile",
    "Rfc46Profile",
    "SignedProfile",
    "make_profile",
    "open_stored",
    "records_of",
    "wall_ms",
]

PROFILE_NAMES: Final = ("signed", "rfc46")
"""Every profile a node can speak; the first is the default."""

DEFAULT_PROFILE: Final = "signed"


class RichOpened(NamedTuple):
    """What a verified format-5 batch adds to its keys and values (:data:`Opened`)."""

    offsets: list[int] | None
    """Each record's offset; ``None`` when consecutive from the batch's first (a
    compacted batch's are not: the records a store dropped leave holes)."""
    timestamps: list[float]
    """Each record's own time, seconds since the epoch."""
    headers: list[tuple[Header, ...]] | None
    """Each record's headers; ``None`` when no record has any."""
    raw_bytes: int
    """What the records take opened (decompressed): a held batch is counted by it."""


Opened = tuple[Sequence[bytes | None] | None, Sequence[bytes | None], int | None, RichOpened | None]
"""A verified batch's ``(keys or None when no record has one, values, timestamp_ms or None,
rich)``: ``rich`` is ``None`` for every format but 5 (values then are never ``None``)."""


class PayloadRefused(WireError):
    """A batch whose signature verified but whose records cannot be opened: ``reason``
    ``"bomb"`` (its decompressed size is over the bound), ``"root"`` (its records are not
    the ones the producer signed), ``"payload"`` (they do not parse or decompress) or
    ``"compacted"`` (a compacted form of a topic not known to be compacted)."""

    REASONS: ClassVar[tuple[str, ...]] = ("bomb", "root", "payload", "compacted")

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def wall_ms() -> int:
    """The wall clock in milliseconds: what a signed HEAD is stamped with by default."""
    return time.time_ns() // 1_000_000


class OtherProfile(WireError):
    """A frame of the other wire profile (its version octet): dropped, counted apart."""


def _version_of(frames: Sequence[bytes]) -> int | None:
    """The version octet of frame 0, if it has one."""
    if not frames:
        return None
    frame0 = frames[0]
    nul = frame0.find(b"\0", 1)
    if nul < 0 or nul + 1 >= len(frame0):
        return None
    return frame0[nul + 1]


class Profile:
    """One wire profile as the IO shell and the cores use it (see the module docstring)."""

    name: ClassVar[str]
    version: ClassVar[int]
    keys: ClassVar[bool]
    """Whether records may carry a key."""
    batched: ClassVar[bool]
    """Whether one RECORD carries many records (a sealed batch) or one."""
    heartbeats: ClassVar[bool] = False
    """Whether nodes send and subscribe to heartbeats on the data connections (``Y``,
    ``dafka.wire.signed.heartbeat``): signed only, the C reference knows none."""

    def decode(self, frames: Sequence[bytes]) -> m.Message:
        raise NotImplementedError

    def encode(self, msg: m.Message) -> list[bytes]:
        raise NotImplementedError

    def record_heads(self, effect: PublishRecords) -> list[bytes]:
        """Frame 0 of each message of a producer's :class:`PublishRecords` effect (one
        message per record), whose second frame is the record's value as it is
        (``effect.contents[i]``)."""
        raise ProfileError(f"the {self.name} profile publishes sealed batches, not records")

    def check_records(self, msg: m.Record | m.DirectRecord) -> None:
        """Raise :class:`WireError` unless ``msg`` may be kept (a store's check)."""

    def open_records(self, msg: m.Record | m.DirectRecord) -> Opened:
        """Verify ``msg`` and return its records; :class:`WireError` if it is not genuine."""
        raise NotImplementedError

    def check_head(self, head: m.Head) -> bool:
        """True if ``head`` may be acted on (its partition's owner signed it)."""
        return True

    def check_ack(self, ack: m.Ack) -> bool:
        """True if ``ack`` was signed by the store it names."""
        return True

    def tail_store(self, msg: m.DirectHead) -> str | None:
        """The node ID of the store that signed ``msg``'s tail, or ``None`` if the tail is
        not signed (or its signature does not verify): an unsigned tail moves nothing."""
        return None

    def seal(
        self,
        topic: str,
        first_offset: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes],
        timestamp_ms: int,
        value_lengths: Sequence[int] | None = None,
        extras: Mapping[int, RecordExtra] | None = None,
        codec: Codec = Codec.NONE,
        compacted: bool = False,
    ) -> list[tuple[int, int, bytes]]:
        """``(first offset, count, content)`` per RECORD for ``values`` from ``first_offset``
        (``value_lengths``: ``len`` of each value, when the caller has them). ``extras``
        (record ``i``'s headers, own time, tombstone), a ``codec`` other than none or a
        ``compacted`` topic make batches of format 5 (signed profile only)."""
        raise NotImplementedError

    def seal_gap(
        self, topic: str, first_offset: int, count: int, stamp_ms: int, run: int | None = None
    ) -> list[tuple[int, int, bytes]]:
        """Signed gap statements for offsets ``first_offset .. + count - 1`` (``(first,
        count, blob)`` each), stamped ``stamp_ms`` (the wall clock, ms: the caller's);
        only a signing profile can make them. ``run``: the producer's run, signed in
        (format 4); None: format 2, without one."""
        raise ProfileError(f"the {self.name} profile cannot state a gap")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# ------------------------------------------------------------------ rfc46


_U64 = struct.Struct(">Q")


_HEADERS_KEPT = 1024
"""Frame-0 headers :func:`_rfc46_record` remembers decoded (then it forgets them all)."""
_headers: dict[bytes, tuple[bool, str, str, str]] = {}


def _rfc46_record(frames: Sequence[bytes]) -> m.Record | m.DirectRecord | None:
    """RECORD / DIRECT-RECORD straight into a core message: the rfc46 hot path.

    Returns ``None`` for anything it is not sure of, and :func:`rfc46.decode`
    then decides (so both accept exactly the same frames).

    A partition's records differ only in their offset, the last 8 bytes of frame 0:
    the part before it, once decoded and checked here, is remembered with its strings
    (at most ``_HEADERS_KEPT``, whatever peers send), and the next record that has
    exactly those bytes skips the parse and the three UTF-8 decodes.
    """
    frame0 = frames[0]
    plain = type(frame0) is bytes  # (not a writable buffer: the key must not change)
    if plain:
        known = _headers.get(frame0[:-8])
        if known is not None:
            direct, slot, topic, partition = known
            (offset,) = _U64.unpack_from(frame0, len(frame0) - 8)
            if direct:
                return m.DirectRecord(slot, topic, partition, offset, bytes(frames[1]))
            return m.Record(topic, partition, offset, bytes(frames[1]))
    cmd = frame0[:1]
    if cmd != b"M" and cmd != b"D":
        return None
    nul = frame0.find(b"\0", 1)
    size = len(frame0)
    if nul < 0 or nul + 1 >= size or frame0[nul + 1] != 1:
        return None
    pos = nul + 2
    if pos >= size:
        return None
    end = pos + 1 + frame0[pos]
    if end >= size:
        return None
    t_end = end + 1 + frame0[end]
    if t_end + 8 > size:
        return None
    try:
        slot = frame0[1:nul].decode()
        partition = frame0[pos + 1 : end].decode()
        topic = frame0[end + 1 : t_end].decode()
    except UnicodeDecodeError:
        return None
    (offset,) = _U64.unpack_from(frame0, t_end)
    direct = cmd == b"D"
    if not direct and topic != slot:
        return None
    if plain:  # what a frame 0 with these bytes before its last 8 decodes to
        if len(_headers) >= _HEADERS_KEPT:
            _headers.clear()
        _headers[frame0[:t_end]] = (direct, slot, topic, partition)
    if direct:
        return m.DirectRecord(slot, topic, partition, offset, bytes(frames[1]))
    return m.Record(topic, partition, offset, bytes(frames[1]))


class Rfc46Profile(Profile):
    """RFC 46 as the C reference sends it: one unsigned record per RECORD, no keys."""

    name = "rfc46"
    version = rfc46.VERSION
    keys = False
    batched = False

    def decode(self, frames: Sequence[bytes]) -> m.Message:
        if len(frames) == 2:
            fast = _rfc46_record(frames)
            if fast is not None:
                return fast
        try:
            msg = rfc46.decode(frames)
        except WireError:
            if _version_of(frames) == signed.VERSION:
                raise OtherProfile("a signed-profile frame (version 2)") from None
            raise
        return self.to_core(msg)

    def to_core(self, msg: rfc46.Message) -> m.Message:
        """The core message for a decoded rfc46 message."""
        t = type(msg)
        if t is rfc46.Record:
            assert isinstance(msg, rfc46.Record)
            return m.Record(msg.topic, msg.partition, msg.offset, msg.content)
        if t is rfc46.DirectRecord:
            assert isinstance(msg, rfc46.DirectRecord)
            return m.DirectRecord(msg.recipient, msg.topic, msg.partition, msg.offset, msg.content)
        if t is rfc46.Head:
            assert isinstance(msg, rfc46.Head)
            return m.Head(msg.topic, msg.partition, msg.offset)
        if t is rfc46.Ack:
            assert isinstance(msg, rfc46.Ack)
            return m.Ack(msg.partition, msg.topic, msg.offset)
        if t is rfc46.DirectHead:
            assert isinstance(msg, rfc46.DirectHead)
            return m.DirectHead(msg.recipient, msg.topic, msg.partition, msg.offset)
        return msg  # type: ignore[return-value]  # FETCH, GET-HEADS, HELLOs: shared types

    def to_wire(self, msg: m.Message) -> rfc46.Message:
        """The rfc46 message for a core message (raises :class:`ProfileError` for batches)."""
        t = type(msg)
        if t is m.Record or t is m.DirectRecord:
            assert isinstance(msg, m.Record | m.DirectRecord)
            if msg.count != 1:
                raise ProfileError("an rfc46 RECORD carries exactly one record")
            if isinstance(msg, m.Record):
                return rfc46.Record(msg.topic, msg.partition, msg.offset, msg.content)
            return rfc46.DirectRecord(
                msg.recipient, msg.topic, msg.partition, msg.offset, msg.content
            )
        if t is m.Head:
            assert isinstance(msg, m.Head)
            return rfc46.Head(msg.topic, msg.partition, msg.offset)
        if t is m.Ack:
            assert isinstance(msg, m.Ack)
            return rfc46.Ack(msg.partition, msg.topic, msg.offset)
        if t is m.DirectHead:
            assert isinstance(msg, m.DirectHead)
            return rfc46.DirectHead(msg.recipient, msg.topic, msg.partition, msg.offset)
        return msg  # type: ignore[return-value]  # FETCH, GET-HEADS, HELLOs: shared types

    def encode(self, msg: m.Message) -> list[bytes]:
        return rfc46.encode(self.to_wire(msg))

    def record_heads(self, effect: PublishRecords) -> list[bytes]:
        return rfc46.record_heads(
            effect.topic.encode(),
            effect.partition.encode(),
            effect.first_offset,
            len(effect.contents),
        )

    def open_records(self, msg: m.Record | m.DirectRecord) -> Opened:
        return None, (msg.content,), None, None

    def seal(
        self,
        topic: str,
        first_offset: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes],
        timestamp_ms: int,
        value_lengths: Sequence[int] | None = None,
        extras: Mapping[int, RecordExtra] | None = None,
        codec: Codec = Codec.NONE,
        compacted: bool = False,
    ) -> list[tuple[int, int, bytes]]:
        if keys is not None and any(k is not None for k in keys):
            raise ProfileError(
                "the rfc46 wire profile has no record keys: send without a key "
                "or use the signed profile"
            )
        if needs_rich(extras, codec, compacted):
            raise ProfileError(
                "the rfc46 wire profile has no headers, record timestamps, tombstones, "
                "compression or compacted topics: use the signed profile"
            )
        return [(first_offset + i, 1, value) for i, value in enumerate(values)]


# ------------------------------------------------------------------ signed


class SignedProfile(Profile):
    """Signed batches, producer-signed HEADs, store-signed ACKs (``docs/wire.md`` §9).

    ``identity`` signs what this node sends: batches and HEADs for a producer,
    ACKs for a store. A consumer needs none. ``max_batch_records`` and
    ``max_batch_bytes`` cap the batches :meth:`seal` makes, and ``batch_format``
    is their format (3, or 1 for readers not yet upgraded; every reader here takes
    both). ``max_decompressed_bytes`` bounds what :meth:`open_records` decompresses of
    one format-5 batch (checked before decompressing). ``clock_ms`` stamps the HEADs :meth:`encode` signs (the shell's wall clock in
    milliseconds, read as it sends them; :func:`wall_ms` unless given); gap statements
    are stamped with the time their caller passes (:meth:`seal_gap`): the profile reads no
    clock for a core.
    """

    name = "signed"
    version = signed.VERSION
    keys = True
    batched = True
    heartbeats = True

    def __init__(
        self,
        identity: Identity | None = None,
        *,
        max_batch_records: int = signed.DEFAULT_BATCH_RECORDS,
        max_batch_bytes: int = signed.DEFAULT_BATCH_BYTES,
        batch_format: int = signed.DEFAULT_BATCH_FORMAT,
        clock_ms: Callable[[], int] | None = None,
        max_decompressed_bytes: int = MAX_RAW_BYTES,
    ) -> None:
        check_max_decompressed(max_decompressed_bytes)
        if not 1 <= max_batch_records <= signed.MAX_BATCH_RECORDS:
            raise ConfigError(f"max_batch_records must be 1..{signed.MAX_BATCH_RECORDS}")
        if not 1024 <= max_batch_bytes <= signed.MAX_BLOB_BYTES:
            raise ConfigError(f"max_batch_bytes must be 1024..{signed.MAX_BLOB_BYTES}")
        if batch_format not in signed.BATCH_FORMATS:
            raise ConfigError(f"batch_format must be one of {signed.BATCH_FORMATS}")
        self.identity = identity
        self.batch_format = batch_format
        self.max_batch_records = max_batch_records
        self.max_batch_bytes = max_batch_bytes
        self._clock_ms = clock_ms or wall_ms
        self.max_decompressed_bytes = max_decompressed_bytes

    def __repr__(self) -> str:
        who = self.identity.node_id if self.identity is not None else None
        return f"SignedProfile(identity={who!r})"

    def _identity(self, what: str) -> Identity:
        if self.identity is None:
            raise ProfileError(f"this node has no key to sign {what} with")
        return self.identity

    # -------------------------------------------------------------- decoding

    def decode(self, frames: Sequence[bytes]) -> m.Message:
        try:
            msg = signed.decode(frames)
        except WireError:
            if _version_of(frames) == rfc46.VERSION:
                raise OtherProfile("an rfc46-profile frame (version 1)") from None
            raise
        t = type(msg)
        if t is signed.Record:
            assert isinstance(msg, signed.Record)
            return m.Record(msg.topic, msg.partition, msg.first_offset, msg.blob, msg.count)
        if t is signed.DirectRecord:
            assert isinstance(msg, signed.DirectRecord)
            return m.DirectRecord(
                msg.recipient, msg.topic, msg.partition, msg.first_offset, msg.blob, msg.count
            )
        if t is signed.Head:
            assert isinstance(msg, signed.Head)
            return m.Head(msg.topic, msg.partition, msg.offset, msg)
        if t is signed.Ack:
            assert isinstance(msg, signed.Ack)
            try:
                store = msg.store
            except ValueError as exc:
                raise WireError(f"ACK store key: {exc}") from exc
            return m.Ack(msg.partition, msg.topic, msg.offset, store, msg)
        if t is signed.DirectHead:
            assert isinstance(msg, signed.DirectHead)
            h = msg.head
            head = None if h is None else m.Head(h.topic, h.partition, h.offset, h)
            return m.DirectHead(
                msg.recipient, msg.topic, msg.partition, msg.offset, head, msg.tail, msg.signed_tail
            )
        return msg  # type: ignore[return-value]  # FETCH, GET-HEADS, HELLOs: shared types

    # -------------------------------------------------------------- encoding

    def to_wire(self, msg: m.Message) -> signed.Message:
        """The signed-profile message for a core message, signing HEADs and ACKs."""
        t = type(msg)
        if t is m.Record:
            assert isinstance(msg, m.Record)
            return signed.Record(msg.topic, msg.partition, msg.offset, msg.count, msg.content)
        if t is m.DirectRecord:
            assert isinstance(msg, m.DirectRecord)
            return signed.DirectRecord(
                msg.recipient, msg.topic, msg.partition, msg.offset, msg.count, msg.content
            )
        if t is m.Head:
            assert isinstance(msg, m.Head)
            return self._signed_head(msg)
        if t is m.Ack:
            assert isinstance(msg, m.Ack)
            proof = msg.proof
            if isinstance(proof, signed.Ack) and (proof.partition, proof.topic, proof.offset) == (
                msg.partition,
                msg.topic,
                msg.offset,
            ):
                return proof
            return signed.sign_ack(self._identity("ACKs"), msg.partition, msg.topic, msg.offset)
        if t is m.DirectHead:
            assert isinstance(msg, m.DirectHead)
            head = msg.head
            proof = head.proof if head is not None else None
            if not isinstance(proof, signed.Head):
                proof = None
            return signed.DirectHead(
                msg.recipient,
                msg.topic,
                msg.partition,
                msg.offset,
                proof,
                msg.tail,
                self._tail(msg),
            )
        return msg  # type: ignore[return-value]  # FETCH, GET-HEADS, HELLOs: shared types

    def _tail(self, msg: m.DirectHead) -> signed.Tail | None:
        """The tail of a DIRECT-HEAD, signed by this store (``None`` without a tail or a key)."""
        if msg.tail is None:
            return None
        proof = msg.tail_proof
        if isinstance(proof, signed.Tail) and (proof.partition, proof.topic, proof.offset) == (
            msg.partition,
            msg.topic,
            msg.tail,
        ):
            return proof
        if self.identity is None:
            return None
        return signed.sign_tail(self.identity, msg.partition, msg.topic, msg.tail)

    def _signed_head(self, head: m.Head) -> signed.Head:
        proof = head.proof
        if isinstance(proof, signed.Head) and (proof.topic, proof.partition, proof.offset) == (
            head.topic,
            head.partition,
            head.offset,
        ):
            return proof
        identity = self._identity("HEADs")
        if head.partition != identity.node_id:
            raise ProfileError("a producer signs HEADs of its own partition only")
        return signed.sign_head(identity, head.topic, head.offset, self._clock_ms())

    def encode(self, msg: m.Message) -> list[bytes]:
        t = type(msg)
        # Fast paths: batches are verbatim blobs, re-served as they came.
        if t is m.Record:
            assert isinstance(msg, m.Record)
            return [b"M" + msg.topic.encode() + b"\0\x02", msg.content]
        if t is m.DirectRecord:
            assert isinstance(msg, m.DirectRecord)
            return [b"D" + msg.recipient.encode() + b"\0\x02", msg.content]
        return signed.encode(self.to_wire(msg))

    # ----------------------------------------------------------- verifying

    def _verify(self, msg: m.Record | m.DirectRecord) -> signed.Batch:
        batch = signed.verify_batch(msg.content, topic=msg.topic, partition=msg.partition)
        if batch.first_offset != msg.offset or batch.count != msg.count:
            raise WireError("RECORD offsets disagree with its batch")
        return batch

    def check_records(self, msg: m.Record | m.DirectRecord) -> None:
        self._verify(msg)

    def open_records(self, msg: m.Record | m.DirectRecord) -> Opened:
        batch = self._verify(msg)
        if batch.blob[0] == BATCH_FORMAT_V5:
            return self._open_rich(batch)
        keys, values = batch.columns()
        return keys, values, batch.timestamp_ms, None

    def _open_rich(self, batch: signed.Batch) -> Opened:
        """A verified format-5 batch opened: decompressed within ``max_decompressed_bytes``
        and its records checked against the signed root; :class:`PayloadRefused` if not."""
        try:
            # guard: consumer-decompress-bound
            recs = signed.open_batch(batch, max_raw=self.max_decompressed_bytes)
        except DecompressionBomb as exc:
            raise PayloadRefused("bomb", str(exc)) from None
        except RootMismatch as exc:
            raise PayloadRefused("root", str(exc)) from None
        except WireError as exc:
            raise PayloadRefused("payload", str(exc)) from None
        if len(recs.offsets) + len(recs.dropped) != batch.count:
            raise PayloadRefused("payload", "a batch's records do not fill its offsets")
        offsets = recs.offsets
        consecutive = not recs.dropped
        keys = recs.keys if recs.keys.count(None) != len(recs.keys) else None
        headers = recs.headers if any(recs.headers) else None
        # what the records take opened: the signed raw length of a full batch (a compacted
        # one is kept uncompressed, its wire size counts it already)
        blob = batch.blob
        at = 2 + blob[1] + _BATCH_FIXED.size
        raw = rich_layout(blob, at, len(blob) - 96).raw_len if not recs.dropped else 0
        stamps = [ts / 1000.0 for ts in recs.timestamps]
        rich = RichOpened(None if consecutive else offsets, stamps, headers, raw)
        return keys, recs.values, batch.timestamp_ms, rich

    def check_head(self, head: m.Head) -> bool:
        proof = head.proof
        if not isinstance(proof, signed.Head):
            return False
        if (proof.topic, proof.partition, proof.offset) != (
            head.topic,
            head.partition,
            head.offset,
        ):
            return False
        try:
            proof.verify()
        except WireError:
            return False
        return True

    def check_ack(self, ack: m.Ack) -> bool:
        proof = ack.proof
        if not isinstance(proof, signed.Ack):
            return False
        if (proof.partition, proof.topic, proof.offset) != (ack.partition, ack.topic, ack.offset):
            return False
        try:
            if proof.store != ack.store:
                return False
            proof.verify()
        except (WireError, ValueError):
            return False
        return True

    def tail_store(self, msg: m.DirectHead) -> str | None:
        proof = msg.tail_proof
        if not isinstance(proof, signed.Tail) or msg.tail is None:
            return None
        if (proof.partition, proof.topic, proof.offset) != (msg.partition, msg.topic, msg.tail):
            return None
        try:
            return proof.verify().store
        except (WireError, ValueError):
            return None

    # ------------------------------------------------------------- sealing

    def seal_gap(
        self, topic: str, first_offset: int, count: int, stamp_ms: int, run: int | None = None
    ) -> list[tuple[int, int, bytes]]:
        identity = self._identity("gap statements")
        stamp = stamp_ms
        out = []
        while count > 0:
            n = min(count, signed.MAX_GAP_OFFSETS)
            blob = signed.seal_gap(identity, topic, first_offset, n, stamp, run)
            out.append((first_offset, n, blob))
            first_offset += n
            count -= n
        return out

    def seal(
        self,
        topic: str,
        first_offset: int,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes],
        timestamp_ms: int,
        value_lengths: Sequence[int] | None = None,
        extras: Mapping[int, RecordExtra] | None = None,
        codec: Codec = Codec.NONE,
        compacted: bool = False,
    ) -> list[tuple[int, int, bytes]]:
        if needs_rich(extras, codec, compacted):
            return seal_rich_batches(
                self._identity("batches"),
                topic,
                first_offset,
                keys,
                values,
                timestamp_ms,
                extras,
                codec,
                max_records=self.max_batch_records,
                max_bytes=self.max_batch_bytes,
            )
        return signed.seal_batches(
            self._identity("batches"),
            topic,
            first_offset,
            keys,
            values,
            timestamp_ms,
            max_records=self.max_batch_records,
            max_bytes=self.max_batch_bytes,
            fmt=self.batch_format,
            value_lengths=value_lengths,
        )


RFC46: Final = Rfc46Profile()
"""The rfc46 profile (stateless, shared)."""


def check_profile_name(name: str) -> str:
    """``name`` if it is a profile; a one-line :class:`ConfigError` otherwise."""
    if name not in PROFILE_NAMES:
        raise ConfigError(f"unknown wire profile {name!r}: use one of {', '.join(PROFILE_NAMES)}")
    return name


def check_max_decompressed(size: object) -> int:
    """``size`` if it is a valid ``max_decompressed_bytes``; a one-line :class:`ConfigError`
    otherwise."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1024 <= size <= MAX_RAW_BYTES:
        raise ConfigError(
            f"max_decompressed_bytes must be 1024..{MAX_RAW_BYTES} (the most a producer "
            f"may seal), not {size!r}"
        )
    return size


def make_profile(
    name: str, identity: Identity | None = None, *, max_decompressed_bytes: int = MAX_RAW_BYTES
) -> Profile:
    """The profile called ``name``; ``identity`` signs for a signed-profile node;
    ``max_decompressed_bytes`` bounds what a reader decompresses of one batch."""
    check_profile_name(name)
    if name == "rfc46":
        return RFC46
    return SignedProfile(identity, max_decompressed_bytes=max_decompressed_bytes)


# ------------------------------------------------------------------ reading stored batches


def records_of(
    batch: StoredBatch, profile: str | None = None, *, verify: bool = False
) -> list[tuple[int, bytes | None, bytes | None, int | None]]:
    """The records of a stored batch: ``(offset, key, value, timestamp_ms)`` in offset order.

    ``profile`` defaults to ``batch.profile`` (what the storage pinned the
    partition to). Under ``rfc46`` the blob is one record's value, with no key
    and no timestamp. Under ``signed`` it is the producer's signed batch,
    which the store verified before storing it; ``verify=True`` checks the
    signature again (and the topic and partition against ``batch``). Raises
    :class:`WireError` for a blob that does not parse (or verify).

    A format-5 batch (always verified: that costs a hash, not a decompression) gives
    each record's own time, ``None`` for a tombstone's value, and only the records a
    compaction kept; it raises :class:`WireError` when a record has headers, which
    this shape has no room for: read those with :func:`open_stored`.
    """
    name = profile if profile is not None else batch.profile
    if name == "rfc46":
        return [(batch.first_offset, None, batch.blob, None)]
    if name != "signed":
        raise ConfigError(f"unknown wire profile {name!r}")
    if batch.blob[:1] == bytes((BATCH_FORMAT_V5,)):
        recs = open_stored(batch)
        if any(recs.headers):
            raise WireError("records with headers: read them with open_stored")
        return list(zip(recs.offsets, recs.keys, recs.values, recs.timestamps, strict=True))
    if verify:
        verified = signed.verify_batch(batch.blob, topic=batch.topic, partition=batch.partition)
        keys, values = verified.columns()
        first, timestamp = verified.first_offset, verified.timestamp_ms
    else:
        header = signed.peek_batch(batch.blob)
        first, timestamp = header.first_offset, header.timestamp_ms
        keys, values = signed.unchecked_columns(batch.blob)
    if verify:
        count = verified.count
    else:
        count = header.count
    if first != batch.first_offset or first + count - 1 != batch.last_offset:
        raise WireError("stored batch offsets disagree with its blob")
    if not values:  # a gap statement: offsets without records
        return []
    if keys is None:
        return [(first + i, None, value, timestamp) for i, value in enumerate(values)]
    return [
        (first + i, key, value, timestamp)
        for i, (key, value) in enumerate(zip(keys, values, strict=True))
    ]


def open_stored(batch: StoredBatch, *, max_raw: int = MAX_RAW_BYTES) -> RichRecords:
    """The records of a stored signed batch of any format, with their headers and times
    (:func:`~dafka.wire.signed.open_batch`), after verifying it against ``batch``'s topic,
    partition and offsets. Raises :class:`WireError` (a bomb over ``max_raw``, records
    not the ones signed, offsets that disagree)."""
    verified = signed.verify_batch(batch.blob, topic=batch.topic, partition=batch.partition)
    if verified.first_offset != batch.first_offset or verified.last_offset != batch.last_offset:
        raise WireError("stored batch offsets disagree with its blob")
    return signed.open_batch(verified, max_raw=max_raw)
