"""The read ACL on a node's data XPUB (CURVE): subscriptions held, granted, refused, cut.

With CURVE on, a node's XPUB runs in ``ZMQ_XPUB_MANUAL`` mode: a subscription takes effect
only once :class:`ReadGrants` grants it, for the key of the connection it came on, under the
node's :class:`~dafka.core.read_guard.ReadView` (the metadata's read ACLs and trusted
stores; ``docs/security.md`` "Read ACLs"). Until the node has a view, subscriptions wait,
unread, in the XPUB (the loop does not poll it). When a new view takes back a grant, every
connection of the XPUB is closed (unbind, and bind the same endpoint again): subscribers
reconnect and subscribe again, and each subscription is decided under the new view.
Everything here runs on the node's IO thread (:class:`~dafka.io.node.NodeLoop`).
"""

from __future__ import annotations

import errno
import logging
import time

import zmq

from ..core.read_guard import ReadView, SubscriptionGuard

log = logging.getLogger(__name__)

__all__ = ["ReadGrants"]


class ReadGrants:
    """Grants and refuses the subscriptions of one node's XPUB (loop thread only)."""

    def __init__(self, node_id: str, read_view: ReadView | None) -> None:
        self.node_id = node_id
        # guard: subscriptions-wait-first-read-view
        self.guard = SubscriptionGuard(read_view)
        """Who may subscribe to what (``dafka.core.read_guard``)."""
        self.broken = False
        """True once the XPUB could not be bound again after a cut: the node must stop."""
        self._xpub: zmq.Socket[bytes] | None = None
        self._poller: zmq.Poller | None = None
        self._bound = ""

    @property
    def held(self) -> bool:
        """True while there is no view yet: subscriptions wait, unread, in the XPUB."""
        return self.guard.view is None

    def attach(self, xpub: zmq.Socket[bytes], poller: zmq.Poller, bound: str) -> None:
        """The loop's XPUB (bound to ``bound``) and the poller it is registered with."""
        self._xpub, self._poller, self._bound = xpub, poller, bound

    def detach(self) -> None:
        """The loop stopped: its sockets are closed."""
        self._xpub = self._poller = None

    def set_view(self, view: ReadView) -> None:
        """Take the cluster's read ACLs and trusted stores. The first view starts granting
        subscriptions; a view that takes back a grant cuts every connection."""
        guard = self.guard
        held = guard.view is None
        # guard: narrowed-read-view-cuts-grants
        if guard.set_view(view):
            self._cut_grants()
        if held and self._poller is not None and self._xpub is not None:
            self._poller.modify(self._xpub, zmq.POLLIN)
            log.info("curve.subscriptions_granting id=%s", self.node_id)

    def _cut_grants(self) -> None:
        """A subscription granted before is refused now: close every connection of the XPUB
        (unbind, and bind the same endpoint again); subscribers reconnect and subscribe
        again, and each subscription is decided under the new view."""
        xpub, guard = self._xpub, self.guard
        if xpub is None:
            return
        bound = self._bound
        try:
            xpub.unbind(bound)
        except zmq.ZMQError as exc:
            log.warning("curve.grants_cut_failed id=%s error=%s", self.node_id, exc)
        guard.forget_grants()
        deadline = time.monotonic() + 2.0
        for _ in range(400):  # the old listener closes on libzmq's I/O thread
            try:
                xpub.bind(bound)
            except zmq.ZMQError as exc:
                if exc.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                    log.error(
                        "curve.rebind_failed id=%s endpoint=%s error=%s", self.node_id, bound, exc
                    )
                    self.broken = True  # a node nobody can reach must not look alive
                    return
                time.sleep(0.005)
            else:
                log.warning(
                    "curve.grants_cut id=%s: the read ACL narrowed; subscribers reconnect",
                    self.node_id,
                )
                return
        log.error("curve.rebind_failed id=%s endpoint=%s", self.node_id, bound)
        self.broken = True

    def decide(self, xpub: zmq.Socket[bytes], frame: zmq.Frame, now: float) -> bytes | None:
        """Grant (XPUB_MANUAL: ``SUBSCRIBE`` applies to the connection the frame came on) or
        refuse one subscription; the frame for the handler when granted, else None."""
        guard = self.guard
        data = frame.bytes
        if not data or data[0] not in (0, 1):
            return None
        prefix = data[1:]
        try:
            got = frame.get("User-Id")
        except zmq.ZMQError:
            got = None  # no metadata: a connection's end (libzmq's own unsubscribes)
        user_id = got if isinstance(got, str) else None
        if data[0] == 0:
            xpub.setsockopt(zmq.UNSUBSCRIBE, prefix)  # taking a grant back is always safe
            return data if guard.release(user_id, prefix).allowed else None
        # guard: xpub-grants-subscriptions-read-acl
        if guard.check(user_id, prefix, now, self.node_id).allowed:
            xpub.setsockopt(zmq.SUBSCRIBE, prefix)
            return data
        return None
