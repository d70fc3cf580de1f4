"""Raft peers as real processes on 127.0.0.1 (``python -m dafka.cli.raft peer``).

Ports: the peers must know each other's URLs before they start, so the test picks
free ports below the kernel's ephemeral range (where neither port-0 binds nor
outgoing connections are allocated, so nothing grabs them behind our back) and, if
a peer still cannot bind, starts the whole cluster again on other ports.

Failover is measured from the SIGKILL to the first RequestConfig answer of a live
peer saying it leads, and printed. How fast that is belongs to the benchmark
(``python -m benchmarks.raft --failovers N`` reports the median and worst); here a new
leader is a liveness condition, with a deadline generous enough for a loaded machine.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dafka.errors import DafkaError
from dafka.raft.client import RaftClient
from dafka.raft.codec import Entry, EntryType, ReqIdGenerator
from dafka.raft.core import SnapshotChunk
from dafka.raft.peer import put_command
from dafka.raft.peer._statemachine import decode_value, dump_query, get_query
from tests.procs import ROOT, Proc, free_port, py, wait_until
from tests.unit.raft.linearizability import Operation, check_kv

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


class RaftCluster:
    """Peer processes ``p1..pN`` of one cluster, data under ``root``."""

    def __init__(self, root: Path, size: int = 3, *args: str, name: str = "itest") -> None:
        self.root = root
        self.name = name
        self.args = list(args)
        self.ids = [f"p{k}" for k in range(1, size + 1)]
        self.procs: dict[str, Proc] = {}
        self.urls: dict[str, str] = {}
        self._ports: set[int] = set()
        for attempt in range(3):
            self.urls = {pid: self._new_url() for pid in self.ids}
            try:
                for pid in self.ids:
                    self.start(pid)
                return
            except _BindFailed:
                self.stop_all()
                if attempt == 2:
                    raise

    def _new_url(self) -> str:
        return f"tcp://127.0.0.1:{free_port(self._ports)}"

    def start(self, pid: str, *extra: str, members: list[str] | None = None) -> Proc:
        if pid not in self.urls:
            self.urls[pid] = self._new_url()
        others = [f"--peer={p}={self.urls[p]}" for p in (members or self.ids) if p != pid]
        proc = Proc(
            py(
                "dafka.cli.raft",
                "peer",
                "--id",
                pid,
                "--bind",
                self.urls[pid],
                *others,
                "--data-dir",
                str(self.root / pid),
                "--cluster",
                self.name,
                "--log-level",
                "info",
                "--raft-insecure-null",  # a NULL group (the point here is Raft, not its auth)
                *self.args,
                *extra,
            )
        )
        self.procs[pid] = proc
        try:
            proc.wait_line(rf"raft peer {pid} on ")
        except AssertionError:
            if "Address already in use" in proc.stderr:
                raise _BindFailed from None
            raise
        return proc

    def kill(self, pid: str) -> None:
        self.procs[pid].kill()

    def alive(self) -> list[str]:
        return [pid for pid, p in self.procs.items() if p.p.poll() is None]

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.kill()

    def client(self, **kw: object) -> RaftClient:
        return RaftClient(list(self.urls.values()), self.name, **kw)  # type: ignore[arg-type]

    def leader(self, probe: RaftClient, among: list[str] | None = None) -> str | None:
        """The peer that says it leads (RequestConfig), asking each live one directly."""
        for pid in among or self.alive():
            try:
                answer = probe.peer_config(self.urls[pid], timeout=0.2)
            except DafkaError:
                continue
            if answer.is_leader:
                return pid
        return None

    def wait_leader(self, probe: RaftClient, timeout: float = 10.0) -> str:
        found = wait_until(lambda: self.leader(probe), timeout, what="a Raft leader")
        assert isinstance(found, str)
        return found

    def dump(self, probe: RaftClient, pid: str) -> tuple[int, dict]:
        applied, frames = probe.read_local(self.urls[pid], dump_query(), timeout=2)
        return applied, decode_value(frames)

    def wait_converged(self, probe: RaftClient, pids: list[str], timeout: float = 15.0) -> dict:
        """Every peer in ``pids`` applied the leader's commit index and holds one state."""
        states: dict[str, tuple[int, dict]] = {}

        def converged() -> bool:
            leader = self.leader(probe, pids)
            if leader is None:
                return False
            commit = probe.log_info(self.urls[leader], timeout=1).commit_index
            for pid in pids:
                try:
                    states[pid] = self.dump(probe, pid)
                except DafkaError:
                    return False
            return all(applied >= commit for applied, _ in states.values()) and (
                len({repr(sorted(kv.items())) for _, kv in states.values()}) == 1
            )

        wait_until(converged, timeout, interval=0.05, what=f"{pids} to converge")
        return states[pids[0]][1]


class _BindFailed(Exception):
    pass


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RaftCluster]:
    c = RaftCluster(tmp_path)
    yield c
    c.stop_all()


@pytest.fixture
def probe(cluster: RaftCluster) -> Iterator[RaftClient]:
    with cluster.client(timeout=5) as client:
        yield client


