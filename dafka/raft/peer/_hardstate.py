"""The Raft hard state file: two slots written in turn, one write and one fdatasync a save.

A vote or term change must be durable before the peer answers, and elections are on
the failover path, so a save is a single ``pwrite`` + ``fdatasync`` of the slot *not*
holding the current state (no temporary file, no rename, no directory fsync)::

    slot k at offset k * SLOT_SIZE (k = 0, 1):
        "DAFKRHS2" | seq u64 | length u32 | body | crc32 u32
        crc32 covers seq, length and body; body is msgpack [term, voted_for, commit]

Save number ``seq`` goes to slot ``seq % 2``. Reading takes the valid slot with the
higher ``seq``. A crash during a save can only tear the slot being written (its save
never returned, so nothing was decided on it): the other slot still holds the last
durable state. Both slots invalid is :class:`StorageError`.

Rot is not a torn save: an invalid slot that becomes valid by correcting one byte that
reads nonzero (its magic, its CRC, or a byte the CRC covers: :mod:`dafka.raft.codec._rot`)
and then holds a *newer* save than the valid slot was durable: this peer may have
voted in that save's term, and falling back to the older slot could make it vote twice.
That is :class:`StorageError` (refuse to start) unless ``repair`` (the operator's
``--accept-log-loss``), which falls back with an error line. (A save writes some 40
bytes inside one 4 KiB-aligned slot: a torn save mixes old and new bytes only if a
sector itself tears; one that left exactly one wrong nonzero byte would be refused too,
which is safe.)

The file's first save creates it (then the directory is fsynced once). A ``state``
file of the older single-record format (``"DAFKRHS1" | body | crc32``, replaced
atomically) is read, and rewritten in the slot format (atomically, once) at its next
save.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import msgpack

from ...errors import StorageError
from ..codec import HardState, single_byte_error

__all__ = ["SLOT_SIZE", "StateFile", "pack_state", "unpack_state"]

SLOT_SIZE = 4096
_MAGIC = b"DAFKRHS2"
_OLD_MAGIC = b"DAFKRHS1"
_HEAD = struct.Struct("<8sQI")  # magic, seq, length
_CRC = struct.Struct("<I")
_MAX_BODY = SLOT_SIZE - _HEAD.size - _CRC.size

_fdatasync = getattr(os, "fdatasync", os.fsync)

log = logging.getLogger(__name__)


def pack_state(state: HardState) -> bytes:
    return bytes(msgpack.packb([state.term, state.voted_for, state.commit], use_bin_type=True))


def unpack_state(data: bytes) -> HardState:
    term, voted_for, commit = msgpack.unpackb(data, raw=False)
    if not isinstance(term, int) or not isinstance(commit, int):
        raise TypeError("bad hard state types")
    if voted_for is not None and not isinstance(voted_for, str):
        raise TypeError("bad voted_for")
    return HardState(term, voted_for, commit)


def _slot(seq: int, body: bytes) -> bytes:
    head = _HEAD.pack(_MAGIC, seq, len(body))
    return head + body + _CRC.pack(zlib.crc32(head[8:] + body))


def _parse_slot(blob: bytes) -> tuple[int, HardState] | None:
    """(seq, state) of a slot if it is complete, checksummed and decodes, else None."""
    if len(blob) < _HEAD.size + _CRC.size:
        return None
    magic, seq, length = _HEAD.unpack_from(blob, 0)
    end = _HEAD.size + length
    if magic != _MAGIC or length > _MAX_BODY or end + _CRC.size > len(blob):
        return None
    body = blob[_HEAD.size : end]
    if zlib.crc32(blob[8:end]) != _CRC.unpack_from(blob, end)[0]:
        return None
    try:
        return seq, unpack_state(body)
    except Exception:
        return None


def _rotten_slot(blob: bytes) -> tuple[int, HardState] | None:
    """(seq, state) of an invalid slot that one nonzero rotten byte explains, else None."""
    if len(blob) < _HEAD.size + _CRC.size:
        return None
    magic, _, length = _HEAD.unpack_from(blob, 0)
    found = _one_fix(blob, magic, length)
    if found is not None or magic != _MAGIC:
        return found
    for k in range(4):  # the length may be the rotten byte: the slot then verifies as is
        if (length >> (8 * k)) & 0xFF:
            for byte in range(1, 256):
                fixed = (length ^ (byte << (8 * k))).to_bytes(4, "little")
                found = _parse_slot(blob[:16] + fixed + blob[20:])
                if found is not None:
                    return found
    return None


def _one_fix(blob: bytes, magic: bytes, length: int) -> tuple[int, HardState] | None:
    end = _HEAD.size + length
    if length > _MAX_BODY or end + _CRC.size > len(blob):
        return None
    (stored,) = _CRC.unpack_from(blob, end)
    fixed = bytearray(blob[: end + _CRC.size])
    if magic != _MAGIC:  # the magic may be the one rotten byte; the rest must verify
        diff = [k for k in range(len(_MAGIC)) if magic[k] != _MAGIC[k]]
        if len(diff) != 1 or not magic[diff[0]] or zlib.crc32(blob[8:end]) != stored:
            return None
        fixed[: len(_MAGIC)] = _MAGIC
    else:
        syndrome = zlib.crc32(blob[8:end]) ^ stored
        one_in_crc = [k for k in range(4) if (syndrome >> (8 * k)) & 0xFF]
        if len(one_in_crc) == 1 and (stored >> (8 * one_in_crc[0])) & 0xFF:
            fixed[end:] = _CRC.pack(zlib.crc32(blob[8:end]))
        else:
            found = single_byte_error(syndrome, end - 8)
            if found is None or not blob[8 + found[0]]:
                return None
            fixed[8 + found[0]] ^= found[1]
    return _parse_slot(bytes(fixed))


class StateFile:
    """The hard state at ``path``; ``atomic_write(name, chunks)`` migrates old files."""

    def __init__(
        self,
        path: Path,
        atomic_write: Callable[[str, list[bytes]], None],
        *,
        repair: bool = False,
    ) -> None:
        self.path = path
        self._repair = repair
        self._atomic_write = atomic_write
        self._fd = -1
        self._seq = 0
        self._old = False  # an old-format file: rewrite it atomically at the next save
        self.state = self._read()

    def _read(self) -> HardState:
        try:
            blob = self.path.read_bytes()
        except FileNotFoundError:
            return HardState()
        if blob.startswith(_OLD_MAGIC):
            body, crc = blob[len(_OLD_MAGIC) : -4], blob[-4:]
            if len(blob) < len(_OLD_MAGIC) + 4 or zlib.crc32(blob[:-4]) != _CRC.unpack(crc)[0]:
                raise StorageError(f"{self.path} fails its checksum")
            try:
                state = unpack_state(body)
            except Exception as exc:
                raise StorageError(f"{self.path} does not decode: {exc}") from exc
            self._old = True
            return state
        slots = [blob[k * SLOT_SIZE : (k + 1) * SLOT_SIZE] for k in (0, 1)]
        found = [_parse_slot(slot) for slot in slots]
        valid = [slot for slot in found if slot is not None]
        newest = max((slot[0] for slot in valid), default=-1)
        for raw, parsed in zip(slots, found, strict=True):
            rotten = None if parsed is not None else _rotten_slot(raw)
            if rotten is not None and rotten[0] > newest:
                # guard: raft-hard-state-rot-newest
                self._rotten(rotten, newest)
        if not valid:
            raise StorageError(f"{self.path} is damaged or not a Dafka Raft state file")
        self._seq, state = max(valid, key=lambda slot: slot[0])
        return state

    def _rotten(self, rotten: tuple[int, HardState], newest: int) -> None:
        seq, lost = rotten
        if not self._repair:
            raise StorageError(
                f"{self.path}: the newest hard state (save {seq}: term {lost.term}, vote"
                f" {lost.voted_for}) is damaged by rot, not by a torn save; falling back to"
                f" an older one could vote twice in a term. Restore the data directory from"
                f" a copy, or start with --accept-log-loss to fall back knowingly."
            )
        log.error(
            "raft.storage.state_rot path=%s lost_save=%d lost_term=%d fallback_save=%d",
            self.path,
            seq,
            lost.term,
            newest,
        )

    def save(self, state: HardState) -> None:
        """Durable on return: one write of the other slot, one fdatasync."""
        body = pack_state(state)
        if len(body) > _MAX_BODY:
            raise StorageError(f"hard state of {len(body)} bytes is over {_MAX_BODY}")
        seq = self._seq + 1
        blob = _slot(seq, body)
        if self._old or not self.path.exists():
            # slot 1 stays empty: read as invalid, the state is in slot (seq % 2)
            chunks = [b"\0" * SLOT_SIZE, blob] if seq % 2 else [blob]
            self._atomic_write(self.path.name, chunks)
            self._old = False
        else:
            if self._fd < 0:
                self._fd = os.open(self.path, os.O_RDWR)
            offset = (seq % 2) * SLOT_SIZE
            view = memoryview(blob)
            while view:
                written = os.pwrite(self._fd, view, offset)
                view, offset = view[written:], offset + written
            _fdatasync(self._fd)
        self._seq, self.state = seq, state

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
