"""A linearizability checker for recorded histories (Wing & Gong's search with Lowe's
memoization and "just in time" linearization, the algorithm Porcupine uses).

A history is a list of :class:`Operation` (invocation time, response time, input,
output). An operation without a response (``ret is None``: the client gave up, the
outcome is unknown) may take effect at any point after its invocation, or never;
only leave such operations in when the model accepts them anywhere (writes), and
drop unanswered reads. Times are compared as numbers; an operation that returned
before another was invoked must be ordered before it; equal times count as
concurrent.

The model is a :class:`Model`; :class:`KvModel` is a map of registers
(``("put", key, value)`` → ``None``, ``("get", key)`` → value, ``None`` when unset)
and is checked one key at a time (P-compositionality: a history of independent
objects is linearizable iff each object's sub-history is).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["KvModel", "Model", "Operation", "check", "check_kv"]


@dataclass(frozen=True, slots=True)
class Operation:
    client: int
    call: float
    ret: float | None
    input: Any
    output: Any = None


class Model(Protocol):
    def init(self) -> Hashable: ...

    def step(self, state: Hashable, input: Any, output: Any) -> tuple[bool, Hashable]: ...

    def partition(self, history: Sequence[Operation]) -> list[list[Operation]]: ...


class KvModel:
    def init(self) -> Hashable:
        return None

    def step(self, state: Hashable, input: Any, output: Any) -> tuple[bool, Hashable]:
        if input[0] == "put":
            return True, input[2]
        if input[0] == "get":
            return output == state, state
        raise ValueError(f"unknown operation {input!r}")

    def partition(self, history: Sequence[Operation]) -> list[list[Operation]]:
        by_key: dict[Any, list[Operation]] = {}
        for op in history:
            by_key.setdefault(op.input[1], []).append(op)
        return list(by_key.values())


class _Node:
    __slots__ = ("id", "is_call", "match", "next", "op", "prev")

    def __init__(self, op: Operation | None, id: int, is_call: bool) -> None:
        self.op = op
        self.id = id
        self.is_call = is_call
        self.match: _Node | None = None
        self.prev: _Node | None = None
        self.next: _Node | None = None


def _build(ops: Sequence[Operation]) -> _Node:
    events = []
    for i, op in enumerate(ops):
        ret = math.inf if op.ret is None else op.ret
        if ret < op.call:
            raise ValueError(f"operation returns before it is called: {op}")
        events.append((op.call, 0, i))
        events.append((ret, 1, i))
    events.sort()  # at equal times calls come first: such operations overlap
    head = _Node(None, -1, False)
    calls: dict[int, _Node] = {}
    last = head
    for _, kind, i in events:
        node = _Node(ops[i], i, kind == 0)
        if kind == 0:
            calls[i] = node
        else:
            calls[i].match = node
        last.next, node.prev = node, last
        last = node
    return head


def _lift(call: _Node) -> None:
    for node in (call, call.match):
        assert node is not None and node.prev is not None
        node.prev.next = node.next
        if node.next is not None:
            node.next.prev = node.prev


def _unlift(call: _Node) -> None:
    for node in (call.match, call):
        assert node is not None and node.prev is not None
        node.prev.next = node
        if node.next is not None:
            node.next.prev = node


def _check_single(model: Model, ops: Sequence[Operation]) -> bool:
    head = _build(ops)
    state = model.init()
    linearized = 0
    cache: set[tuple[int, Hashable]] = set()
    stack: list[tuple[_Node, Hashable]] = []
    entry = head.next
    while head.next is not None:
        assert entry is not None
        if entry.is_call:
            assert entry.op is not None
            ok, new_state = model.step(state, entry.op.input, entry.op.output)
            if ok:
                key = (linearized | (1 << entry.id), new_state)
                if key not in cache:
                    cache.add(key)
                    stack.append((entry, state))
                    state, linearized = new_state, key[0]
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            # the earliest pending return: some call must be linearized before it; backtrack
            if not stack:
                return False
            entry, state = stack.pop()
            linearized &= ~(1 << entry.id)
            _unlift(entry)
            entry = entry.next
    return True


def check(model: Model, history: Sequence[Operation]) -> bool:
    """Whether ``history`` is linearizable with respect to ``model``."""
    return all(_check_single(model, part) for part in model.partition(history))


def check_kv(history: Sequence[Operation]) -> bool:
    return check(KvModel(), history)
