"""A node's state directory: its identity and its producer offsets, kept across restarts.

A producer's partition is its node ID, so the ID and the next offset of every
topic must survive a restart, and two processes must never share them: a
second producer with the same ID would publish different records under the
same offsets. :class:`StateDir` therefore holds an exclusive ``flock`` for as
long as it is open, and :class:`OffsetJournal` records each topic's next offset
durably *before* records with those offsets are published, so a restarted
producer never reuses an offset it may already have sent.

Layout::

    <dir>/            mode 0700
      lock            flock'ed while a process uses the directory
      node.key        the node's Ed25519 key (``dafka.security.identity``); under the
                      signed profile the node ID is derived from it
      node_id         rfc46 profile: 32 upper-case hex characters, written atomically
      profile         the wire profile the directory was first used with
      offsets.journal append-only OffsetJournal frames (see below)
      acked.journal   the same format: how far each topic was acknowledged
      run             the producer's run: raised and fsynced at every start
                      (:meth:`StateDir.next_run`), signed into its gap statements

A directory is pinned to the wire profile it was first used with
(:meth:`StateDir.pin_profile`): its offsets number one partition, and a
partition never mixes the profiles.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import struct
import zlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

from ..errors import ConfigError, StorageError
from ..ids import is_node_id, new_node_id
from ..security import identity as identity_module
from ..security.identity import Identity
from ..security.private_dirs import fsync_dir, make_private_dirs

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = [
    "OffsetJournal",
    "StateDir",
    "fsync_dir",
    "lock_directory",
    "open_durable",
    "unlock_directory",
    "write_atomic",
]

_LOCK = "lock"
_NODE_ID = "node_id"
_PROFILE = "profile"
_JOURNAL = "offsets.journal"
_RUN = "run"
_RUN_WITNESSES = (_JOURNAL, "acked.journal")  # files a producer that had a run left here


def _run_text(run: int) -> str:
    """The ``run`` file's text: the counter and its CRC-32 (a flipped digit would give a
    lower run, silently: a red-team pass)."""
    return f"{run} {zlib.crc32(str(run).encode()):08x}"


def _made_with_runs(path: Path) -> bool:
    """Whether the journal at ``path`` was begun by a producer that keeps a ``run`` file:
    its first record is of the doubled format (0xd5). An empty or absent journal proves
    no earlier run (the Spark sink opens one before its producer), and one of an earlier
    version (0xd4) was made before runs existed: such a directory starts at run 1."""
    try:
        with open(path, "rb") as f:
            return f.read(1) == _MAGIC2
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable: do not guess that it is new


def _parse_run(text: str) -> int | None:
    """The counter of a ``run`` file's text; None if it is not one with its checksum."""
    number, _, crc = text.partition(" ")
    # guard: producer-run-counter-checked-taken
    if not number.isdigit() or int(number) >= _MAX_OFFSET or _run_text(int(number)) != text:
        return None
    return int(number)


# Journal frame: magic, u32 payload length, payload, u32 CRC-32 of everything
# before it. The payload is a u32 entry count, then per entry a u8 topic
# length, the UTF-8 topic and the next offset as u64 big-endian. The CRC at the
# end makes a frame whose write was torn anywhere invalid.
#
# Frames are written twice in a row (magic 0xd5; one write, one fdatasync), so that a
# frame that rotted after it was synced is read from its other copy instead of being
# taken for a torn write and dropped, which would hand out again offsets that may have
# been published (issue 33). Journals of earlier versions hold single frames (0xd4),
# read as before.
_MAGIC = b"\xd4"
_MAGIC2 = b"\xd5"
_FRAME_HEAD = struct.Struct(">cI")
_CRC = struct.Struct(">I")
_COUNT = struct.Struct(">I")
_OFFSET = struct.Struct(">Q")
_MAX_PAYLOAD = 16 * 1024 * 1024
_MAX_OFFSET = 2**64 - 1


