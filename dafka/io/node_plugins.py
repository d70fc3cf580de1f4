"""What a node type plugs into :class:`~dafka.io.node.NodeLoop`: its handler, and the
extra sockets (services) the handler serves on the loop thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import zmq

from ..core.effects import Outgoing, Publish
from ..core.messages import Message
from ..wire import rfc46

if TYPE_CHECKING:
    from .node import NodeLoop

__all__ = ["NodeHandler", "NodeService"]


class NodeHandler(Protocol):
    """What a node type plugs into the loop. All calls happen on the loop thread."""

    def subscriptions(self) -> list[bytes]: ...

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]: ...

    def on_commands(self, now: float) -> Sequence[Outgoing]: ...

    def on_messages(
        self, msgs: list[Message], now: float, sources: Sequence[str] = ()
    ) -> Sequence[Outgoing]: ...  # sources[i]: the host msgs[i] came from (a rate key)

    def on_subscription(self, sub: rfc46.Subscription, now: float) -> list[Publish]: ...

    def on_tick(self, now: float) -> list[Publish]: ...

    def has_pending(self) -> bool: ...

    def accepting(self) -> bool:
        """False pauses reading the data SUB (backpressure; zmq's HWM then applies)."""
        ...

    def on_stop(self) -> None: ...


class NodeService(Protocol):
    """An extra socket a handler serves on the loop thread (e.g. the store's query ROUTER).

    A handler offers them with an optional ``services() -> Sequence[NodeService]``
    method. Every call happens on the loop thread, so the socket never crosses
    threads: :meth:`open` creates and binds it once the data socket is bound,
    :meth:`on_readable` serves a bounded amount of work when it is readable (the
    poll is level-triggered, so what is left is served on the next turn), and
    :meth:`close` runs when the loop stops.
    """

    def open(self, context: zmq.Context[zmq.Socket[bytes]], host: str) -> zmq.Socket[bytes]:
        """Create and bind the socket on ``host``; raise :class:`ConfigError` if it cannot."""
        ...

    def on_readable(self, now: float) -> None: ...

    def beacon(self, node_id: str) -> list[bytes] | None:
        """Frames of a service beacon sent with every node beacon, or None for none."""
        ...

    def close(self) -> None: ...