def _cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dafka.cli.raft", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_three_peers_elect_a_leader_commit_and_read(
    cluster: RaftCluster, probe: RaftClient
) -> None:
    leader = cluster.wait_leader(probe)
    with cluster.client(timeout=10) as client:
        assert client.request_config().leader == leader
        indexes = [client.update(put_command(f"k{i}", i)) for i in range(20)]
        assert indexes == sorted(indexes) and len(set(indexes)) == 20
        assert decode_value(client.read(get_query("k7"))) == 7
        assert decode_value(client.read(get_query("nope"))) is None
        # the same reqid twice is one update
        reqid = ReqIdGenerator()()
        first = client.update(put_command("once", 1), reqid=reqid)
        assert client.update(put_command("once", 1), reqid=reqid) == first
        entries = [e for e in client.stream_entries(0) if isinstance(e, Entry)]
        assert [e.index for e in entries] == list(range(1, entries[-1].index + 1))
        assert entries[-1].index >= first
        assert sum(1 for e in entries if e.reqid == reqid) == 1
        assert [e.index for e in client.stream_entries(3, count=4)] == [4, 5, 6, 7]
        info = client.log_info()
        assert info.is_leader and info.commit_index >= first
    state = cluster.wait_converged(probe, cluster.ids)
    assert state["k19"] == 19 and state["once"] == 1

    # the CLI's view of it
    peers = [f"--peer={u}" for u in cluster.urls.values()]
    done = _cli("status", *peers, "--cluster", cluster.name)
    assert done.returncode == 0, done.stderr
    rows = done.stdout.strip().splitlines()
    assert rows[0].split()[:3] == ["peer", "url", "state"]
    states = {row.split()[0]: row.split()[2] for row in rows[1:]}
    assert states == {pid: "leader" if pid == leader else "follower" for pid in cluster.ids}
    listing = _cli("members", "list", *peers, "--cluster", cluster.name)
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines()[0].split()[0] == leader
    bad = _cli("members", "add", *peers, "--cluster", cluster.name, "no-url")
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: --peer wants ID=URL")
    assert len(bad.stderr.strip().splitlines()) == 1

    # a second peer on a bound port, or on a data dir in use: one line, non-zero exit
    url = cluster.urls[leader]
    for data_dir, expect in (
        (cluster.root / "other", "cannot bind"),
        (cluster.root / leader, "in use"),
    ):
        clash = _cli(
            "peer", "--id", "x", "--bind", url, "--data-dir", str(data_dir), "--cluster", "c"
        )
        assert clash.returncode != 0 and expect in clash.stderr, clash.stderr
        assert len(clash.stderr.strip().splitlines()) == 1
    # SIGTERM: a clean stop
    follower = next(pid for pid in cluster.ids if pid != leader)
    assert cluster.procs[follower].terminate() == 0


def test_sigkill_leader_a_new_leader_and_no_acknowledged_update_lost(
    cluster: RaftCluster, probe: RaftClient
) -> None:
    old = cluster.wait_leader(probe)
    acked: dict[str, tuple[int, bytes]] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        gen = ReqIdGenerator()
        with cluster.client(timeout=10) as client:
            i = 0
            while not stop.is_set():
                key, reqid = f"w{i}", gen()
                try:
                    acked[key] = (client.update(put_command(key, i), reqid=reqid), reqid)
                except DafkaError as exc:  # an unacknowledged update may or may not land
                    errors.append(exc)
                i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        wait_until(lambda: len(acked) >= 50, 10, what="updates before the kill")
        before = len(acked)
        others = [pid for pid in cluster.ids if pid != old]
        killed_at = time.monotonic()
        cluster.procs[old].p.kill()  # SIGKILL
        new = wait_until(
            lambda: cluster.leader(probe, others), 10, interval=0.005, what="a new leader"
        )
        failover = time.monotonic() - killed_at
        cluster.procs[old].wait()
        print(f"\nRAFT FAILOVER: SIGKILL of {old} -> {new} leads after {failover * 1000:.0f} ms")
        assert new != old
        wait_until(lambda: len(acked) >= before + 50, 15, what="updates after the kill")
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors

    live = [pid for pid in cluster.ids if pid != old]
    state = cluster.wait_converged(probe, live)
    missing = [key for key in acked if key not in state]
    assert not missing, f"acknowledged updates lost: {missing[:10]}"
    # and in the log, at the index each acknowledgement named, with its reqid
    with cluster.client(timeout=10) as client:
        log = {e.index: e for e in client.stream_entries(0) if isinstance(e, Entry)}
    for key, (index, reqid) in acked.items():
        assert log[index].reqid == reqid, key

    # the killed peer comes back and catches up
    cluster.start(old)
    state = cluster.wait_converged(probe, cluster.ids)
    assert all(key in state for key in acked)