def open_durable(path: Path, flags: int, mode: int = 0o600) -> int:
    """``os.open(path, flags | O_CREAT, mode)``, then, if that created the file, fsync its
    directory so that the new name survives a power cut with what is later synced in it."""
    try:
        return os.open(path, flags & ~os.O_CREAT, mode)
    except FileNotFoundError:
        pass
    fd = os.open(path, flags | os.O_CREAT, mode)
    try:
        # guard: file-created-state-data-directory
        fsync_dir(path.parent)
    except OSError:
        os.close(fd)
        raise
    return fd


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file.

    Write a temporary file beside it, fsync it, rename it over ``path``, then
    fsync the directory so the rename itself is durable.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _holder_pid(fd: int) -> int | None:
    """The PID the holder of a lock file wrote into it, if readable (only a hint)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def make_data_dir(path: str | os.PathLike[str], what: str = "data directory") -> Path:
    """Create ``path`` (mode 0700) if needed and check it is a writable directory, so that a
    bad data directory is one line (:class:`ConfigError`) before a node's thread meets it."""
    p = Path(path)
    try:
        make_private_dirs(p)
    except OSError as exc:
        raise ConfigError(f"cannot create {what} {p}: {exc.strerror}") from None
    if not p.is_dir():
        raise ConfigError(f"{what} {p} is not a directory")
    if not os.access(p, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {p} is not writable")
    return p


def lock_directory(path: Path, what: str, holder: str = "another process") -> int:
    """Take the exclusive ``flock`` on ``<path>/lock`` and write our PID into it.

    Returns the lock file's descriptor; :func:`unlock_directory` releases it
    (so does the process's exit, however it ends). Raises :class:`ConfigError`
    naming ``what`` and ``path`` (and the holder's PID when known) if another
    process, or another open of the same directory, holds the lock.
    """
    try:
        fd = open_durable(path / _LOCK, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise ConfigError(f"{what} {path} is not writable: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        pid = _holder_pid(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            by = f" (pid {pid})" if pid is not None else ""
            raise ConfigError(f"{what} {path} is in use by {holder}{by}") from None
        raise ConfigError(f"cannot lock {what} {path}: {exc.strerror or exc}") from exc
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as exc:
        unlock_directory(fd)
        raise ConfigError(f"{what} {path} is not writable: {exc.strerror or exc}") from exc
    return fd


def unlock_directory(fd: int) -> None:
    """Release a lock taken by :func:`lock_directory` and close its descriptor."""
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class StateDir:
    """An exclusively locked directory holding one node's persistent state.

    Raises :class:`ConfigError` with one line naming the directory when it
    cannot be created or written, or when another process holds it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock_fd: int | None = None
        self._node_id: str | None = None
        self._journals: list[OffsetJournal] = []
        try:
            # guard: state-directories-0700
            make_private_dirs(self.path)
        except OSError as exc:
            raise ConfigError(
                f"cannot create state directory {self.path}: {exc.strerror or exc}"
            ) from exc
        if not self.path.is_dir():
            raise ConfigError(f"state directory {self.path} exists and is not a directory")
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise ConfigError(f"state directory {self.path} is not writable")
        if self.path.stat().st_mode & 0o077:
            log.warning("state.permissions dir=%s hint=chmod 700", self.path)
        self._lock_fd = lock_directory(self.path, "state directory")

    # ------------------------------------------------------------------ API

    @property
    def closed(self) -> bool:
        return self._lock_fd is None

    def node_id(self) -> str:
        """This node's ID: read from ``node_id``, or made and persisted on first use."""
        if self._node_id is not None:
            return self._node_id
        self._check_open()
        path = self.path / _NODE_ID
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            text = None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        if text is None:
            text = new_node_id()
            try:
                write_atomic(path, f"{text}\n".encode())
            except OSError as exc:
                raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
            log.info("state.node_id.created dir=%s id=%s", self.path, text)
        elif not is_node_id(text):
            # Never replace it silently: a new ID would be a new partition.
            raise ConfigError(
                f"{path} does not hold a node ID (32 upper-case hex characters); fix or remove it"
            )
        self._node_id = text
        return text

    def identity(self) -> Identity:
        """This node's Ed25519 identity: read from ``node.key``, or made on first use."""
        self._check_open()
        return identity_module.load_or_create(self.path)

    def pin_profile(self, profile: str) -> None:
        """Record ``profile`` on first use; refuse a directory first used with another one.

        Raises :class:`ConfigError`: the directory's offsets (and, under rfc46,
        its node ID) belong to a partition of that other profile.
        """
        self._check_open()
        path = self.path / _PROFILE
        try:
            found = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            found = None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        if found is None:
            try:
                write_atomic(path, f"{profile}\n".encode())
            except OSError as exc:
                raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
        elif found != profile:
            raise ConfigError(
                f"state directory {self.path} belongs to a {found}-profile node; use "
                f"--profile {found}, or another state directory for a {profile} node "
                "(a partition never mixes the wire profiles)"
            )

    def next_run(self) -> int:
        """This start's run: one more than the last one recorded here, durable (file and
        directory fsynced) before it returns, so no two starts share a run and a later
        start has a higher one, whatever the clock says (issue 33).

        Raises :class:`ConfigError` if ``run`` cannot be read: a run counted again from 0
        would order this start before earlier ones (remove the file only knowing that).
        """
        self._check_open()
        path = self.path / _RUN
        damaged = (
            f"{path} does not hold a run counter; a producer's runs are ordered by it, and a "
            "lower one makes this run's gap statements lose to earlier ones: write one above "
            "any run used so far (e.g. the Unix time) with its checksum, or start afresh in a "
            "new state directory (a new producer ID)"
        )
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            if any(_made_with_runs(self.path / name) for name in _RUN_WITNESSES):
                raise ConfigError(f"{damaged} (it is missing, the journals are not)") from None
            text = _run_text(0)
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        last = _parse_run(text)
        if last is None:
            raise ConfigError(damaged)
        run = last + 1
        try:
            write_atomic(path, f"{_run_text(run)}\n".encode())
        except OSError as exc:
            raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from exc
        return run

    def offset_journal(self, name: str = _JOURNAL) -> OffsetJournal:
        """Open the journal of next offsets per topic kept in this directory."""
        self._check_open()
        journal = OffsetJournal(self.path / name)
        self._journals.append(journal)
        return journal

    def close(self) -> None:
        """Close the journals opened here and release the lock."""
        for journal in self._journals:
            journal.close()
        self._journals.clear()
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            unlock_directory(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StateDir({str(self.path)!r}{', closed' if self.closed else ''})"

    def _check_open(self) -> None:
        if self._lock_fd is None:
            raise ConfigError(f"state directory {self.path} is closed")


def _encode_frame(entries: Iterable[tuple[str, int]]) -> bytes:
    parts = []
    count = 0
    for topic, offset in entries:
        raw = topic.encode()
        if not raw or len(raw) > 255:
            raise ValueError(f"topic {topic!r} cannot be journaled")
        parts.append(bytes((len(raw),)) + raw + _OFFSET.pack(offset))
        count += 1
    payload = _COUNT.pack(count) + b"".join(parts)
    body = _FRAME_HEAD.pack(_MAGIC2, len(payload)) + payload
    frame = body + _CRC.pack(zlib.crc32(body))
    return frame + frame


def _decode_frame(data: bytes, pos: int) -> tuple[list[tuple[str, int]], int] | None:
    """The entries of the frame at ``pos`` and the position after it, or None if invalid."""
    head_end = pos + _FRAME_HEAD.size
    if head_end > len(data):
        return None
    magic, size = _FRAME_HEAD.unpack_from(data, pos)
    if magic not in (_MAGIC, _MAGIC2) or size < _COUNT.size or size > _MAX_PAYLOAD:
        return None
    end = head_end + size + _CRC.size
    if end > len(data):
        return None
    (crc,) = _CRC.unpack_from(data, head_end + size)
    if zlib.crc32(data[pos : head_end + size]) != crc:
        return None
    (count,) = _COUNT.unpack_from(data, head_end)
    entries = []
    at = head_end + _COUNT.size
    limit = head_end + size
    try:
        for _ in range(count):
            length = data[at]
            topic = data[at + 1 : at + 1 + length].decode()
            at += 1 + length
            if at + _OFFSET.size > limit:
                return None
            (offset,) = _OFFSET.unpack_from(data, at)
            at += _OFFSET.size
            entries.append((topic, offset))
    except (IndexError, UnicodeDecodeError):
        return None
    if at != limit:
        return None
    return entries, end


def _decode_pair(data: bytes, pos: int) -> tuple[list[tuple[str, int]], int, bool] | None:
    """The entries of the journal record at ``pos`` (a single 0xd4 frame, or a 0xd5 frame
    and its copy), the position after it, and whether one copy was damaged (so the file
    needs rewriting); None if neither copy can be read."""
    parsed = _decode_frame(data, pos)
    if parsed is not None:
        entries, end = parsed
        if data[pos : pos + 1] == _MAGIC:
            return entries, end, False
        size = end - pos
        if data[end : end + size] == data[pos:end]:
            return entries, end + size, False
        # the copy rotted, or the write was cut short there: the first copy is whole
        # guard: rot-last-journal-record-neither
        return entries, min(end + size, len(data)), True
    # the first copy is damaged: the second one starts where a frame as long as the
    # distance to it would end (its own length says so)
    for at in range(pos + _FRAME_HEAD.size + _COUNT.size + _CRC.size, len(data)):
        if data[at : at + 1] != _MAGIC2 or at + _FRAME_HEAD.size > len(data):
            continue
        (size,) = struct.unpack_from(">I", data, at + 1)
        if _FRAME_HEAD.size + size + _CRC.size != at - pos:
            continue
        second = _decode_frame(data, at)
        if second is not None:
            # guard: journal-record-damaged-copy-read
            return second[0], second[1], True
    return None


def _torn(tail: bytes) -> bool:
    """Whether a journal's unreadable tail can only be a write that never completed (so
    never synced, and nothing was published under it): zeros (the data never reached the
    disk), or a frame shorter than its own header says. Anything else may be a synced
    frame that rotted: in doubt."""
    if not any(tail):
        return True
    if tail[:1] not in (_MAGIC, _MAGIC2) or len(tail) < _FRAME_HEAD.size:
        return len(tail) < _FRAME_HEAD.size and tail[:1] in (_MAGIC, _MAGIC2)
    _, size = _FRAME_HEAD.unpack_from(tail, 0)
    whole = _FRAME_HEAD.size + size + _CRC.size
    if tail[:1] == _MAGIC2:
        whole *= 2
    return size <= _MAX_PAYLOAD and len(tail) < whole


def replay_frames(
    fd: int,
    path: Path,
    parse: Callable[[bytes, int], tuple[T, int] | None],
    corrupt: str,
) -> tuple[list[tuple[T, int]], int]:
    """Every valid frame of an append-only file, as ``(item, frame size)``, and where the
    valid frames end.

    ``parse(data, pos)`` returns an item and the position after it, or None. A torn last
    frame (a crash mid-write) is cut off the file; damage followed by a valid frame is
    corruption: :class:`StorageError` with ``corrupt`` and the byte, never a guess.
    """
    size = os.fstat(fd).st_size
    data = os.pread(fd, size, 0) if size else b""
    items: list[tuple[T, int]] = []
    pos = 0
    while pos < len(data):
        parsed = parse(data, pos)
        if parsed is None:
            break
        item, end = parsed
        items.append((item, end - pos))
        pos = end
    if pos < len(data):
        if any(parse(data, at) for at in range(pos + 1, len(data))):
            raise StorageError(f"{path} is corrupt at byte {pos}; {corrupt}")
        log.warning("file.torn_tail path=%s kept=%d dropped=%d", path, pos, len(data) - pos)
        try:
            os.ftruncate(fd, pos)
            os.fsync(fd)
        except OSError as exc:
            raise StorageError(f"cannot repair {path}: {exc.strerror or exc}") from exc
    return items, pos


class OffsetJournal:
    """Durable next offset per topic for a producer, appended once per batch.

    :meth:`reserve` appends a small CRC-checked frame and fsyncs it before it
    returns; the producer publishes records only below what is reserved, so
    after a crash :meth:`load` never hands out an offset that may have been
    sent. Each frame is written twice: one damaged copy (rot after the sync) is
    read from the other and the file rewritten. A torn last frame (the crash hit
    mid-write: shorter than it says, or zeros) is cut off; any other unreadable
    tail may be a synced frame that rotted in both copies: it is cut off too, and
    :attr:`in_doubt` says the offsets loaded may be below what was published (the
    producer then asks the stores before numbering). Damage followed by valid
    frames is corruption and raises :class:`StorageError` rather than risk
    reusing offsets. The file is rewritten atomically, one entry per topic, when
    it grows past ``compact_bytes``.
    """

    def __init__(self, path: str | os.PathLike[str], *, compact_bytes: int = 256 * 1024) -> None:
        self.path = Path(path)
        self._compact_bytes = compact_bytes
        self._offsets: dict[str, int] = {}
        self._fd: int | None = None
        self._compact_failed = False
        """The last compaction failed (logged once until one succeeds)."""
        self.in_doubt = False
        """An unreadable tail was cut off that may have been a synced reservation (not
        clearly a torn write): what :meth:`load` gives may be below what was published."""
        try:
            fd = open_durable(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        except OSError as exc:
            raise StorageError(f"cannot open {self.path}: {exc.strerror or exc}") from exc
        try:
            self._size, repaired = self._replay(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        if repaired:  # a copy was damaged: write the file anew from what was read
            try:
                self.compact()
            except BaseException:  # appends after a damaged record would not read back
                self.close()
                raise

    def _replay(self, fd: int) -> tuple[int, bool]:
        """Read every record; returns where they end and whether a damaged copy was
        read past (the file is then rewritten)."""
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0) if size else b""
        pos = 0
        damaged = 0
        offsets = self._offsets
        while pos < len(data):
            parsed = _decode_pair(data, pos)
            if parsed is None:
                break
            entries, pos, bad_copy = parsed
            damaged += bad_copy
            for topic, offset in entries:
                if offset > offsets.get(topic, -1):
                    offsets[topic] = offset
        if damaged:
            log.warning(
                "journal.copy_damaged path=%s records=%d (read from the other copy)",
                self.path,
                damaged,
            )
        if pos < len(data):
            if any(_decode_frame(data, at) for at in range(pos + 1, len(data))):
                raise StorageError(
                    f"{self.path} is corrupt at byte {pos}; refusing to guess offsets "
                    "(a new partition needs a new state directory)"
                )
            tail = data[pos:]
            if _torn(tail):
                log.warning("file.torn_tail path=%s kept=%d dropped=%d", self.path, pos, len(tail))
            else:
                # guard: journal-tail-clearly-torn-doubt
                self.in_doubt = True
                log.warning(
                    "journal.tail_in_doubt path=%s kept=%d dropped=%d: a complete record that "
                    "does not read back; offsets may have been published past what is loaded",
                    self.path,
                    pos,
                    len(tail),
                )
            try:
                os.ftruncate(fd, pos)
                os.fsync(fd)
            except OSError as exc:
                raise StorageError(f"cannot repair {self.path}: {exc.strerror or exc}") from exc
        return pos, bool(damaged)

    # ------------------------------------------------------------------ API

    def load(self) -> dict[str, int]:
        """The next offset to use per topic (topics never reserved are absent)."""
        return dict(self._offsets)

    def reserve(self, topic: str, next_offset: int) -> None:
        """Durably record that ``topic`` continues at ``next_offset`` or later.

        Call it before publishing records below ``next_offset``. Lower or
        equal values than already reserved cost nothing.
        """
        self.reserve_many({topic: next_offset})

    def reserve_many(self, next_offsets: Mapping[str, int]) -> None:
        """:meth:`reserve` several topics with one write and one fsync."""
        fresh = []
        for topic, offset in next_offsets.items():
            if not 0 <= offset <= _MAX_OFFSET:
                raise ValueError(f"offset {offset} out of range for topic {topic!r}")
            if offset > self._offsets.get(topic, -1):
                fresh.append((topic, offset))
        if not fresh:
            return
        fd = self._require_fd()
        frame = _encode_frame(fresh)
        try:
            written = os.write(fd, frame)
            if written != len(frame):
                raise OSError(errno.ENOSPC, "short write: is the disk full?")
            os.fdatasync(fd)
        except OSError as exc:
            self._rollback(fd)
            raise StorageError(
                f"cannot write offset journal {self.path}: {exc.strerror or exc}"
            ) from exc
        self._size += len(frame)
        self._offsets.update(fresh)
        if self._size > self._compact_bytes:
            try:
                self.compact()
            except StorageError as exc:  # the reservation stands; the next one tries again
                if not self._compact_failed:
                    log.warning("journal.compact_failed error=%s", exc)
                self._compact_failed = True
            else:
                self._compact_failed = False

    def compact(self) -> None:
        """Rewrite the journal as one frame holding the current offsets."""
        fd = self._require_fd()
        frame = _encode_frame(self._offsets.items())
        try:
            write_atomic(self.path, frame)
            new_fd = os.open(self.path, os.O_RDWR | os.O_APPEND)
        except OSError as exc:
            raise StorageError(
                f"cannot compact offset journal {self.path}: {exc.strerror or exc}"
            ) from exc
        os.close(fd)
        self._fd = new_fd
        self._size = len(frame)
        log.debug("journal.compacted path=%s topics=%d", self.path, len(self._offsets))

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    @property
    def size(self) -> int:
        """Bytes in the journal file (for tests and metrics)."""
        return self._size

    def _require_fd(self) -> int:
        if self._fd is None:
            raise StorageError(f"offset journal {self.path} is closed")
        return self._fd

    def _rollback(self, fd: int) -> None:
        """Cut off a partly written frame so later appends stay readable."""
        try:
            os.ftruncate(fd, self._size)
        except OSError:
            log.exception("journal.rollback_failed path=%s", self.path)
