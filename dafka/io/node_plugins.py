"""What a node type plugs into :class:`~dafka.io.node.NodeLoop`: its handler, and the
extra sockets (services) the handler serves on the loop thread.

Every hook the loop calls is declared here, with its default when it is optional: a
handler subclasses :class:`NodeHandler` and overrides what it needs, and the loop calls
each hook directly (it probes for none).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import zmq

from ..core.effects import Outgoing, Publish
from ..core.messages import Message
from ..core.read_guard import Sender
from ..core.ready import Persister, ReadyCore
from ..wire import rfc46

if TYPE_CHECKING:
    from ..security.curve_keys import CurveConfig
    from ..security.identity import Identity
    from .node import NodeLoop

__all__ = ["MAX_DRAIN", "MAX_DRAIN_BYTES", "MessageSources", "NodeHandler", "NodeService"]

MAX_DRAIN = 20_000  # messages read from the data SUB per loop turn
MAX_DRAIN_BYTES = 64 * 1024 * 1024  # ... and bytes (signed RECORDs carry batches)


class MessageSources(Sequence[str]):
    """Where the messages of one turn came from, as :meth:`NodeHandler.on_messages` gets
    it: ``sources[i]`` is the host ``msgs[i]`` came from (a rate key), :meth:`sender` the
    node whose connection it came on (the loop's is :class:`~dafka.io.bounds.FrameSources`,
    which looks either up only when asked)."""

    __slots__ = ()

    def sender(self, index: int) -> Sender | None:
        """The node whose connection message ``index`` came on (None: not known here)."""
        return None


class NodeHandler:
    """What a node type plugs into the loop. All calls happen on the loop thread.

    The first group is what every handler implements (a call raises
    ``NotImplementedError`` otherwise); the second are optional hooks, whose defaults
    here are what a handler without them gets.

    A handler drives its node core: it hands the core what arrived (``step``), the time
    (``tick``) and its facade's commands, executes the core's Readies with
    :func:`dafka.io.ready_shell.run_ready` (``send=out.extend``) and returns ``out``,
    which the loop sends on the data XPUB with the node's profile. Or it sets
    :attr:`ready_core` and the loop executes them itself, after each hook.
    """

    # ------------------------------------------------------------------ required

    def subscriptions(self) -> list[bytes]:
        """The data SUB's prefixes (:meth:`NodeLoop.sync_subscriptions` makes them so)."""
        raise NotImplementedError

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        """The sockets are bound and the loop is about to turn: what to send first."""
        raise NotImplementedError

    def on_commands(self, now: float) -> Sequence[Outgoing]:
        """Once every turn: what the facade queued since the last one."""
        raise NotImplementedError

    def on_messages(
        self, msgs: list[Message], now: float, sources: MessageSources
    ) -> Sequence[Outgoing]:
        """What the data SUB received this turn, decoded, and where each came from."""
        raise NotImplementedError

    def on_subscription(self, sub: rfc46.Subscription, now: float) -> Sequence[Outgoing]:
        """A peer (un)subscribed on the data XPUB (granted, under CURVE)."""
        raise NotImplementedError

    def on_tick(self, now: float) -> Sequence[Outgoing]:
        """Time passed (every ``TICK_INTERVAL``, and every turn while :meth:`has_pending`)."""
        raise NotImplementedError

    def has_pending(self) -> bool:
        """True: turn again at once, without waiting in the poll."""
        raise NotImplementedError

    def accepting(self) -> bool:
        """False pauses reading the data SUB (backpressure; zmq's HWM then applies)."""
        raise NotImplementedError

    def on_stop(self) -> None:
        """The loop is stopping (its sockets close next)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ optional

    xpub_frame_bytes: int | None = None
    """The largest frame this node sends a subscriber (a signed producer's or store's
    batch), so the data XPUB keeps a byte-safe count (:func:`dafka.io.bounds.xpub_hwm`);
    None: the configured high-water mark as it is."""

    xpub_min_hwm: int = 1
    """The least high-water mark of the data XPUB (a producer's: from its budget)."""

    ready_core: ReadyCore | None = None
    """Set (once, before the loop starts), the loop is the core's one executor: after
    every hook it calls (and every :meth:`NodeLoop.call`) it sends what the hook returned,
    then runs :func:`~dafka.io.ready_shell.run_ready` on this core with
    :attr:`ready_persister`, its own send and :meth:`deliver`, so the hook need only step
    the core. What a hook returns itself is sent before that core's Readies, outside their
    durability order. None: the handler runs them inside its hooks."""

    ready_persister: Persister | None = None
    """Makes the :attr:`ready_core`'s writes durable (None: a core that persists nothing)."""

    def deliver(self, items: Sequence[Any]) -> None:
        """Hand a Ready's ``deliver`` to the application (with :attr:`ready_core` only)."""

    def services(self) -> Sequence[NodeService]:
        """Extra sockets served on the loop thread (a store's query ROUTER); asked once,
        when the loop is made."""
        return ()

    def command_deadline(self) -> float | None:
        """When the loop must turn again though nothing woke it (a producer's linger, a
        store's requester whose credit comes back), on the loop's clock; ``None``: only on
        a wake-up. The loop wakes at it to the microsecond (``dafka.io.deadline_timer``)."""
        return None

    def drain_budget(self) -> int:
        """Bytes the loop may read from the data SUB this turn (a store gathering what
        arrives into a bounded drain for its writer thread says how much it has room for)."""
        return MAX_DRAIN_BYTES

    def on_arrival(self, msgs: list[Message], now: float) -> Sequence[Outgoing]:
        """Sent before :meth:`on_messages` works on ``msgs`` (a consumer's FETCH ahead)."""
        return ()

    def interest(self) -> Collection[str] | None:
        """The distinct topics this node uses now, asked every turn (keep it cheap; a
        repeated topic may hide a topic left, since the loop compares lengths): under the
        signed profile's topic mesh (``NodeConfig.mesh``) it hears, and connects to, the
        stores and the nodes sharing one of them (:mod:`dafka.wire.interest`). None, the
        default: every topic (a store; and any node type that does not say)."""
        return None


class NodeService(Protocol):
    """An extra socket a handler serves on the loop thread (e.g. the store's query ROUTER).

    A handler offers them with :meth:`NodeHandler.services`. Every call happens on the
    loop thread, so the socket never crosses threads: :meth:`secure` gives it the node's
    CURVE settings first (when the node has a key), :meth:`open` creates and binds it once
    the data socket is bound, :meth:`on_readable` serves a bounded amount of work when it
    is readable (the poll is level-triggered, so what is left is served on the next turn),
    and :meth:`close` runs when the loop stops.
    """

    def secure(self, config: CurveConfig, identity: Identity) -> None:
        """Serve under CURVE as ``config`` says (a no-op when it is off), before :meth:`open`."""
        ...

    def open(self, context: zmq.Context[zmq.Socket[bytes]], host: str) -> zmq.Socket[bytes]:
        """Create and bind the socket on ``host``; raise :class:`ConfigError` if it cannot."""
        ...

    def on_readable(self, now: float) -> None: ...

    def beacon(self, node_id: str) -> list[bytes] | None:
        """Frames of a service beacon sent with every node beacon, or None for none."""
        ...

    def close(self) -> None: ...
