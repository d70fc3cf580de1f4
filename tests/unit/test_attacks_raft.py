"""Attacks on the Raft codec and core (issue 10, point 4): pure, no sockets.

* A ConfigUpdate naming a peer URL libzmq refuses (``Tcp://...``) used to be committed,
  and every peer's loop died connecting to it, again on every restart. The codec now
  answers it as an argument error, and the core refuses it too.
* A term of 2**56 or more (an entry holds 7 bytes of term) used to be adopted, after
  which no entry could be stored. The codec refuses such terms (and indexes past the
  log's range) in every peer RPC, and the core drops messages carrying them.
* A configured peer could still push the term to 2**56 - 1, one message at a time, after
  which no peer could campaign. A message may now raise our term only up to a ceiling
  (our term plus a window, rising a few terms per tick), and reaching the last term is a
  logged error.
"""

from __future__ import annotations

import logging
import random

import pytest

from dafka.raft.codec import (
    MAX_TERM,
    ClusterConfig,
    Entry,
    EntryType,
    HardState,
    Peer,
    RaftWireError,
    encode_json,
    encode_uint,
    peer_url_problem,
)
from dafka.raft.codec import _wire as w
from dafka.raft.codec._bounds import MAX_INDEX
from dafka.raft.core import ProposeStatus, RaftCore, Role
from dafka.raft.core import _messages as m
from dafka.raft.core._terms import TERM_RISE_PER_TICK, TERM_WINDOW
from dafka.raft.peer import MemoryStorage

REQID = bytes.fromhex("5956dc8826f27e10dcccab20")
NOW = float(int.from_bytes(REQID[:4], "big"))
CLUSTER = b"c"
GOOD = "tcp://127.0.0.1:7001"

BAD_URLS = [
    "Tcp://x:1",
    "TCP://x:1",
    "ipc:///tmp/x",
    "inproc://x",
    "tcp://*:1",
    "tcp://x:0",
    "tcp://x:65536",
    "tcp://x",
    "tcp://:1",
    "tcp://a;b:1",
    "tcp://x:1/path",
    "tcp://x:1\n",
    " tcp://x:1",
    "tcp://" + "h" * 300 + ":1",
    "",
]


# -- peer URLs --------------------------------------------------------------------------------


@pytest.mark.parametrize("url", BAD_URLS)
def test_bad_peer_urls_are_refused(url):
    assert peer_url_problem(url) is not None


@pytest.mark.parametrize(
    "url", ["tcp://127.0.0.1:7001", "tcp://localhost:1", "tcp://a-b.c_d:65535", "tcp://[::1]:5"]
)
def test_good_peer_urls_pass(url):
    assert peer_url_problem(url) is None


def _config_update(value) -> list[bytes]:
    return [REQID, b"&", CLUSTER, encode_json(value)]


@pytest.mark.parametrize("url", BAD_URLS)
def test_config_update_with_a_bad_url_decodes_as_an_argument_error(url):
    msg = w.decode_request(_config_update([["p1", GOOD], ["p2", url]]))
    assert isinstance(msg, w.InvalidConfigUpdate)
    assert "url" in msg.error_message


def test_config_update_with_a_bad_learner_url_or_id_is_an_argument_error():
    learner = {"new": [["p1", GOOD]], "learners": [["l1", "Tcp://x:1"]]}
    assert isinstance(w.decode_request(_config_update(learner)), w.InvalidConfigUpdate)
    bad_id = [["p1", GOOD], ["p\x002", "tcp://x:2"]]
    assert isinstance(w.decode_request(_config_update(bad_id)), w.InvalidConfigUpdate)
    too_many = [[f"p{k}", f"tcp://h{k}:1"] for k in range(65)]
    assert isinstance(w.decode_request(_config_update(too_many)), w.InvalidConfigUpdate)


def _leader() -> RaftCore:
    core = RaftCore("p1", ClusterConfig((Peer("p1", GOOD),)), rng=random.Random(1))
    for _ in range(100):
        core.tick()
        if core.role is Role.LEADER:
            return core
    raise AssertionError("a one-voter core did not elect itself")


