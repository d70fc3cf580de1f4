"""What ``dafka-producer`` does with standard input: lines in, records out, every one accounted for.

:func:`read_lines` splits a file descriptor into lines without holding a line
that is too big to be a record (it only counts its bytes). :class:`Feed` reads
and sends on a worker thread, so that the main thread stays free to take
SIGINT and SIGTERM (:class:`Signals`) whatever the worker is blocked in: a read
of standard input or a ``send`` waiting for buffer room. The worker sends under
:attr:`Feed.lock`, so once the main thread holds that lock nothing more is sent
and the counts stand still.
"""

from __future__ import annotations

import functools
import os
import select
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ClosedError, DafkaError, RecordTooLargeError
from .producer_keys import KeyRule

if TYPE_CHECKING:  # not at import: the producer CLI starts faster (dafka.cli.producer)
    from ..producer import Producer

__all__ = ["Feed", "Signals", "Tally", "read_files", "read_lines"]

READ_BYTES = 1 << 20


def read_lines(
    fd: int,
    max_line: int,
    read_bytes: int = READ_BYTES,
    stopped: Callable[[], bool] = lambda: False,
    delimiter: bytes = b"\n",
) -> Iterator[list[bytes | int]]:
    """The lines of ``fd`` (without the ``delimiter``, by default ``\\n``), one list per read.

    A line of more than ``max_line`` bytes comes as its length (an ``int``)
    instead: it is counted as it streams past, never held. A last line without a
    delimiter is a line too. A delimiter of several bytes may be cut by a read: the
    last ``len(delimiter) - 1`` bytes of a read wait for the next one.
    """
    if not delimiter:
        raise ValueError("empty delimiter")
    step = max(1, min(read_bytes, max_line))  # a whole line inside one read is <= max_line
    keep = len(delimiter) - 1
    carry = b""  # the end of the last read, which may begin a delimiter
    pending: list[bytes] = []  # pieces of the line that the last read cut
    pending_len = 0
    too_big = False  # that line is already over max_line: count it, keep nothing
    read = os.read
    while True:
        # wait for input a little at a time: once stopped, nothing more is taken from it
        while not select.select([fd], [], [], 0.1)[0]:
            if stopped():
                return
        if stopped():
            return
        data = read(fd, step)
        if not data:
            break
        if carry:
            data, carry = carry + data, b""
        pieces = data.split(delimiter)
        tail = pieces.pop()
        if keep and tail:
            carry, tail = tail[-keep:], tail[:-keep]
        lines: list[bytes | int] = list(pieces)
        if pieces and (pending_len or too_big):
            first = pieces[0]
            total = pending_len + len(first)
            if too_big or total > max_line:
                lines[0] = total
            else:
                pending.append(first)
                lines[0] = b"".join(pending)
            pending, pending_len, too_big = [], 0, False
        if tail:
            pending_len += len(tail)
            if too_big or pending_len > max_line:
                too_big, pending = True, []
            else:
                pending.append(tail)
        if lines:
            yield lines
    if carry:
        pending_len += len(carry)
        if too_big or pending_len > max_line:
            too_big, pending = True, []
        else:
            pending.append(carry)
    if too_big:
        yield [pending_len]
    elif pending_len:
        yield [b"".join(pending)]


def read_files(
    paths: Sequence[str], max_size: int, stopped: Callable[[], bool] = lambda: False
) -> Iterator[list[bytes | int]]:
    """Each file's bytes as one line (its size, an ``int``, when over ``max_size``)."""
    for path in paths:
        if stopped():
            return
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                data = None if size > max_size else f.read(max_size + 1)
        except OSError as exc:  # checked before anything was sent; gone or changed since
            raise DafkaError(f"cannot read {path}: {exc.strerror or exc}") from None
        yield [size] if data is None else [data]


@dataclass(frozen=True, slots=True)
class Tally:
    """Where every line read went."""

    read: int
    """Lines taken from standard input."""
    acknowledged: int
    failed: int
    """Lines refused (too big) or records that failed after they were sent."""

    @property
    def unacknowledged(self) -> int:
        """Lines read that were neither acknowledged nor failed (not sent, or no ACK in time)."""
        return self.read - self.acknowledged - self.failed