def test_concurrent_history_is_linearizable_across_a_leader_kill(
    cluster: RaftCluster, probe: RaftClient
) -> None:
    old = cluster.wait_leader(probe)
    history: list[Operation] = []
    lock = threading.Lock()
    stop = threading.Event()
    start = time.monotonic()
    counts = {"put": 0, "get": 0, "unknown": 0}

    def worker(n: int) -> None:
        rng = random.Random(n)
        with cluster.client(timeout=4) as client:
            seq = 0
            while not stop.is_set():
                key = rng.choice("abc")
                call = time.monotonic() - start
                if rng.random() < 0.5:
                    seq += 1
                    value = n * 1_000_000 + seq
                    try:
                        client.update(put_command(key, value))
                        op = Operation(n, call, time.monotonic() - start, ("put", key, value))
                        kind = "put"
                    except DafkaError:
                        op = Operation(n, call, None, ("put", key, value))  # outcome unknown
                        kind = "unknown"
                else:
                    try:
                        got = decode_value(client.read(get_query(key)))
                    except DafkaError:
                        continue  # a read that said nothing constrains nothing
                    op = Operation(n, call, time.monotonic() - start, ("get", key), got)
                    kind = "get"
                with lock:
                    history.append(op)
                    counts[kind] += 1

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(1.5)
        cluster.kill(old)
        killed_at = time.monotonic() - start
        cluster.wait_leader(probe)
        time.sleep(2.0)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    after = [op for op in history if op.call > killed_at and op.ret is not None]
    print(f"\nRAFT HISTORY: {len(history)} operations {counts}, {len(after)} after the kill")
    assert counts["put"] > 20 and counts["get"] > 20 and after
    assert check_kv(history), "the recorded history is not linearizable"


def test_membership_add_a_fourth_peer_then_remove_the_leader(
    cluster: RaftCluster, probe: RaftClient
) -> None:
    leader = cluster.wait_leader(probe)
    with cluster.client(timeout=10) as client:
        for i in range(10):
            client.update(put_command(f"m{i}", i))
    cluster.start("p4", "--join", members=["p1", "p2", "p3"])
    peers = [f"--peer={u}" for pid, u in cluster.urls.items() if pid != "p4"]
    added = _cli("members", "add", *peers, "--cluster", cluster.name, f"p4={cluster.urls['p4']}")
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("members: ") and "p4=" in added.stdout
    state = cluster.wait_converged(probe, ["p1", "p2", "p3", "p4"])
    assert state["m9"] == 9
    config = probe.peer_config(cluster.urls["p4"])
    assert sorted(p.id for p in config.peers or ()) == ["p1", "p2", "p3", "p4"]

    removed = _cli("members", "remove", *peers, "--cluster", cluster.name, leader)
    assert removed.returncode == 0, removed.stderr
    rest = [pid for pid in ["p1", "p2", "p3", "p4"] if pid != leader]
    new = wait_until(lambda: cluster.leader(probe, rest), 10, what="a leader among the rest")
    with cluster.client(timeout=10) as client:
        client.update(put_command("after", 1))
        assert decode_value(client.read(get_query("after"))) == 1
        assert client.request_config().leader == new
    for pid in rest:
        config = probe.peer_config(cluster.urls[pid])
        assert sorted(p.id for p in config.peers or ()) == sorted(rest)
    cluster.kill(leader)  # the removed peer is not needed any more
    assert cluster.wait_converged(probe, rest)["after"] == 1
    clash = f"{rest[0]}={cluster.urls[rest[1]]}"  # two ids sharing one URL
    refused = _cli("members", "set", *peers, "--cluster", cluster.name, clash)
    assert refused.returncode == 2 and "configuration refused" in refused.stderr


def test_restarted_peer_catches_up_through_install_snapshot(tmp_path: Path) -> None:
    cluster = RaftCluster(tmp_path, 3, "--snapshot-every", "25", "--keep-entries", "0")
    try:
        with cluster.client(timeout=10) as client:
            leader = cluster.wait_leader(client)
            follower = next(pid for pid in cluster.ids if pid != leader)
            client.update_many([put_command(f"s{i}", i) for i in range(10)])
            cluster.kill(follower)
            client.update_many([put_command(f"s{i}", i) for i in range(10, 200)])
            # snapshots are written off the loop thread: the last one lands a little later
            wait_until(lambda: client.log_info().prune_index >= 175, 10, what="a snapshot past 175")
            info = client.log_info()
            assert info.prune_index >= 175 and info.first_index > 1 and info.snapshot_size > 0
            # a reader starting at 0 gets the snapshot first, then the entries after it
            items = list(client.stream_entries(0))
            chunks = [i for i in items if isinstance(i, SnapshotChunk)]
            entries = [i for i in items if isinstance(i, Entry)]
            assert chunks and chunks[0].offset == 0 and chunks[-1].last
            assert all(e.type in EntryType for e in entries)
            if entries:
                assert entries[0].index == chunks[-1].index + 1
            last = entries[-1].index if entries else chunks[-1].index
            assert last == client.log_info().commit_index

            cluster.start(follower)
            state = cluster.wait_converged(client, cluster.ids)
            assert all(state[f"s{i}"] == i for i in range(200))
            mine = client.log_info(cluster.urls[follower])
            assert mine.prune_index > 0 and mine.snapshot_size > 0, mine
            assert any("install_snapshot" in line for line in cluster.procs[follower].stderr_lines)
    finally:
        cluster.stop_all()
