"""Dafka's command-line tools (``dafka-producer``, ``dafka-consumer``, ``dafka``, ...).

Ctrl-C anywhere in a command is exit status 130 and no traceback. While a command runs,
:func:`dafka.cli.common.run_cli` turns the ``KeyboardInterrupt`` into the exit; this
package, imported before any command module, covers the rest: the imports before ``main``
runs (the node types take up to a second or two to load on a busy machine) and the
interpreter's shutdown after it returned (joining threads).
"""

from __future__ import annotations

import os
import sys
from types import TracebackType

INTERRUPTED = 130
"""The exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""


def _exit_interrupted() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed pipe: nothing more to say
            pass
    os._exit(INTERRUPTED)


_previous_hook = sys.excepthook
_previous_unraisable = sys.unraisablehook


def _excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    # guard: ctrl-c-before-command-main
    if issubclass(kind, KeyboardInterrupt):
        _exit_interrupted()
    _previous_hook(kind, value, tb)


def _unraisablehook(unraisable: sys.UnraisableHookArgs) -> None:
    # Ctrl-C while the interpreter joins threads at exit ("Exception ignored in: <module
    # 'threading'>" and a traceback, before)
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _exit_interrupted()
    _previous_unraisable(unraisable)


sys.excepthook = _excepthook
sys.unraisablehook = _unraisablehook
