"""Simulated KV clients for linearizability tests: they talk to whichever peer they
believe leads, follow NotLeader hints, retry writes with the same reqid and record an
invoke/response history for :mod:`.linearizability`."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

from dafka.errors import NotLeader, ProposalDropped
from dafka.raft.codec import Entry
from dafka.raft.core import ProposeStatus
from dafka.raft.core._ready import ReadState

from .linearizability import Operation
from .sim import Network, SimNode, put


@dataclass
class _Pending:
    kind: str
    key: str
    value: Any
    call: int
    token: bytes  # reqid (put) or read ctx (get)
    attempts: int = 0
    node: str | None = None  # the peer that accepted the request
    deadline: int = 0
    retry_at: int = 0


class KvClients:
    def __init__(
        self,
        net: Network,
        count: int = 4,
        keys: str = "xy",
        rng: random.Random | None = None,
        busy: float = 0.5,
        patience: int = 30,
        attempts: int = 3,
    ) -> None:
        self.net = net
        self.rng = rng or random.Random(0)
        self.keys = keys
        self.busy = busy
        self.patience = patience
        self.attempts = attempts
        self.clock = itertools.count(1)
        self.values = itertools.count(1)
        self.ctxs = itertools.count(1)
        self.pending: list[_Pending | None] = [None] * count
        self.targets: list[str | None] = [None] * count
        self.history: list[Operation] = []
        self.completed = {"put": 0, "get": 0}
        net.apply_hooks.append(self._on_apply)
        net.read_hooks.append(self._on_read)

    def step(self) -> None:
        """Give each client a chance to act (call once per simulated tick)."""
        for c in range(len(self.pending)):
            op = self.pending[c]
            if op is None:
                if self.rng.random() < self.busy:
                    self._invoke(c)
            elif op.node is None:
                if self.net.time >= op.retry_at:
                    self._submit(c, op)
            elif self.net.time >= op.deadline:
                self._retry_or_give_up(c, op)

    def finish(self) -> None:
        """Outstanding writes have unknown outcomes; outstanding reads said nothing."""
        for c, op in enumerate(self.pending):
            if op is not None and op.kind == "put":
                self.history.append(Operation(c, op.call, None, ("put", op.key, op.value)))
            self.pending[c] = None

    def _invoke(self, c: int) -> None:
        key = self.rng.choice(self.keys)
        if self.rng.random() < 0.5:
            op = _Pending("put", key, next(self.values), next(self.clock), self.net.new_reqid())
        else:
            ctx = next(self.ctxs).to_bytes(8, "big")
            op = _Pending("get", key, None, next(self.clock), ctx)
        self.pending[c] = op
        self._submit(c, op)

    def _pick(self, c: int) -> SimNode | None:
        target = self.targets[c]
        node = self.net.nodes.get(target) if target else None
        if node is None or not node.alive:
            live = [n for n in self.net.nodes.values() if n.alive]
            node = self.rng.choice(live) if live else None
        return node

    def _submit(self, c: int, op: _Pending) -> None:
        node = self._pick(c)
        if node is None or node.core is None:
            op.retry_at = self.net.time + 1
            return
        op.attempts += 1
        try:
            if op.kind == "put":
                data = put(op.key, op.value)
                result = node.core.propose(data, op.token, self.net.now())
                if result.status is ProposeStatus.EXPIRED:
                    raise AssertionError("reqids in this simulation never expire")
            else:
                op.token = next(self.ctxs).to_bytes(8, "big")  # a fresh ctx per attempt
                node.core.read_index(op.token)
        except (NotLeader, ProposalDropped) as exc:
            self.targets[c] = getattr(exc, "leader", None)
            op.retry_at = self.net.time + 1
            op.attempts -= 1
            return
        self.targets[c] = node.id
        op.node = node.id
        op.deadline = self.net.time + self.patience
        if op.kind == "put" and result.duplicate and node.sm and node.sm.applied >= result.index:
            self._complete(c, op, None)  # a resend of a write that is already applied
            return
        node.process()

    def _retry_or_give_up(self, c: int, op: _Pending) -> None:
        op.node = None
        self.targets[c] = None
        if op.attempts < self.attempts:
            self._submit(c, op)
            return
        if op.kind == "put":  # it may still take effect: its outcome is unknown
            self.history.append(Operation(c, op.call, None, ("put", op.key, op.value)))
        self.pending[c] = None

    def _complete(self, c: int, op: _Pending, output: Any) -> None:
        value = op.value if op.kind == "put" else None
        inp = ("put", op.key, value) if op.kind == "put" else ("get", op.key)
        self.history.append(Operation(c, op.call, next(self.clock), inp, output))
        self.completed[op.kind] += 1
        self.pending[c] = None

    def _on_apply(self, node: SimNode, entry: Entry) -> None:
        for c, op in enumerate(self.pending):
            if op and op.kind == "put" and op.node == node.id and op.token == entry.reqid:
                self._complete(c, op, None)

    def _on_read(self, node: SimNode, rs: ReadState) -> None:
        for c, op in enumerate(self.pending):
            if op and op.kind == "get" and op.node == node.id and op.token == rs.ctx:
                assert node.sm is not None and node.sm.applied >= rs.index
                self._complete(c, op, node.sm.kv.get(op.key))
