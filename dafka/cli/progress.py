"""A status line on a terminal during long waits (issue 12 point 6).

``dafka-producer`` waiting for acknowledgements at the end of its input,
``dafka-consumer -e`` catching up and the benchmarks draw one line on stderr,
redrawn in place at most :data:`REDRAW` times a second, ended by a newline. Only
when stderr is a terminal (never in a pipe, a file or a log), and never with
``--no-progress``: what a script reads is the same with or without it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

__all__ = ["REDRAW", "Progress", "end_progress", "progress_option"]

REDRAW = 5
"""Most redraws a second."""

F = TypeVar("F", bound=Callable[..., Any])


_shown: list[Progress] = []
"""The lines on the terminal now: whatever prints to stderr next ends them first."""


def end_progress() -> None:
    """End the status line shown, if any, so that an error or a summary starts a line of its
    own (:func:`dafka.cli.common.run_cli` calls it before every error line)."""
    for bar in list(_shown):
        bar.end()


def stderr_is_terminal() -> bool:
    try:
        return os.isatty(2)
    except OSError:
        return False


class Progress:
    """One line on stderr, redrawn in place; :meth:`end` finishes it with a newline.

    ``enabled=None`` means: when stderr is a terminal. Writes go straight to file
    descriptor 2 (no buffering to interleave with the logs' stream).
    """

    def __init__(
        self,
        enabled: bool | None = None,
        *,
        interval: float = 1.0 / REDRAW,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[bytes], object] = lambda b: os.write(2, b),
    ) -> None:
        self.enabled = stderr_is_terminal() if enabled is None else enabled
        self.interval = interval
        self._clock = clock
        self._write = write
        self._last = -interval
        self._drawn = False
        self._text = ""
        self._width = 0
        self._lock = threading.RLock()  # a signal handler may end the line mid-update

    def update(self, text: str, *, force: bool = False) -> bool:
        """Draw ``text`` unless the last draw was under :attr:`interval` ago or showed the
        same text; True if drawn."""
        if not self.enabled:
            return False
        with self._lock:
            now = self._clock()
            if not force and (now - self._last < self.interval or text == self._text):
                return False
            self._text = text
            self._last = now
            pad = max(0, self._width - len(text))  # blank what a longer line left
            self._width = len(text)
            self._write(("\r" + text + " " * pad).encode(errors="replace"))
            if not self._drawn:
                _shown.append(self)
            self._drawn = True
            return True

    def due(self) -> bool:
        """True when :meth:`update` would draw now (to skip computing a line it would drop)."""
        return self.enabled and self._clock() - self._last >= self.interval

    def end(self, text: str | None = None) -> None:
        """If a line is shown: replace it with ``text`` (if given) and end it with a newline,
        so that what follows starts on a line of its own."""
        if not self.enabled:
            return
        with self._lock:
            if not self._drawn:
                return
            if text is not None:
                self.update(text, force=True)
            self._write(b"\n")
            self._drawn = False
            if self in _shown:
                _shown.remove(self)
            self._text = ""

    @contextmanager
    def ticking(self, text: Callable[[], str]) -> Iterator[None]:
        """Redraw ``text()`` from a thread while the block runs, then end the line."""
        if not self.enabled:
            yield
            return
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(self.interval):
                self.update(text())

        thread = threading.Thread(target=run, name="dafka-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5)
            self.end(text())


def progress_option(f: F) -> F:
    """``--progress/--no-progress`` (``DAFKA_PROGRESS``): the status line on a terminal."""
    return click.option(
        "--progress/--no-progress",
        default=True,
        show_default=True,
        help="Show progress on long waits, on stderr and only when it is a terminal.",
    )(f)
