"""Wake an IO loop at a deadline to the microsecond: a Linux timerfd polled beside its sockets.

``zmq_poll`` counts its timeout in whole milliseconds, so a loop that sleeps until a
handler's deadline (a producer's linger, ``NodeHandler.command_deadline``) wakes up to a
millisecond after it, unless something else wakes it first: with a 1 ms linger at 10,000
records/s the producer published a batch every 1.14-1.19 ms at the median, not every 1 ms,
and each record waited that much longer. A timerfd armed at the deadline (absolute, on
``CLOCK_MONOTONIC``, the clock of :func:`time.monotonic`) becomes readable at it, and the
poll returns then. Where there is none (not Linux), :attr:`DeadlineTimer.fd` is -1 and the
loop keeps its millisecond timeout alone.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

__all__ = ["DeadlineTimer"]

_CLOCK_MONOTONIC = 1
_TFD_TIMER_ABSTIME = 1


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class DeadlineTimer:
    """A one-shot timer on the loop's thread: :meth:`arm` it at a deadline, poll :attr:`fd`
    for reading, and call :meth:`fired` when it is readable."""

    def __init__(self, enabled: bool = True) -> None:
        self.fd = -1
        """The timerfd to poll (-1: none, or not ``enabled``)."""
        self._armed: float | None = None
        self._spec = _Itimerspec()
        if not enabled or sys.platform != "linux":
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            create, self._settime = libc.timerfd_create, libc.timerfd_settime
        except (OSError, AttributeError):
            return
        create.argtypes = [ctypes.c_int, ctypes.c_int]
        create.restype = ctypes.c_int
        self._settime.argtypes = [
            ctypes.c_int,
            ctypes.c_int,
            ctypes.POINTER(_Itimerspec),
            ctypes.c_void_p,
        ]
        self._settime.restype = ctypes.c_int
        fd = create(_CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            log.debug("timerfd.unavailable errno=%d", ctypes.get_errno())
            return
        self.fd = fd

    def arm(self, deadline: float) -> None:
        """Make :attr:`fd` readable at ``deadline`` (:func:`time.monotonic` seconds; at once
        if it has passed). A deadline armed before is not armed again, even once it fired:
        a handler that keeps a deadline it has passed is turned by the loop's timeout, as
        without a timer, not by a timer firing without end."""
        if self.fd < 0 or deadline == self._armed:
            return
        self._armed = deadline
        seconds = int(deadline)
        value = self._spec.it_value
        value.tv_sec = seconds
        value.tv_nsec = max(1, int((deadline - seconds) * 1e9))  # zero would disarm it
        if self._settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) < 0:
            log.debug("timerfd.settime_failed errno=%d", ctypes.get_errno())

    def fired(self) -> None:
        """:attr:`fd` was readable: read its count, so that it is not readable again until
        it is armed at another deadline."""
        try:
            os.read(self.fd, 8)
        except BlockingIOError:
            pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
