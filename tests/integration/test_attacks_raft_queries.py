"""A client that asks a tower's Raft peer for the metadata and never reads the answers.

The ROUTER bounds what it queues per connection in messages (4,096), not in bytes, and a
ClientDispatch query has no follow-up saying its answer was read. Before, each ``RL
config`` query packed the whole metadata afresh (10-30 ms of the loop thread for 10,000
topics) and queued its own copy: 4,096 copies per connection. Now an answer is packed once
per state and sent without a copy (every client of one state shares one buffer), and the
buffers queued for clients are bounded in bytes over all connections
(``PeerOptions.query_answer_bytes``, :mod:`dafka.raft.peer._answer_budget`); past it a large
answer is refused with a short ``busy`` error. One connection may hold a quarter of that
bound: the flood is refused on its own, and an honest client is still answered (before, the
flood took the whole budget and the honest read got ``busy``). Any host may auto-create topics while
``auto_create`` is on, so the metadata an attacker makes the tower answer can be large.

Commands go through :func:`tests.attack_mutants.mutated` (``tests.procs.Proc``), so
``python -m tests.attack_mutants`` runs the tower with each mutant in turn.
"""

from __future__ import annotations

import pytest
import zmq

from dafka.errors import RaftError
from dafka.metadata.state import command, decode_config
from dafka.raft.client import RaftClient
from dafka.raft.codec import encode_uint32
from tests.procs import Tower, rss_mib

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MiB = 1 << 20
TOPICS = 2000
"""Topics of 200-character names: a config answer of about 450 kB."""
ROUNDS = 600
"""State changes, each followed by QUERIES config queries that are never read."""
QUERIES = 10
BOUND = 160 * MiB
"""The tower's RSS growth allowed: the default budget (64 MiB) and what else the run
costs (the log, the new topics). Without the budget the rounds pin about 300 buffers
(some 290 MB); before the shared answers, about 6,000 copies (2.8 GB)."""
GIVE_UP = 600 * MiB


def _name(i: int) -> str:
    return f"t{i:05d}-" + "x" * 200


def config_flood() -> tuple[float, int, int, dict[str, object]]:
    """(RSS growth in MiB, rounds run, term change, what an honest read got afterwards)."""
    tower = Tower()
    try:
        m = tower.proc.wait_line(r"metadata peer \S+ on (tcp://\S+) \(cluster (\S+)\)")
        url, cluster = m.group(1), m.group(2)
        pid = tower.proc.p.pid
        ctx = zmq.Context()
        flood = ctx.socket(zmq.DEALER)
        flood.setsockopt(zmq.RCVHWM, 1)  # read nothing: what is answered stays queued there
        flood.setsockopt(zmq.RCVBUF, 4096)
        flood.setsockopt(zmq.LINGER, 0)
        flood.connect(url)
        with RaftClient([url], cluster, timeout=30) as client:
            client.update_many(
                [command("topic.create", topic=_name(i)) for i in range(TOPICS)], timeout=60
            )
            term0 = _term(client)
            start = rss_mib(pid)
            rounds = 0
            for i in range(ROUNDS):
                client.update(command("topic.create", topic=_name(TOPICS + i)))
                for q in range(QUERIES):
                    frames = [encode_uint32(i * QUERIES + q + 1), b"RL", cluster.encode()]
                    flood.send_multipart([*frames, b"config"])
                rounds += 1
                if rss_mib(pid) - start > GIVE_UP / MiB:
                    break  # the flood is not bounded: stop before it eats the machine
            # an honest reader of the same state
            term1 = _term(client)
            growth = rss_mib(pid) - start
            try:
                answer: dict[str, object] = {
                    "topics": len(decode_config(client.read([b"config"]))["topics"])
                }
            except RaftError as exc:
                answer = {"error": str(exc)}
            assert tower.proc.p.poll() is None, "the tower died"
        flood.close(0)
        ctx.term()
        return growth, rounds, term1 - term0, answer
    finally:
        tower.stop()


def _term(client: RaftClient) -> int:
    return int(client.log_info().term)


def test_config_queries_never_read_cost_a_tower_a_bounded_queue():
    growth, rounds, terms, answer = config_flood()
    assert rounds == ROUNDS and growth < BOUND / MiB, (growth, rounds)
    assert terms == 0, "the tower's Raft peer lost its leadership under the flood"
    # an honest client is answered: the flood holds only its own share of the budget
    assert answer.get("topics") == TOPICS + ROUNDS, answer


if __name__ == "__main__":
    print(config_flood())