@pytest.mark.parametrize("url", ["Tcp://x:1", "tcp://x:0", "ipc:///x"])
def test_core_refuses_a_config_change_with_a_bad_url(url):
    core = _leader()
    result = core.propose_config((Peer("p1", GOOD), Peer("p2", url)), REQID, NOW)
    assert result.status is ProposeStatus.ARGUMENT_ERROR
    assert core.config == ClusterConfig((Peer("p1", GOOD),))
    learner = core.add_learner(Peer("l1", url), REQID, NOW)
    assert learner.status is ProposeStatus.ARGUMENT_ERROR


# -- terms and indexes ------------------------------------------------------------------------

BIG = MAX_TERM + 1  # 2**56: no entry can hold it


def _frames(kind: str, big: int, field: int) -> list[bytes]:
    """A peer RPC (or response) whose ``field``-th frame is ``big``."""
    base = {
        "vote": [encode_uint(1), b"?", CLUSTER, b"p2", *map(encode_uint, (5, 3, 2))],
        "append": [encode_uint(1), b"+", CLUSTER, b"p2", *map(encode_uint, (5, 3, 2, 1))],
        "snapshot": [
            encode_uint(1),
            b"$",
            CLUSTER,
            b"p2",
            *map(encode_uint, (5, 3, 2, 0, 10)),
            b"x",
        ],
        "timeout": [encode_uint(1), b"@", CLUSTER, b"p2", encode_uint(5)],
    }[kind]
    base[field] = encode_uint(big)
    return base


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        ("vote", 4),
        ("vote", 5),
        ("vote", 6),
        ("append", 4),
        ("append", 5),
        ("append", 6),
        ("append", 7),
        ("snapshot", 4),
        ("snapshot", 5),
        ("snapshot", 6),
        ("snapshot", 7),
        ("snapshot", 8),
        ("timeout", 4),
    ],
)
def test_peer_rpcs_with_a_term_or_index_past_the_log_are_refused(kind, field):
    with pytest.raises(RaftWireError):
        w.decode_request(_frames(kind, BIG, field))
    w.decode_request(_frames(kind, MAX_TERM, field))  # the largest storable value is fine


@pytest.mark.parametrize(
    ("kind", "frames"),
    [
        (w.MsgType.REQUEST_VOTE, [encode_uint(1), encode_uint(BIG), b"\x01"]),
        (w.MsgType.APPEND_ENTRIES, [encode_uint(1), encode_uint(BIG), b"\x01"]),
        (w.MsgType.APPEND_ENTRIES, [encode_uint(1), encode_uint(2), b"", encode_uint(BIG)]),
        (
            w.MsgType.APPEND_ENTRIES,
            [encode_uint(1), encode_uint(2), b"", encode_uint(1), encode_uint(BIG)],
        ),
        (w.MsgType.INSTALL_SNAPSHOT, [encode_uint(1), encode_uint(BIG)]),
        (w.MsgType.TIMEOUT_NOW, [encode_uint(1), encode_uint(BIG)]),
    ],
)
def test_peer_responses_with_a_term_past_the_log_are_refused(kind, frames):
    with pytest.raises(RaftWireError):
        w.decode_response(kind, frames)


def test_append_entries_ending_past_the_last_index_is_refused():
    entry = REQID + b"\x00" + (1).to_bytes(7, "little") + b"x"
    frames = _frames("append", MAX_INDEX, 5)
    with pytest.raises(RaftWireError):
        w.decode_request([*frames, entry])


def _follower(**options) -> RaftCore:
    peers = (Peer("p1", GOOD), Peer("p2", "tcp://127.0.0.1:7002"))
    return RaftCore("p1", ClusterConfig(peers), rng=random.Random(1), **options)