class Feed:
    """Reads lines from ``fd`` and sends each as a record, on its own thread.

    ``separator`` splits a line into key and value; ``report`` gets one line of
    text for each line that could not be sent. ``done`` is set when the worker
    ends (end of input, :meth:`stop`, or an error, kept in :attr:`error`).
    """

    def __init__(
        self,
        producer: Producer,
        fd: int,
        *,
        separator: bytes | None,
        max_line: int,
        report: Callable[[str], None],
        on_done: Callable[[], None] = lambda: None,
        delimiter: bytes = b"\n",
        strip_cr: bool = True,
        files: Sequence[str] = (),
        keys: KeyRule | None = None,
        headers: tuple[tuple[str, bytes | None], ...] = (),
    ) -> None:
        self.producer = producer
        self.headers = headers
        """``-H``: the headers every record is sent with (none: the plain ``send``)."""
        self.keys = keys
        """``-k``/``-Z``: how a line becomes a value and a key (None: by ``separator``)."""
        self.fd = fd
        self.delimiter = delimiter
        self.strip_cr = strip_cr
        """Drop a ``\\r`` before the delimiter (text lines from Windows); off with ``-D``."""
        self.files = tuple(files)
        """Send each of these files as one record, byte for byte, instead of reading ``fd``."""
        self.separator = separator
        self.max_line = max_line
        self.report = report
        self.on_done = on_done
        self.stopped = False
        self.lines = 0
        self.taken = 0
        """Lines taken from standard input, sent or not (a read takes many at once)."""
        self.sent = 0
        self.refused = 0
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dafka-producer-stdin", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Read no more input (the lines already read are still sent)."""
        self.stopped = True

    def quiesce(self, timeout: float = 0.0) -> bool:
        """True once nothing more will be sent: the worker ended. After :meth:`stop` it ends
        within a tenth of a second, or when a blocked ``send`` fails as the producer closes."""
        return self.done.wait(timeout) if timeout > 0 else self.done.is_set()

    def tally(self) -> Tally:
        producer = self.producer
        read = max(self.taken, self.lines)  # lines read but not sent are not acknowledged
        return Tally(read, producer.acknowledged, producer.failed + self.refused)

    def _run(self) -> None:
        try:
            # stop reading when stopped; what was read is still sent
            stopped = lambda: self.stopped  # noqa: E731
            if self.files:
                source = read_files(self.files, self.max_line, stopped)
            else:
                source = read_lines(
                    self.fd, self.max_line, stopped=stopped, delimiter=self.delimiter
                )
            for lines in source:
                self.taken += len(lines)
                self._send(lines)
        except ClosedError as exc:  # the main thread closed the producer
            if not self.stopped:
                self.error = exc
        except BaseException as exc:  # reported by the main thread
            self.error = exc
        finally:
            self.done.set()
            self.on_done()

    def _send(self, lines: list[bytes | int]) -> None:
        """Send ``lines``, all of them: they are taken from the input already."""
        send = self.producer.send
        if self.headers:
            send = functools.partial(send, headers=self.headers)
        separator = self.separator
        strip_cr = self.strip_cr
        number = self.lines
        sent = self.sent
        try:
            for line in lines:
                number += 1
                if type(line) is int:
                    what = "a file" if self.files else "a line"
                    self._refuse(number, f"{what} of {line} bytes is over the record size limit")
                    continue
                assert isinstance(line, bytes)
                if strip_cr and line.endswith(b"\r"):
                    line = line[:-1]
                try:
                    if self.keys is not None:
                        value, key = self.keys.split(line)
                        send(value, key)
                    elif separator is None:
                        send(line)
                    else:
                        key, found, value = line.partition(separator)
                        if found:
                            send(value, key)
                        else:  # a line without the separator is a record without a key
                            send(line)
                except RecordTooLargeError as exc:
                    self._refuse(number, str(exc))
                    continue
                sent += 1
        finally:
            self.lines = number
            self.sent = sent

    def _refuse(self, number: int, why: str) -> None:
        self.refused += 1
        what = f"file {self.files[number - 1]}" if self.files else f"line {number}"
        self.report(f"error: {what} not sent: {why}")


class Signals:
    """SIGINT and SIGTERM: the first calls ``on_first``, the second ``on_second`` (abort)."""

    def __init__(self, on_first: Callable[[int], None], on_second: Callable[[int], None]) -> None:
        self.first: int | None = None
        self._on_first = on_first
        self._on_second = on_second
        self._previous = {
            sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)
        }

    def _handle(self, signum: int, frame: object) -> None:
        if self.first is None:
            self.first = signum
            self._on_first(signum)
        else:
            self._on_second(signum)

    def restore(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)

    @staticmethod
    def name(signum: int) -> str:
        return signal.Signals(signum).name

    @staticmethod
    def exit_code(signum: int) -> int:
        return 128 + signum
