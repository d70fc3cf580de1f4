"""The parts a RaftCore owns, each alone: Configs (the configurations in the log) and
Replication (driven through a stand-in for its Host, the core)."""

from __future__ import annotations

from collections.abc import Sequence

from dafka.raft.codec import ClusterConfig, Entry, EntryType, SnapshotMeta, encode_config
from dafka.raft.core import AppendEntries, AppendResponse, Message, Role
from dafka.raft.core._configs import Configs
from dafka.raft.core._log import RaftLog
from dafka.raft.core._replication import Replication
from dafka.raft.core._requests import RequestIds

from .sim import make_config


def config_entry(index: int, config: ClusterConfig) -> Entry:
    return Entry(index, 1, EntryType.CONFIG, data=encode_config(config))


# -- Configs -------------------------------------------------------------------------------


def test_configs_take_effect_when_appended_and_roll_back_when_truncated():
    abc, abcd = make_config("abc"), make_config("abcd")
    configs = Configs(0, abc)
    assert configs.latest == abc and configs.latest_index == 0 and "d" not in configs.voters
    plain = Entry(1, 1, EntryType.STATE)
    assert not configs.appended([plain])
    assert configs.appended([config_entry(2, abcd)])
    assert configs.latest == abcd and configs.latest_index == 2 and "d" in configs.voters
    assert configs.at(1) == abc and configs.at(2) == abcd == configs.at(9)
    assert not configs.truncate(3)  # nothing of theirs from 3 on
    assert configs.truncate(2)
    assert configs.latest == abc and "d" not in configs.voters


def test_configs_compact_keeps_the_one_in_force_and_restore_replaces_all():
    a, ab, abc = make_config("a"), make_config("ab"), make_config("abc")
    configs = Configs(0, a)
    configs.appended([config_entry(3, ab), config_entry(6, abc)])
    assert configs.since_committed(4) == [ab, abc]
    assert configs.since_committed(6) == [abc]
    configs.compact(4)
    assert configs.at(4) == ab and configs.since_committed(0) == [ab, abc]
    configs.restore(9, a)
    assert (configs.latest, configs.latest_index) == (a, 9) and configs.voters.ids == {"a"}


def test_configs_promotable_by_an_uncommitted_change_until_it_commits():
    abc, bcd = make_config("abc"), make_config("bcd")
    configs = Configs(0, abc)
    configs.appended([config_entry(1, bcd)])  # removes a, not committed yet
    assert configs.promotable("a", commit=0)
    assert not configs.promotable("a", commit=1)
    assert configs.promotable("d", commit=0) and not configs.promotable("z", commit=0)


# -- Replication ---------------------------------------------------------------------------


class Host:
    """The core, as Replication sees it (see ``_replication.Host``)."""

    def __init__(self, config: ClusterConfig, log: RaftLog) -> None:
        self.term = 1
        self.commit = 0
        self.role = Role.LEADER
        self.heartbeat_tick = 1
        self.plain_peers: frozenset[str] = frozenset()
        self.configs = Configs(0, config)
        self.requests = RequestIds(60.0)
        self.snapshot = SnapshotMeta()
        self.log = log
        self.calls: list[tuple[str, object]] = []

    def truncate_from(self, index: int) -> None:
        self.calls.append(("truncate_from", index))
        self.log.truncate(index)

    def appended(self, entries: Sequence[Entry]) -> None:
        self.calls.append(("appended", [e.index for e in entries]))

    def follow_commit(self, index: int) -> None:
        self.commit = max(self.commit, index)

    def recovered_through(self, index: int) -> None:
        self.calls.append(("recovered_through", index))

    def maybe_commit(self) -> bool:
        self.calls.append(("maybe_commit", None))
        return False


def part(voters: str = "abc", entries: Sequence[Entry] = ()) -> tuple[Replication, Host, list]:
    log = RaftLog(0, 0, list(entries))
    host = Host(make_config(voters), log)
    sent: list[Message] = []
    repl = Replication(
        host,
        "a",
        log,
        sent.append,
        max_batch_entries=64,
        max_batch_bytes=1 << 20,
        max_inflight=4,
        snapshot_chunk_size=1 << 16,
        read_snapshot=None,
    )
    return repl, host, sent


def test_a_leader_part_sends_each_follower_one_append_and_counts_a_quorum():
    repl, host, sent = part()
    repl.sync_progress()
    assert sorted(repl.progress) == ["b", "c"]  # everyone but ourselves
    host.log.append((Entry(1, 1, EntryType.STATE, data=b"x"), Entry(2, 1, EntryType.STATE)))
    repl.bcast_append()
    assert repl.has_ready(0)
    repl.flush_sends()
    assert sorted(m.to for m in sent) == ["b", "c"]
    assert all(isinstance(m, AppendEntries) and m.term == 1 for m in sent)
    assert not repl.has_ready(0)
    first = sent[0]
    assert isinstance(first, AppendEntries)
    assert [e.index for e in first.entries] == [1, 2]
    repl.on_append_response(AppendResponse("b", "a", 1, True, None, None, 0, 2, first.seq))
    assert repl.progress["b"].match == 2 and ("maybe_commit", None) in host.calls
    host.log.take_unstable()  # the shell wrote it, and reports it durable:
    host.log.stable_to(host.log.last_write)  # a quorum (b and us) holds 2
    assert repl.quorum_index() == 2


def test_a_leader_part_asks_its_core_to_step_down_without_a_quorum():
    repl, host, _ = part()
    repl.sync_progress()
    assert repl.tick(election_tick=10, check_quorum=False) is True  # no check: stays
    assert repl.tick(election_tick=10, check_quorum=True) is True  # new followers count
    assert not any(pr.recent_active for pr in repl.progress.values())  # a new round
    assert repl.tick(election_tick=10, check_quorum=True) is False  # nobody answered since
    repl.progress["b"].recent_active = True
    assert repl.tick(election_tick=10, check_quorum=True) is True  # b and us: a quorum
    repl.transferee = "b"
    repl.reset()
    assert not repl.progress and repl.transferee is None and not repl.want_send


def test_a_follower_part_appends_through_its_core_and_follows_the_commit():
    repl, host, sent = part()
    host.role = Role.FOLLOWER
    new = (Entry(1, 1, EntryType.STATE), Entry(2, 1, EntryType.STATE))
    repl.on_append(AppendEntries("b", "a", 1, 0, 0, 1, new, 7))
    assert host.log.last_index == 2 and host.commit == 1
    assert ("appended", [1, 2]) in host.calls and ("recovered_through", 2) in host.calls
    (answer,) = sent
    assert isinstance(answer, AppendResponse) and answer.success and answer.seq == 7
    conflicting = (Entry(2, 2, EntryType.STATE),)
    repl.on_append(AppendEntries("c", "a", 2, 1, 1, 1, conflicting, 8))
    assert ("truncate_from", 2) in host.calls and host.log.term(2) == 2