def test_core_drops_a_term_it_could_not_store_and_keeps_storing_entries():
    core = _follower()
    storage = MemoryStorage()
    core.step(m.AppendEntries("p2", "p1", BIG, 0, 0, 0, ()))
    assert core.term == 0 and core.refused == 1
    bad_entry = Entry(1, BIG, EntryType.STATE, REQID, b"x")
    core.step(m.AppendEntries("p2", "p1", 5, 0, 0, 0, (bad_entry,)))
    assert core.last_index == 0 and core.refused == 2
    core.step(m.RequestVote("p2", "p1", BIG, 0, 0))
    core.step(m.AppendResponse("p2", "p1", BIG, False))
    assert core.term == 0 and core.refused == 4
    entry = Entry(1, 5, EntryType.STATE, REQID, b"x")
    core.step(m.AppendEntries("p2", "p1", 5, 0, 0, 1, (entry,)))
    rd = core.ready()
    storage.append(rd.entries)  # storable: the term is in range
    assert core.term == 5 and storage.last_index == 1


def test_core_at_the_last_term_does_not_campaign_past_it(caplog):
    core = _follower(pre_vote=False, hard_state=HardState(MAX_TERM - 1))
    core.step(m.AppendEntries("p2", "p1", MAX_TERM, 0, 0, 0, ()))
    assert core.term == MAX_TERM
    with caplog.at_level(logging.ERROR, "dafka.raft.core._terms"):
        for _ in range(200):
            core.tick()
    assert core.term == MAX_TERM
    assert "raft.term.exhausted" in caplog.text  # not silently stuck


# -- how far one peer may raise our term (issue 10: a configured peer took it to 2**56 - 1) ---


def _flood_terms(core: RaftCore, rounds: int) -> None:
    """A configured peer sends every kind of message at the highest terms it can think of,
    with ticks in between, for ``rounds`` ticks."""
    for _ in range(rounds):
        core.tick()
        for term in (MAX_TERM, core.term + (1 << 40), core.term + TERM_WINDOW, core.term + 1):
            term = min(term, MAX_TERM)
            core.step(m.AppendEntries("p2", "p1", term, 0, 0, 0, ()))
            core.step(m.RequestVote("p2", "p1", term, 0, 0))
            core.step(m.AppendResponse("p2", "p1", term, False))
            core.step(m.TimeoutNow("p2", "p1", term))
        core.ready()


def test_a_configured_peer_cannot_push_our_term_to_the_maximum():
    core = _follower(hard_state=HardState(7))
    _flood_terms(core, 500)
    # one window at once, then a few terms per tick: 2**56 is millions of years away
    assert core.term <= 7 + TERM_WINDOW + 500 * (TERM_RISE_PER_TICK + 2)
    assert core.terms.refused > 0 and core.refused >= core.terms.refused
    # and this peer still campaigns once the flooder goes quiet
    for _ in range(200):
        core.tick()
    assert core.role is Role.PRE_CANDIDATE
    votes = [msg for msg in core.ready().messages if isinstance(msg, m.RequestVote)]
    assert votes and votes[-1].term == core.term + 1


def test_a_peer_far_behind_catches_up_as_the_ceiling_rises():
    core = _follower(hard_state=HardState(10))
    leader_term = 10 + TERM_WINDOW + 40
    core.step(m.AppendEntries("p2", "p1", leader_term, 0, 0, 0, ()))
    assert core.term == 10  # too far at once: dropped, as a lost message
    for _ in range(9):  # the ceiling rises by TERM_RISE_PER_TICK (4) a tick
        core.tick()
    core.step(m.AppendEntries("p2", "p1", leader_term, 0, 0, 0, ()))
    assert core.term == 10 and core.leader is None
    core.tick()
    core.step(m.AppendEntries("p2", "p1", leader_term, 0, 0, 0, ()))
    assert core.term == leader_term and core.leader == "p2"


def test_a_normal_election_term_is_always_admitted():
    core = _follower(hard_state=HardState(MAX_TERM - 3))  # even near the end of the range
    core.step(m.AppendEntries("p2", "p1", MAX_TERM - 2, 0, 0, 0, ()))
    assert core.term == MAX_TERM - 2 and core.refused == 0
