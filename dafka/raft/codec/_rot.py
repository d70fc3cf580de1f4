"""Tell rot in a complete log record from a torn write (used by :mod:`dafka.raft.peer._storage`).

A torn write is a write whose ``fdatasync`` never returned: after a crash each of its
bytes reads as what was written or as zero (an extended file reads zeros where a
write never landed; :meth:`~dafka.raft.peer.FileStorage.truncate_from` fsyncs its
cut before the next append reuses the bytes), or the file ends early. It never leaves a
*nonzero byte that differs from what was written*.

Rot (a flipped bit, a bad sector remapped, a stray write) does. A record's CRC-32 tells
where one damaged byte is: CRC-32 is linear, so the syndrome ``crc(read) ^ stored_crc``
of a single-byte error ``e`` at offset ``i`` of an ``n``-byte message is ``T[e]`` (the
CRC table entry) carried through the ``n - 1 - i`` bytes after it, and stepping the
syndrome back one zero byte at a time finds ``(i, e)`` in ``n`` steps, or shows that no
single-byte error explains it. Two different single-byte errors share a syndrome only
when they lie far apart: the nearest such pair for CRC-32 is 145212 bytes apart
(``T[248]`` at ``i`` and ``T[169]`` at ``i + 145212``; none within 64 KiB), so in a record
of a full 1 MiB entry one syndrome may have two candidates. :func:`single_byte_rot` says
whether a damaged record becomes valid by correcting one byte that reads nonzero (any of
the candidates, not only the one nearest the end): then the record was complete on disk
and cannot be a torn write. Damage that zeroes bytes,
or spans several bytes, stays indistinguishable from a torn write without a marker
written after each fsync; it is treated as one (docs/raft.md "Rot and torn writes").
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["MAX_SEARCH", "single_byte_errors", "single_byte_rot"]

MAX_SEARCH = 4 << 20
"""Longest checksummed region searched (one pass, one step a byte: about 0.2 s a MiB);
a Raft entry is at most 1 MiB of data (``bounds.DEFAULT_MAX_ENTRY_BYTES``) plus its
header, and a larger one configured stays under this up to 4 MiB."""

_POLY = 0xEDB88320


def _table() -> list[int]:
    table = []
    for byte in range(256):
        c = byte
        for _ in range(8):
            c = (c >> 1) ^ (_POLY if c & 1 else 0)
        table.append(c)
    return table


_T = _table()
_BY_VALUE = {value: byte for byte, value in enumerate(_T) if byte}
_BY_TOP = {value >> 24: byte for byte, value in enumerate(_T)}  # a permutation of 0..255


def _back_one_byte(value: int) -> int:
    """The inverse of carrying a CRC register through one zero byte
    (``(v >> 8) ^ T[v & 0xff]``)."""
    low = _BY_TOP[value >> 24]
    return ((value ^ _T[low]) << 8) | low


def single_byte_errors(syndrome: int, length: int) -> Iterator[tuple[int, int]]:
    """Every ``(offset, xor)`` of a one-byte error with this CRC-32 ``syndrome`` in a
    message of ``length`` bytes, the one nearest the end first (several only in a message
    over 145212 bytes, see the module doc)."""
    value = syndrome
    for back in range(min(length, MAX_SEARCH)):
        byte = _BY_VALUE.get(value)
        # guard: raft-log-crc-locates-single
        if byte is not None:
            yield length - 1 - back, byte
        value = _back_one_byte(value)


def single_byte_error(syndrome: int, length: int) -> tuple[int, int] | None:
    """``(offset, xor)`` of the one-byte error with this CRC-32 ``syndrome`` in a message
    of ``length`` bytes (the one nearest the end), or None when no single-byte error has it."""
    return next(single_byte_errors(syndrome, length), None)


def single_byte_rot(region: bytes | memoryview, computed: int, stored: int) -> int | None:
    """The offset in ``region`` (the bytes a CRC-32 covers) of the one byte whose
    correction makes ``computed`` (the CRC of ``region`` as read) equal ``stored``, if
    that byte reads nonzero (so no torn write left it); -1 when the stored CRC itself
    differs in one nonzero byte; None otherwise (torn, or damage beyond one byte).

    Every candidate byte is tried: in a long record a byte that reads zero may explain the
    syndrome as well as the rotten one does (the one nearest the end is found first), and
    taking that zero for a torn write would cut a complete, fsynced record."""
    syndrome = computed ^ stored
    if not syndrome:
        return None
    diff = [k for k in range(4) if (syndrome >> (8 * k)) & 0xFF]
    if len(diff) == 1:  # the stored CRC (little-endian on disk) may be the damaged byte
        if (stored >> (8 * diff[0])) & 0xFF:
            return -1
    if len(region) > MAX_SEARCH:
        return None
    for offset, _ in single_byte_errors(syndrome, len(region)):
        # guard: raft-log-rot-tries-every-candidate
        if region[offset]:
            return offset
    return None
