"""A node handler that does nothing, for tests that drive a real ``NodeLoop`` (its command
channel, its ticks) without a node type's cores."""

from __future__ import annotations

from dafka.io.node import NodeHandler, NodeLoop


class IdleHandler(NodeHandler):
    """Subscribes to nothing, sends nothing, has nothing pending; subclass what a test needs."""

    def subscriptions(self) -> list[bytes]:
        return []

    def on_start(self, loop: NodeLoop, now: float) -> list:
        return []

    def on_commands(self, now: float) -> list:
        return []

    def on_messages(self, msgs: list, now: float, sources: object = ()) -> list:
        return []

    def on_subscription(self, sub: object, now: float) -> list:
        return []

    def on_tick(self, now: float) -> list:
        return []

    def has_pending(self) -> bool:
        return False

    def accepting(self) -> bool:
        return True

    def on_stop(self) -> None:
        pass
